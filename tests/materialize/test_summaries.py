"""Spectral summaries of one cube: the recipe's rules, bad pixels, thumbnails, stored form."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.materialize.summaries import (
    RECIPE,
    SAMPLE_PIXELS,
    ceiling_of,
    from_record,
    rgb_bands,
    sample_step,
    summarize,
    to_record,
)
from dvc_cuvis.materialize.summary_store import (
    dumps_shard,
    load_summaries,
    read_shard,
    shard_of,
    write_shard,
)


def _cube(h: int = 16, w: int = 12, c: int = 5, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((h, w, c), dtype=np.float32)


def test_small_frames_are_summarized_over_every_pixel() -> None:
    cube = _cube()
    s = summarize(cube, np.arange(400, 405))
    assert s.sampled == 16 * 12 and s.invalid == 0 and s.saturated is None
    flat = cube.reshape(-1, 5).astype(np.float64)
    np.testing.assert_allclose(s.mean, flat.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(s.std, flat.std(axis=0), rtol=1e-5)
    assert all(isinstance(v, float) for v in s.mean)


def test_large_frames_are_sampled_on_a_regular_grid() -> None:
    assert sample_step(32, 32) == 1 and sample_step(33, 32) == 2
    assert sample_step(256, 256) == 8
    cube = _cube(256, 256, 3)
    s = summarize(cube, [1, 2, 3])
    assert s.sampled == 32 * 32 <= SAMPLE_PIXELS
    grid = cube[::8, ::8].reshape(-1, 3).astype(np.float64)
    np.testing.assert_allclose(s.mean, grid.mean(axis=0), rtol=1e-6)


def test_nan_and_inf_pixels_are_counted_and_left_out() -> None:
    cube = np.ones((4, 4, 2), dtype=np.float32)
    cube[0, 0, 1] = np.nan
    cube[1, 1, 0] = np.inf
    cube[2, 2] = 3.0
    s = summarize(cube, [500, 600])
    assert s.invalid == 2 and s.valid == 14
    expect = (13 * 1.0 + 3.0) / 14
    assert s.mean == pytest.approx((expect, expect))


def test_a_frame_without_a_valid_pixel_has_no_mean() -> None:
    import warnings

    cube = np.full((2, 2, 3), np.nan, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no mean of an empty slice is even attempted
        s = summarize(cube, [1, 2, 3], np.zeros((2, 2), dtype=np.uint8))
    assert s.categories[0].pixels == 4 and s.categories[0].mean is None
    assert s.invalid == 4 and s.mean == (None, None, None) and s.std == (None, None, None)
    rec = to_record(s)
    json.dumps(rec, allow_nan=False)  # stored without NaN


def test_a_constant_band_has_zero_std_and_no_division() -> None:
    cube = np.zeros((3, 3, 2), dtype=np.float32)
    cube[..., 1] = 7.0
    s = summarize(cube, [1, 2])
    assert s.std == (0.0, 0.0) and s.mean == (0.0, 7.0)


def test_saturated_pixels_need_a_ceiling_and_are_left_out() -> None:
    assert ceiling_of(np.uint16) == 65535.0 and ceiling_of(np.float32) is None
    cube = np.full((2, 2, 2), 10.0, dtype=np.float32)
    cube[0, 0, 0] = 65535.0
    s = summarize(cube, [1, 2], ceiling=65535.0)
    assert s.saturated == 1 and s.invalid == 0 and s.valid == 3
    assert s.mean == (10.0, 10.0)
    assert summarize(cube, [1, 2]).saturated is None


def test_categories_have_exact_pixel_counts_and_their_own_means() -> None:
    cube = _cube(256, 256, 2, seed=3)
    mask = np.zeros((256, 256), dtype=np.uint8)
    mask[:, :128] = 1
    mask[5, 7] = 9  # one pixel, off the 8-pixel sample grid
    cube[:, :128] += 10.0
    s = summarize(cube, [1, 2], mask)
    assert {k: c.pixels for k, c in s.categories.items()} == {0: 256 * 128, 1: 256 * 128 - 1,
                                                               9: 1}
    assert s.categories[1].mean is not None and s.categories[1].mean[0] > 10.0
    assert s.categories[0].mean is not None and s.categories[0].mean[0] < 1.0
    assert s.categories[9].mean == pytest.approx(tuple(cube[5, 7].tolist()))


def test_thumbnail_bands_prefer_the_visible_range() -> None:
    wl = np.arange(400, 1001, 10)
    r, g, b = rgb_bands(wl, len(wl))
    assert (wl[r], wl[g], wl[b]) == (640, 550, 460)
    assert rgb_bands(np.arange(700, 1000, 50), 6) == (5, 2, 0)  # NIR only: evenly spaced


def test_thumbnails_are_small_uint8_and_stretched() -> None:
    cube = _cube(200, 100, 3)
    cube[0, 0] = np.nan
    s = summarize(cube, [460, 550, 640], with_thumbnail=True)
    t = s.thumbnail
    assert t is not None and max(t.height, t.width) <= 64
    img = t.array()
    assert img.dtype == np.uint8 and img.shape == (t.height, t.width, 3)
    assert img.max() == 255 and img.min() == 0 and tuple(img[0, 0]) == (0, 0, 0)
    assert summarize(cube, [1, 2, 3]).thumbnail is None


def test_the_stored_form_round_trips_and_is_stable(tmp_path: Path) -> None:
    cube = _cube()
    mask = (np.arange(16 * 12).reshape(16, 12) % 3).astype(np.uint8)
    s = summarize(cube, np.arange(5), mask, with_thumbnail=True)
    rec = to_record(s)
    assert from_record(json.loads(json.dumps(rec))) == s
    entries = {"frames/a/x.npz.000000.npz": {"source": "a/x.npz", "index": 0, "md5": "m",
                                             **rec}}
    path = tmp_path / shard_of("frames/a/x.npz.000000.npz")
    assert write_shard(path, entries) and not write_shard(path, entries)
    assert path.read_text() == dumps_shard(entries) and json.loads(path.read_text())["recipe"] \
        == RECIPE
    assert read_shard(path) == json.loads(json.dumps(entries))
    assert load_summaries(tmp_path, ["frames/a/x.npz.000000.npz", "frames/b/y.npz.000001.npz"]) \
        .keys() == {"frames/a/x.npz.000000.npz"}
    assert write_shard(path, {}) and not path.exists()


def test_shards_follow_the_frame_layout() -> None:
    assert shard_of("frames/day1/a.cu3s.000003.npz") == "summaries/day1/%summary.json"
    assert shard_of("frames/x.npz.000000.npz") == "summaries/%summary.json"
    with pytest.raises(DvcCuvisError, match="not a frame name"):
        shard_of("other/x.npz")


def test_a_shard_of_another_recipe_counts_as_absent_and_garbage_is_refused(
        tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"recipe": RECIPE + 1, "frames": {"f": {}}}))
    assert read_shard(path) == {}
    path.write_text("{not json")
    with pytest.raises(DvcCuvisError, match=r"damaged summaries shard .*rerun dvc-cuvis"):
        read_shard(path)


def _inputs(root: Path, n: int = 4) -> None:
    for i in range(n):
        d = root / f"rec{i % 2}"
        d.mkdir(parents=True, exist_ok=True)
        np.savez(d / f"f{i}.npz", cube=_cube(6, 5, 4, seed=i),
                 wavelengths=np.array([450, 550, 650, 750]))
    (root / "universe.csv").write_text(
        "source,index,format\n" + "".join(f"rec{i % 2}/f{i}.npz,0,npz\n" for i in range(n)))


def _run(root: Path, monkeypatch: pytest.MonkeyPatch, **kw: object) -> list[str]:
    """materialize ``root`` (every sample); returns the sources summarized in this run."""
    import dvc_cuvis.materialize.tasks as core
    from dvc_cuvis import read_universe
    from dvc_cuvis.materialize import ReaderParams
    from dvc_cuvis.materialize import materialize_universe as materialize

    seen: list[str] = []
    real = core.summarize

    def counting(cube, *a, **k):  # type: ignore[no-untyped-def]
        seen.append(str(cube.shape))
        return real(cube, *a, **k)

    monkeypatch.setattr(core, "summarize", counting)
    materialize(read_universe(root / "universe.csv"), None, root / "out", ReaderParams(),
                select="all", **kw)  # type: ignore[arg-type]
    return seen


def test_one_changed_frame_recomputes_one_summary_and_kept_frames_keep_theirs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _inputs(tmp_path)
    assert len(_run(tmp_path, monkeypatch)) == 4
    shards = sorted((tmp_path / "out/summaries").rglob("%summary.json"))
    assert len(shards) == 2
    before = {p: p.read_bytes() for p in shards}
    assert _run(tmp_path, monkeypatch) == []  # nothing changed: nothing read, same bytes
    assert {p: p.read_bytes() for p in shards} == before
    np.savez(tmp_path / "rec1/f3.npz", cube=_cube(6, 5, 4, seed=99),
             wavelengths=np.array([450, 550, 650, 750]))
    assert len(_run(tmp_path, monkeypatch)) == 1
    after = {p: p.read_bytes() for p in shards}
    assert after[shards[0]] == before[shards[0]] and after[shards[1]] != before[shards[1]]
    entry = json.loads(shards[1].read_text())["frames"]["frames/rec1/f3.npz.000000.npz"]
    np.testing.assert_allclose(entry["mean"], _cube(6, 5, 4, seed=99).reshape(-1, 4).mean(0),
                               rtol=1e-6)


def test_frames_without_a_summary_are_read_once_after_summaries_were_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _inputs(tmp_path)
    assert _run(tmp_path, monkeypatch, summaries=False) == []
    assert not (tmp_path / "out/summaries").exists()
    assert len(_run(tmp_path, monkeypatch)) == 4  # kept frames: summarized from their input
    assert _run(tmp_path, monkeypatch) == []
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    _inputs(fresh)
    _run(fresh, monkeypatch)  # the same frames written fresh: the same shards, byte for byte
    for p in sorted((fresh / "out/summaries").rglob("%summary.json")):
        assert p.read_bytes() == (tmp_path / "out" / p.relative_to(fresh / "out")).read_bytes()


def test_summaries_of_frames_gone_are_dropped_and_empty_shards_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _inputs(tmp_path)
    _run(tmp_path, monkeypatch)
    (tmp_path / "universe.csv").write_text("source,index,format\nrec0/f0.npz,0,npz\n")
    assert _run(tmp_path, monkeypatch) == []
    shards = sorted((tmp_path / "out/summaries").rglob("%summary.json"))
    assert [p.parent.name for p in shards] == ["rec0"]
    assert list(json.loads(shards[0].read_text())["frames"]) == ["frames/rec0/f0.npz.000000.npz"]


def test_a_recipe_change_summarizes_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    import dvc_cuvis.materialize.summary_store as store

    _inputs(tmp_path)
    _run(tmp_path, monkeypatch)
    monkeypatch.setattr(store, "RECIPE", RECIPE + 1)
    assert len(_run(tmp_path, monkeypatch)) == 4


def test_a_thumbnail_is_taken_from_the_pixel_sample() -> None:
    """Its pixels are the sample's own (no other pixel of the cube is read), at most 64 px."""
    cube = np.zeros((256, 256, 3), dtype=np.float32)
    step = sample_step(256, 256)
    cube[::step, ::step] = np.linspace(1.0, 2.0, (256 // step) ** 2 * 3).reshape(
        256 // step, 256 // step, 3)  # only the sampled pixels are non-zero
    t = summarize(cube, [460, 550, 640], with_thumbnail=True).thumbnail
    assert t is not None and (t.height, t.width) == (256 // step, 256 // step)
    grid = cube[::step, ::step][:, :, ::-1].astype(np.float64)  # R, G, B = 640, 550, 460 nm
    lo, hi = np.percentile(grid.reshape(-1, 3), [2.0, 98.0], axis=0)
    expected = np.rint(np.clip((grid - lo) / (hi - lo) * 255.0, 0, 255)).astype(np.uint8)
    assert np.array_equal(t.array(), expected)
    long = summarize(np.ones((4096, 64, 3), dtype=np.float32), [1, 2, 3],
                     with_thumbnail=True).thumbnail
    assert long is not None and max(long.height, long.width) <= 64 and long.width >= 1


def _stretch(chan: np.ndarray) -> np.ndarray:
    """The recipe's stretch of one channel, written out: finite values from their 2nd to
    98th percentile onto 0-255 (127 for a flat channel), a non-finite pixel 0."""
    finite = np.isfinite(chan)
    out = np.zeros(chan.shape, dtype=np.uint8)
    if not finite.any():
        return out
    lo, hi = np.percentile(chan[finite], [2.0, 98.0])
    if hi > lo:
        vals = np.clip((chan[finite] - lo) / (hi - lo) * 255.0, 0.0, 255.0)
    else:
        vals = np.full(int(finite.sum()), 127.0)
    out[finite] = np.rint(vals).astype(np.uint8)
    return out


def test_a_thumbnail_with_bad_pixels_and_a_flat_band_is_stretched_per_channel() -> None:
    """The slow path (a non-finite pixel in the sample): each channel on its own, exactly."""
    cube = _cube(20, 30, 6, seed=4) * 40.0 - 3.0
    cube[..., 2] = 0.25  # the green channel (bands 5, 2, 0 without visible wavelengths)
    cube[1, 2, :] = np.nan
    cube[5, 7, 0] = np.inf
    cube[:, :, 5][cube[:, :, 5] > 30] = np.nan
    t = summarize(cube, np.arange(900, 906), with_thumbnail=True).thumbnail
    assert t is not None and t.bands == (5, 2, 0) and (t.height, t.width) == (20, 30)
    img = t.array()
    for k, band in enumerate(t.bands):
        assert np.array_equal(img[:, :, k], _stretch(cube[:, :, band].astype(np.float64))), k
    assert tuple(img[1, 2]) == (0, 0, 0) and img[3, 3, 1] == 127
    no_finite = np.full((4, 4, 3), np.nan, dtype=np.float32)
    dark = summarize(no_finite, [1, 2, 3], with_thumbnail=True).thumbnail
    assert dark is not None and dark.array().max() == 0


def test_a_category_the_sample_misses_is_averaged_over_its_valid_pixels() -> None:
    """uint16 with a ceiling: saturated and non-finite pixels stay out of its mean."""
    h, w = 100, 100
    cube = (np.arange(h * w * 2) % 50_000).reshape(h, w, 2).astype(np.uint16)
    mask = np.zeros((h, w), dtype=np.uint8)
    mask[1:3, 1:3] = 7  # off the sample's grid (every 4th row and column from 0)
    cube[1, 1, 0] = 65535  # saturated: left out
    step = sample_step(h, w)
    assert step == 4 and not (mask[::step, ::step] == 7).any()
    s = summarize(cube, [400, 500], mask, ceiling=ceiling_of(np.uint16))
    cat = s.categories[7]
    assert cat.pixels == 4 and cat.mean is not None
    keep = [(1, 2), (2, 1), (2, 2)]
    expected = np.mean([cube[r, c].astype(np.float64) for r, c in keep], axis=0)
    assert cat.mean == pytest.approx(tuple(expected), rel=1e-6)
    assert s.categories[0].pixels == h * w - 4
    all_bad = np.full((40, 40, 2), 65535, dtype=np.uint16)
    gone = summarize(all_bad, [1, 2], np.ones((40, 40), np.uint8), ceiling=65535.0)
    assert gone.categories[1].mean is None and gone.mean == (None, None)
    assert gone.saturated == gone.sampled and gone.valid == 0
    assert to_record(gone)["categories"]["1"] == {"pixels": 1600, "mean": None}


@pytest.mark.parametrize("wl,channels,expected", [
    (np.arange(460, 700, 10), 24, (18, 9, 0)),  # from exactly 460 nm: the visible bands
    (np.arange(400, 641, 10), 25, (24, 15, 6)),  # to exactly 640 nm: the visible bands
    ([640.0, 550.0, 460.0], 3, (0, 1, 2)),  # three bands, visible, in any order
    (np.arange(461, 700, 10), 24, (23, 11, 0)),  # starts above 460 nm: evenly spaced
    (np.arange(400, 640, 10), 24, (23, 11, 0)),  # ends below 640 nm: evenly spaced
    (np.arange(400, 1000, 10), 5, (4, 2, 0)),  # wavelengths not one per band: evenly spaced
    (np.arange(400, 1000, 10), 60, (24, 15, 6)),
    ([500.0, 600.0], 2, (1, 0, 0)),
    ([500.0], 1, (0, 0, 0)),
], ids=["from 460 nm", "to 640 nm", "three visible bands", "from 461 nm", "to 630 nm",
        "grid mismatch", "400-990 nm", "two bands", "one band"])
def test_the_bands_a_thumbnail_shows(wl, channels, expected) -> None:
    assert rgb_bands(wl, channels) == expected


def test_the_thumbnail_of_a_cube_is_the_one_its_summary_keeps() -> None:
    from dvc_cuvis.materialize.summaries import thumbnail

    cube = _cube(100, 70, 6, seed=2)
    wl = np.array([450.0, 550.0, 560.0, 570.0, 580.0, 650.0])  # evenly spaced would be 5, 2, 0
    kept = summarize(cube, wl, with_thumbnail=True).thumbnail
    assert thumbnail(cube, wl) == kept and kept is not None and kept.bands == (5, 1, 0)
    step = sample_step(100, 70)
    grid = cube[::step, ::step][:, :, [5, 1, 0]].astype(np.float64)
    lo, hi = np.percentile(grid.reshape(-1, 3), [2.0, 98.0], axis=0)
    expected = np.rint(np.clip((grid - lo) / (hi - lo) * 255.0, 0, 255)).astype(np.uint8)
    assert np.array_equal(kept.array(), expected)


def test_a_sampled_category_is_averaged_over_its_sampled_pixels_only() -> None:
    """On a frame larger than the sample, the mean of a category the sample meets is over the
    sampled pixels (not the whole category)."""
    cube = _cube(64, 64, 2, seed=8)
    mask = np.ones((64, 64), dtype=np.uint8)
    step = sample_step(64, 64)
    assert step == 2
    s = summarize(cube, [1, 2], mask)
    sampled = cube[::step, ::step].reshape(-1, 2).astype(np.float64).mean(axis=0)
    assert s.categories[1].mean == pytest.approx(tuple(sampled), rel=1e-6)
    assert s.categories[1].mean != pytest.approx(tuple(cube.reshape(-1, 2).mean(axis=0)),
                                                 rel=1e-6)


def test_one_valid_pixel_and_one_bad_pixel() -> None:
    cube = _cube(4, 4, 3, seed=9)
    one = summarize(cube[:1, :1], [1, 2, 3])
    assert one.mean == pytest.approx(tuple(cube[0, 0].tolist())) and one.std == (0.0, 0.0, 0.0)
    cube[2, 3, 1] = np.nan  # exactly one invalid pixel: it stays out of the means
    s = summarize(cube, [1, 2, 3])
    assert s.invalid == 1 and all(v is not None for v in s.mean)
    keep = np.ones((4, 4), bool)
    keep[2, 3] = False
    assert s.mean == pytest.approx(tuple(cube[keep].astype(np.float64).mean(axis=0)), rel=1e-6)


def test_every_field_round_trips_through_the_stored_form() -> None:
    cube = (np.arange(40 * 40 * 3) % 300).reshape(40, 40, 3).astype(np.uint8)
    cube[0, 0, 0] = 255
    mask = np.zeros((40, 40), np.uint8)
    mask[0, 0] = 4  # its one pixel is saturated: no mean
    s = summarize(cube, [460, 550, 640], mask, ceiling=ceiling_of(np.uint8))
    assert s.saturated and s.thumbnail is None and s.categories[4].mean is None
    rec = json.loads(json.dumps(to_record(s)))
    assert "thumbnail" not in rec and from_record(rec) == s
    bare = {k: v for k, v in rec.items() if k != "categories"}
    assert from_record(bare).categories == {}


def test_a_non_square_cube_and_flat_or_empty_channels() -> None:
    from dvc_cuvis.materialize.summaries import thumbnail

    cube = _cube(300, 40, 3, seed=10)
    t = thumbnail(cube, [1, 2, 3])
    step = sample_step(300, 40)
    k = -(-len(range(0, 300, step)) // 64)
    assert (t.height, t.width) == (len(range(0, 300, step * k)), len(range(0, 40, step * k)))
    flat = cube.copy()
    flat[..., 1] = 5.0  # all finite, one flat channel: its pixels are all 127
    assert set(np.unique(thumbnail(flat, [1, 2, 3]).array()[:, :, 1]).tolist()) == {127}
    empty = cube.copy()
    empty[..., 2] = np.nan  # the red channel (bands 2, 1, 0) has no finite value at all
    img = thumbnail(empty, [1, 2, 3]).array()
    assert img[:, :, 0].max() == 0 and img[:, :, 1].max() == 255 and img[:, :, 2].max() == 255


def test_stored_values_are_rounded_to_float32_first() -> None:
    """A float64 mean is rounded to float32, then written with 9 significant digits."""
    cube = np.array([[[0.1], [0.2]]], dtype=np.float32)
    m64 = cube.astype(np.float64).mean()
    s = summarize(cube, [500])
    assert s.mean == (float(f"{np.float32(m64):.9g}"),)
    assert s.mean != (float(f"{m64:.9g}"),)


def _plain_summary(cube: np.ndarray, wl: np.ndarray, mask: np.ndarray | None,
                   ceiling: float | None) -> tuple[int, int | None, list[float], list[float]]:
    """The recipe's statistics written out plainly: every array fresh, no shared buffer."""
    step = sample_step(*cube.shape[:2])
    px = cube[::step, ::step].reshape(-1, cube.shape[2]).astype(np.float64)
    ok = np.isfinite(px).all(axis=1)
    saturated = None
    if ceiling is not None:
        top = (px >= ceiling).any(axis=1) & ok
        saturated, ok = int(top.sum()), ok & ~top
    good = px[ok]
    mean = good.mean(axis=0)
    std = np.sqrt(((good - mean) ** 2).mean(axis=0))
    return int((~np.isfinite(px).all(axis=1)).sum()), saturated, mean.tolist(), std.tolist()


def test_frames_of_changing_shapes_and_bad_pixels_in_turn_keep_their_own_figures() -> None:
    """summarize reuses its buffers from frame to frame: frames of other shapes, dtypes and
    bad pixels in between change no figure of a frame, and a kept summary is not a view of
    a buffer the next frame overwrites."""
    rng = np.random.default_rng(7)
    frames = []
    for h, w, c, kind in ((40, 40, 6, "clean"), (9, 30, 6, "nan"), (40, 40, 6, "uint16"),
                          (64, 64, 3, "inf")):
        cube: np.ndarray = rng.random((h, w, c), dtype=np.float32) * 10 + 1
        if kind == "nan":
            cube[2, 3, 1] = np.nan
        if kind == "inf":
            cube[::5, ::5, 0] = np.inf
        if kind == "uint16":
            cube = (cube * 100).astype(np.uint16)
            cube[0, 0, 2] = 65535
        mask = rng.integers(0, 3, size=(h, w)).astype(np.uint8)
        frames.append((cube, np.arange(500, 500 + c), mask, ceiling_of(cube.dtype)))
    frames.append(frames[0])  # the first frame again, after the others
    kept = [summarize(cube, wl, mask, ceiling=ceil, with_thumbnail=True)
            for cube, wl, mask, ceil in frames]
    again = [summarize(cube, wl, mask, ceiling=ceil, with_thumbnail=True)
             for cube, wl, mask, ceil in reversed(frames)]
    assert [to_record(s) for s in kept] == [to_record(s) for s in reversed(again)]
    for s, (cube, wl, mask, ceil) in zip(kept, frames, strict=True):
        invalid, saturated, mean, std = _plain_summary(cube, wl, mask, ceil)
        assert (s.invalid, s.saturated) == (invalid, saturated)
        np.testing.assert_allclose(s.mean, mean, rtol=1e-6)
        np.testing.assert_allclose(s.std, std, rtol=1e-5, atol=1e-7)
    assert kept[1].invalid == 1 and kept[3].invalid == 7 * 7 and kept[2].saturated == 1
    assert kept[0] == kept[4]


def test_threads_summarizing_at_once_get_what_one_thread_gets() -> None:
    """Each thread has buffers of its own: two threads summarizing frames of different
    shapes at once give the figures one thread gives."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(3)
    cubes = [rng.random((s, s, 8), dtype=np.float32) for s in (48, 20, 48, 33) * 6]
    wl = np.arange(600, 608)
    serial = [to_record(summarize(c, wl, with_thumbnail=True)) for c in cubes]
    with ThreadPoolExecutor(2) as pool:
        both = list(pool.map(lambda c: to_record(summarize(c, wl, with_thumbnail=True)), cubes))
    assert both == serial


@pytest.mark.parametrize("seed", range(6))
def test_the_stretch_bounds_are_numpys_percentiles_to_the_last_bit(seed: int) -> None:
    """The thumbnail's 2nd and 98th percentiles come from one sort, not np.percentile: the
    same values bit for bit, for any sample size, ties and float32-born values included."""
    from dvc_cuvis.materialize.summaries import STRETCH, _percentiles

    rng = np.random.default_rng(seed)
    # n = 26, 76, 126, 176 put both percentiles exactly halfway between two values, where
    # numpy interpolates from the upper one
    for n in (1, 2, 3, 26, 49, 50, 51, 76, 126, 176, 1023, 1024, 1025,
              *rng.integers(1, 4000, size=40).tolist()):
        x = rng.random((n, 3)) * rng.uniform(1e-3, 1e3) - rng.uniform(0, 10)
        if n % 3 == 0:
            x = np.round(x, 1)  # ties
        if n % 4 == 0:
            x = x.astype(np.float32).astype(np.float64)
        lo, hi = _percentiles(x, STRETCH)
        ref = np.percentile(x, STRETCH, axis=0)
        assert np.array_equal(lo, ref[0]) and np.array_equal(hi, ref[1]), n


def test_a_uint8_mask_of_up_to_16_ids_is_counted_id_by_id(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """The rule as documented: bincount only for another dtype or a 17th id."""
    from dvc_cuvis.materialize import summaries

    calls: list[str] = []
    real = np.bincount

    def counting(values: np.ndarray, *a: object, **k: object) -> np.ndarray:
        calls.append(str(values.dtype))
        return real(values, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(summaries.np, "bincount", counting)
    for dtype, top, expected in ((np.uint8, 15, []), (np.uint8, 16, ["uint8"]),
                                 (np.uint16, 3, ["uint16"]), (np.int32, 0, ["int32"])):
        calls.clear()
        mask = np.zeros((6, 7), dtype=dtype)
        mask[0, 0] = top
        counts = summaries._pixel_counts(mask)
        assert calls == expected, (dtype, top)
        assert counts.tolist() == ([41, *[0] * (top - 1), 1] if top else [42])


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32])
def test_pixel_counts_are_bincounts(dtype: type) -> None:
    """Each category's exact pixel count, whether counted id by id (a uint8 mask of up to
    16 ids) or by bincount (any other mask)."""
    from dvc_cuvis.materialize.summaries import _pixel_counts

    rng = np.random.default_rng(5)
    for top in (0, 1, 3, 15, 16, 200):
        mask = rng.integers(0, top + 1, size=(37, 29)).astype(dtype)
        assert np.array_equal(_pixel_counts(mask), np.bincount(mask.ravel(), minlength=1))
        assert _pixel_counts(mask).dtype == np.intp
    empty = np.zeros((0, 4), dtype=dtype)
    assert np.array_equal(_pixel_counts(empty), np.bincount(empty.ravel(), minlength=1))


def test_an_integer_cube_without_a_saturated_pixel_counts_zero_saturated() -> None:
    """With a ceiling, no saturated pixel is 0 (None means the dtype gives no ceiling), and
    a pixel exactly at the ceiling is saturated."""
    cube = np.full((8, 8, 3), 1000, dtype=np.uint16)
    s = summarize(cube.astype(np.float32), [1, 2, 3], ceiling=ceiling_of(cube.dtype))
    assert (s.saturated, s.invalid, s.valid) == (0, 0, 64)
    cube[2, 3, 1] = 65535
    s = summarize(cube.astype(np.float32), [1, 2, 3], ceiling=ceiling_of(cube.dtype))
    assert (s.saturated, s.valid) == (1, 63) and s.mean == (1000.0, 1000.0, 1000.0)


def test_a_categorys_mean_does_not_depend_on_the_labels_of_other_pixels() -> None:
    """A category's pixels are summed in their own order (a stable sort by category), so
    relabelling the pixels around it leaves its stored mean as it was, bit for bit, even
    where float64 addition depends on the order (2**60 - 2**60 + 1 is 1, 2**60 + 1 - 2**60
    is 0)."""
    cube = np.ones((8, 8, 3), dtype=np.float32)
    ours = np.arange(64).reshape(8, 8) % 3 == 0  # category 1: every third pixel
    first, second = np.flatnonzero(ours.ravel())[:2]
    cube.reshape(-1, 3)[first] = 2.0**60
    cube.reshape(-1, 3)[second] = -(2.0**60)
    means = set()
    for others in (np.zeros((8, 8)), np.full((8, 8), 2), np.arange(64).reshape(8, 8) % 2 * 2,
                   np.arange(64).reshape(8, 8) % 5 + 2):
        mask = np.where(ours, 1, others).astype(np.uint8)
        cat = summarize(cube, [1, 2, 3], mask).categories[1]
        assert cat.pixels == 22
        means.add(cat.mean)
    assert len(means) == 1, means


def test_the_std_of_no_pixels_is_nan_per_band() -> None:
    from dvc_cuvis.materialize.summaries import _std

    none = np.zeros((0, 4))
    std = _std(none, np.full(4, np.nan), none)
    assert std.dtype == np.float64 and std.shape == (4,) and np.isnan(std).all()


def test_a_flat_channel_is_stretched_without_a_division_by_zero() -> None:
    """A flat thumbnail channel is 127 with no 0/0 computed (numpy would warn), whether the
    sample is all finite or not."""
    import warnings

    cube = _cube(30, 20, 3, seed=11)
    cube[..., 1] = 5.0
    bad = cube.copy()
    bad[3, 4, 0] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for c in (cube, bad):
            t = summarize(c, [1, 2, 3], with_thumbnail=True).thumbnail
            assert t is not None and set(np.unique(t.array()[:, :, 1]).tolist()) == {127}


def test_a_thread_keeps_its_buffers_from_one_frame_to_the_next() -> None:
    """The same shape gets the same two arrays again, another shape new ones of that shape,
    and another thread its own."""
    from concurrent.futures import ThreadPoolExecutor

    from dvc_cuvis.materialize.summaries import _buffers

    a, b = _buffers(30, 4)
    assert a.shape == b.shape == (30, 4) and a.dtype == b.dtype == np.float64 and a is not b
    again = _buffers(30, 4)
    assert again[0] is a and again[1] is b
    other = _buffers(30, 5)
    assert other[0].shape == other[1].shape == (30, 5) and other[0] is not a
    with ThreadPoolExecutor(1) as pool:
        theirs = pool.submit(_buffers, 30, 5).result()
    assert theirs[0] is not other[0] and theirs[1] is not other[1]
    assert _buffers(30, 5)[0] is other[0]
    held = _buffers(30, 4)
    summarize(_cube(5, 6, 4), [1, 2, 3, 4])  # 30 pixels x 4 bands: the pair held, not new ones
    assert _buffers(30, 4)[0] is held[0] and _buffers(30, 4)[1] is held[1]
