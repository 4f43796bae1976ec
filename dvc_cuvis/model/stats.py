"""Per-stage statistics of a resolved split (samples, sources, groups, categories,
anomalous samples), for bake's metrics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, TypedDict

import numpy as np

from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.splits import STAGES

if TYPE_CHECKING:
    pass

class StageStats(TypedDict):
    """One stage's statistics, as bake's metrics and the report show them."""

    samples: int
    sources: int
    groups: int
    categories: NotRequired[dict[str, int]]  # category id -> samples (with category_ids)
    anomalous: NotRequired[int]  # samples with a category id != 0 (with category_ids)


def stage_stats(res: Resolution) -> dict[str, StageStats]:
    """Per stage: samples, sources, groups, per-category sample counts, anomalous samples."""
    uni = res.universe
    _group_names, group_codes = uni.groups()
    has_cats = uni.has_column("category_ids")
    out: dict[str, StageStats] = {}
    for s in STAGES:
        pos = res.stages[s]
        entry: StageStats = {
            "samples": len(pos),
            "sources": len(np.unique(uni.codes[pos])),
            "groups": len(np.unique(group_codes[pos])),
        }
        if has_cats:
            parsed, inverse = uni.category_table
            counts: dict[int, int] = {}
            per_cell = np.bincount(inverse[pos], minlength=len(parsed)).tolist()
            for ids, rows in zip(parsed, per_cell, strict=True):
                for cid in set(ids):
                    counts[cid] = counts.get(cid, 0) + rows
            entry["categories"] = {str(k): counts[k] for k in sorted(counts) if counts[k]}
            entry["anomalous"] = int(uni.anomalous()[pos].sum())
        out[s] = entry
    return out
