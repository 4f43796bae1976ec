"""The candidate index for near-duplicate frames: multi-index hashing over 64-bit hashes.

Two hashes within Hamming distance ``T`` agree exactly on at least one of ``T + 1`` disjoint
chunks of their bits (pigeonhole), so looking each query hash up by each chunk among the
central hashes of the other groups (stages) finds every such pair without comparing all
pairs.  Each pair is kept once, with its least distance.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


def popcount(values: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 value (Hamming distance of an XOR)."""
    return np.bitwise_count(np.asarray(values, dtype=np.uint64)).astype(np.int64)


def chunks(threshold: int) -> list[tuple[int, int]]:
    """The ``threshold + 1`` (offset, width) bit chunks of a 64-bit hash, widths near equal."""
    count = max(1, min(64, threshold + 1))
    widths = [64 // count + (1 if i < 64 % count else 0) for i in range(count)]
    offsets = np.cumsum([0, *widths[:-1]]).tolist()
    return list(zip((int(o) for o in offsets), widths, strict=True))


#: Candidate pairs expanded at once, at most (about 50 bytes each while they are filtered).
BATCH = 4_000_000


def _near_in_buckets(c: np.ndarray, q: np.ndarray, ckey: np.ndarray, qkey: np.ndarray,
                     threshold: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(query, central, distance) index triples within ``threshold`` bits among pairs whose
    keys are equal, by one sort and two searches, expanded :data:`BATCH` pairs at a time so
    memory stays bounded however many share a key."""
    order = np.argsort(ckey, kind="stable")
    sorted_keys = ckey[order]
    lo = np.searchsorted(sorted_keys, qkey, side="left")
    count = np.searchsorted(sorted_keys, qkey, side="right") - lo
    ends = np.cumsum(count)
    start = 0
    while start < len(qkey):
        stop = max(start + 1, int(np.searchsorted(ends, (ends[start] - count[start]) + BATCH,
                                                  side="right")))
        n = count[start:stop]
        qi = np.repeat(np.arange(start, stop), n)
        first = np.repeat(lo[start:stop] - (np.cumsum(n) - n), n)
        ci = order[first + np.arange(int(n.sum()))]
        dist = popcount(q[qi] ^ c[ci])
        near = dist <= threshold
        yield qi[near], ci[near], dist[near]
        start = stop


def query_pairs(central: np.ndarray, queries: np.ndarray, owner: np.ndarray,
                groups: np.ndarray, threshold: int) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs ``[k, 2]`` (i < j, sorted, unique) of items in different groups where some
    query hash of one (``queries[q]`` belongs to item ``owner[q]``) lies within ``threshold``
    bits of the other's ``central`` hash, and each pair's least such distance; found chunk by
    chunk and group by group through sorted keys, never by comparing all pairs."""
    c = np.ascontiguousarray(central, dtype=np.uint64)
    q = np.ascontiguousarray(queries, dtype=np.uint64)
    own = np.asarray(owner, dtype=np.int64)
    g = np.asarray(groups)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for value in np.unique(g).tolist():  # centrals of one group, queries of the others
        rows = np.flatnonzero(g == value)
        asked = np.flatnonzero(g[own] != value)
        c_rows, q_asked = c[rows], q[asked]
        for offset, width in chunks(threshold):
            mask = np.uint64((1 << width) - 1)
            for qi, ci, dist in _near_in_buckets(c_rows, q_asked,
                                                 (c_rows >> np.uint64(offset)) & mask,
                                                 (q_asked >> np.uint64(offset)) & mask,
                                                 threshold):
                a, b = own[asked[qi]], rows[ci]
                found.append((np.minimum(a, b), np.maximum(a, b), dist))
    i, j, d = (np.concatenate([f[k] for f in found] or [np.zeros(0, np.int64)])
               for k in range(3))
    if not len(i):
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
    order2 = np.lexsort((d, j, i))  # per pair, the least distance first
    i, j, d = i[order2], j[order2], d[order2]
    first_of = np.r_[True, (i[1:] != i[:-1]) | (j[1:] != j[:-1])]
    return np.stack([i[first_of], j[first_of]], axis=1).astype(np.int64), d[first_of]
