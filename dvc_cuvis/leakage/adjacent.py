"""Neighbouring frames: frames of one recording a few positions apart that sit in different
stages (``adjacent_frames``), and the bake-time buffer that leaves such frames out.

Two frames next to each other in time are near copies of one scene, so a test frame whose
neighbour was trained on is not independent of training even when no id is shared.  Positions
are those of :func:`~dvc_cuvis.leakage.recordings.frame_positions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dvc_cuvis.config.specs import ADJACENT as SEVERITIES
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.leakage.recordings import frame_positions
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES
from dvc_cuvis.model.universe import Universe

__all__ = ["ADJACENT_FRAMES", "MAX_K", "SEVERITIES", "Pairs", "adjacent_pairs", "buffer_rows",
           "check_k", "check_severity"]

#: The check's name (in ``check``'s constraints finding and ``check --json``).
ADJACENT_FRAMES = "adjacent_frames"
#: The widest neighbourhood asked for (each unit of K is one pass over the universe).
MAX_K = 1000
#: The most pairs a finding names one by one (the rest are counted).
SHOWN = 20


def check_k(k: object, named: str = "adjacent_k") -> int:
    """``k`` as a whole number from 1 to :data:`MAX_K`, else an error naming ``named``; checked
    before any pass, since K passes are made over the universe."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise DvcCuvisError(f"{named} must be a whole number from 1 to {MAX_K}, got {k!r}")
    return k


def check_severity(severity: object, named: str = "adjacent_frames") -> str:
    """``severity`` if it is error, warn or off, else an error naming ``named``."""
    if severity not in SEVERITIES:
        raise DvcCuvisError(f"{named} must be one of {', '.join(SEVERITIES)}, got {severity!r}")
    return str(severity)


def _row_stage(n: int, stages: Mapping[str, npt.ArrayLike]) -> npt.NDArray[np.int8]:
    """Per row its first exclusive stage (0 train, 1 val, 2 test), -1 for none."""
    out = np.full(n, -1, dtype=np.int8)
    for code in range(len(EXCLUSIVE_STAGES) - 1, -1, -1):  # train wins an overlap
        out[np.asarray(stages.get(EXCLUSIVE_STAGES[code], ()), dtype=np.int64)] = code
    return out


def _near(uni: Universe, row_stage: npt.NDArray[np.int8], k: int
          ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Row pairs (earlier, later) of one recording, at most ``k`` positions apart, both in
    a stage and in different stages."""
    _names, codes, pos = frame_positions(uni)
    order = np.lexsort((pos, codes))
    a_all: list[npt.NDArray[np.int64]] = []
    b_all: list[npt.NDArray[np.int64]] = []
    for d in range(1, min(k, max(len(order) - 1, 0)) + 1):
        a, b = order[:-d], order[d:]
        hit = ((codes[a] == codes[b]) & (pos[b] - pos[a] <= k) & (row_stage[a] >= 0)
               & (row_stage[b] >= 0) & (row_stage[a] != row_stage[b]))
        a_all.append(a[hit])
        b_all.append(b[hit])
    if not a_all:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    a_cat, b_cat = np.concatenate(a_all), np.concatenate(b_all)
    order2 = np.lexsort((b_cat, a_cat))
    return a_cat[order2], b_cat[order2]


@dataclass(frozen=True)
class Pairs:
    """Neighbouring frames in different stages: the count and the first pairs, named."""

    count: int
    pairs: tuple[dict[str, str], ...]  # {"a", "a_stage", "b", "b_stage"}, the first SHOWN
    k: int
    #: every pair counted per pair of stages (train-val, train-test, val-test; zeros kept)
    by_stages: tuple[tuple[str, str, int], ...] = ()

    def lines(self) -> list[str]:
        """One short text per named pair (``a (train) ~ b (test)``)."""
        return [f"{p['a']} ({p['a_stage']}) ~ {p['b']} ({p['b_stage']})" for p in self.pairs]


def adjacent_pairs(uni: Universe, stages: Mapping[str, npt.ArrayLike], k: int = 1) -> Pairs:
    """Frames of one recording within ``k`` positions of each other but in different stages
    of train/val/test: a split made per sample or imported can place them so."""
    check_k(k)
    row_stage = _row_stage(len(uni), stages)
    a, b = _near(uni, row_stage, k)
    shown = [{"a": uni.uid(int(x)), "a_stage": EXCLUSIVE_STAGES[row_stage[x]],
              "b": uni.uid(int(y)), "b_stage": EXCLUSIVE_STAGES[row_stage[y]]}
             for x, y in np.stack((a[:SHOWN], b[:SHOWN]), axis=1).tolist()]
    lo, hi = np.minimum(row_stage[a], row_stage[b]), np.maximum(row_stage[a], row_stage[b])
    per = tuple((EXCLUSIVE_STAGES[i], EXCLUSIVE_STAGES[j], int(((lo == i) & (hi == j)).sum()))
                for i in range(len(EXCLUSIVE_STAGES))
                for j in range(i + 1, len(EXCLUSIVE_STAGES)))
    return Pairs(len(a), tuple(shown), k, per)


def buffer_rows(uni: Universe, stages: Mapping[str, npt.ArrayLike], k: int
                ) -> npt.NDArray[np.int64]:
    """Rows to leave out of every stage so no two frames within ``k`` of each other in one
    recording stay in different stages: walking each recording in frame order, a frame is
    left out when a kept frame of another stage lies within ``k`` before it (so the first
    ``k`` positions after each stage boundary go)."""
    check_k(k, "buffer")
    row_stage = _row_stage(len(uni), stages)
    _a, b = _near(uni, row_stage, k)
    if not len(b):
        return np.zeros(0, dtype=np.int64)
    _names, codes, pos = frame_positions(uni)
    touched = np.isin(codes, np.unique(codes[b]))  # only recordings with a close boundary
    rows = np.flatnonzero(touched & (row_stage >= 0))
    rows = rows[np.lexsort((pos[rows], codes[rows]))]
    drop: list[int] = []
    last: dict[int, tuple[int, int]] = {}  # per stage: recording and position last kept
    table = np.stack((rows, codes[rows], pos[rows], row_stage[rows]), axis=1).tolist()
    for r, c, p, st in table:
        if any(j != st and cq == c and p - q <= k for j, (cq, q) in last.items()):
            drop.append(r)  # a kept frame of another stage is within k before it
        else:
            last[st] = (c, p)
    return np.array(sorted(drop), dtype=np.int64)
