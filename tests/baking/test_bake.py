"""Bake strategies: upstream equivalence, stability under growth, folds, csv/rule/base, errors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from cuvis_ai_schemas.training.data import DataSplitConfig, SampleRef, Selector
from hypothesis import given, settings
from hypothesis import strategies as st

from dvc_cuvis.baking import BakeOptions, bake, compact_ids, iterative_stratify
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.split_state import is_baked
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe import Universe
from tests.helpers.files import write_universe_csv


def _upstream_resolvers():
    cuvis_ai_dataloader = pytest.importorskip("cuvis_ai_dataloader")  # the reference

    path = Path(cuvis_ai_dataloader.__file__).parent / "data" / "resolvers.py"
    spec = importlib.util.spec_from_file_location("_upstream_resolvers", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # the package __init__ imports torch; this file does not
    return mod


UPSTREAM = _upstream_resolvers()
STAGES3 = ("train", "val", "test")


def make_universe(seed: int, n_sources: int = 23, groups: int = 7) -> Universe:
    rng = np.random.default_rng(seed)
    recs = []
    for s in range(n_sources):
        for i in range(int(rng.integers(1, 6))):
            recs.append({
                "source": f"d{s % 4}/s{s:02d}.cu3s", "index": i,
                "category_ids": str(int(rng.integers(1, 4))) if rng.random() < 0.3 else "",
                "group": f"g{s % groups}" if groups else "",
            })
    return Universe.from_records(recs)


def membership(cfg: DataSplitConfig, uni: Universe) -> dict[str, set[str]]:
    res = resolve(cfg, uni)
    return {s: set(res.uids(s)) for s in ("train", "val", "test")}


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    data_seed=st.integers(0, 10_000),
    strategy=st.sampled_from(["random", "stratified"]),
    group_by=st.sampled_from([None, "source", "group"]),
    ad_aware=st.booleans(),
    val=st.sampled_from([0.0, 0.1, 0.2, 0.25, 0.3]),
    test=st.sampled_from([0.0, 0.15, 0.2, 0.25]),
)
def test_random_and_stratified_match_resolve_splits(
    seed, data_seed, strategy, group_by, ad_aware, val, test
) -> None:
    uni = make_universe(data_seed, n_sources=int(np.random.default_rng(data_seed).integers(1, 30)))
    refs = [SampleRef(source=uni.source(p), index=uni.index(p),
                      category_ids=list(uni.category_ids[p]), group=uni.value("group", p) or None)
            for p in range(len(uni))]
    fn = getattr(UPSTREAM, f"resolve_{strategy}")
    up = fn(refs, val_ratio=val, test_ratio=test, seed=seed, group_by=group_by, ad_aware=ad_aware)
    ours = bake(uni, BakeOptions(strategy=strategy, seed=seed, val_ratio=val, test_ratio=test,
                                 group_by=group_by or "sample", ad_aware=ad_aware,
                                 allow_empty=True))[0]  # upstream leaves tiny stages empty
    upstream_members = {s: {r.uid for r in UPSTREAM_resolve(up, refs, s)} for s in
                        ("train", "val", "test")}
    assert membership(ours.config, uni) == upstream_members


def UPSTREAM_resolve(cfg: DataSplitConfig, refs: list[SampleRef], stage: str) -> list[SampleRef]:
    from cuvis_ai_core.data.selectors import resolve_selectors

    return resolve_selectors(getattr(cfg, stage), refs)


def test_baked_output_is_canonical_and_pinned() -> None:
    uni = make_universe(1)
    (b,) = bake(uni, BakeOptions(seed=3))
    cfg = b.config
    assert is_baked(cfg) and cfg.universe_hash == uni.hash
    assert [c.kind.value for c in cfg.constraints] == ["no_split_overlap", "no_train_anomalous"]
    for stage in ("train", "val", "test"):
        sources = [s.source for s in getattr(cfg, stage)]
        assert sources == sorted(sources)
    assert cfg.predict == []
    everything = set().union(*membership(cfg, uni).values())
    assert everything == set(uni.uids())


def test_hash_strategy_never_moves_existing_samples() -> None:
    old = make_universe(5, n_sources=40, groups=0)
    grown_records = [old.sample(p) for p in range(len(old))]
    recs = [{"source": s.source, "index": s.index, **s.extra} for s in grown_records]
    recs += [{"source": f"new/s{k}.cu3s", "index": i, "category_ids": "", "group": ""}
             for k in range(4) for i in range(3)]
    recs += [{"source": "d1/s01.cu3s", "index": 99, "category_ids": "", "group": ""}]
    new = Universe.from_records(recs)
    opts = BakeOptions(seed=11, group_by="source")
    before = membership(bake(old, opts)[0].config, old)
    after = membership(bake(new, opts)[0].config, new)
    for stage in before:
        assert before[stage] <= after[stage], stage
    stage_of_s01 = next(s for s in after if "d1/s01.cu3s#0" in after[s])
    assert "d1/s01.cu3s#99" in after[stage_of_s01]  # a new frame follows its session


def test_group_by_auto_keeps_groups_together() -> None:
    uni = make_universe(2, n_sources=30, groups=6)
    res = resolve(bake(uni, BakeOptions(seed=1))[0].config, uni)
    names, codes = uni.groups()
    for g in range(len(names)):
        rows = set(np.flatnonzero(codes == g).tolist())
        stages = {s for s in ("train", "val", "test") if rows & set(res.stages[s].tolist())}
        assert len(stages) == 1


def test_multilabel_spreads_every_category() -> None:
    recs = []
    for s in range(60):
        for i in range(4):
            cat = (s % 3) + 1 if i % 2 else 0
            recs.append({"source": f"s{s:02d}", "index": i,
                         "category_ids": f"{cat};4" if s % 10 == 0 else str(cat)})
    uni = Universe.from_records(recs)
    (b,) = bake(uni, BakeOptions(strategy="multilabel", seed=0, group_by="source"))
    stats = b.metrics["stages"]
    for stage in ("train", "val", "test"):
        assert {"1", "2", "3", "4"} <= set(stats[stage]["categories"]), stage
    share = stats["val"]["samples"] / len(uni)
    assert 0.15 <= share <= 0.25


def test_iterative_stratify_is_deterministic_and_complete() -> None:
    labels = [{1: 2}, {2: 1}, {}, {1: 1, 2: 1}, {3: 5}, {}]
    a = iterative_stratify(labels, [2, 1, 3, 2, 5, 1], [0.6, 0.2, 0.2], seed=4)
    b = iterative_stratify(labels, [2, 1, 3, 2, 5, 1], [0.6, 0.2, 0.2], seed=4)
    assert a.tolist() == b.tolist() and set(a.tolist()) <= {0, 1, 2} and (a >= 0).all()


@pytest.mark.parametrize("strategy", ["hash", "random", "stratified", "multilabel"])
def test_folds_partition_the_non_test_groups(strategy: str) -> None:
    uni = make_universe(8, n_sources=40, groups=0)
    folds = bake(uni, BakeOptions(strategy=strategy, folds=4, seed=2, group_by="source"))
    assert len(folds) == 4
    tests = [membership(b.config, uni)["test"] for b in folds]
    assert all(t == tests[0] for t in tests)
    vals = [membership(b.config, uni)["val"] for b in folds]
    rest = set(uni.uids()) - tests[0]
    assert set().union(*vals) == rest
    assert sum(len(v) for v in vals) == len(rest)  # disjoint
    assert all(vals), "every fold has a validation set"
    for b, v in zip(folds, vals, strict=True):
        assert membership(b.config, uni)["train"] == rest - v
        assert b.metrics["folds"] == 4


def test_from_csv_split_column(tmp_path: Path) -> None:
    p = tmp_path / "u.csv"
    p.write_text("source,index,split\nb.cu3s,0-3,train\na.cu3s,2,test\nb.cu3s,5,val\n"
                 "a.cu3s,1,test\na.cu3s,0,predict\nc.cu3s,0,\n")
    from dvc_cuvis.model.universe_io import read_universe

    uni = read_universe(p)
    (b,) = bake(uni, BakeOptions(), from_csv=True)
    m = membership(b.config, uni)
    assert m["train"] == {f"b.cu3s#{i}" for i in range(4)}
    assert m["test"] == {"a.cu3s#1", "a.cu3s#2"} and m["val"] == {"b.cu3s#5"}
    assert resolve(b.config, uni).uids("predict") == ["a.cu3s#0"]
    assert b.config.train[0].ids == ["0-3"]
    p.write_text("source,index,split\na,0,Train\n")
    with pytest.raises(DvcCuvisError, match=r"u.csv:2: split value 'Train' of a#0"):
        bake(read_universe(p), BakeOptions(), from_csv=True)


def test_rule_is_resolved_and_frozen() -> None:
    uni = make_universe(3)
    rule = DataSplitConfig(
        train=[Selector(kind="glob", pattern="d1/*")],
        val=[Selector(kind="dir_indices", ids=["0-2"])],
        test=[Selector(kind="except", of=[Selector(kind="all"),
                                          Selector(kind="glob", pattern="d[01]/*")])],
        constraints=[],
    )
    (b,) = bake(uni, BakeOptions(), rule=rule)
    assert is_baked(b.config) and b.config.constraints == []
    assert membership(b.config, uni) == membership(rule, uni)


def test_base_keeps_assignments_and_places_new_samples() -> None:
    uni = make_universe(4, n_sources=20, groups=0)
    (first,) = bake(uni, BakeOptions(strategy="random", seed=1, group_by="source"))
    recs = [{"source": s.source, "index": s.index, **s.extra} for s in uni]
    recs += [{"source": "zz/new.cu3s", "index": i, "category_ids": "", "group": ""}
             for i in range(3)]
    grown = Universe.from_records(recs)
    (second,) = bake(grown, BakeOptions(strategy="hash", group_by="source"), base=first.config)
    before, after = membership(first.config, uni), membership(second.config, grown)
    for s in before:
        assert before[s] <= after[s]
    assert second.metrics["base"] == {"kept": len(uni), "added": 3, "removed": 0,
                                      "removed_samples": []}
    shrunk = uni.take(np.arange(1, len(uni)))
    with pytest.raises(DvcCuvisError, match=r"1 sample\(s\) of the base split left the universe"):
        bake(shrunk, BakeOptions(), base=first.config)
    (third,) = bake(shrunk, BakeOptions(allow_removed=True), base=first.config)
    assert third.metrics["base"]["removed"] == 1


def test_compact_ids() -> None:
    assert compact_ids([5, 1, 2, 3, 9, 10, 3]) == ["1-3", 5, 9, 10]
    assert compact_ids([0, 1, 2, 3], ranges=False) == [0, 1, 2, 3]
    assert compact_ids([]) == []


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (BakeOptions(strategy="nope"), "unknown strategy 'nope'"),
        (BakeOptions(val_ratio=0.5, test_ratio=0.5), "must be below 1"),
        (BakeOptions(val_ratio=-0.1), "^val_ratio must be a number in"),
        (BakeOptions(folds=1), "folds must be 0"),
        (BakeOptions(strategy="multilabel", group_by="source"), "needs a category_ids column"),
    ],
)
def test_bad_options(opts: BakeOptions, message: str) -> None:
    uni = Universe.from_records([{"source": "a", "index": 0}])
    with pytest.raises(DvcCuvisError, match=message):
        bake(uni, opts)


def test_bake_cli_writes_atomically_and_fails_cleanly(tmp_path: Path, cli) -> None:
    universe = write_universe_csv(tmp_path / "u.csv", [(f"s{i}.cu3s", j) for i in range(12)
                                                       for j in range(3)])
    out, metrics = tmp_path / "splits.json", tmp_path / "m" / "splits.json"
    r = cli("bake", "--universe", universe, "--out", out, "--metrics", metrics, "--seed", "5")
    assert r.code == 0, r.err
    cfg = load_splits(out)
    m = json.loads(metrics.read_text())
    assert m["universe_hash"] == cfg.universe_hash and m["constraints_ok"]
    assert sum(m["stages"][s]["samples"] for s in ("train", "val", "test")) == 36
    before = out.read_bytes()
    r = cli("bake", "--universe", universe, "--out", out, "--test-ratio", "0.9")
    assert r.code == 2 and "must be below 1" in r.err
    assert out.read_bytes() == before
    r = cli("bake", "--universe", universe, "--out", out, "--strategy", "bogus")
    assert r.code == 2
    r = cli("bake", "--universe", universe, "--folds", "3", "--out-dir", tmp_path / "folds")
    assert r.code == 0 and len(list((tmp_path / "folds").glob("fold-*.json"))) == 3
    assert not list(tmp_path.rglob("*.tmp"))


def test_single_sample_files_are_named_in_one_files_selector() -> None:
    recs = [{"source": f"frames/f{k:03d}.npz", "index": 0, "format": "npz"} for k in range(30)]
    recs += [{"source": "rec.cu3s", "index": i, "format": "cu3s"} for i in range(5)]
    uni = Universe.from_records(recs)
    (b,) = bake(uni, BakeOptions(seed=2, group_by="source"))
    for stage in STAGES3:
        kinds = [s.kind.value for s in getattr(b.config, stage)]
        assert kinds.count("files") <= 1 and kinds[1:].count("files") == 0
    files = [s for st in STAGES3 for s in getattr(b.config, st) if s.kind.value == "files"]
    assert sum(len(s.paths) for s in files) == 30
    assert all(s.paths == sorted(s.paths) for s in files)
    res = resolve(b.config, uni)
    assert sum(len(res.stages[s]) for s in STAGES3) == len(uni)
    assert membership(b.config, uni) == {s: set(res.uids(s)) for s in STAGES3}


def _background_universe(seed: int) -> Universe:
    """Sources whose frames carry no id, only background ("0", "0;0"), or a defect id."""
    rng = np.random.default_rng(seed)
    cells = ["", "0", "0;0", "1", "2;0"]
    return Universe.from_records(
        {"source": f"s{s:02d}.cu3s", "index": i, "category_ids": cells[int(rng.integers(5))]}
        for s in range(int(rng.integers(4, 25))) for i in range(int(rng.integers(1, 4))))


@pytest.mark.parametrize("strategy", ["hash", "multilabel"])
def test_background_only_samples_are_train_eligible_where_the_rule_applies(strategy) -> None:
    """The one rule (ids != 0): a sample labelled only "0" is normal for --ad-aware."""
    uni = Universe.from_records(
        {"source": f"s{k}.cu3s", "index": 0, "category_ids": c}
        for k, c in enumerate(["", "0", "0;0", "1", "2;0", "0", "3"]))
    opts = BakeOptions(strategy=strategy, seed=0, val_ratio=0.0, test_ratio=0.0,
                       group_by="sample", ad_aware=True)
    train = membership(bake(uni, opts)[0].config, uni)["train"]
    assert train == {"s0.cu3s#0", "s1.cu3s#0", "s2.cu3s#0", "s5.cu3s#0"}
    folds = bake(uni, BakeOptions(**{**opts.__dict__, "strategy": "hash", "folds": 2,
                                    "val_ratio": 0.2}))
    for fold in folds:  # folds exist only here: they use the rule too
        ids = {u for u in membership(fold.config, uni)["train"]}
        assert not ids & {"s3.cu3s#0", "s4.cu3s#0", "s6.cu3s#0"}
        assert ids & {"s1.cu3s#0", "s2.cu3s#0", "s5.cu3s#0"}


@pytest.mark.parametrize("strategy", ["random", "stratified"])
@pytest.mark.parametrize("seed", range(6))
def test_drop_in_strategies_keep_resolve_splits_notion_for_parity(strategy, seed) -> None:
    """The named exception: random/stratified --ad-aware call a "0"-only sample anomalous,
    exactly as resolve-splits does (membership compared with it)."""
    uni = _background_universe(seed)
    refs = [SampleRef(source=uni.source(p), index=uni.index(p),
                      category_ids=list(uni.category_ids[p])) for p in range(len(uni))]
    up = getattr(UPSTREAM, f"resolve_{strategy}")(refs, val_ratio=0.2, test_ratio=0.2,
                                                  seed=seed, group_by=None, ad_aware=True)
    ours = bake(uni, BakeOptions(strategy=strategy, seed=seed, group_by="sample",
                                 ad_aware=True))[0]
    upstream_members = {s: {r.uid for r in UPSTREAM_resolve(up, refs, s)} for s in STAGES3}
    assert membership(ours.config, uni) == upstream_members
    background = {uni.uid(p) for p in range(len(uni)) if uni.category_ids[p]
                  and not any(uni.category_ids[p])}
    assert background and not background & upstream_members["train"]  # "any id"


# -- splitters behind one protocol; metrics from positions; typed verdicts ------------------


@pytest.mark.parametrize("strategy", ["hash", "random", "stratified", "multilabel"])
def test_each_strategy_is_a_splitter_and_folds_wrap_any_of_them(strategy: str) -> None:
    from dvc_cuvis.baking import SPLITTERS, STRATEGIES, Folds, Groups, splitter

    uni = make_universe(11, n_sources=30, groups=0)
    uni = Universe.from_records([{**r.extra, "source": r.source, "index": r.index,
                                  "category_ids": r.extra["category_ids"] or "1"}
                                 for r in uni]) if strategy == "multilabel" else uni
    opts = BakeOptions(strategy=strategy, seed=5)
    split = splitter(opts)
    assert type(split) is SPLITTERS[strategy] and tuple(SPLITTERS) == STRATEGIES
    groups = Groups.of(uni, "source")
    codes = split.assign(groups)
    assert codes.dtype == np.int8 and set(codes.tolist()) <= {0, 1, 2}
    # the bake is exactly the splitter's codes, row by row
    (baked,) = bake(uni, opts)
    for code, stage in enumerate(STAGES3):
        assert baked.stages[stage].tolist() == np.flatnonzero(codes[groups.of_row] == code).tolist()
    # a view of some groups is assigned as its own group list (what --base uses)
    some = np.arange(0, len(groups), 3)
    view = groups.take(some)
    assert view.names == [groups.names[g] for g in some.tolist()] and len(view) == len(some)
    assert len(split.assign(view)) == len(some)
    # folds: one holdout, every other group validated exactly once
    k = 3
    folds = Folds(splitter(BakeOptions(strategy=strategy, seed=5, folds=k), val_ratio=0.0), k)
    per_fold = folds.split(groups)
    test = per_fold[0] == 2
    assert all(((f == 2) == test).all() for f in per_fold)
    val_count = sum((f == 1).astype(int) for f in per_fold)
    assert (val_count[~test] == 1).all() and (val_count[test] == 0).all()
    baked_folds = bake(uni, BakeOptions(strategy=strategy, seed=5, folds=k))
    for f, b in zip(per_fold, baked_folds, strict=True):
        assert b.stages["val"].tolist() == np.flatnonzero(f[groups.of_row] == 1).tolist()
        assert b.fold is not None and b.prefix == f"fold {b.fold}: "


def test_metrics_come_from_the_positions_not_from_resolving_the_config(monkeypatch) -> None:
    import dvc_cuvis.baking.assign as assign_mod
    import dvc_cuvis.baking.write as write_mod
    from dvc_cuvis.model.constraints import evaluate_constraints
    from dvc_cuvis.model.stats import stage_stats

    uni = make_universe(3)
    want = [json.dumps(b.metrics) for b in bake(uni, BakeOptions(seed=2, predict="test"))]
    calls: list[int] = []
    real = write_mod.resolve
    counting = lambda *a, **k: calls.append(1) or real(*a, **k)  # noqa: E731
    for mod in (write_mod, assign_mod):  # every module of the bake that may resolve
        monkeypatch.setattr(mod, "resolve", counting)
    (baked,) = bake(uni, BakeOptions(seed=2, predict="test"))
    assert calls == [] and [json.dumps(baked.metrics)] == want
    # and they are what resolving the written config gives
    res = real(baked.config, uni)
    assert baked.metrics["stages"] == stage_stats(res)
    assert baked.metrics["constraints"][:-1] == [
        r.to_dict() for r in evaluate_constraints(res, baked.config.constraints)]
    # two sources that are one path once normalized: the file means what resolving it gives
    twins = Universe.from_records([{"source": "a/b.npz", "index": 0, "format": "npz"},
                                   {"source": "a//b.npz", "index": 0, "format": "npz"},
                                   {"source": "c.npz", "index": 0, "format": "npz"}])
    (b2,) = bake(twins, BakeOptions(group_by="sample", allow_empty=True))
    assert calls == [1]
    assert b2.metrics["stages"] == stage_stats(real(b2.config, twins))


def test_baked_carries_typed_verdicts_and_the_cli_prints_them(tmp_path: Path, cli) -> None:
    uni = Universe.from_records([{"source": f"s{k}.cu3s", "index": 0} for k in range(2)])
    (b,) = bake(uni, BakeOptions(allow_empty=True))
    assert b.empty_stages and set(b.empty_stages) <= {"val", "test"}
    assert b.empty_warning() == (f"stage(s) {', '.join(b.empty_stages)} received no sample "
                                 f"({b.counts_text()})")
    assert b.counts == {s: b.metrics["stages"][s]["samples"] for s in STAGES3}
    assert b.source == "hash" and b.fold is None and b.warnings == []
    checked = b.results[-1]
    assert checked.kind == "non_empty_stages" and checked.status == "violated"
    assert b.metrics["constraints"][-1] == checked.to_dict()
    # a failed constraint is a typed warning (a group across stages)
    grouped = Universe.from_records([{"source": f"s{k}.cu3s", "index": 0, "group": "one"}
                                     for k in range(6)])
    (g,) = bake(grouped, BakeOptions(group_by="source"))
    assert g.metrics["constraints_ok"] is False
    assert g.warnings == ["the baked split fails constraint(s) group_leakage; see the split "
                          "metrics"]
    (tmp_path / "u.csv").write_text("source,index,group\n" + "".join(
        f"s{k}.cu3s,0,one\n" for k in range(6)), encoding="utf-8")
    r = cli("bake", "--no-params", "--universe", tmp_path / "u.csv", "--out",
            tmp_path / "s.json", "--group-by", "source")
    assert r.code == 0, r.err
    assert f"dvc-cuvis: warning: {g.warnings[0]}" in r.err


def test_bake_defaults_have_one_home(tmp_path: Path) -> None:
    """BakeOptions, the CLI's --help and init's params template all take the spec's defaults."""
    import argparse
    import dataclasses

    import yaml

    from dvc_cuvis.baking import SPLITTERS
    from dvc_cuvis.cli.bake import add_parser
    from dvc_cuvis.config.specs import BAKE, STRATEGIES
    from dvc_cuvis.errors import ParamsError
    from dvc_cuvis.repo.project import init_project

    assert tuple(SPLITTERS) == STRATEGIES == BAKE["strategy"].choices
    defaults = BakeOptions()
    for f in dataclasses.fields(BakeOptions):
        if f.name in BAKE.options:
            assert getattr(defaults, f.name) == BAKE.default(f.name), f.name
    assert defaults.ranges is not BAKE.default("no_ranges")
    init_project(tmp_path, fmt="npz", root="data", force=False, track=False,
                 files_only=True)
    section = yaml.safe_load((tmp_path / "params.yaml").read_text())["bake"]
    knobs = {k: section[k] for k in ("strategy", "seed", "val_ratio", "test_ratio", "group_by")}
    assert knobs == {k: getattr(defaults, k) for k in knobs}
    sub = argparse.ArgumentParser().add_subparsers()
    add_parser(sub)
    text = sub.choices["bake"].format_help()
    assert "(default: hash)" in text and "(default: 0.2)" in text
    # the library builds the options from a params section, as the CLI does
    opts = BakeOptions.from_section({**section, "folds": 3, "ad_aware": True})
    assert (opts.strategy, opts.folds, opts.ad_aware) == ("hash", 3, True)
    with pytest.raises(ParamsError, match="did you mean 'val_ratio'"):
        BakeOptions.from_section({"val_ration": 0.1})
