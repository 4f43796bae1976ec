"""The duplicate audit: frames of one content, or near copies, in different stages of a split.

Exact duplicates share the content digest of their data array (whatever container held them);
near duplicates have perceptual hashes within ``hamming`` bits and spectral shapes of cosine at
least ``cosine``, found through :mod:`~dvc_cuvis.leakage.index`.  Frames without a signature
are counted, never guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from dvc_cuvis.leakage.index import query_pairs
from dvc_cuvis.leakage.signatures import (
    CROPS,
    Signature,
    SignatureColumns,
    columns,
)
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES

#: Perceptual-hash distance (bits) at most, and spectral-shape cosine at least, of a near pair;
#: chosen from the planted cases measured by benchmarks/bench_leakage.py (docs/leakage.md).
HAMMING = 5
COSINE = 0.995
#: The pairs of stages a leakage count is kept for, in the order reports list them.
STAGE_PAIRS: tuple[tuple[str, str], ...] = tuple(
    (a, b) for i, a in enumerate(EXCLUSIVE_STAGES) for b in EXCLUSIVE_STAGES[i + 1:])


def stage_pair(a: str, b: str) -> tuple[str, str]:
    """Two stages in the order :data:`STAGE_PAIRS` names them (train before val before
    test), so a pair is counted once whichever of its frames sorts first."""
    rank = {s: i for i, s in enumerate(EXCLUSIVE_STAGES)}
    return (a, b) if (rank.get(a, len(rank)), a) <= (rank.get(b, len(rank)), b) else (b, a)


@dataclass(frozen=True)
class DuplicatePair:
    """Two samples of different stages with one content (exact) or near copies (near)."""

    kind: Literal["exact", "near"]
    first: str
    first_stage: str
    second: str
    second_stage: str
    distance: int  # perceptual-hash bits apart (0 for exact)

    @property
    def stages(self) -> tuple[str, str]:
        """Its two stages in report order (:func:`stage_pair`)."""
        return stage_pair(self.first_stage, self.second_stage)


@dataclass(frozen=True)
class DuplicateAudit:
    """What the audit found: cross-stage pairs, in-stage exact copies, unsigned frames."""

    exact: tuple[DuplicatePair, ...] = ()
    near: tuple[DuplicatePair, ...] = ()
    within_stage: int = 0  # frames whose content another frame of their stage repeats
    unsigned: tuple[str, ...] = field(default_factory=tuple)

    def by_stages(self) -> dict[tuple[str, str], tuple[int, int]]:
        """Exact and near pairs counted per pair of stages: every pair of
        :data:`STAGE_PAIRS` (zeros included), so metrics and reports keep their keys."""
        counts = {pair: [0, 0] for pair in STAGE_PAIRS}
        for col, pairs in enumerate((self.exact, self.near)):
            for p in pairs:
                counts.setdefault(p.stages, [0, 0])[col] += 1
        return {pair: (n[0], n[1]) for pair, n in counts.items()}

    def worst(self, most: int) -> tuple[DuplicatePair, ...]:
        """The ``most`` pairs a reviewer looks at first: exact copies, then near pairs by
        fewest hash bits apart (ties in name order)."""
        near = sorted(self.near, key=lambda p: (p.distance, p.first, p.second))
        return (*self.exact, *near)[:max(most, 0)]


def _order(pair: DuplicatePair) -> tuple[str, str]:
    return pair.first, pair.second


def _codes(content: np.ndarray) -> np.ndarray:
    """One integer per distinct 16-byte digest, numbered in digest order (two integer sorts,
    not a sort of byte strings)."""
    words = np.ascontiguousarray(content).view(">u8").reshape(-1, 2)
    order = np.lexsort((words[:, 1], words[:, 0]))
    ordered = words[order]
    new = np.r_[True, (ordered[1:] != ordered[:-1]).any(axis=1)]
    codes = np.empty(len(content), dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return codes


def _exact(uids: Sequence[str], stages: Sequence[str], content: np.ndarray,
           stage_code: np.ndarray) -> tuple[list[DuplicatePair], int]:
    """Cross-stage pairs of one content, and the frames a frame of their stage repeats."""
    within = len(uids) - len(np.unique(content * (int(stage_code.max()) + 1) + stage_code))
    order = np.argsort(content)  # any order within a content: its rows are sorted below
    ordered = content[order]
    dup = np.flatnonzero(ordered[1:] == ordered[:-1])  # only contents held more than once
    members: dict[int, list[int]] = {}
    for k in sorted(set(dup.tolist()) | set((dup + 1).tolist())):
        members.setdefault(int(ordered[k]), []).append(int(order[k]))
    exact: list[DuplicatePair] = []
    for rows in members.values():
        rows.sort()
        for x, i in enumerate(rows):
            exact.extend(DuplicatePair("exact", uids[i], stages[i], uids[j], stages[j], 0)
                         for j in rows[x + 1:] if stages[i] != stages[j])
    return exact, within


def _near(uids: Sequence[str], stages: Sequence[str], cols: SignatureColumns,
          content: np.ndarray, stage_code: np.ndarray, hamming: int, cosine: float
          ) -> list[DuplicatePair]:
    """Cross-stage near pairs: a hash (centre or shifted crop) of one within ``hamming`` bits
    of the other's centre, spectral shapes of cosine at least ``cosine``, contents unequal."""
    owner = np.concatenate([np.arange(len(cols)), np.repeat(np.flatnonzero(cols.cropped), CROPS)])
    queries = np.concatenate([cols.phash, cols.crops[cols.cropped].ravel()])
    pairs, dist = query_pairs(cols.phash, queries, owner, stage_code, hamming)
    if not len(pairs):
        return []
    cos = np.einsum("ij,ij->i", cols.shape[pairs[:, 0]], cols.shape[pairs[:, 1]])
    keep = (cos >= cosine) & (content[pairs[:, 0]] != content[pairs[:, 1]])
    return [DuplicatePair("near", uids[i], stages[i], uids[j], stages[j], int(d))
            for (i, j), d in zip(pairs[keep].tolist(), dist[keep].tolist(), strict=True)]


def audit_columns(uids: Sequence[str], stages: Sequence[str], cols: SignatureColumns,
                  unsigned: Sequence[str] = (), *, hamming: int = HAMMING,
                  cosine: float = COSINE) -> DuplicateAudit:
    """The audit of signed samples given as columns (``uids`` sorted, ``stages`` and the rows
    of ``cols`` in their order), so a stored million is audited without a Python object per
    frame; ``unsigned`` (sorted) is passed through."""
    if not len(uids):
        return DuplicateAudit(unsigned=tuple(unsigned))
    content = _codes(cols.content)
    code_of = {name: k for k, name in enumerate(sorted(set(stages)))}
    stage_code = np.fromiter(map(code_of.__getitem__, stages), dtype=np.int64, count=len(uids))
    exact, within = _exact(uids, stages, content, stage_code)
    near = _near(uids, stages, cols, content, stage_code, hamming, cosine)
    return DuplicateAudit(tuple(sorted(exact, key=_order)), tuple(near), within,
                          tuple(unsigned))


def audit(stage_of: Mapping[str, str], signatures: Mapping[str, Signature | None], *,
          hamming: int = HAMMING, cosine: float = COSINE) -> DuplicateAudit:
    """Pairs of samples (uid -> stage) in different stages that are copies or near copies,
    from their stored signatures; a sample in no stage is ignored, one unsigned is named."""
    uids = sorted(u for u in stage_of if signatures.get(u) is not None)
    unsigned = tuple(sorted(u for u in stage_of if signatures.get(u) is None))
    sigs = [s for s in (signatures[u] for u in uids) if s is not None]
    return audit_columns(uids, [stage_of[u] for u in uids], columns(sigs), unsigned,
                         hamming=hamming, cosine=cosine)
