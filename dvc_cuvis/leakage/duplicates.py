"""The duplicate audit: frames of one content, or near copies, in different stages of a split.

Exact duplicates share the content digest of their data array (whatever container held them);
near duplicates have perceptual hashes within ``hamming`` bits and spectral shapes of cosine at
least ``cosine``, found through :mod:`~dvc_cuvis.leakage.index`.  Frames without a signature
are counted, never guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from dvc_cuvis.leakage.index import candidate_pairs, popcount
from dvc_cuvis.leakage.signatures import SHAPE_LENGTH, Signature

#: Perceptual-hash distance (bits) at most, and spectral-shape cosine at least, of a near pair;
#: chosen from the planted cases measured by benchmarks/bench_leakage.py (docs/leakage.md).
HAMMING = 12
COSINE = 0.995


@dataclass(frozen=True)
class DuplicatePair:
    """Two samples of different stages with one content (exact) or near copies (near)."""

    kind: Literal["exact", "near"]
    first: str
    first_stage: str
    second: str
    second_stage: str
    distance: int  # perceptual-hash bits apart (0 for exact)


@dataclass(frozen=True)
class DuplicateAudit:
    """What the audit found: cross-stage pairs, in-stage exact copies, unsigned frames."""

    exact: tuple[DuplicatePair, ...] = ()
    near: tuple[DuplicatePair, ...] = ()
    within_stage: int = 0  # frames whose content another frame of their stage repeats
    unsigned: tuple[str, ...] = field(default_factory=tuple)


def _order(pair: DuplicatePair) -> tuple[str, str]:
    return pair.first, pair.second


def _shapes(sigs: list[Signature]) -> np.ndarray:
    out = np.zeros((len(sigs), SHAPE_LENGTH))
    for i, s in enumerate(sigs):
        out[i, :len(s.shape)] = s.shape
    return out


def audit(stage_of: Mapping[str, str], signatures: Mapping[str, Signature | None], *,
          hamming: int = HAMMING, cosine: float = COSINE) -> DuplicateAudit:
    """Pairs of samples (uid -> stage) in different stages that are copies or near copies,
    from their stored signatures; a sample in no stage is ignored, one unsigned is named."""
    uids = sorted(u for u in stage_of if signatures.get(u) is not None)
    unsigned = tuple(sorted(u for u in stage_of if signatures.get(u) is None))
    sigs = [s for s in (signatures[u] for u in uids) if s is not None]
    stages = [stage_of[u] for u in uids]
    exact: list[DuplicatePair] = []
    within = 0
    by_content: dict[str, list[int]] = {}
    for i, s in enumerate(sigs):
        by_content.setdefault(s.content, []).append(i)
    for members in by_content.values():
        if len(members) < 2:
            continue
        seen: set[str] = set()
        for i in members:
            if stages[i] in seen:
                within += 1
            seen.add(stages[i])
        for x, i in enumerate(members):
            exact.extend(DuplicatePair("exact", uids[i], stages[i], uids[j], stages[j], 0)
                         for j in members[x + 1:] if stages[i] != stages[j])
    near: list[DuplicatePair] = []
    if sigs:
        hashes = np.array([s.phash for s in sigs], dtype=np.uint64)
        _, group = np.unique(np.array(stages), return_inverse=True)
        pairs = candidate_pairs(hashes, group, hamming)
        if len(pairs):
            shapes = _shapes(sigs)
            cos = np.einsum("ij,ij->i", shapes[pairs[:, 0]], shapes[pairs[:, 1]])
            dist = popcount(hashes[pairs[:, 0]] ^ hashes[pairs[:, 1]])
            for (i, j), c, d in zip(pairs.tolist(), cos.tolist(), dist.tolist(), strict=True):
                if c >= cosine and sigs[i].content != sigs[j].content:
                    near.append(DuplicatePair("near", uids[i], stages[i], uids[j], stages[j],
                                              int(d)))
    return DuplicateAudit(tuple(sorted(exact, key=_order)), tuple(sorted(near, key=_order)),
                          within, unsigned)
