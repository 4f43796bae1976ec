"""splits.json I/O, rule vs baked, resolution, constraints (golden cases), leakage, stats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cuvis_ai_schemas.training.data import Constraint, DataSplitConfig, Selector

from dvc_cuvis.errors import DvcCuvisError, SelectorError, SplitsFileError
from dvc_cuvis.model.categories import load_category_map, parse_category_map
from dvc_cuvis.model.constraints import evaluate_constraints, failed_constraints
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.selectors import Resolver, expand_ids, required_attrs
from dvc_cuvis.model.split_state import is_baked, state
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


