"""Spectral summaries of frames: what a reviewer needs to see a split's spectra, without a cube.

materialize holds every cube it writes in memory once, so that is where a frame is summarized:
per band the mean and standard deviation over valid pixels, per category of the frame's
``class_mask`` its mean spectrum and exact pixel count, the invalid (NaN, inf) and saturated
pixels, and, for a capped sample of frames, a small false-colour thumbnail. A summary is a few
kilobytes, so the report draws a million-frame split from summaries alone and reads no cube.

The recipe (:data:`RECIPE`), documented in docs/spectra.md:

- **pixel sample**: a regular grid, every ``s``-th row and column with
  ``s = ceil(sqrt(H * W / SAMPLE_PIXELS))`` (every pixel of a frame up to 1,024 pixels). The
  means, standard deviations, invalid and saturated counts are taken over the sampled pixels;
  category pixel counts are exact (the whole ``class_mask``).
- **valid pixel**: every band finite, and no band at the ceiling where the input dtype has
  one (an integer dtype's maximum); a saturated pixel is counted and left out of the means.
- **thumbnail**: uint8 RGB, at most 64 px on the long side, taken from the pixel sample
  itself (every ``k``-th point of its grid, ``k = ceil(long side of the grid / 64)``, so 1
  but for a very elongated frame): the sample's pixels are already read, and a thumbnail of
  its own grid would touch four times as much of the cube. From the bands nearest
  640/550/460 nm when the wavelengths cover 460-640 nm, else three evenly spaced
  bands; each channel stretched linearly from its 2nd to its 98th percentile over finite
  values to 0-255, a non-finite pixel black.

Statistics accumulate in float64 and are stored as float32: the same frame gives the same
values on any machine within float32 rounding.

The sample's float64 copies (half a megabyte each for a 256 x 256 x 61 frame) are made in
buffers a thread keeps from one frame to the next (:func:`_buffers`): a fresh array of
that size is a fresh mapping from the allocator, and its page faults cost more than the
arithmetic (figures in docs/performance.md).
"""

from __future__ import annotations

import base64
import math
import threading
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from dvc_cuvis.leakage.signatures import SIGNATURE_KEY, Signature, signature
from dvc_cuvis.leakage.signatures import from_record as signature_of
from dvc_cuvis.leakage.signatures import to_record as signature_record

#: Bump when any rule above changes: a summary of another recipe is computed again.
RECIPE = 3
#: Pixels the statistics sample at most per frame (a regular grid).
SAMPLE_PIXELS = 1024
#: The long side of a thumbnail, at most.
THUMB_PX = 64
#: The visible bands a false-colour thumbnail prefers (R, G, B), in nm.
RGB_NM = (640.0, 550.0, 460.0)
#: The percentiles each thumbnail channel is stretched between.
STRETCH = (2.0, 98.0)


@dataclass(frozen=True)
class Category:
    """One category of a frame: its exact pixel count and mean spectrum (None: no valid pixel)."""

    pixels: int
    mean: tuple[float, ...] | None


@dataclass(frozen=True)
class Thumbnail:
    """A false-colour thumbnail: raw uint8 RGB rows, and the bands it shows."""

    height: int
    width: int
    bands: tuple[int, int, int]
    rgb: bytes

    def array(self) -> np.ndarray:
        """The pixels as a ``[height, width, 3]`` uint8 array."""
        return np.frombuffer(self.rgb, dtype=np.uint8).reshape(self.height, self.width, 3)


@dataclass(frozen=True)
class FrameSummary:
    """The spectral summary of one frame (see the module's recipe)."""

    shape: tuple[int, int, int]
    wavelengths: tuple[float, ...]
    sampled: int
    invalid: int
    saturated: int | None
    mean: tuple[float | None, ...]
    std: tuple[float | None, ...]
    categories: dict[int, Category] = field(default_factory=dict)
    thumbnail: Thumbnail | None = None
    signature: Signature | None = None  # content digest, perceptual hash, spectral shape

    @property
    def valid(self) -> int:
        """Sampled pixels that count in the means."""
        return self.sampled - self.invalid - (self.saturated or 0)


def _f32(values: np.ndarray) -> tuple[float | None, ...]:
    """float32-rounded values as decimals of 9 significant digits, which read back as the
    same float32 (``0.431443304``, not ``0.43144330382347107``); a non-finite value (no valid
    pixel) is None."""
    out = np.asarray(values, dtype=np.float64).astype(np.float32).tolist()
    return tuple(float(f"{v:.9g}") if math.isfinite(v) else None for v in out)


def sample_step(height: int, width: int) -> int:
    """The grid step ``s`` of the pixel sample: at most :data:`SAMPLE_PIXELS` pixels."""
    return max(1, math.ceil(math.sqrt(height * width / SAMPLE_PIXELS)))


def ceiling_of(dtype: np.dtype[Any] | type) -> float | None:
    """The saturation value an input dtype gives: an integer dtype's maximum, else None."""
    dt = np.dtype(dtype)
    return float(np.iinfo(dt).max) if np.issubdtype(dt, np.integer) else None


class _Held(threading.local):
    """What one thread keeps from frame to frame: two float64 buffers of one sample shape."""

    buffers: tuple[np.ndarray, np.ndarray] | None = None


_HELD = _Held()


def _buffers(pixels: int, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """This thread's two float64 ``[pixels, channels]`` buffers (see the module's last note):
    the sample, and its deviations or its pixels sorted by category."""
    held = _HELD.buffers
    if held is None or held[0].shape != (pixels, channels):
        held = _HELD.buffers = (np.empty((pixels, channels)), np.empty((pixels, channels)))
    return held


def _valid_pixels(px: np.ndarray, ceiling: float | None) -> tuple[np.ndarray, int, int | None]:
    """Which sampled pixels are valid, and the invalid and saturated counts."""
    finite = np.isfinite(px).all(axis=1)
    invalid = int(px.shape[0] - finite.sum())
    if ceiling is None:
        return finite, invalid, None
    at_top = (px >= ceiling).any(axis=1) & finite
    return finite & ~at_top, invalid, int(at_top.sum())


def _std(wide: np.ndarray, mean: np.ndarray, spare: np.ndarray) -> np.ndarray:
    """Per-band population standard deviation of float64 pixels about their ``mean`` (NaN
    without any): a second pass, so a band far from zero keeps its small spread
    (``spare``: a buffer of ``wide``'s shape, for the deviations)."""
    if wide.shape[0] == 0:
        return np.full(wide.shape[1], np.nan)
    np.subtract(wide, mean, out=spare)
    np.multiply(spare, spare, out=spare)
    return np.sqrt(spare.mean(axis=0))


def _pixel_counts(class_mask: np.ndarray) -> np.ndarray:
    """Each category id's exact pixel count (``np.bincount``'s): for a uint8 mask of a few
    ids, one comparison per id, a third of bincount's time, which widens every label to
    eight bytes first."""
    flat = class_mask.ravel()
    top = int(flat.max()) if flat.size else 0
    if flat.dtype == np.uint8 and top < 16:
        return np.array([np.count_nonzero(flat == k) for k in range(top + 1)])
    return np.bincount(flat, minlength=1)


def _categories(
    cube: np.ndarray, class_mask: np.ndarray, step: int, ok: np.ndarray | None,
    wide: np.ndarray, ceiling: float | None, spare: np.ndarray,
) -> dict[int, Category]:
    """Each category of the mask: exact pixel count, mean over its valid sampled pixels
    (``wide``: the valid sampled pixels in float64, ``ok``: which sampled pixels they are,
    None: all; ``spare``: a buffer of ``wide``'s shape, for the pixels sorted).

    The sums of all categories are one ``reduceat`` over the pixels sorted by category (no
    BLAS: its threads and summation order vary by machine); a category the sample misses
    altogether is averaged over all its pixels (it is small).
    """
    counts = _pixel_counts(class_mask)
    present = np.flatnonzero(counts)
    labels = class_mask[::step, ::step].ravel()
    labels = labels if ok is None else labels[ok]
    order = np.argsort(labels, kind="stable")
    ordered = labels[order]  # each category's run of pixels: where the label changes
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1]))
                            ) if len(ordered) else np.zeros(0, dtype=np.intp)
    cats, sampled = ordered[starts], np.diff(np.append(starts, len(ordered)))
    # mode="clip": with the default "raise", take fills a fresh buffer before ``out``
    np.take(wide, order, axis=0, out=spare, mode="clip")
    sums = np.add.reduceat(spare, starts, axis=0) if len(starts) else spare[:0]
    row = {int(c): k for k, c in enumerate(cats.tolist())}
    out: dict[int, Category] = {}
    for cat in present.tolist():
        k = row.get(int(cat))
        if k is not None:
            mean = sums[k] / sampled[k]
        else:
            px = cube[class_mask == cat]
            px = px[_valid_pixels(px, ceiling)[0]].astype(np.float64)
            mean = px.mean(axis=0) if px.shape[0] else None
        out[int(cat)] = Category(int(counts[cat]), None if mean is None else _f32(mean))  # type: ignore[arg-type]
    return out


def _percentiles(values: np.ndarray, qs: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """``np.percentile(values, qs, axis=0)`` of finite float64 ``[n, k]`` values (n >= 1),
    its "linear" method to the last bit (tested against it), from one sort: numpy's own
    function costs several times more on a frame that has just pushed the caches out."""
    n = values.shape[0]
    ordered = np.sort(values, axis=0)
    out = []
    for q in qs:
        at = (n - 1) * (q / 100)
        below = math.floor(at)
        if at >= n - 1:
            out.append(ordered[-1].copy())
            continue
        a, b = ordered[below], ordered[below + 1]
        t = at - below
        diff = b - a
        out.append(b - diff * (1 - t) if t >= 0.5 else a + diff * t)
    return out[0], out[1]


def rgb_bands(wavelengths: np.ndarray | tuple[float, ...], channels: int) -> tuple[int, int, int]:
    """The bands a thumbnail shows: nearest 640/550/460 nm, else three evenly spaced."""
    wl = np.asarray(wavelengths, dtype=np.float64)
    if channels >= 3 and wl.size == channels and wl.min() <= RGB_NM[2] and wl.max() >= RGB_NM[0]:
        r, g, b = (int(np.abs(wl - nm).argmin()) for nm in RGB_NM)
        return r, g, b
    if channels >= 3:
        return channels - 1, (channels - 1) // 2, 0
    return (0, 0, 0) if channels == 1 else (1, 0, 0)


def thumbnail(cube: np.ndarray, wavelengths: np.ndarray) -> Thumbnail:
    """The false-colour thumbnail of a cube (the module's recipe): its summary's own."""
    summary = summarize(cube, wavelengths, with_thumbnail=True, signed=False)
    return cast(Thumbnail, summary.thumbnail)


def _thumbnail_of_grid(grid: np.ndarray, wavelengths: np.ndarray) -> Thumbnail:
    """The thumbnail of the pixel sample's ``[rows, cols, C]`` float64 grid."""
    rows, cols, channels = grid.shape
    k = max(1, math.ceil(max(rows, cols) / THUMB_PX))
    bands = rgb_bands(wavelengths, channels)
    small = grid[::k, ::k][:, :, list(bands)]  # a copy (a list of bands)
    rows, cols = small.shape[:2]
    if np.isfinite(small).all():  # the common case, all three channels in one pass
        lo, hi = _percentiles(small.reshape(-1, 3), STRETCH)
        span = hi - lo
        scaled = np.where(span > 0, (small - lo) / np.where(span > 0, span, 1.0) * 255.0, 127.0)
        rgb = np.rint(np.clip(scaled, 0.0, 255.0)).astype(np.uint8)
        return Thumbnail(int(rows), int(cols), bands, rgb.tobytes())
    out = np.zeros(small.shape, dtype=np.uint8)
    for c in range(3):
        chan = small[:, :, c]
        finite = np.isfinite(chan)
        if not finite.any():
            continue
        lo, hi = np.percentile(chan[finite], STRETCH)
        span = hi - lo
        scaled = (chan - lo) / span * 255.0 if span > 0 else np.full(chan.shape, 127.0)
        scaled = np.where(finite, np.clip(np.nan_to_num(scaled), 0.0, 255.0), 0.0)
        out[:, :, c] = np.rint(scaled)  # integers 0-255, into uint8
    return Thumbnail(int(rows), int(cols), bands, out.tobytes())


def summarize(
    cube: np.ndarray, wavelengths: np.ndarray, class_mask: np.ndarray | None = None, *,
    ceiling: float | None = None, with_thumbnail: bool = False, signed: bool = True,
    cube_crc: int | None = None,
) -> FrameSummary:
    """The spectral summary of one ``[H, W, C]`` cube (the module's recipe), with its
    signature (:mod:`dvc_cuvis.leakage.signatures`) unless ``signed`` is False: the cube is in
    memory here, so the duplicate checks never read it again (``cube_crc``: the CRC-32 of
    its bytes the frame writer took, so the signature makes no pass of its own)."""
    height, width, channels = cube.shape
    step = sample_step(height, width)
    grid = cube[::step, ::step]  # the sample, a view
    sample, spare = _buffers(grid.shape[0] * grid.shape[1], channels)
    np.copyto(sample.reshape(grid.shape), grid)  # the sample, read once, in float64
    wide, mean = sample, sample.mean(axis=0)
    # a finite sum of finite float32 values cannot overflow: a finite mean is a sample
    # without NaN or inf, and a maximum under the ceiling one without saturation
    ok: np.ndarray | None = None
    if bool(np.isfinite(mean).all()) and (ceiling is None or float(sample.max()) < ceiling):
        invalid, saturated = 0, None if ceiling is None else 0
    else:
        ok, invalid, saturated = _valid_pixels(sample, ceiling)
        wide = sample[ok]
        spare = np.empty_like(wide)
        mean = wide.mean(axis=0) if len(wide) else np.full(channels, np.nan)
    std = _std(wide, mean, spare)
    cats = (_categories(cube, class_mask, step, ok, wide, ceiling, spare)
            if class_mask is not None else {})
    wl = tuple(float(w) for w in np.asarray(wavelengths).ravel().tolist())
    return FrameSummary(
        (height, width, channels), wl, int(sample.shape[0]), invalid, saturated, _f32(mean),
        _f32(std), cats,
        _thumbnail_of_grid(sample.reshape(grid.shape), np.asarray(wavelengths))
        if with_thumbnail else None,
        signature(cube, cube_crc) if signed else None,
    )


# -- the stored form -----------------------------------------------------------------------


def to_record(s: FrameSummary) -> dict[str, Any]:
    """A summary as plain JSON types (the shard's per-frame entry, without its keys)."""
    rec: dict[str, Any] = {
        "shape": list(s.shape), "wavelengths": list(s.wavelengths), "sampled": s.sampled,
        "invalid": s.invalid, "saturated": s.saturated, "mean": list(s.mean),
        "std": list(s.std),
        "categories": {str(k): {"pixels": c.pixels, "mean": None if c.mean is None
                                else list(c.mean)} for k, c in sorted(s.categories.items())},
    }
    if s.thumbnail is not None:
        t = s.thumbnail
        rec["thumbnail"] = {"height": t.height, "width": t.width, "bands": list(t.bands),
                            "rgb": base64.b64encode(t.rgb).decode("ascii")}
    if s.signature is not None:  # versioned on its own: an entry without one is unsigned
        rec[SIGNATURE_KEY] = signature_record(s.signature)
    return rec


def _bands(values: list[int]) -> tuple[int, int, int]:
    r, g, b = (int(v) for v in values)
    return r, g, b


def from_record(rec: dict[str, Any]) -> FrameSummary:
    """The summary a shard entry holds (the inverse of :func:`to_record`)."""
    thumb = rec.get("thumbnail")
    return FrameSummary(
        tuple(rec["shape"]), tuple(rec["wavelengths"]), int(rec["sampled"]),
        int(rec["invalid"]), rec["saturated"], tuple(rec["mean"]), tuple(rec["std"]),
        {int(k): Category(int(v["pixels"]), None if v["mean"] is None else tuple(v["mean"]))
         for k, v in rec.get("categories", {}).items()},
        None if thumb is None else Thumbnail(
            int(thumb["height"]), int(thumb["width"]), _bands(thumb["bands"]),
            base64.b64decode(thumb["rgb"])),
        None if SIGNATURE_KEY not in rec else signature_of(rec[SIGNATURE_KEY], "summary"),
    )
