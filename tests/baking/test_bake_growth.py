"""The hash strategy on few groups: every non-zero stage is filled, and growth moves only loans."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dvc_cuvis.baking import NON_EMPTY_STAGES, BakeOptions, bake
from dvc_cuvis.model.universe import Universe
from tests.helpers.files import write_universe_csv

names = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)


def _uni(groups: list[str]) -> Universe:
    rows = [(f"{g}/rec.npz", i) for g in groups for i in range(2)]
    return Universe.from_records([{"source": s, "index": i, "group": s.split("/")[0]}
                                  for s, i in rows])


def _stage_of_group(uni: Universe, opts: BakeOptions) -> tuple[dict[str, str], list[str]]:
    (b,) = bake(uni, opts)
    out = {}
    for stage in ("train", "val", "test"):
        for p in b.stages[stage].tolist():
            out[uni.uid(p).split("/")[0]] = stage
    return out, list(b.metrics.get("lent_groups", []))


ratios = st.tuples(st.sampled_from([0.1, 0.15, 0.2, 0.25, 0.3]),
                   st.sampled_from([0.1, 0.15, 0.2, 0.25, 0.3]))


@settings(max_examples=120, deadline=None)
@given(st.lists(names, min_size=3, max_size=30, unique=True), ratios, st.integers(0, 50))
def test_every_nonzero_stage_is_filled_with_enough_groups(groups, r, seed) -> None:
    opts = BakeOptions(strategy="hash", seed=seed, val_ratio=r[0], test_ratio=r[1],
                       group_by="group")
    where, _ = _stage_of_group(_uni(groups), opts)
    assert set(where.values()) == {"train", "val", "test"}
    assert len(where) == len(groups)  # every group placed once


@settings(max_examples=120, deadline=None)
@given(st.lists(names, min_size=6, max_size=40, unique=True), st.integers(3, 20), ratios,
       st.integers(0, 50), st.integers(1, 4))
def test_growth_moves_only_lent_groups(pool, n0, r, seed, steps) -> None:
    opts = BakeOptions(strategy="hash", seed=seed, val_ratio=r[0], test_ratio=r[1],
                       group_by="group")
    n0 = min(n0, len(pool) - 1)
    sizes = sorted({n0, *[n0 + (len(pool) - n0) * k // steps for k in range(1, steps + 1)]})
    before, lent_before = _stage_of_group(_uni(pool[:sizes[0]]), opts)
    for n in sizes[1:]:
        after, lent_after = _stage_of_group(_uni(pool[:n]), opts)
        moved = {g for g in before if after[g] != before[g]}
        assert moved <= set(lent_before) | set(lent_after), (moved, lent_before, lent_after)
        if not lent_before:
            assert not moved  # a split that needed no loan never moves a sample
        before, lent_before = after, lent_after


def test_bake_refuses_an_empty_stage_and_writes_nothing(tmp_path: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_universe_csv(tmp_path / "universe.csv", [("a", 0), ("b", 0)])
    r = cli("bake", "--group-by", "source")  # 2 groups cannot fill train, val and test
    assert r.code == 1
    assert "stage(s) " in r.err and "received no sample" in r.err and "--allow-empty" in r.err
    assert not (tmp_path / "splits.json").exists()
    r = cli("bake", "--group-by", "source", "--allow-empty", "--metrics", "m.json")
    assert r.code == 0 and "received no sample" in r.err
    checks = json.loads((tmp_path / "m.json").read_text())["constraints"]
    (ne,) = [c for c in checks if c["kind"] == NON_EMPTY_STAGES]
    assert ne["status"] == "violated" and ne["severity"] == "warn"


def test_random_strategy_empty_stage_is_refused_too(tmp_path: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_universe_csv(tmp_path / "universe.csv", [(f"s{i}", 0) for i in range(2)])
    r = cli("bake", "--strategy", "random", "--test-ratio", "0.1")
    assert r.code == 1 and "received no sample" in r.err
