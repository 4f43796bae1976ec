"""Clusters of duplicate and near-duplicate frames, whatever their stage: what a bake keeps
together so that the duplicate checks find no copy across its stages.

A cluster is a connected component of the pairs the duplicate checks would name: frames of
one content digest (``exact``) and, with ``near``, frames whose perceptual hashes lie within
``HAMMING`` bits (centre or a shifted crop against a centre) with spectral shapes of cosine
at least ``COSINE``.  Near pairs come from the multi-index hash
(:mod:`~dvc_cuvis.leakage.index`), one representative per content, never from all pairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dvc_cuvis.leakage.duplicates import COSINE, HAMMING
from dvc_cuvis.leakage.index import near_pairs
from dvc_cuvis.leakage.signatures import SHAPE_LENGTH, Signature

__all__ = ["SignatureSet", "duplicate_clusters"]


@dataclass(frozen=True)
class SignatureSet:
    """The stored signatures of a universe's samples (uid -> signature; None: unsigned), the
    folder they were read from and the command that signs the unsigned ones."""

    by_uid: Mapping[str, Signature | None]
    where: str
    sign: str

    @property
    def unsigned(self) -> list[str]:
        """The samples without a current signature, sorted."""
        return sorted(u for u, s in self.by_uid.items() if s is None)


class _Union:
    """Union-find over ``n`` items, the smaller index as each set's root."""

    def __init__(self, n: int) -> None:
        self.parent = np.arange(n)  # int64

    def find(self, i: int) -> int:
        root = i
        while self.parent[root] != root:
            root = int(self.parent[root])
        while self.parent[i] != root:  # path compression
            self.parent[i], i = root, int(self.parent[i])
        return root

    def join(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _near_pairs(sigs: list[Signature], hamming: int, cosine: float) -> np.ndarray:
    """Index pairs ``[k, 2]`` of near copies among ``sigs`` (any two, through the index)."""
    central = np.array([s.phash for s in sigs], dtype=np.uint64)
    crops = np.array([h for s in sigs for h in s.crops], dtype=np.uint64)
    owner = np.concatenate([np.arange(len(sigs)), np.repeat(
        np.arange(len(sigs)), [len(s.crops) for s in sigs])])
    pairs = near_pairs(central, np.concatenate([central, crops]), owner, hamming)
    if not len(pairs):
        return pairs
    shapes = np.zeros((len(sigs), SHAPE_LENGTH))
    for i, s in enumerate(sigs):
        shapes[i, :len(s.shape)] = s.shape
    cos = np.einsum("ij,ij->i", shapes[pairs[:, 0]], shapes[pairs[:, 1]])
    return pairs[cos >= cosine]


def duplicate_clusters(signatures: Mapping[str, Signature | None], mode: str, *,
                       hamming: int = HAMMING, cosine: float = COSINE
                       ) -> list[tuple[str, ...]]:
    """The clusters (two samples or more, each sorted; sorted) of copies (``exact``) or of
    copies and near copies (``near``) among the signed samples, so a bake can keep each in
    one stage; unsigned samples are in none."""
    if mode not in ("exact", "near"):
        return []
    uids = sorted(u for u, s in signatures.items() if s is not None)
    sigs = [s for s in (signatures[u] for u in uids) if s is not None]
    if not sigs:
        return []
    content = np.unique(np.array([s.content for s in sigs]), return_inverse=True)[1]
    union = _Union(len(uids))
    first_of: dict[int, int] = {}
    for i, c in enumerate(content.tolist()):
        union.join(first_of.setdefault(c, i), i)
    if mode == "near":
        reps = sorted(first_of.values())  # one frame per content: its copies are joined
        for a, b in _near_pairs([sigs[i] for i in reps], hamming, cosine).tolist():
            union.join(reps[a], reps[b])
    members: dict[int, list[str]] = {}
    for i, u in enumerate(uids):
        members.setdefault(union.find(i), []).append(u)
    return sorted(tuple(m) for m in members.values() if len(m) > 1)
