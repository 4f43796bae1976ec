"""Wavelength grids (``wavelength_grid``): the frames of a split share one band layout.

A model trained on one grid reads band *i* as one wavelength; a frame whose band *i* lies
elsewhere (another band count, or a recalibrated camera whose centres moved) is silently
misread.  Two frames are on one grid when they have the same band count and every centre
lies within :data:`TOLERANCE_NM` of the other's.  The wavelengths are those the per-frame
summaries record (read by materialize from the frame or its session).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["TOLERANCE_NM", "WAVELENGTH_GRID", "Grid", "changed_grids", "grid_changes",
           "grid_label", "grids", "same_grid"]

#: The check's name (in ``check``'s constraints finding and ``check --json``).
WAVELENGTH_GRID = "wavelength_grid"
#: Centres within this many nm of each other are one band (a rounding of the calibration).
TOLERANCE_NM = 0.5
#: Recordings a grid names one by one (the rest are counted).
SHOWN = 5


@dataclass(frozen=True)
class Grid:
    """One grid of the split: its centres, and the recordings and stages on it."""

    wavelengths: tuple[float, ...]
    recordings: tuple[str, ...]  # sorted
    stages: tuple[str, ...]  # sorted
    frames: int

    def line(self) -> str:
        """``20 bands 450–900 nm (train, test): rec_a/, rec_b/``."""
        names = ", ".join(self.recordings[:SHOWN])
        more = len(self.recordings) - SHOWN
        return (f"{grid_label(self.wavelengths)} ({', '.join(self.stages)}): {names}"
                + (f" and {more} more" if more > 0 else ""))

    def record(self) -> dict[str, object]:
        """Plain JSON types for ``check --json``."""
        ends = [self.wavelengths[0], self.wavelengths[-1]] if self.wavelengths else []
        return {"bands": len(self.wavelengths), "nm": ends,
                "recordings": list(self.recordings), "stages": list(self.stages),
                "frames": self.frames}


def grid_label(wavelengths: Sequence[float]) -> str:
    """A grid in a few words: band count and first and last centre."""
    if not wavelengths:
        return "0 bands"
    return f"{len(wavelengths)} bands {wavelengths[0]:g}–{wavelengths[-1]:g} nm"


def same_grid(a: Sequence[float], b: Sequence[float], tol: float = TOLERANCE_NM) -> bool:
    """Whether two frames share one grid: same band count, every centre within ``tol``."""
    return len(a) == len(b) and (not a or float(np.max(np.abs(np.subtract(a, b)))) <= tol)


def grids(wavelengths: Sequence[Sequence[float]], recordings: Sequence[str],
          stages: Sequence[str], tolerance: float = TOLERANCE_NM) -> list[Grid]:
    """The grids the frames lie on (per frame: its centres, recording, stage), the largest
    first, so a split on more than one grid can be refused naming the recordings of each."""
    distinct = sorted({tuple(float(w) for w in wl) for wl in wavelengths},
                      key=lambda g: (len(g), g))
    refs: list[tuple[float, ...]] = []
    home: dict[tuple[float, ...], int] = {}
    for g in distinct:  # each distinct grid joins the first reference it matches
        k = next((i for i, r in enumerate(refs) if same_grid(r, g, tolerance)), None)
        if k is None:
            k = len(refs)
            refs.append(g)
        home[g] = k
    recs: list[set[str]] = [set() for _ in refs]
    sts: list[set[str]] = [set() for _ in refs]
    counts = [0] * len(refs)
    for wl, rec, st in zip(wavelengths, recordings, stages, strict=True):
        k = home[tuple(float(w) for w in wl)]
        recs[k].add(rec)
        sts[k].add(st)
        counts[k] += 1
    out = [Grid(refs[k], tuple(sorted(recs[k])), tuple(sorted(sts[k])), counts[k])
           for k in range(len(refs))]
    return sorted(out, key=lambda g: (-g.frames, len(g.wavelengths), g.wavelengths))


def changed_grids(before: Mapping[str, Sequence[float]], after: Mapping[str, Sequence[float]],
                  tolerance: float = TOLERANCE_NM
                  ) -> list[tuple[str, tuple[float, ...], tuple[float, ...]]]:
    """Per recording present in both versions whose grid changed (sorted by name): the
    recording and its grid before and after, so a caller can word or serialize the change."""
    out = []
    for rec in sorted(set(before) & set(after)):
        a = tuple(float(w) for w in before[rec])
        b = tuple(float(w) for w in after[rec])
        if not same_grid(a, b, tolerance):
            out.append((rec, a, b))
    return out


def grid_changes(before: Mapping[str, Sequence[float]], after: Mapping[str, Sequence[float]],
                 tolerance: float = TOLERANCE_NM) -> list[str]:
    """Per recording present in both versions whose grid changed: one line naming it, so
    ``diff`` can say that a recording was recalibrated or re-sampled."""
    return [f"{rec}: wavelength grid changed from {grid_label(a)} to {grid_label(b)}"
            for rec, a, b in changed_grids(before, after, tolerance)]
