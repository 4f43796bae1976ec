"""Spectral shift as a test (``spectral_shift``): do two stages' frames show one mean spectrum?

Frames of one recording are near copies of one scene, so they are not independent samples:
the unit of the test is the recording.  Each recording's mean spectrum is the mean of its
frames' mean spectra (from the per-frame summaries materialize records, no cube read); the
bands are cut into contiguous ranges of near equal band count, and a recording's value in a
range is its mean over those bands.  Per range the statistic is the standardized difference
of the two stages' recording means (pooled standard deviation over recordings); the test
statistic is its largest absolute value over the ranges, and the p-value comes from
permuting the stage labels of whole recordings (max-T: one null distribution for the
maximum, so the many ranges are accounted for).  With too few recordings to reach the
significance level by any permutation, no p-value is given: the test says so.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dvc_cuvis.errors import DvcCuvisError

__all__ = ["ALPHA", "PERMUTATIONS", "RANGES", "SPECTRAL_SHIFT", "Shift", "band_ranges",
           "recording_means", "shift_test"]

#: The check's name (in ``check``'s constraints finding and ``check --json``).
SPECTRAL_SHIFT = "spectral_shift"
#: Significance level: a split is flagged when the permutation p-value is at most this.
ALPHA = 0.05
#: Random permutations drawn (exact enumeration is used when the space is no larger).
PERMUTATIONS = 999
#: Band ranges the spectrum is cut into (fewer when there are fewer bands).
RANGES = 8
#: The seed of the permutations (with a digest of the data), so a verdict is the same on
#: every run.
SEED = 20240611
#: Permutations evaluated per block (bounds the label matrix held at once).
_BLOCK = 128


def band_ranges(n_bands: int, ranges: int = RANGES) -> list[tuple[int, int]]:
    """Contiguous ``[start, stop)`` band windows of near equal count, so each range averages
    as many bands and a shift in one part of the spectrum is not diluted by the rest."""
    if n_bands < 1:
        return []
    k = max(1, min(ranges, n_bands))
    # k <= n_bands: the edges step by at least one band, so no window is empty
    edges = np.linspace(0, n_bands, k + 1).round().astype(int).tolist()
    return list(itertools.pairwise(edges))


def recording_means(means: npt.ArrayLike, recordings: npt.ArrayLike
                    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Per recording (sorted codes) the mean of its frames' mean spectra, so that every
    recording counts once whatever its frame count (NaN bands are left out of the mean)."""
    m = np.asarray(means, dtype=np.float64)
    codes = np.asarray(recordings, dtype=np.int64)
    if m.ndim != 2 or len(m) != len(codes):
        raise DvcCuvisError(f"recording_means: {m.shape} means for {len(codes)} frames")
    uniq, inv = np.unique(codes, return_inverse=True)
    ok = np.isfinite(m)
    total = np.zeros((len(uniq), m.shape[1]))
    count = np.zeros((len(uniq), m.shape[1]))
    np.add.at(total, inv, np.where(ok, m, 0.0))
    np.add.at(count, inv, ok)
    with np.errstate(invalid="ignore"):  # a band missing in every frame: 0 / 0, NaN
        return uniq, total / count


@dataclass(frozen=True)
class Shift:
    """The outcome of one two-sample test: statistic, p-value, the range that drives it."""

    stage_a: str
    stage_b: str
    recordings: tuple[int, int]  # recordings in a and in b
    statistic: float  # max over ranges of |standardized difference|
    p_value: float | None  # None: too few recordings to test
    band: tuple[int, int]  # the [start, stop) bands of the largest difference
    nm: tuple[float, float]  # that range's first and last centre
    direction: float  # mean_b - mean_a in that range (sign: b brighter when > 0)
    permutations: int  # how many were evaluated (exact: all of them)
    exact: bool
    note: str = ""

    @property
    def flagged(self) -> bool:
        """Whether the shift is significant at :data:`ALPHA`."""
        return self.p_value is not None and self.p_value <= ALPHA

    def describe(self) -> str:
        """One line: which stage is shifted, by how much, where, and how sure."""
        where = (f"{self.nm[0]:g}–{self.nm[1]:g} nm" if self.nm[0] != self.nm[1]
                 else f"{self.nm[0]:g} nm")  # a range of one band: its centre
        if self.p_value is None:
            return (f"{self.stage_b} vs {self.stage_a}: {self.note} (largest difference "
                    f"{self.statistic:.2f}σ in {where})")
        return (f"{self.stage_b}'s mean spectrum differs from {self.stage_a}'s by "
                f"{self.statistic:.2f}σ in {where} (p = {self.p_value:.3g}, "
                f"{self.recordings[0]}+{self.recordings[1]} recordings, "
                f"{'exact' if self.exact else self.permutations} permutations)")

    def record(self) -> dict[str, object]:
        """Plain JSON types for ``check --json`` and the report."""
        return {"a": self.stage_a, "b": self.stage_b, "recordings": list(self.recordings),
                "statistic": round(self.statistic, 6),
                "p_value": None if self.p_value is None else round(self.p_value, 6),
                "bands": list(self.band), "nm": list(self.nm),
                "direction": round(self.direction, 9), "permutations": self.permutations,
                "exact": self.exact, "flagged": self.flagged, "note": self.note}


def _features(x: npt.NDArray[np.float64], ranges: Sequence[tuple[int, int]]
              ) -> npt.NDArray[np.float64]:
    """Per recording its mean over each range's bands (NaN bands left out), no columns
    without ranges: spectra without bands are then reported untestable, not a crash."""
    out = np.empty((len(x), len(ranges)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN range: NaN, dropped
        for k, (a, b) in enumerate(ranges):
            out[:, k] = np.nanmean(x[:, a:b], axis=1)
    return out


def _stats(labels: npt.NDArray[np.float64], x: npt.NDArray[np.float64],
           x2: npt.NDArray[np.float64], n_a: int
           ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per labelling (rows of ``labels``, 1 = stage b) and range: the standardized
    difference of means, and the raw difference."""
    n = x.shape[0]
    n_b = n - n_a
    sum_b, sq_b = labels @ x, labels @ x2
    sum_a, sq_a = x.sum(0) - sum_b, x2.sum(0) - sq_b
    mean_a, mean_b = sum_a / n_a, sum_b / n_b
    ss = (sq_a - n_a * mean_a**2) + (sq_b - n_b * mean_b**2)
    sp = np.sqrt(np.maximum(ss, 0.0) / (n - 2))
    diff = mean_b - mean_a
    scale = np.maximum(np.abs(x).max(0), 1e-300) * 1e-9  # rounding noise (n >= 3 rows)
    # the divisor is sp only where sp > scale > 0, else 1: no division by zero
    z = np.where(sp > scale, diff / np.where(sp > scale, sp, 1.0),
                 np.where(np.abs(diff) > scale, np.inf, 0.0))
    return z, diff


def shift_test(a: npt.ArrayLike, b: npt.ArrayLike, wavelengths: Sequence[float], *,
               stage_a: str = "train", stage_b: str = "test", ranges: int = RANGES,
               permutations: int = PERMUTATIONS, seed: int = SEED) -> Shift:
    """Permutation test of two stages' recording mean spectra (rows: recordings, columns:
    bands), whole recordings exchanged, the max over band ranges as statistic."""
    xa, xb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    n_bands = len(wavelengths)
    if xa.ndim != 2 or xb.ndim != 2 or xa.shape[1] != n_bands or xb.shape[1] != n_bands:
        raise DvcCuvisError(f"spectral shift: spectra of {xa.shape} and {xb.shape} for "
                            f"{n_bands} wavelengths")
    rngs = band_ranges(n_bands, ranges)
    x = _features(np.concatenate([xa, xb]), rngs)
    keep: npt.NDArray[np.bool_] = np.asarray(np.isfinite(x).all(axis=1))
    n_a, n_b = int(keep[:len(xa)].sum()), int(keep[len(xa):].sum())
    x = x[keep]
    n = n_a + n_b
    wl = [float(w) for w in wavelengths]
    observed = np.zeros((1, n))
    observed[0, n_a:] = 1.0
    if n_a < 1 or n_b < 1 or n < 3 or not rngs:
        return Shift(stage_a, stage_b, (n_a, n_b), 0.0, None, (0, n_bands),
                     (wl[0] if wl else 0.0, wl[-1] if wl else 0.0), 0.0, 0, False,
                     "too few recordings to test (each stage needs one, both three)")
    x2 = x**2
    z, diff = _stats(observed, x, x2, n_a)
    t_obs = float(np.abs(z[0]).max())
    r = int(np.argmax(np.abs(z[0])))
    band = rngs[r]
    nm = (wl[band[0]], wl[band[1] - 1])
    space = math.comb(n, n_b)
    # the smallest p-value: the observed labelling alone, or with its mirror when the stages
    # are of one size (the stages swapped score the same |statistic|)
    alike = 2 if n_a == n_b else 1
    if space * ALPHA < alike:  # even the smallest p-value would be above ALPHA
        return Shift(stage_a, stage_b, (n_a, n_b), t_obs, None, band, nm, float(diff[0, r]),
                     0, False, f"too few recordings to test ({n_a}+{n_b}: {space} ways "
                     f"to split them, the smallest p-value is {alike}/{space})")
    exact = space <= permutations
    p, total = _p_value(x, n_a, n_b, t_obs, permutations if not exact else None, seed)
    return Shift(stage_a, stage_b, (n_a, n_b), t_obs, p, band, nm, float(diff[0, r]),
                 total, exact)


def _p_value(x: npt.NDArray[np.float64], n_a: int, n_b: int, t_obs: float,
             permutations: int | None, seed: int) -> tuple[float, int]:
    """The permutation p-value of ``t_obs`` and the labellings drawn: every labelling when
    ``permutations`` is None (exact), else that many seeded random ones."""
    n = n_a + n_b
    x2 = x**2
    tol = t_obs * (1 - 1e-9)
    hits = total = 0
    if permutations is None:
        combos = itertools.combinations(range(n), n_b)
        while True:
            chunk = list(itertools.islice(combos, _BLOCK))
            if not chunk:
                break
            labels = np.zeros((len(chunk), n))
            labels[np.repeat(np.arange(len(chunk)), n_b), np.array(chunk).ravel()] = 1.0
            zs, _ = _stats(labels, x, x2, n_a)
            hits += int((np.abs(zs).max(axis=1) >= tol).sum())
            total += len(chunk)
        return hits / total, total
    # seeded by the data too: the same input always draws the same permutations, yet one
    # fixed set is not reused for every split (its level would stray from ALPHA)
    digest = hashlib.sha256(np.ascontiguousarray(x).tobytes() + bytes([n_a % 256]))
    rng = np.random.default_rng([seed, int.from_bytes(digest.digest()[:8], "little")])
    base = np.zeros(n)
    base[n_a:] = 1.0
    left = permutations
    while left:
        m = min(_BLOCK, left)
        labels = rng.permuted(np.tile(base, (m, 1)), axis=1)
        zs, _ = _stats(labels, x, x2, n_a)
        hits += int((np.abs(zs).max(axis=1) >= tol).sum())
        left -= m
    return (hits + 1) / (permutations + 1), permutations
