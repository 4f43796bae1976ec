"""The figures of the spectra section, number by number: a stage's spectrum and its spreads,
the degrees of freedom SMD needs, the threshold, the grids' order, the dvc plots rows, the
categories, and which shards are taken or refused."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.materialize.summaries import summarize, to_record
from dvc_cuvis.materialize.summary_store import read_shard, shard_of, write_shard
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.review.spectra import (
    StageSpectrum,
    plot_rows,
    shifted_ranges,
    smd,
    split_spectra,
    stage_spectrum,
)


def _entry(mean: list[float | None], std: list[float | None], **extra: object) -> dict:
    return {"mean": mean, "std": std, **extra}


def test_a_stages_spectrum_is_the_mean_of_its_frames_with_both_spreads() -> None:
    frames = [_entry([1.0, 10.0], [0.5, 1.0]), _entry([3.0, 14.0], [0.5, None]),
              _entry([None, 99.0], [0.1, 0.1])]  # no valid pixel in a band: left out
    sp = stage_spectrum(frames)
    assert sp is not None and sp.frames == 2
    assert sp.mean.tolist() == [2.0, 12.0]
    assert sp.var.tolist() == [2.0, 8.0]  # over frames, ddof 1: ((1-2)^2 + (3-2)^2) / 1
    # the pixels around the grand mean: within-frame variance plus the frames' spread, with a
    # band without a std (None) taken as 0: sqrt(mean(std^2 + mean^2) - grand^2)
    assert sp.pixel_std[0] == pytest.approx(math.sqrt(0.25 + 1.0))
    assert sp.pixel_std[1] == pytest.approx(math.sqrt((1.0 + 0.0) / 2 + 4.0))
    one = stage_spectrum([_entry([4.0, 5.0], [0.0, 0.0])])
    assert one is not None and one.var.tolist() == [0.0, 0.0]  # one frame: no spread
    assert one.pixel_std.tolist() == [0.0, 0.0]  # rounding never makes a negative root
    assert stage_spectrum([_entry([None, 1.0], [0.0, 0.0])]) is None


def test_three_frames_between_two_stages_are_enough_for_smd() -> None:
    a = StageSpectrum(2, np.array([1.0]), np.array([0.5]), np.zeros(1))
    b = StageSpectrum(1, np.array([2.0]), np.array([0.0]), np.zeros(1))
    got = smd(a, b)
    assert got is not None and got[0] == pytest.approx(1.0 / math.sqrt(0.5))


def test_a_band_at_the_threshold_is_not_above_it() -> None:
    assert shifted_ranges(np.array([1.0, 1.5, 1.0]), [400, 410, 420], 1.0) == [(410.0, 410.0)]


WL = np.arange(400, 700, 50)  # 6 bands


def _write(tmp: Path, frames: dict[tuple[str, int], np.ndarray], *,
           wl: np.ndarray = WL, md5: str = "", categories: bool = True,
           masks: dict[tuple[str, int], np.ndarray] | None = None) -> None:
    """Add the frames' summaries to their shards (one shard per folder: earlier entries kept)."""
    for (source, index), cube in frames.items():
        name = frame_name(source, index)
        rec = to_record(summarize(cube, wl, (masks or {}).get((source, index))))
        if not categories:
            rec.pop("categories")
        path = tmp / shard_of(name)
        shard = read_shard(path)
        shard[name] = {"source": source, "index": index, "md5": md5 or f"md5-{name}", **rec}
        write_shard(path, shard)


def _resolution(uni: Universe, stages: dict[str, list[int]]) -> Resolution:
    full = {s: np.asarray(stages.get(s, []), dtype=np.int64) for s in ("train", "val", "test")}
    full["predict"] = np.zeros(0, dtype=np.int64)
    return Resolution(uni, full)


def _cube(value: float, bands: int = len(WL)) -> np.ndarray:
    return np.full((4, 4, bands), value, np.float32)


def test_the_threshold_must_be_a_number_of_at_least_zero(tmp_path: Path) -> None:
    uni = Universe.from_records([{"source": "a.npz", "index": 0}])
    _write(tmp_path, {("a.npz", 0): _cube(1.0)})
    res = _resolution(uni, {"train": [0]})
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(DvcCuvisError, match=r"spectral_shift_threshold .*give a number >= 0"):
            split_spectra(res, tmp_path, threshold=bad)
    for good in (0.0, 0.5):
        assert split_spectra(res, tmp_path, threshold=good).threshold == good


def test_pairs_with_too_few_frames_are_named_and_the_other_pairs_still_compared(
        tmp_path: Path) -> None:
    records = [{"source": f"s{k}.npz", "index": 0} for k in range(5)]
    uni = Universe.from_records(records)
    _write(tmp_path, {(r["source"], 0): _cube(1.0 + k) for k, r in enumerate(records)})
    res = _resolution(uni, {"train": [0], "val": [1], "test": [2, 3, 4]})
    (grid,) = split_spectra(res, tmp_path, threshold=0.8).grids
    assert grid.too_few == [("train", "val")]  # 1 + 1 frames: no degrees of freedom
    pairs = {(b.stage_a, b.stage_b): b for b in grid.balance}
    assert set(pairs) == {("train", "test"), ("val", "test")}  # train-test after it too
    for b in pairs.values():
        assert b.smd.shape == (len(WL),) and b.flagged and b.ranges == [(400.0, 650.0)]


def test_the_main_grid_is_the_one_with_most_frames(tmp_path: Path) -> None:
    records = [{"source": "few.npz", "index": 0}, {"source": "many.npz", "index": 0},
               {"source": "many.npz", "index": 1}]
    uni = Universe.from_records(records)
    _write(tmp_path, {("few.npz", 0): _cube(1.0, 3)}, wl=np.array([400.0, 500.0, 600.0]))
    _write(tmp_path, {("many.npz", 0): _cube(2.0, 2), ("many.npz", 1): _cube(4.0, 2)},
           wl=np.array([900.0, 950.0]))
    res = _resolution(uni, {"train": [0, 1, 2]})
    spectra = split_spectra(res, tmp_path)
    assert [g.wavelengths for g in spectra.grids] == [(900.0, 950.0), (400.0, 500.0, 600.0)]
    assert set(spectra.entries) == {(900.0, 950.0), (400.0, 500.0, 600.0)}
    rows = plot_rows(spectra)  # dvc plots draws the main grid
    assert rows == [{"wavelength": w, "stage": "train", "mean": 3.0, "std": 1.0}
                    for w in (900.0, 950.0)]
    assert all(type(r["mean"]) is float and type(r["std"]) is float for r in rows)


def test_categories_skip_a_category_without_valid_pixels_and_frames_without_any(
        tmp_path: Path) -> None:
    records = [{"source": f"s{k}.npz", "index": 0} for k in range(3)]
    uni = Universe.from_records(records)
    mask = np.zeros((4, 4), np.uint8)
    mask[:2] = 3
    cube = _cube(2.0)
    cube[2:] = np.nan  # category 0: no valid pixel
    _write(tmp_path, {("s0.npz", 0): cube, ("s1.npz", 0): _cube(4.0)},
           masks={("s0.npz", 0): mask, ("s1.npz", 0): mask})
    _write(tmp_path, {("s2.npz", 0): _cube(9.0)}, categories=False)
    res = _resolution(uni, {"train": [0, 1, 2]})
    cats = split_spectra(res, tmp_path).grids[0].categories
    assert set(cats) == {0, 3}
    assert cats[3]["train"].tolist() == [3.0] * len(WL)  # both frames, pixel-weighted
    assert cats[0]["train"].tolist() == [4.0] * len(WL)  # only the frame with valid pixels


def test_a_shard_in_step_with_its_frames_is_taken_and_a_refusal_names_both_md5s(
        tmp_path: Path) -> None:
    uni = Universe.from_records([{"source": "a.npz", "index": 0}])
    frame = frame_name("a.npz", 0)
    _write(tmp_path, {("a.npz", 0): _cube(1.0)}, md5="abc")
    res = _resolution(uni, {"train": [0]})
    table = tmp_path / "universe.csv"
    table.write_text(f"source,index,materialized_path,md5\na.npz,0,{frame},abc\n")
    assert split_spectra(res, tmp_path).grids[0].stages["train"].frames == 1
    table.write_text(f"source,index,materialized_path,md5\na.npz,0,{frame},def\n")
    with pytest.raises(DvcCuvisError, match=r"frame md5 abc, but .* is def in universe.csv: "
                       r"the shard is out of step with its frames; rerun dvc-cuvis materialize"):
        split_spectra(res, tmp_path)
    # a table without frame md5s vouches for nothing and refuses nothing
    table.write_text(f"source,index,materialized_path\na.npz,0,{frame}\n")
    assert split_spectra(res, tmp_path).missing == []


def test_a_whole_file_sample_is_found_under_read_index_zero(tmp_path: Path) -> None:
    uni = Universe.from_records([{"source": "cube.tif", "index": None}])
    _write(tmp_path, {("cube.tif", 0): _cube(2.0)})
    spectra = split_spectra(_resolution(uni, {"train": [0]}), tmp_path)
    assert spectra.missing == [] and spectra.grids[0].stages["train"].frames == 1
