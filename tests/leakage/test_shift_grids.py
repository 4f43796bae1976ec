"""Spectral shift as a permutation test over recordings, and one wavelength grid per split:
the test's calibration and power on synthetic recordings, and planted cases through a real
``check`` (bake, universe.csv, splits.json and summary shards on disk, verify in-process)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.check.drift import verify
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.leakage.grids import Grid, changed_grids, grid_changes, grid_label, grids, same_grid
from dvc_cuvis.leakage.shift import recording_means, shift_test
from tests.helpers.leakage import BRIGHT, WL, planted_summaries


def homogeneous(rng: np.random.Generator, recordings: int, frames: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Frame mean spectra of recordings of one scene type: a level per recording (the light
    of the day), frames of a recording near copies."""
    level = 1.0 + 0.05 * rng.standard_normal((recordings, 1)) \
        + 0.01 * rng.standard_normal((recordings, len(WL)))
    per = np.repeat(level, frames, axis=0) + 0.003 * rng.standard_normal(
        (recordings * frames, len(WL)))
    return per, np.repeat(np.arange(recordings), frames)


def test_random_resplits_of_homogeneous_recordings_are_rarely_flagged() -> None:
    # calibration: 60 re-splits (docs/leakage.md has the 400-trial run): at most 5 % flagged
    rng = np.random.default_rng(11)
    flagged = frame_level = 0
    for _ in range(60):
        means, codes = homogeneous(rng, 14, 6)
        _, rec = recording_means(means, codes)
        order = rng.permutation(14)
        flagged += shift_test(rec[order[:9]], rec[order[9:]], WL, permutations=199).flagged
        # the same split tested frame by frame (frames as if independent): mostly "shifted"
        rows = np.isin(codes, order[9:])
        frame_level += shift_test(means[~rows], means[rows], WL, permutations=199).flagged
    assert flagged <= 3, flagged
    assert frame_level >= 15, frame_level  # 25 of 60


def test_a_test_stage_with_half_its_frames_brighter_is_flagged_in_that_range() -> None:
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(10):  # 12 train and 8 test recordings (power grows with recordings)
        means, codes = homogeneous(rng, 20, 6)
        test = codes >= 12
        half = test & (np.arange(len(codes)) % 2 == 0)
        means[np.ix_(half, BRIGHT)] *= 1.15
        _, rec = recording_means(means, codes)
        found = shift_test(rec[:12], rec[12:], WL, permutations=199)
        in_range = WL[found.band[1] - 1] >= 700 and WL[found.band[0]] <= 780
        hits += found.flagged and in_range and found.direction > 0
    assert hits >= 6, hits  # 7 of 10 (the 400-trial power at 12+8 recordings: 74 %)


def test_too_few_recordings_give_no_p_value() -> None:
    rng = np.random.default_rng(0)
    means, codes = homogeneous(rng, 4, 3)
    _, rec = recording_means(means, codes)
    found = shift_test(rec[:2], rec[2:] * 2, WL)  # a gross shift, but 6 ways to split 4
    assert found.p_value is None and not found.flagged
    assert found.note == ("too few recordings to test (2+2: 6 ways to split them, the "
                          "smallest p-value is 2/6)")  # a split and its mirror score alike
    assert shift_test(rec[:2], rec[2:3] * 2, WL).note == (
        "too few recordings to test (2+1: 3 ways to split them, the smallest p-value is 1/3)")
    exact = shift_test(rec[:2].repeat(4, 0), rec[2:].repeat(2, 0), WL)  # 12 rows: 495 ways
    assert exact.exact and exact.permutations == 495


def test_grids_name_the_recordings_of_each_and_a_change_between_versions() -> None:
    wl = WL.tolist()
    found = grids([wl, [w + 0.3 for w in wl], [w + 2 for w in wl], wl[:-1]],
                  ["a/", "b/", "c/", "d/"], ["train", "train", "test", "val"])
    assert [(g.recordings, g.stages) for g in found] == [
        (("a/", "b/"), ("train",)), (("d/",), ("val",)), (("c/",), ("test",))]
    assert found[2].line() == "30 bands 402–982 nm (test): c/"
    assert grid_changes({"a/": wl, "c/": wl}, {"a/": wl, "c/": [w + 2 for w in wl]}) == [
        "c/: wavelength grid changed from 30 bands 400–980 nm to 30 bands 402–982 nm"]




def constraints(root: Path, **kw: object) -> dict:
    """``check``'s constraints finding for ``root``, reading the summaries under mat/."""
    report = verify(root / "splits.json", root / "universe.csv", lock=None,
                    checks=("selection", "constraints"), summaries=root / "mat", **kw)
    return report.finding("constraints").record()


def test_check_flags_a_half_shifted_test_stage_and_passes_the_plain_one(tmp_path: Path) -> None:
    planted_summaries(tmp_path)
    plain = constraints(tmp_path)
    assert plain["status"] == "ok" and "spectral_shift" not in plain["details"]["results"]
    tests = plain["details"]["spectra"]["spectral_shift"]["tests"]
    assert {(t["a"], t["b"]) for t in tests} == {("train", "val"), ("train", "test"),
                                                ("val", "test")}
    planted_summaries(tmp_path, bright=True)
    warned = constraints(tmp_path)
    assert warned["status"] == "ok" and "spectral_shift violated (warn)" in warned["summary"]
    refused = constraints(tmp_path, spectral_shift="error")
    assert refused["status"] == "violation"
    line = refused["details"]["results"]["spectral_shift"]
    assert "test's mean spectrum differs from train's" in line, line
    shift = {(t["a"], t["b"]): t for t in refused["details"]["spectra"]["spectral_shift"]["tests"]}
    assert shift[("train", "test")]["flagged"] and not shift[("train", "val")]["flagged"]
    assert 700 <= shift[("train", "test")]["nm"][0] <= shift[("train", "test")]["nm"][1] <= 780
    assert "re-bake stratified or grouped" in refused["fix"]


def test_check_refuses_a_recalibrated_recording_and_a_different_band_count(
        tmp_path: Path) -> None:
    by_stage = planted_summaries(tmp_path, moved=0.3)  # within the 0.5 nm tolerance: one grid
    assert constraints(tmp_path)["status"] == "ok"
    planted_summaries(tmp_path, moved=2.0, drop_band=True)
    refused = constraints(tmp_path)  # wavelength_grid is an error by default
    assert refused["status"] == "violation" and "wavelength_grid violated" in refused["summary"]
    offending = refused["details"]["offending"]
    assert any(o.startswith("30 bands 402–982 nm (train): " + by_stage["train"][0])
               for o in offending), offending
    assert any(o.startswith("29 bands 400–960 nm (val): " + by_stage["val"][0])
               for o in offending), offending
    assert constraints(tmp_path, wavelength_grid="warn")["status"] == "ok"
    with pytest.raises(DvcCuvisError, match="wavelength_grid must be one of"):
        constraints(tmp_path, wavelength_grid="loud")


def test_the_cli_check_carries_both_tests_in_json_and_exits_1_on_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
        ) -> None:
    from dvc_cuvis.cli import main

    planted_summaries(tmp_path, bright=True, moved=2.0)
    monkeypatch.chdir(tmp_path)
    argv = ["check", "--universe", "universe.csv", "--splits", "splits.json", "--no-lock",
            "--checks", "selection,constraints", "--summaries", "mat", "--json"]
    assert main([*argv, "--spectral-shift", "error", "--wavelength-grid", "warn"]) == 1
    doc = json.loads(capsys.readouterr().out)
    found = doc["checks"]["constraints"]
    assert "spectral_shift violated" in found["summary"]
    assert len(found["details"]["spectra"]["wavelength_grid"]["grids"]) == 2
    assert main([*argv, "--spectral-shift", "warn", "--wavelength-grid", "off"]) == 0
    assert "wavelength_grid" not in capsys.readouterr().out


def test_the_guard_refuses_a_split_on_two_grids_before_setup(tmp_path: Path) -> None:
    from dvc_cuvis.check.drift import DriftError
    from dvc_cuvis.train.datamodule import guard

    planted_summaries(tmp_path, drop_band=True)
    calls: list[str | None] = []
    module = type("DM", (), {"setup": lambda self, stage=None: calls.append(stage)})
    kw = {"splits": tmp_path / "splits.json", "universe": tmp_path / "universe.csv",
          "lock": None, "cache": None, "checks": ("selection", "constraints"),
          "summaries": tmp_path / "mat"}
    with pytest.raises(DriftError, match="wavelength_grid"):
        guard(module(), verify_mode="strict", **kw).setup("fit")
    assert calls == []  # refused before the module read a frame
    guard(module(), verify_mode="strict", wavelength_grid="warn", **kw).setup("fit")
    assert calls == ["fit"]


def test_the_reports_balance_table_uses_the_shift_test(tmp_path: Path) -> None:
    from dvc_cuvis.model.resolution import resolve
    from dvc_cuvis.model.splits import load_splits
    from dvc_cuvis.model.universe_io import read_universe
    from dvc_cuvis.review.spectra import split_spectra
    from dvc_cuvis.review.spectra_html import section

    planted_summaries(tmp_path, bright=True)
    res = resolve(load_splits(tmp_path / "splits.json"), read_universe(tmp_path / "universe.csv"))
    (grid,) = split_spectra(res, tmp_path / "mat").grids
    pairs = {(b.stage_a, b.stage_b): b for b in grid.balance}
    shifted = pairs[("train", "test")]
    assert shifted.max_shift < 2.0  # the SMD rule alone calls it alike
    assert shifted.flagged and shifted.test is not None and shifted.test.flagged
    assert not pairs[("train", "val")].flagged
    page = section(split_spectra(res, tmp_path / "mat"), "", {})
    assert f"p = {shifted.test.p_value:.3g} (9+7 recordings)" in page


def test_a_grid_in_words_and_json_and_a_change_within_a_tolerance() -> None:
    recs = tuple(f"r{k}/" for k in range(7))
    wl = (450.0, 500.0, 900.0)
    assert [Grid(wl, recs[:n], ("test", "train"), 9).line() for n in (5, 6, 7)] == [
        "3 bands 450–900 nm (test, train): r0/, r1/, r2/, r3/, r4/",
        "3 bands 450–900 nm (test, train): r0/, r1/, r2/, r3/, r4/ and 1 more",
        "3 bands 450–900 nm (test, train): r0/, r1/, r2/, r3/, r4/ and 2 more"]
    assert grid_label(()) == "0 bands"
    assert Grid((), ("r0/",), ("val",), 1).record() == {
        "bands": 0, "nm": [], "recordings": ["r0/"], "stages": ["val"], "frames": 1}
    before = {"a/": [450.0, 500.0], "b/": [450.0, 500.0], "gone/": [1.0]}
    after = {"a/": [451.0, 501.0], "b/": [450.2, 500.0], "new/": [2.0]}
    assert changed_grids(before, after) == [("a/", (450.0, 500.0), (451.0, 501.0))]
    assert changed_grids(before, after, tolerance=2.0) == []
    assert grid_changes(before, after, tolerance=2.0) == []
    assert grid_changes(before, after) == [
        "a/: wavelength grid changed from 2 bands 450–500 nm to 2 bands 451–501 nm"]
    assert same_grid([450.0, 500.0], [450.5, 499.5]) and not same_grid([450.0], [450.75])
    found = grids([[450.0, 500.0], [451.0, 501.0], [451.0, 501.0]], ["r0/", "r1/", "r1/"],
                  ["train", "test", "test"], tolerance=2.0)
    assert [g.record() for g in found] == [{"bands": 2, "nm": [450.0, 500.0], "frames": 3,
                                           "recordings": ["r0/", "r1/"],
                                           "stages": ["test", "train"]}]


# --- leakage/shift.py pinned exactly: recording means, band ranges, the statistic, the
# p-values (exact and drawn) and a shift in words and in JSON


def test_recording_means_read_any_codes_and_leave_missing_bands_out() -> None:
    import warnings

    means = [[1.0, None, 2.0], [3.0, None, float("nan")], [5.0, 7.0, 8.0]]  # None: JSON null
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an all-missing band is NaN, silently
        codes, rec = recording_means(means, np.array([4, 4, 2], dtype=np.int32))
    assert codes.dtype == np.int64 and codes.tolist() == [2, 4]
    assert rec.dtype == np.float64
    np.testing.assert_array_equal(rec, [[5.0, 7.0, 8.0], [2.0, np.nan, 2.0]])
    for bad, n, message in (([1.0, 2.0], 2, "recording_means: (2,) means for 2 frames"),
                            ([[1.0], [2.0]], 3, "recording_means: (2, 1) means for 3 frames")):
        with pytest.raises(DvcCuvisError) as caught:
            recording_means(bad, np.arange(n))
        assert str(caught.value) == message


def test_band_ranges_are_contiguous_windows_of_near_equal_count() -> None:
    from dvc_cuvis.leakage.shift import band_ranges

    assert band_ranges(0) == [] and band_ranges(-3) == []
    assert band_ranges(1) == [(0, 1)] and band_ranges(1, 0) == [(0, 1)]
    assert band_ranges(2) == [(0, 1), (1, 2)] and band_ranges(2, 1) == [(0, 2)]
    assert band_ranges(10, 0) == [(0, 10)] and band_ranges(10, 1) == [(0, 10)]
    assert band_ranges(10) == [(0, 1), (1, 2), (2, 4), (4, 5), (5, 6), (6, 8), (8, 9), (9, 10)]
    assert band_ranges(30, 3) == [(0, 10), (10, 20), (20, 30)]
    assert band_ranges(30) == [(0, 4), (4, 8), (8, 11), (11, 15), (15, 19), (19, 22), (22, 26),
                               (26, 30)]


def test_the_statistic_is_the_pooled_standardized_difference_or_infinite() -> None:
    big, one, tiny, step = 2.0**20, 1.0, 2.0**-20, 2.0**-12
    cases = [  # a, b, wavelengths -> statistic, bands, direction
        # 0.548 and -0.866 pooled (ss < 1, n - 2 = 3), an equal band 0: the largest is 0.866
        ([[0.1, 0.5, 0.3], [0.3, 0.5, 0.2], [0.2, 0.5, 0.4]], [[0.3, 0.5, 0.1], [0.2, 0.5, 0.3]],
         [400.0, 500.0, 600.0], 0.866025, [2, 3], -0.1),
        # no spread within a stage: a difference is infinitely significant
        ([[1.0, 2.0], [1.0, 2.0]], [[3.0, 2.0]], [400.0, 500.0], float("inf"), [0, 1], 2.0),
        # within 1e-9 of the band's largest value a difference is rounding noise, per band
        ([[big, one], [big, one]], [[big + step, one + step]], [400.0, 500.0], float("inf"),
         [1, 2], 0.000244141),
        ([[tiny], [tiny]], [[tiny + 2.0**-40]], [400.0], float("inf"), [0, 1], 0.0),
        ([[big], [big]], [[big + step]], [400.0], 0.0, [0, 1], 0.000244141),
        # a difference exactly at the bound (1e9 * 1e-9 = 1.0) is still noise
        ([[999999999.0], [999999999.0]], [[1e9]], [400.0], 0.0, [0, 1], 1.0),
    ]
    for a, b, wl, statistic, bands, direction in cases:
        record = shift_test(a, b, wl).record()
        assert (record["statistic"], record["bands"], record["direction"]) == (
            statistic, bands, direction), (a, b)


def test_the_p_values_exact_and_drawn_are_pinned() -> None:
    a6, b6 = [[1.0, 0.0], [2.0, 1.0], [4.0, 0.0]], [[3.0, 1.0], [5.0, 0.0], [6.0, 1.0]]
    x = [[8.0, 0.0, 1.0], [2.0, 1.0, 8.0], [8.0, 5.0, 0.0], [0.0, 3.0, 4.0], [6.0, 4.0, 2.0],
         [1.0, 6.0, 7.0], [0.0, 1.0, 4.0], [3.0, 8.0, 5.0], [4.0, 4.0, 6.0], [5.0, 1.0, 7.0],
         [7.0, 9.0, 7.0], [2.0, 3.0, 6.0]]
    cases = [  # a, b, permutations -> statistic, p-value, labellings, exact
        # 3+3: each split ties with its mirror, so p >= 2/20 > ALPHA: untested, no p-value
        (a6, b6, 999, 1.527525, None, 0, False),
        ([*a6, [0.0, 1.0]], b6, 999, 1.780531, 0.257143, 35, True),  # 4+3: 9 of 35 reach it
        (np.ones((5, 2)), np.ones((5, 2)), 999, 0.0, 1.0, 252, True),  # two blocks, all ties
        (x[:6], x[6:], 99, 0.883312, 0.39, 99, False),  # drawn, seeded by the data
        (np.ones((256, 1)), np.ones((2, 1)), 9, 0.0, 1.0, 9, False),  # (9 + 1) / (9 + 1)
    ]
    for a, b, permutations, statistic, p, total, exact in cases:
        wl = [400.0, 500.0, 600.0][:len(a[0])]
        record = shift_test(a, b, wl, permutations=permutations).record()
        assert (record["statistic"], record["p_value"], record["permutations"],
                record["exact"]) == (statistic, p, total, exact), (len(a), len(b))


def test_a_shift_in_words_and_in_json() -> None:
    from dvc_cuvis.leakage.shift import Shift

    drawn = Shift("train", "test", (9, 7), 2.123456789, 0.0123456789, (3, 5), (700.0, 740.5),
                  -0.01234567891234, 999, False)
    assert drawn.record() == {
        "a": "train", "b": "test", "recordings": [9, 7], "statistic": 2.123457,
        "p_value": 0.012346, "bands": [3, 5], "nm": [700.0, 740.5], "direction": -0.012345679,
        "permutations": 999, "exact": False, "flagged": True, "note": ""}
    assert drawn.describe() == ("test's mean spectrum differs from train's by 2.12σ in "
                                "700–740.5 nm (p = 0.0123, 9+7 recordings, 999 permutations)")
    exact = Shift("val", "test", (4, 3), 1.5, 0.4, (0, 1), (900.0, 900.0), 0.5, 35, True)
    assert exact.describe() == ("test's mean spectrum differs from val's by 1.50σ in 900 nm "
                                "(p = 0.4, 4+3 recordings, exact permutations)")
    assert not exact.flagged and exact.record()["p_value"] == 0.4
    untested = Shift("train", "val", (1, 2), 3.0, None, (2, 4), (450.0, 500.0), 1.0, 0, False,
                     "too few recordings to test")
    assert untested.describe() == ("val vs train: too few recordings to test (largest "
                                   "difference 3.00σ in 450–500 nm)")
    assert untested.record()["p_value"] is None and not untested.flagged
# shift_test and _features pinned whole (mutation testing of leakage/shift.py)

FEW = "too few recordings to test (each stage needs one, both three)"


def test_shift_test_untestable_inputs_give_the_whole_untested_result() -> None:
    # the first guard: a stage without a recording (an all-NaN row is dropped), 1+1
    # recordings, and spectra without bands (all with the default stage names)
    nan = [[np.nan, np.nan, np.nan]]
    no_a = shift_test(nan, np.ones((3, 3)), [400.0, 500.0, 600.0])
    assert no_a.record() == {
        "a": "train", "b": "test", "recordings": [0, 3], "statistic": 0.0, "p_value": None,
        "bands": [0, 3], "nm": [400.0, 600.0], "direction": 0.0, "permutations": 0,
        "exact": False, "flagged": False, "note": FEW}
    assert shift_test([[0.0, 1.0, 2.0]], [[5.0, 9.0, 7.0]], [400.0, 500.0, 600.0]
                      ).record() == {**no_a.record(), "recordings": [1, 1]}
    # no bands: no columns to test (this crashed in np.stack before)
    assert shift_test(np.zeros((2, 0)), np.zeros((3, 0)), []).record() == {
        **no_a.record(), "recordings": [2, 3], "bands": [0, 0], "nm": [0.0, 0.0]}
    # the second guard: 1+2 recordings, 3 labellings; z by hand: range 1 differs by 1.5
    # with a pooled sd of sqrt(0.5), so 3/sqrt(2) there (sqrt(2) in range 0)
    wl = [400.0, 500.0]
    three = shift_test([[0.0, 0.0]], [[1.0, 1.0], [3.0, 2.0]], wl, stage_a="a", stage_b="b")
    assert three.record() == {
        "a": "a", "b": "b", "recordings": [1, 2], "statistic": 2.12132, "p_value": None,
        "bands": [1, 2], "nm": [500.0, 500.0], "direction": 1.5, "permutations": 0,
        "exact": False, "flagged": False,
        "note": "too few recordings to test (1+2: 3 ways to split them, the smallest "
                "p-value is 1/3)"}
    # near the float64 limit (squares and their sum finite): no labelling but the observed
    # one is evaluated, so nothing overflows
    big = 7e153
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = shift_test([[big, big]], [[big, big], [big, big]], wl)
    assert same.record()["statistic"] == 0.0  # rounding noise only


def test_shift_test_at_the_smallest_testable_split_and_its_exact_bound() -> None:
    # 1+19 recordings: 20 labellings, 20 * ALPHA == 1, so the test runs (exact, since 20 is
    # the permutation budget) and an outlier recording reaches p = 1/20, flagged at ALPHA;
    # two ranges of two bands: statistic and direction by hand over range 0
    wl = [400.0, 500.0, 600.0, 700.0]
    one = np.array([[10.0, 10.0, 0.0, 0.0]])
    rest = (np.arange(19 * 4).reshape(19, 4) % 5).astype(np.float64)
    expect = {"a": "train", "b": "test", "recordings": [1, 19], "statistic": 7.614764,
              "p_value": 0.05, "bands": [0, 2], "nm": [400.0, 500.0],
              "direction": -7.973684211, "permutations": 20, "exact": True, "flagged": True,
              "note": ""}
    assert shift_test(one, rest, wl, ranges=2, permutations=20).record() == expect
    assert shift_test(rest, one, wl, stage_a="x", stage_b="y", ranges=2,
                      permutations=20).record() == {**expect, "a": "x", "b": "y",
                                                    "recordings": [19, 1],
                                                    "direction": 7.973684211}
    # spectra given as decimal text are read as numbers: the same result
    assert shift_test(one.astype(str), rest.astype(str), wl, ranges=2,
                      permutations=20).record() == expect


@pytest.mark.parametrize(("a", "b", "bands"), [
    ((2, 4), (2, 3), 4), ((2, 3), (2, 4), 4), ((2, 4), (4,), 4), ((4,), (2, 4), 4),
    ((2, 4, 1), (2, 4), 4), ((2, 4), (2, 4), 3)])
def test_shift_test_refuses_spectra_that_do_not_fit_the_wavelengths(
        a: tuple[int, ...], b: tuple[int, ...], bands: int) -> None:
    with pytest.raises(DvcCuvisError) as err:
        shift_test(np.zeros(a), np.zeros(b), [500.0] * bands)
    assert str(err.value) == (f"spectral shift: spectra of {a} and {b} for {bands} "
                              "wavelengths")
