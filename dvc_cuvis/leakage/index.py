"""The candidate index for near-duplicate frames: multi-index hashing over 64-bit hashes.

Two hashes within Hamming distance ``T`` agree exactly on at least one of ``T + 1`` disjoint
chunks of their bits (pigeonhole), so grouping the hashes by each chunk finds every such pair
without comparing all pairs.  Only pairs across different groups (stages) are kept, each once.
"""

from __future__ import annotations

import numpy as np

_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def popcount(values: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 value (Hamming distance of an XOR)."""
    as_bytes = np.ascontiguousarray(values, dtype=np.uint64).view(np.uint8)
    return _BYTE_BITS[as_bytes].reshape(-1, 8).sum(axis=1, dtype=np.int64)


def chunks(threshold: int) -> list[tuple[int, int]]:
    """The ``threshold + 1`` (offset, width) bit chunks of a 64-bit hash, widths near equal."""
    count = max(1, min(64, threshold + 1))
    widths = [64 // count + (1 if i < 64 % count else 0) for i in range(count)]
    offsets = np.cumsum([0, *widths[:-1]]).tolist()
    return list(zip((int(o) for o in offsets), widths, strict=True))


def candidate_pairs(hashes: np.ndarray, groups: np.ndarray, threshold: int) -> np.ndarray:
    """Index pairs ``[k, 2]`` (i < j, sorted) of hashes in different groups within
    ``threshold`` bits of each other, found chunk by chunk, never by comparing all pairs."""
    h = np.ascontiguousarray(hashes, dtype=np.uint64)
    g = np.asarray(groups)
    found: list[np.ndarray] = []
    for offset, width in chunks(threshold):
        key = (h >> np.uint64(offset)) & np.uint64((1 << width) - 1)
        order = np.argsort(key, kind="stable")
        ks = key[order]
        step = 1
        while step < len(ks):
            same = np.flatnonzero(ks[:-step] == ks[step:])
            if not len(same):
                break
            a, b = order[same], order[same + step]
            keep = g[a] != g[b]
            a, b = a[keep], b[keep]
            if len(a):
                pair = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)
                near = popcount(h[pair[:, 0]] ^ h[pair[:, 1]]) <= threshold
                found.append(pair[near])
            step += 1
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    pairs = np.concatenate(found).astype(np.int64)
    return np.unique(pairs, axis=0)
