"""splits.json I/O, rule vs baked, resolution, constraints (golden cases), leakage, stats."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cuvis_ai_schemas.training.data import Constraint, DataSplitConfig, Selector

from dvc_cuvis.errors import DvcCuvisError, SelectorError, SplitsFileError
from dvc_cuvis.model.categories import load_category_map, parse_category_map
from dvc_cuvis.model.constraints import ConstraintResult, evaluate_constraints, failed_constraints
from dvc_cuvis.model.resolution import Resolution, resolve
from dvc_cuvis.model.selectors import Resolver, expand_ids, required_attrs
from dvc_cuvis.model.split_state import has_dir_indices, is_baked, live_kinds, state
from dvc_cuvis.model.splits import dumps_splits, load_splits, save_splits
from dvc_cuvis.model.stats import stage_stats
from dvc_cuvis.model.universe import Universe
from tests.helpers.files import FIXTURES


def gui_universe(data_dir: str) -> Universe:
    return Universe.from_records(
        {"source": f"{data_dir}/{d}", "index": i} for d in ("day2/a.cu3s", "day3/b.cu3s")
        for i in range(7)
    )


def test_gui_authored_fixture_resolves_to_expected_membership(tmp_path: Path) -> None:
    data_dir = Path(tmp_path).resolve().as_posix()
    text = (FIXTURES / "gui_authored_splits.json").read_text().replace("{DATA_DIR}", data_dir)
    path = tmp_path / "splits.json"
    path.write_text(text)
    cfg = load_splits(path)
    uni = gui_universe(data_dir)
    res = resolve(cfg, uni)
    a, b = f"{data_dir}/day2/a.cu3s", f"{data_dir}/day3/b.cu3s"
    assert res.uids("train") == [f"{a}#{i}" for i in (0, 2, 3, 4)] + [f"{b}#{i}" for i in (1, 2, 3)]
    assert res.uids("val") == [f"{a}#5", f"{b}#0", f"{b}#6"]
    assert res.uids("test") == [f"{a}#1", f"{a}#6", f"{b}#4"]
    assigned = {u for s in ("train", "val", "test") for u in res.uids(s)}
    assert set(uni.uids()) - assigned == {f"{b}#5"}
    assert res.predict_is_all and res.uids("predict") == uni.uids() and len(uni) == 14
    # the pin is over the tokenized universe, not the substituted one
    assert gui_universe("{DATA_DIR}").hash == cfg.universe_hash != uni.hash
    assert is_baked(cfg) and state(cfg) == "baked"


def _case_refs(case: dict) -> tuple[Universe, dict[str, list[int]]]:
    uni = Universe.from_records(
        {"source": r["source"], "index": r["index"],
         "category_ids": ";".join(map(str, r["category_ids"]))} for r in case["universe"]
    )
    lookup = {(uni.source(p), uni.index(p)): p for p in range(len(uni))}
    stages = {s: [lookup[(src, i)] for src, i in case[s]] for s in ("train", "val", "test")}
    return uni, stages


@pytest.mark.parametrize(
    "case", json.loads((FIXTURES / "constraint_cases.json").read_text())["cases"],
    ids=lambda c: c["name"],
)
def test_constraint_golden_cases(case: dict) -> None:
    from dvc_cuvis.model.resolution import Resolution

    uni, stages = _case_refs(case)
    res = Resolution(uni, {**{k: np.asarray(v, dtype=np.int64) for k, v in stages.items()},
                           "predict": np.arange(len(uni))})
    constraints = [Constraint(**c) for c in case["constraints"]]
    got = evaluate_constraints(res, constraints,
                               available_attrs=frozenset(case["available_attrs"]))
    assert [(r.kind, r.status, r.count, list(r.offending)) for r in got] == [
        (e["kind"], e["status"], e["count"], e["offending"]) for e in case["expected"]
    ]


def test_load_splits_errors_name_file_and_field(tmp_path: Path) -> None:
    p = tmp_path / "splits.json"
    with pytest.raises(SplitsFileError, match="splits file not found"):
        load_splits(p)
    p.write_text("{\n  \"train\": [\n")
    with pytest.raises(SplitsFileError, match=r"splits.json:3:1: not valid JSON"):
        load_splits(p)
    p.write_text("[]")
    with pytest.raises(SplitsFileError, match="expected a JSON object"):
        load_splits(p)
    p.write_text(json.dumps({"train": [{"kind": "file_indices", "source": "a", "ids": [{}]}]}))
    with pytest.raises(SplitsFileError, match=r"invalid field train\[0\]\.ids\[0\]"):
        load_splits(p)
    p.write_text(json.dumps({"train": [], "bogus": 1}))
    with pytest.raises(SplitsFileError, match="invalid field bogus: Extra inputs"):
        load_splits(p)
    p.write_text(json.dumps({"val": [{"kind": "glob"}]}))
    with pytest.raises(SplitsFileError, match=r"val\[0\].*requires 'pattern'"):
        load_splits(p)


def test_save_is_schema_dump_and_roundtrips(tmp_path: Path) -> None:
    cfg = DataSplitConfig(
        universe_hash="ab" * 32,
        train=[Selector(kind="file_indices", source="a.npz", ids=[0, "2-4"])],
        constraints=[Constraint(kind="no_split_overlap")],
    )
    p = tmp_path / "s.json"
    save_splits(cfg, p)
    text = p.read_text()
    assert text == json.dumps(cfg.to_dict(), indent=2) + "\n"
    assert load_splits(p) == cfg and dumps_splits(load_splits(p)) == text


def test_rule_vs_baked() -> None:
    rule = DataSplitConfig(
        universe_hash="x",
        train=[Selector(kind="union", of=[Selector(kind="dir_indices", ids=[0]),
                                          Selector(kind="glob", pattern="*")])],
    )
    assert has_dir_indices(rule) and live_kinds(rule) == {"dir_indices", "glob"}
    assert state(rule) == "rule"
    unpinned = DataSplitConfig(train=[Selector(kind="files", paths=["a"])])
    assert not is_baked(unpinned) and live_kinds(unpinned) == set()
    assert required_attrs(DataSplitConfig(
        train=[Selector(kind="tag", any_of=["x"])],
        test=[Selector(kind="except", of=[Selector(kind="all"),
                                          Selector(kind="categories", any_of=["c"])])],
    )) == {"tags", "category_ids"}


def test_dir_indices_split_refuses_a_changed_universe() -> None:
    uni = Universe.from_records({"source": "a", "index": i} for i in range(3))
    cfg = DataSplitConfig(universe_hash=uni.hash, train=[Selector(kind="dir_indices", ids=[2])])
    assert resolve(cfg, uni).uids("train") == ["a#2"]
    grown = Universe.from_records({"source": "a", "index": i} for i in range(4))
    with pytest.raises(SelectorError, match="universe changed since the split was written"):
        resolve(cfg, grown)


def test_zero_match_error_names_stage_selector_and_suggests() -> None:
    uni = Universe.from_records({"source": "day1/session.cu3s", "index": i} for i in range(3))
    cfg = DataSplitConfig(val=[Selector(kind="file_indices", source="day1/sesion.cu3s", ids=[0])])
    with pytest.raises(SelectorError) as info:
        resolve(cfg, uni, where="splits.json")
    msg = str(info.value)
    assert msg.startswith("splits.json: val[0]: selector file_indices(source='day1/sesion.cu3s')")
    assert "did you mean 'day1/session.cu3s'?" in msg


def test_partial_match_is_reported_not_fatal() -> None:
    uni = Universe.from_records({"source": "a", "index": i} for i in range(7))
    r = Resolver(uni)
    got = r.resolve([Selector(kind="file_indices", source="a", ids=[0, 999, "5-6"])], stage="train")
    assert uni.uids(got) == ["a#0", "a#5", "a#6"]
    (w,) = r.warnings
    assert w.missing == (999,) and w.requested == 4
    assert "matched 3 of 4 requested indices; missing: 999" in w.message()


def test_windows_spelled_selectors_match_posix_sources_case_insensitively() -> None:
    uni = Universe.from_records([{"source": "C:/Data/Day1/a.cu3s", "index": 0},
                                 {"source": "data/b.cu3s", "index": 0}])
    r = Resolver(uni)
    hit = r.resolve([Selector(kind="files", paths=["c:\\data\\day1\\A.CU3S"])])
    assert uni.uids(hit) == ["C:/Data/Day1/a.cu3s#0"]
    # posix-looking paths keep their case
    with pytest.raises(SelectorError):
        r.resolve([Selector(kind="files", paths=["Data/b.cu3s"])])
    assert uni.uids(r.resolve([Selector(kind="files", paths=["./data/x/../b.cu3s"])])) == [
        "data/b.cu3s#0"]


def test_set_ops_and_order() -> None:
    uni = Universe.from_records(
        {"source": s, "index": i, "tags": t}
        for s, i, t in [("a", 0, "x"), ("a", 1, ""), ("b", 0, "x;y"), ("b", 1, "y")]
    )
    r = Resolver(uni)
    sel = Selector(kind="except", of=[Selector(kind="all"), Selector(kind="tag", any_of=["y"])])
    assert uni.uids(r.resolve([sel])) == ["a#0", "a#1"]
    inter = Selector(kind="intersect", of=[Selector(kind="tag", any_of=["x"]),
                                           Selector(kind="glob", pattern="b")])
    assert uni.uids(r.resolve([inter])) == ["b#0"]
    dirs = Selector(kind="dir_indices", ids=[3, 0, 3, "1-2"])
    assert uni.uids(r.resolve([dirs])) == ["b#1", "a#0", "a#1", "b#0"]
    with pytest.raises(SelectorError, match=r"out of range \(universe size 4\)"):
        r.resolve([Selector(kind="dir_indices", ids=[4])])
    # union in order, first occurrence wins
    both = [Selector(kind="files", paths=["b"]), Selector(kind="all")]
    assert uni.uids(r.resolve(both)) == ["b#0", "b#1", "a#0", "a#1"]


def test_categories_need_a_name_map(tmp_path: Path) -> None:
    uni = Universe.from_records([{"source": "a", "index": 0, "category_ids": "0;2"},
                                 {"source": "a", "index": 1, "category_ids": "1"}])
    sel = [Selector(kind="categories", any_of=["scratch"])]
    with pytest.raises(SelectorError, match="needs a category name->id map"):
        Resolver(uni).resolve(sel)
    with pytest.raises(SelectorError, match=r"'scratch' not in dataset categories \['x'\]"):
        Resolver(uni, {"x": 2}).resolve(sel)
    coco = tmp_path / "coco.json"
    coco.write_text(json.dumps({"categories": [{"id": 2, "name": "scratch"}], "images": []}))
    assert uni.uids(Resolver(uni, load_category_map(coco)).resolve(sel)) == ["a#0"]
    assert parse_category_map({"dent": 1}) == {"dent": 1}
    with pytest.raises(DvcCuvisError, match="two ids"):
        parse_category_map([{"id": 1, "name": "a"}, {"id": 2, "name": "a"}])


def test_expand_ids_error_order_matches_upstream() -> None:
    assert expand_ids([0, "2-4", "6-10:2"]).tolist() == [0, 2, 3, 4, 6, 8, 10]
    with pytest.raises(SelectorError, match="step must be > 0"):
        expand_ids(["abc", "1-4:0"])  # range errors come first, as upstream
    with pytest.raises(SelectorError, match="got 'abc'"):
        expand_ids(["abc", -1])
    with pytest.raises(SelectorError, match="index -1 must be >= 0"):
        expand_ids([-1, "abc"])


def test_group_leakage_and_stats() -> None:
    uni = Universe.from_records(
        {"source": s, "index": i, "group": g, "category_ids": c}
        for s, i, g, c in [("a", 0, "p1", "0"), ("b", 0, "p1", "3"), ("c", 0, "", "")]
    )
    cfg = DataSplitConfig(
        train=[Selector(kind="files", paths=["a"])],
        val=[Selector(kind="files", paths=["b"])],
        test=[Selector(kind="files", paths=["c"])],
        constraints=[Constraint(kind="no_source_overlap"),
                     Constraint(kind="no_train_anomalous", severity="error")],
    )
    res = resolve(cfg, uni)
    results = evaluate_constraints(res, cfg.constraints)
    by = {r.kind: r for r in results}
    assert by["no_source_overlap"].status == "satisfied"
    assert by["no_train_anomalous"].status == "satisfied"
    assert by["group_leakage"].status == "violated" and by["group_leakage"].offending == ("p1",)
    assert [r.kind for r in failed_constraints(results)] == ["group_leakage"]
    warn = evaluate_constraints(res, cfg.constraints, group_leakage="warn")
    assert failed_constraints(warn) == []
    stats = stage_stats(res)
    assert stats["val"] == {"samples": 1, "sources": 1, "groups": 1,
                            "categories": {"3": 1}, "anomalous": 1}
    assert stats["predict"]["samples"] == 3 and stats["predict"]["groups"] == 2


def test_one_stage_code_and_its_tie_rule() -> None:
    """A row in several of train/val/test takes the first of them (train, val, test);
    resolution, history and the report all read the same code."""
    from dvc_cuvis.model.compare import Version
    from dvc_cuvis.model.resolution import Resolution, stage_codes
    from dvc_cuvis.model.splits import STAGE_CODE_NAMES, UNASSIGNED
    from dvc_cuvis.review.report import _sources_section

    uni = Universe.from_records({"source": f"s{k}.cu3s", "index": 0} for k in range(6))
    pos = lambda *p: np.asarray(p, dtype=np.int64)  # noqa: E731
    stages = {"train": pos(0, 1), "val": pos(1, 2, 4), "test": pos(4, 0, 3),
              "predict": pos(0, 1, 2, 3, 4, 5)}
    codes = stage_codes(stages, len(uni))
    assert codes.tolist() == [0, 0, 1, 2, 1, UNASSIGNED]  # 0: train+test, 1: train+val, 4: val+test
    assert STAGE_CODE_NAMES[UNASSIGNED] == "unassigned"
    res = Resolution(uni, stages)
    assert res.assignment().tolist() == codes.tolist()
    assert Version("x", uni, stages, None, []).state().tolist() == codes.tolist()
    html = _sources_section(res)  # sources per stage, counted by the same code
    for name, n in (("train", 2), ("val", 2), ("test", 1), ("unassigned", 1)):
        assert f'data-stage="{name}" data-metric="sources">{n}<' in html, name


def test_walk_visits_every_selector_once_in_file_order() -> None:
    from dvc_cuvis.model.selectors import walk
    from dvc_cuvis.model.split_state import selector_kinds

    leaf = lambda src: Selector(kind="files", paths=[src])  # noqa: E731
    cfg = DataSplitConfig(
        train=[Selector(kind="except", of=[Selector(kind="glob", pattern="a*"),
                                          Selector(kind="union", of=[leaf("x"), leaf("y")])]),
               leaf("t")],
        val=[Selector(kind="tag", any_of=["hard"])],
        test=[Selector(kind="categories", any_of=["dent"])],
        predict=[leaf("p")])
    seen = [(s.kind.value, s.paths[0] if s.paths else "") for s in walk(cfg)]
    assert seen == [("except", ""), ("glob", ""), ("union", ""), ("files", "x"),
                    ("files", "y"), ("files", "t"), ("tag", ""), ("categories", ""),
                    ("files", "p")]
    assert selector_kinds(cfg) == {"except", "glob", "union", "files", "tag", "categories"}
    assert required_attrs(cfg) == {"tags", "category_ids"}


# -- exact user-visible contracts (issue 24: each pinned so that a changed message, key or
# -- branch of splits.py turns a test red) ---------------------------------------------------


def _error(fn, *args, **kwargs) -> str:
    with pytest.raises(DvcCuvisError) as info:
        fn(*args, **kwargs)
    return str(info.value)


def test_reading_a_splits_file_names_the_file_in_every_error(tmp_path: Path) -> None:
    from dvc_cuvis.errors import MissingSplitsFileError

    p = tmp_path / "splits.json"
    with pytest.raises(MissingSplitsFileError) as missing:
        load_splits(p)
    assert isinstance(missing.value, FileNotFoundError)  # as upstream's load_splits raises
    assert str(missing.value) == f"{p}: splits file not found (check --splits)"
    assert _error(load_splits, tmp_path) == (
        f"{tmp_path}: is a directory, expected a splits.json file")
    p.write_bytes(b'{"train": ["\xff"]}')
    assert _error(load_splits, p) == f"{p}: not valid UTF-8 text"
    below_a_file = p / "splits.json"  # a path through a file: neither missing nor a folder
    assert _error(load_splits, below_a_file) == f"{below_a_file}: cannot read: Not a directory"
    p.write_text('{\n  "train": [\n')
    assert _error(load_splits, p) == f"{p}:3:1: not valid JSON: Expecting value"
    p.write_text("[]")
    assert _error(load_splits, p) == (
        f"{p}: expected a JSON object with train/val/test/predict, got list")


def test_a_utf8_bom_is_accepted_and_non_ascii_paths_are_written_as_text(tmp_path: Path) -> None:
    cfg = DataSplitConfig(train=[Selector(kind="files", paths=["tag/über.cu3s"])])
    text = dumps_splits(cfg)
    assert '"tag/über.cu3s"' in text and text.endswith("}\n") and "\n  " in text
    p = tmp_path / "splits.json"
    p.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert load_splits(p) == cfg


def test_the_stamp_is_that_of_the_bytes_read_and_none_when_the_file_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from dvc_cuvis.model.splits import load_splits_stamped

    p = tmp_path / "splits.json"
    save_splits(DataSplitConfig(train=[Selector(kind="files", paths=["a"])]), p)
    cfg, stamp = load_splits_stamped(p)
    st = os.stat(p)
    assert cfg == load_splits(p) and stamp == (st.st_ino, st.st_size, st.st_mtime_ns)

    real_fstat, calls = os.fstat, []

    def fstat_then_touch(fd: int) -> os.stat_result:
        result = real_fstat(fd)
        calls.append(fd)
        if len(calls) == 1:  # another process rewrites the file while it is being read
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        return result

    monkeypatch.setattr(os, "fstat", fstat_then_touch)
    cfg2, stamp2 = load_splits_stamped(p)
    assert cfg2 == cfg and stamp2 is None and len(calls) == 2


def test_parse_errors_quote_the_file_the_field_and_how_many_more(tmp_path: Path) -> None:
    from dvc_cuvis.model.splits import parse_splits

    assert _error(parse_splits, "[]") == (
        "splits.json: expected a JSON object with train/val/test/predict, got list")
    assert _error(parse_splits, "7", path="s.json") == (
        "s.json: expected a JSON object with train/val/test/predict, got int")
    assert _error(parse_splits, "[" * 100_000, path="s.json") == "s.json: JSON nested too deeply"
    one = json.dumps({"train": [{"kind": "files", "paths": ["a"]}], "val": 3})
    assert _error(parse_splits, one, path="s.json") == (
        "s.json: invalid field val: Input should be a valid list")
    two = json.dumps({"train": 1, "val": 3})
    assert _error(parse_splits, two, path="s.json") == (
        "s.json: invalid field train: Input should be a valid list (+1 more error(s))")
    three = json.dumps({"train": 1, "val": 3, "test": 4})
    assert _error(parse_splits, three, path="s.json") == (
        "s.json: invalid field train: Input should be a valid list (+2 more error(s))")
    nested = json.dumps({"train": [{"kind": "file_indices", "source": "a", "ids": [{}]}]})
    assert _error(parse_splits, nested, path="s.json") == (
        "s.json: invalid field train[0].ids[0].int: Input should be a valid integer "
        "(+1 more error(s))")
    dupes = json.dumps({"constraints": [{"kind": "no_split_overlap"}] * 2})
    assert _error(parse_splits, dupes, path="s.json") == (
        "s.json: invalid field (root): Value error, duplicate constraint kind(s): "
        "no_split_overlap")


def test_effective_splits_follows_a_pointer_as_cuvis_ai_does(tmp_path: Path) -> None:
    from dvc_cuvis.model.splits import effective_splits

    inline_only = DataSplitConfig(train=[Selector(kind="files", paths=["a"])])
    assert effective_splits(inline_only) == (inline_only, None)
    p = tmp_path / "splits.json"
    save_splits(DataSplitConfig(
        universe_hash="ab" * 32, constraints=[Constraint(kind="no_split_overlap")],
        train=[Selector(kind="files", paths=["a"])], test=[Selector(kind="files", paths=["b"])],
    ), p)
    effective, source = effective_splits(DataSplitConfig(splits_path=str(p)))
    assert effective == p and source == p  # a bare pointer: the file itself, not yet read
    merged, source = effective_splits(DataSplitConfig(
        splits_path=str(p), test=[Selector(kind="files", paths=["c"])],
        predict=[Selector(kind="files", paths=["d"])]))
    assert source == p and isinstance(merged, DataSplitConfig)
    assert (merged.splits_path, merged.universe_hash) == (str(p), "ab" * 32)
    assert (merged.train, merged.val) == ([Selector(kind="files", paths=["a"])], [])  # the file's
    assert merged.test == [Selector(kind="files", paths=["c"])]  # inline wins
    assert merged.predict == [Selector(kind="files", paths=["d"])]
    assert merged.constraints == [Constraint(kind="no_split_overlap")]


def test_effective_splits_equal_what_the_cuvis_ai_datamodule_loads(tmp_path: Path) -> None:
    """Inline constraints and universe_hash are ignored there: the file owns them."""
    from types import SimpleNamespace

    from cuvis_ai_core.data.datamodule import BaseCuvisAIDataModule  # imports lightning: slow

    from dvc_cuvis.model.splits import effective_splits

    p = tmp_path / "splits.json"
    save_splits(DataSplitConfig(
        universe_hash="ab" * 32, constraints=[Constraint(kind="no_split_overlap")],
        train=[Selector(kind="files", paths=["a"])], test=[Selector(kind="files", paths=["b"])],
    ), p)
    both = DataSplitConfig(splits_path=str(p), universe_hash="cd" * 32,
                           val=[Selector(kind="files", paths=["v"])],
                           constraints=[Constraint(kind="no_source_overlap")])
    ours, _ = effective_splits(both)
    theirs = BaseCuvisAIDataModule._effective_splits(SimpleNamespace(splits=both))
    assert ours == theirs and ours.universe_hash == "ab" * 32
    assert ours.val == [Selector(kind="files", paths=["v"])]


def test_folds_are_written_and_found_in_numeric_order(tmp_path: Path) -> None:
    from dvc_cuvis.model.splits import fold_files, fold_path, save_folds

    cfgs = [DataSplitConfig(train=[Selector(kind="files", paths=[f"s{k}"])]) for k in range(11)]
    written = save_folds(cfgs, tmp_path)
    assert written == [tmp_path / f"fold-{k}.json" for k in range(11)]
    assert fold_path(tmp_path, 3) == tmp_path / "fold-3.json"
    assert [load_splits(p) for p in written] == cfgs
    (tmp_path / "fold-x.json").write_text("{}")  # not a fold number: ignored
    (tmp_path / "fold-.json").write_text("{}")
    assert fold_files(tmp_path) == written  # fold-10 after fold-9, not after fold-1


def test_fold_errors_say_what_is_missing(tmp_path: Path) -> None:
    from dvc_cuvis.model.splits import fold_files

    assert _error(fold_files, tmp_path) == (
        f"{tmp_path}: no fold-<k>.json files (bake --folds K writes them)")
    (tmp_path / "fold-x.json").write_text("{}")
    assert "no fold-<k>.json files" in _error(fold_files, tmp_path)
    for k in (0, 1, 3, 5):
        (tmp_path / f"fold-{k}.json").write_text("{}")
    assert _error(fold_files, tmp_path) == f"{tmp_path}: fold(s) [2, 4] missing between 0 and 5"
    (tmp_path / "fold-0.json").unlink()
    assert _error(fold_files, tmp_path) == (
        f"{tmp_path}: fold(s) [0, 2, 4] missing between 0 and 5")


def test_constraints_from_a_params_file_are_validated_with_their_position() -> None:
    from dvc_cuvis.model.splits import parse_constraints

    where = "params.yaml: bake.constraints"
    assert parse_constraints([{"kind": "no_split_overlap", "severity": "warn"},
                              {"kind": "no_train_anomalous"}], where=where) == [
        Constraint(kind="no_split_overlap", severity="warn"),
        Constraint(kind="no_train_anomalous", severity="error")]
    assert parse_constraints([], where=where) == []
    assert _error(parse_constraints, {"kind": "no_split_overlap"}, where=where) == (
        "params.yaml: bake.constraints must be a list of {kind, severity}")
    assert _error(parse_constraints, [{"kind": "no_split_overlap"}, {"kind": "nope"}],
                  where=where) == (
        "params.yaml: bake.constraints: [1].kind: Input should be 'no_split_overlap', "
        "'no_source_overlap' or 'no_train_anomalous'")
    assert _error(parse_constraints, [5], where=where) == (
        "params.yaml: bake.constraints: [0]: Input should be a valid dictionary or instance "
        "of Constraint")
    assert _error(parse_constraints, [{"kind": "no_split_overlap", "level": 1}],
                  where=where) == (
        "params.yaml: bake.constraints: [0].level: Extra inputs are not permitted")
    # the schema allows each kind once: said here, not when the baked config is built
    assert _error(parse_constraints, [{"kind": "no_source_overlap"}, {"kind": "no_split_overlap"},
                                      {"kind": "no_source_overlap", "severity": "warn"}],
                  where=where) == (
        "params.yaml: bake.constraints: Value error, duplicate constraint kind(s): "
        "no_source_overlap")


def test_bake_refuses_a_constraint_listed_twice_in_params(tmp_path: Path, cli) -> None:
    from tests.helpers.files import write_universe_csv

    write_universe_csv(tmp_path / "universe.csv", [("a.cu3s", 0), ("a.cu3s", 1), ("b.cu3s", 0)])
    params = tmp_path / "params.yaml"
    params.write_text("bake:\n  constraints:\n    - {kind: no_split_overlap}\n"
                      "    - {kind: no_split_overlap, severity: warn}\n")
    r = cli("bake", "--params", params, "--universe", tmp_path / "universe.csv",
            "--out", tmp_path / "splits.json")
    assert (r.code, r.out) == (2, "")
    assert r.err == (f"dvc-cuvis: error: {params}: bake.constraints: Value error, duplicate "
                     "constraint kind(s): no_split_overlap\n")
    assert not (tmp_path / "splits.json").exists()


def test_a_baked_split_may_mix_both_concrete_kinds() -> None:
    both = DataSplitConfig(universe_hash="ab" * 32,
                           train=[Selector(kind="files", paths=["a"])],
                           test=[Selector(kind="file_indices", source="b", ids=[0])])
    assert is_baked(both) and state(both) == "baked"
    assert not has_dir_indices(both) and live_kinds(both) == set()
    one_live = both.model_copy(update={"val": [Selector(kind="all")]})
    assert not is_baked(one_live) and state(one_live) == "rule"
    assert live_kinds(one_live) == {"all"}


def test_stage_codes_are_int8() -> None:
    from dvc_cuvis.model.resolution import stage_codes

    codes = stage_codes({s: np.asarray([], dtype=np.int64) for s in ("train", "val", "test")}, 3)
    assert codes.dtype == np.int8 and codes.tolist() == [3, 3, 3]


def test_stage_stats_count_each_category_once_per_sample() -> None:
    uni = Universe.from_records(
        {"source": s, "index": i, "group": g, "category_ids": c}
        for s, i, g, c in [("a", 0, "p1", "1"), ("a", 1, "p1", "1;2"), ("a", 2, "", "2;2;1"),
                           ("b", 0, "p2", "0"), ("b", 1, "p2", ""), ("c", 0, "", "0;3")]
    )
    cfg = DataSplitConfig(train=[Selector(kind="files", paths=["a", "b"])],
                          val=[Selector(kind="files", paths=["c"])],
                          predict=[Selector(kind="file_indices", source="b", ids=[1])])
    stats = stage_stats(resolve(cfg, uni))
    assert stats == {
        # a#0..2 carry category 1 in three different cells, 2 in two; "2;2;1" counts 2 once
        "train": {"samples": 5, "sources": 2, "groups": 3,
                  "categories": {"0": 1, "1": 3, "2": 2}, "anomalous": 3},
        "val": {"samples": 1, "sources": 1, "groups": 1,
                "categories": {"0": 1, "3": 1}, "anomalous": 1},
        # a category no sample of the stage carries is left out, not listed as 0
        "test": {"samples": 0, "sources": 0, "groups": 0, "categories": {}, "anomalous": 0},
        "predict": {"samples": 1, "sources": 1, "groups": 1, "categories": {},
                    "anomalous": 0},
    }
    plain = Universe.from_records({"source": "a", "index": i} for i in range(2))
    no_cats = stage_stats(resolve(DataSplitConfig(train=[Selector(kind="all")]), plain))
    assert no_cats["train"] == {"samples": 2, "sources": 1, "groups": 1}
    assert no_cats["predict"] == {"samples": 2, "sources": 1, "groups": 1}


def test_a_constraint_result_as_json() -> None:
    from dvc_cuvis.model.constraints import ConstraintResult

    many = tuple(f"s{k:03d}" for k in range(101))
    r = ConstraintResult("no_source_overlap", "warn", "violated", 101, many, "101 source(s)")
    assert r.to_dict() == {"kind": "no_source_overlap", "severity": "warn",
                           "status": "violated", "count": 101, "offending": list(many[:100]),
                           "reason": "101 source(s)"}
    assert not r.failed and ConstraintResult("k", "error", "unavailable").failed
    assert ConstraintResult("k", "error", "satisfied").to_dict() == {
        "kind": "k", "severity": "error", "status": "satisfied", "count": 0, "offending": [],
        "reason": ""}


def _upstream_constraints(
    res: Resolution, constraints: list[Constraint], attrs: frozenset[str]
) -> list[tuple]:
    """Upstream's ``evaluate_constraints`` on the same stages, as :func:`_rows`."""
    from cuvis_ai_core.data import selectors as upstream
    from cuvis_ai_schemas.training.data import SampleRef

    def refs(stage: str) -> list[SampleRef]:
        uni = res.universe
        cats = uni.column("category_ids") if uni.has_column("category_ids") else None
        return [SampleRef(source=uni.source(p), index=uni.index(p),
                          category_ids=[int(c) for c in cats[p].split(";") if c] if cats else [])
                for p in res.stages[stage].tolist()]

    got = upstream.evaluate_constraints(refs("train"), refs("val"), refs("test"),
                                        constraints=constraints, available_attrs=attrs)
    return [(r.kind, r.severity, r.status, r.count, list(r.offending), r.reason) for r in got]


def _rows(results: list[ConstraintResult]) -> list[tuple]:
    return [(r.kind, r.severity, r.status, r.count, list(r.offending), r.reason) for r in results]


def test_every_constraint_kind_pinned_and_equal_to_upstream() -> None:
    from dvc_cuvis.model.resolution import Resolution

    rows = [("a", 0, "1"), ("a", 1, "0"), ("b", 0, "0"), ("b", 1, ""), ("c", 0, "2"),
            ("c", 1, "0"), ("d", 0, "0"), ("e", 0, "3")]
    uni = Universe.from_records({"source": s, "index": i, "category_ids": c} for s, i, c in rows)
    at = {uni.uids()[p]: p for p in range(len(uni))}
    pos = lambda *u: np.asarray([at[x] for x in u], dtype=np.int64)  # noqa: E731
    res = Resolution(uni, {"train": pos("a#0", "a#1", "b#0", "b#1"),
                           "val": pos("a#1", "b#0", "c#0", "c#1"),
                           "test": pos("b#1", "c#0", "c#1", "e#0"),
                           "predict": pos()})
    constraints = [Constraint(kind="no_train_anomalous", severity="warn"),
                   Constraint(kind="no_split_overlap"),
                   Constraint(kind="no_source_overlap", severity="warn")]
    expected = [
        ("no_train_anomalous", "warn", "violated", 1, ["a"],
         "1 source(s) with an anomalous frame in train"),
        ("no_split_overlap", "error", "violated", 5, ["a#1", "b#0", "b#1", "c#0", "c#1"],
         "2 shared between train and val; 1 shared between train and test; "
         "2 shared between val and test"),
        ("no_source_overlap", "warn", "violated", 3, ["a", "b", "c"],
         "3 source(s) span >1 of train/val/test"),
    ]
    got = evaluate_constraints(res, constraints)  # attrs default: the universe has category_ids
    assert _rows(got) == expected
    assert _upstream_constraints(res, constraints, frozenset({"category_ids"})) == expected
    assert [r.kind for r in failed_constraints(got)] == ["no_split_overlap"]

    clean = Resolution(uni, {"train": pos("b#0", "d#0"), "val": pos("a#0"), "test": pos("c#1"),
                             "predict": pos()})
    assert _rows(evaluate_constraints(clean, constraints)) == [
        (c.kind.value, c.severity.value, "satisfied", 0, [], "") for c in constraints]


def test_anomalous_in_train_is_unavailable_without_labels_and_the_rest_still_runs() -> None:
    from dvc_cuvis.model.resolution import Resolution

    uni = Universe.from_records({"source": s, "index": 0} for s in ("a", "b"))
    res = Resolution(uni, {"train": np.asarray([0, 1]), "val": np.asarray([1]),
                           "test": np.asarray([], dtype=np.int64), "predict": np.asarray([0])})
    constraints = [Constraint(kind="no_train_anomalous"), Constraint(kind="no_split_overlap")]
    got = evaluate_constraints(res, constraints)  # no category_ids column: no labels
    assert _rows(got) == [
        ("no_train_anomalous", "error", "unavailable", 0, [],
         "the universe has no category_ids column"),
        ("no_split_overlap", "error", "violated", 1, ["b#0"], "1 shared between train and val"),
    ]
    assert [r.kind for r in failed_constraints(got)] == ["no_train_anomalous", "no_split_overlap"]
    # labels said to be available: evaluated (no category id on any row: nothing anomalous)
    told = evaluate_constraints(res, constraints[:1], available_attrs=frozenset({"category_ids"}))
    assert _rows(told) == [("no_train_anomalous", "error", "satisfied", 0, [], "")]
    labelled = Universe.from_records({"source": s, "index": 0, "category_ids": "1"}
                                     for s in ("a", "b"))
    hidden = evaluate_constraints(Resolution(labelled, res.stages), constraints[:1],
                                  available_attrs=frozenset())
    assert hidden[0].status == "unavailable"


def test_source_overlap_names_each_source_as_first_resolved() -> None:
    from dvc_cuvis.model.resolution import Resolution

    # two spellings of one Windows file: compared case-folded, named as train first lists it
    uni = Universe.from_records({"source": s, "index": 0}
                                for s in ("C:/Data/x.cu3s", "c:/data/X.cu3s", "y.cu3s"))
    assert uni.uids() == ["C:/Data/x.cu3s#0", "c:/data/X.cu3s#0", "y.cu3s#0"]
    res = Resolution(uni, {"train": np.asarray([2, 1]), "val": np.asarray([0]),
                           "test": np.asarray([], dtype=np.int64), "predict": np.asarray([0])})
    c = [Constraint(kind="no_source_overlap")]
    expected = [("no_source_overlap", "error", "violated", 1, ["c:/data/X.cu3s"],
                 "1 source(s) span >1 of train/val/test")]
    assert _rows(evaluate_constraints(res, c)) == expected
    assert _upstream_constraints(res, c, frozenset()) == expected


def test_group_leakage_modes_and_offenders() -> None:
    from dvc_cuvis.model.resolution import Resolution

    rows = [("a", "p1"), ("b", "p1"), ("c", "p2"), ("d", ""), ("e", "p3"), ("f", "p3")]
    uni = Universe.from_records({"source": s, "index": 0, "group": g} for s, g in rows)
    stages = {"train": np.asarray([0, 2, 4, 5]), "val": np.asarray([1, 3]),
              "test": np.asarray([2]), "predict": np.asarray([], dtype=np.int64)}
    res = Resolution(uni, stages)
    leak = ("group_leakage", "error", "violated", 2, ["p1", "p2"],
            "2 group(s) span >1 of train/val/test")
    assert _rows(evaluate_constraints(res, [])) == [leak]  # auto: the universe has groups
    assert _rows(evaluate_constraints(res, [], group_leakage="error")) == [leak]
    assert _rows(evaluate_constraints(res, [], group_leakage="warn")) == [
        ("group_leakage", "warn", *leak[2:])]
    assert evaluate_constraints(res, [], group_leakage="off") == []
    ungrouped = Universe.from_records({"source": s, "index": 0} for s, _ in rows)
    plain = Resolution(ungrouped, stages)
    assert evaluate_constraints(plain, []) == []  # auto without a group column: off
    # asked for anyway: every source is its own group, c spans train and test
    assert _rows(evaluate_constraints(plain, [], group_leakage="warn")) == [
        ("group_leakage", "warn", "violated", 1, ["c"], "1 group(s) span >1 of train/val/test")]
    disjoint = Resolution(uni, {**stages, "test": np.asarray([], dtype=np.int64),
                                "val": np.asarray([3])})
    assert _rows(evaluate_constraints(disjoint, [])) == [
        ("group_leakage", "error", "satisfied", 0, [], "")]


def test_only_a_pinned_split_with_dir_indices_guards_its_universe() -> None:
    from dvc_cuvis.model.resolution import check_pinned_universe

    uni = Universe.from_records({"source": "a", "index": i} for i in range(3))
    grown = Universe.from_records({"source": "a", "index": i} for i in range(4))
    positional = DataSplitConfig(universe_hash=uni.hash,
                                 train=[Selector(kind="dir_indices", ids=[2])])
    check_pinned_universe(positional, uni)  # its own universe: fine
    message = (f"universe changed since the split was written (pinned {uni.hash[:12]}..., "
               f"now {grown.hash[:12]}...) and it still uses positional dir_indices; re-bake it "
               "(`dvc-cuvis bake --rule ...`)")
    assert _error(check_pinned_universe, positional, grown) == f"splits.json: {message}"
    assert _error(check_pinned_universe, positional, grown, where="s.json") == f"s.json: {message}"
    assert _error(resolve, positional, grown, where="s.json") == f"s.json: {message}"
    assert _error(resolve, positional, grown) == f"splits.json: {message}"
    # unpinned positional, or pinned without positions: upstream's guard does not apply
    unpinned = positional.model_copy(update={"universe_hash": None})
    assert resolve(unpinned, grown).uids("train") == ["a#2"]
    by_name = DataSplitConfig(universe_hash=uni.hash,
                              train=[Selector(kind="file_indices", source="a", ids=[3])])
    assert resolve(by_name, grown).uids("train") == ["a#3"]


def test_resolve_prefixes_errors_with_where_only_when_given() -> None:
    uni = Universe.from_records({"source": "a", "index": i} for i in range(2))
    cfg = DataSplitConfig(train=[Selector(kind="all")],
                          test=[Selector(kind="files", paths=["a"]),
                                Selector(kind="files", paths=["z"])])
    bare = _error(resolve, cfg, uni)
    assert bare == ("test[1]: selector files('z') matched 0 samples — source 'z' is not in the "
                    "universe (a selector must match at least one sample; fix or remove it)")
    assert _error(resolve, cfg, uni, where="s.json") == f"s.json: {bare}"


def test_resolve_uses_the_name_map_and_keeps_an_explicit_predict() -> None:
    uni = Universe.from_records(
        {"source": "a", "index": i, "category_ids": c} for i, c in enumerate(["0", "2", "2;5"]))
    cfg = DataSplitConfig(train=[Selector(kind="categories", any_of=["scratch"])],
                          val=[Selector(kind="file_indices", source="a", ids=[0, 7])],
                          predict=[Selector(kind="file_indices", source="a", ids=[2]),
                                   Selector(kind="file_indices", source="a", ids=[0])])
    res = resolve(cfg, uni, name_to_id={"scratch": 5})
    assert res.as_uid_lists() == {"train": ["a#2"], "val": ["a#0"], "test": [],
                                  "predict": ["a#2", "a#0"]}
    assert res.predict_is_all is False
    assert [w.message() for w in res.warnings] == [
        "val[0]: selector 'file_indices' of 'a' matched 1 of 2 requested indices; missing: 7"]
    whole = resolve(cfg.model_copy(update={"predict": []}), uni, name_to_id={"scratch": 5})
    assert whole.predict_is_all is True and whole.uids("predict") == ["a#0", "a#1", "a#2"]
    assert whole.stages["predict"].dtype == np.int64
