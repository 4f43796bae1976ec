"""The spectra of a split from stored summaries: SMD balance, grids, categories, bad shards."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.materialize.summaries import summarize, to_record
from dvc_cuvis.materialize.summary_store import shard_of, write_shard
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.review.spectra import (
    StageSpectrum,
    plot_rows,
    shifted_ranges,
    smd,
    split_spectra,
)

WL = np.arange(400, 1000, 20)  # 30 bands


def _frames(tmp: Path, cubes: dict[tuple[str, int], np.ndarray], thumbs: bool = True,
            wl: np.ndarray = WL, masks: dict[tuple[str, int], np.ndarray] | None = None) -> None:
    shards: dict[str, dict[str, dict]] = {}
    for (source, index), cube in cubes.items():
        name = frame_name(source, index)
        mask = (masks or {}).get((source, index))
        rec = to_record(summarize(cube, wl, mask, with_thumbnail=thumbs))
        shards.setdefault(shard_of(name), {})[name] = {"source": source, "index": index,
                                                        "md5": f"md5-{source}-{index}", **rec}
    for shard, entries in shards.items():
        write_shard(tmp / shard, entries)


def _split(n_per: int, stages: dict[str, list[str]]) -> Resolution:
    sources = [s for names in stages.values() for s in names]
    uni = Universe.from_records([{"source": s, "index": i} for s in sources
                                 for i in range(n_per)])
    pos = {s: [p for p in range(len(uni)) if uni.source(p) in names]
           for s, names in stages.items()}
    full = {s: np.asarray(pos.get(s, []), dtype=np.int64) for s in ("train", "val", "test")}
    full["predict"] = np.zeros(0, dtype=np.int64)
    return Resolution(uni, full)


def _dataset(tmp: Path, shift: float) -> Resolution:
    """Six sessions of four frames; session s5 (all of test) brighter in 700-800 nm by ``shift``."""
    rng = np.random.default_rng(7)
    cubes = {}
    for s in range(6):
        for i in range(4):
            base = 1.0 + 0.05 * rng.standard_normal(len(WL))
            cube = base + 0.02 * rng.standard_normal((8, 8, len(WL)))
            if s == 5:
                cube[..., (WL >= 700) & (WL <= 800)] += shift
            cubes[(f"day{s}/s.npz", i)] = cube.astype(np.float32)
    _frames(tmp, cubes)
    return _split(4, {"train": ["day0/s.npz", "day1/s.npz", "day2/s.npz"],
                      "val": ["day3/s.npz", "day4/s.npz"], "test": ["day5/s.npz"]})


def test_a_session_brighter_in_a_band_range_is_flagged_train_test_in_that_range(
        tmp_path: Path) -> None:
    res = _dataset(tmp_path, shift=1.0)
    spectra = split_spectra(res, tmp_path)
    assert spectra.missing == [] and len(spectra.grids) == 1
    grid = spectra.grids[0]
    pairs = {(b.stage_a, b.stage_b): b for b in grid.balance}
    assert pairs[("train", "test")].flagged and pairs[("val", "test")].flagged
    assert pairs[("train", "test")].ranges == [(700.0, 800.0)]
    assert not pairs[("train", "val")].flagged
    assert set(grid.stages) == {"train", "val", "test"} and grid.stages["train"].frames == 12


def test_the_same_dataset_without_the_shift_flags_nothing(tmp_path: Path) -> None:
    spectra = split_spectra(_dataset(tmp_path, shift=0.0), tmp_path)
    assert [b.flagged for b in spectra.grids[0].balance] == [False, False, False]


def test_smd_is_the_pooled_formula_and_a_constant_band_divides_by_nothing() -> None:
    a = StageSpectrum(4, np.array([1.0, 2.0, 5.0]), np.array([0.25, 0.0, 0.0]), np.zeros(3))
    b = StageSpectrum(2, np.array([2.0, 2.0, 6.0]), np.array([1.0, 0.0, 0.0]), np.zeros(3))
    got = smd(a, b)
    assert got is not None
    pooled = math.sqrt((3 * 0.25 + 1 * 1.0) / 4)
    assert got[0] == pytest.approx(1.0 / pooled)
    assert got[1] == 0.0 and math.isinf(got[2])  # equal means: 0; different: flagged
    one = StageSpectrum(1, np.zeros(3), np.zeros(3), np.zeros(3))
    assert smd(one, one) is None  # no degrees of freedom


def test_shifted_ranges_are_contiguous_runs() -> None:
    v = np.array([0, 2, 3, 0, 0, 5, 0, 4])
    assert shifted_ranges(v, [10, 20, 30, 40, 50, 60, 70, 80], 1.0) == [
        (20.0, 30.0), (60.0, 60.0), (80.0, 80.0)]


def test_frames_on_different_grids_are_never_averaged_together(tmp_path: Path) -> None:
    _frames(tmp_path, {("a.npz", 0): np.ones((4, 4, len(WL)), np.float32)})
    _frames(tmp_path, {("b/b.npz", 0): np.ones((4, 4, 3), np.float32)}, wl=np.arange(500, 560, 20))
    res = _split(1, {"train": ["a.npz", "b/b.npz"]})
    spectra = split_spectra(res, tmp_path)
    assert sorted(len(g.wavelengths) for g in spectra.grids) == [3, len(WL)]


def test_samples_without_a_summary_are_counted_and_named(tmp_path: Path) -> None:
    res = _dataset(tmp_path, 0.0)
    (tmp_path / shard_of(frame_name("day5/s.npz", 0))).unlink()
    spectra = split_spectra(res, tmp_path)
    assert len(spectra.missing) == 4 and spectra.missing[0].startswith("day5/s.npz")
    assert "test" not in spectra.grids[0].stages


def test_a_shard_out_of_step_with_its_frames_is_refused(tmp_path: Path) -> None:
    res = _dataset(tmp_path, 0.0)
    frame = frame_name("day0/s.npz", 0)
    (tmp_path / "universe.csv").write_text(
        f"source,index,materialized_path,md5\nday0/s.npz,0,{frame},other\n")
    with pytest.raises(DvcCuvisError, match=r"%summary.json: the summary of day0/s.npz.*rerun"):
        split_spectra(res, tmp_path)


def test_categories_and_thumbnails_per_stage(tmp_path: Path) -> None:
    mask = np.zeros((8, 8), np.uint8)
    mask[:4] = 2
    cubes = {(f"s{s}.npz", 0): np.full((8, 8, len(WL)), float(s + 1), np.float32)
             for s in range(3)}
    _frames(tmp_path, cubes, masks={k: mask for k in cubes})
    res = _split(1, {"train": ["s0.npz", "s1.npz"], "test": ["s2.npz"]})
    spectra = split_spectra(res, tmp_path, thumbnails=1)
    cats = spectra.grids[0].categories
    assert set(cats) == {0, 2} and cats[2]["train"][0] == pytest.approx(1.5)
    assert cats[2]["test"][0] == pytest.approx(3.0)
    assert [len(v) for v in spectra.thumbnails.values()] == [1, 0, 1]
    rows = plot_rows(spectra)
    assert {r["stage"] for r in rows} == {"train", "test"} and len(rows) == 2 * len(WL)
