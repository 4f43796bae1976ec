"""The candidate index for near-duplicate frames: multi-index hashing over 64-bit hashes.

Two hashes within Hamming distance ``T`` differ in at most ``r`` bits of at least one of ``m``
disjoint chunks of their bits whenever ``m * (r + 1) > T`` (pigeonhole), so probing each chunk
of a hash at radius ``r`` (the chunk itself and, for ``r = 1``, each one-bit change of it)
among the other group's chunks finds every such pair without comparing all pairs.  Three
chunks of 21-22 bits at radius 1 cover the default distance: wide chunks leave few hashes per
bucket, which is what the cost follows, and the radius costs only probes.  The hashes of a
group (centres and shifted crops) are indexed and the central hashes of the other groups
probe them: a frame has one centre and several crops, so this way round probes the fewest
keys.  Each pair is kept once, with its least distance.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

#: Candidate pairs expanded at once, at most (about 50 bytes each while they are filtered).
BATCH = 4_000_000
#: The fewest chunks: three of at most 22 bits, so a chunk's bucket table stays small.
_MIN_CHUNKS = 3
#: A chunk's buckets are counted in a table (one slot per key) when the table has at most
#: this many slots per indexed hash; sparser chunks are searched in the sorted keys instead.
_TABLE_SLOTS_PER_HASH = 16


def popcount(values: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 value (Hamming distance of an XOR)."""
    return np.bitwise_count(np.asarray(values, dtype=np.uint64)).astype(np.int64)


def radius(threshold: int) -> int:
    """How many bits of a chunk a probe changes (0 or 1) for a distance of ``threshold``."""
    return 0 if threshold < _MIN_CHUNKS else 1


def chunks(threshold: int) -> list[tuple[int, int]]:
    """The (offset, width) bit chunks of a 64-bit hash, widths near equal: enough that
    ``len(chunks) * (radius + 1) > threshold``, and never fewer than three."""
    per = radius(threshold) + 1
    count = max(_MIN_CHUNKS, min(64, -(-(threshold + 1) // per)))
    out: list[tuple[int, int]] = []
    for i in range(count):
        width = 64 // count + (1 if i < 64 % count else 0)
        out.append((sum(w for _, w in out), width))
    return out


def _key_order(keys: np.ndarray, width: int) -> np.ndarray:
    """The positions of ``keys`` (non-negative, ``width`` bits) in key order: at most two
    stable radix passes of 16 bits, which cost a fraction of a comparison sort."""
    low = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    if width <= 16:
        return low
    return low[np.argsort((keys[low] >> 16).astype(np.uint16), kind="stable")]


def _buckets(keys: np.ndarray, width: int, probes: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The indexed hashes ordered by key, and for each probe key where its bucket starts in
    that order and how many it holds: a table of every key's count where the keys are
    dense, else two binary searches."""
    order = _key_order(keys, width)
    if (1 << width) <= _TABLE_SLOTS_PER_HASH * max(1, len(keys)):
        counts = np.bincount(keys, minlength=1 << width).astype(np.int32)
        starts = np.cumsum(counts, dtype=np.int32) - counts
        return order, starts[probes], counts[probes]
    sorted_keys = keys[order]
    lo = np.searchsorted(sorted_keys, probes)
    return order, lo, np.searchsorted(sorted_keys, probes, side="right") - lo


def _near_in_buckets(ordered: np.ndarray, probe_hash: np.ndarray, lo: np.ndarray,
                     count: np.ndarray, threshold: int
                     ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(probe, position in ``ordered``, distance) triples within ``threshold`` bits: each
    probe's hash (``probe_hash``) against the hashes of its bucket (``count`` of them from
    ``lo`` in ``ordered``), expanded :data:`BATCH` pairs at a time so memory stays bounded
    however many share a key; only the few near ones are traced back to their probe."""
    ends = np.cumsum(count)  # int64 (numpy sums int32 in int64)
    start = 0
    while start < len(lo):
        base = int(ends[start] - count[start])
        stop = max(start + 1, int(np.searchsorted(ends, base + BATCH, side="right")))
        n = count[start:stop]
        total = int(ends[stop - 1]) - base
        if total:
            pos = np.repeat(lo[start:stop] - (ends[start:stop] - n - base), n)
            pos += np.arange(total)
            dist = np.bitwise_count(np.repeat(probe_hash[start:stop], n) ^ ordered[pos])
            near = np.flatnonzero(dist <= threshold)
            if len(near):
                probe = start + np.searchsorted(ends[start:stop] - base, near, side="right")
                yield probe, pos[near], dist[near]
        start = stop


def _group_pairs(c: np.ndarray, q: np.ndarray, own: np.ndarray, probers: np.ndarray,
                 hashes: np.ndarray, threshold: int
                 ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(item, item, distance) of the central hashes of ``probers`` (items) near one of the
    query hashes ``hashes`` (rows of ``q``), chunk by chunk."""
    indexed, probing = q[hashes], c[probers]
    for offset, width in chunks(threshold):
        mask = np.uint64((1 << width) - 1)
        keys = ((indexed >> np.uint64(offset)) & mask).astype(np.int32)
        flips = np.array([0] + [1 << b for b in range(width)] * radius(threshold),
                         dtype=np.int32)
        per = len(flips)
        probes = ((probing >> np.uint64(offset)) & mask).astype(np.int32)[:, None] ^ flips
        order, lo, count = _buckets(keys, width, probes.ravel())
        for probe, at, dist in _near_in_buckets(indexed[order], np.repeat(probing, per), lo,
                                                count, threshold):
            yield probers[probe // per], own[hashes[order[at]]], dist


def query_pairs(central: np.ndarray, queries: np.ndarray, owner: np.ndarray,
                groups: np.ndarray, threshold: int) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs ``[k, 2]`` (i < j, sorted, unique) of items in different groups where some
    query hash of one (``queries[q]`` belongs to item ``owner[q]``) lies within ``threshold``
    bits of the other's ``central`` hash, and each pair's least such distance; found chunk by
    chunk and group by group through bucketed keys, never by comparing all pairs."""
    c = np.ascontiguousarray(central, dtype=np.uint64)
    q = np.ascontiguousarray(queries, dtype=np.uint64)
    own = np.asarray(owner, dtype=np.int64)
    g = np.asarray(groups)
    n = len(c)
    found: list[np.ndarray] = []
    for value in np.unique(g).tolist():  # hashes of one group, centres of the others
        hashes = np.flatnonzero(g[own] == value)
        probers = np.flatnonzero(g != value)
        for a, b, dist in _group_pairs(c, q, own, probers, hashes, threshold):
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            found.append((lo * n + hi) * 65 + dist)  # one sortable key: the pair, then distance
    if not found:  # each key found is of a near pair
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
    packed = np.unique(np.concatenate(found))
    pair = packed // 65
    first_of = np.r_[True, pair[1:] != pair[:-1]]  # per pair, the least distance first
    pair = pair[first_of]
    return (np.stack(np.divmod(pair, n), axis=1).astype(np.int64),
            (packed[first_of] % 65).astype(np.int64))


def near_pairs(central: np.ndarray, queries: np.ndarray, owner: np.ndarray,
               threshold: int) -> np.ndarray:
    """Index pairs ``[k, 2]`` (i < j, sorted, unique) of any two items where some query hash
    of one lies within ``threshold`` bits of the other's ``central`` hash: the same search as
    :func:`query_pairs` without groups (a bake's clusters span every stage)."""
    c = np.ascontiguousarray(central, dtype=np.uint64)
    q = np.ascontiguousarray(queries, dtype=np.uint64)
    own = np.asarray(owner, dtype=np.int64)
    n = len(c)
    found: list[np.ndarray] = []
    for a, b, _dist in _group_pairs(c, q, own, np.arange(n), np.arange(len(q)), threshold):
        other = a != b
        lo, hi = np.minimum(a[other], b[other]), np.maximum(a[other], b[other])
        found.append(lo * n + hi)
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    pair = np.unique(np.concatenate(found))
    return np.stack(np.divmod(pair, n), axis=1).astype(np.int64)

