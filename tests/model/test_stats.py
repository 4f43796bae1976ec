"""model/stats.py: per-stage statistics of a resolved split."""

from __future__ import annotations

from cuvis_ai_schemas.training.data import DataSplitConfig, Selector

from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.stats import stage_stats
from dvc_cuvis.model.universe import Universe


def test_stage_stats_count_each_category_once_per_sample() -> None:
    uni = Universe.from_records(
        {"source": s, "index": i, "group": g, "category_ids": c}
        for s, i, g, c in [("a", 0, "p1", "1"), ("a", 1, "p1", "1;2"), ("a", 2, "", "2;2;1"),
                           ("b", 0, "p2", "0"), ("b", 1, "p2", ""), ("c", 0, "", "0;3")]
    )
    cfg = DataSplitConfig(train=[Selector(kind="files", paths=["a", "b"])],
                          val=[Selector(kind="files", paths=["c"])],
                          predict=[Selector(kind="file_indices", source="b", ids=[1])])
    stats = stage_stats(resolve(cfg, uni))
    assert stats == {
        # a#0..2 carry category 1 in three different cells, 2 in two; "2;2;1" counts 2 once
        "train": {"samples": 5, "sources": 2, "groups": 3,
                  "categories": {"0": 1, "1": 3, "2": 2}, "anomalous": 3},
        "val": {"samples": 1, "sources": 1, "groups": 1,
                "categories": {"0": 1, "3": 1}, "anomalous": 1},
        # a category no sample of the stage carries is left out, not listed as 0
        "test": {"samples": 0, "sources": 0, "groups": 0, "categories": {}, "anomalous": 0},
        "predict": {"samples": 1, "sources": 1, "groups": 1, "categories": {},
                    "anomalous": 0},
    }
    plain = Universe.from_records({"source": "a", "index": i} for i in range(2))
    no_cats = stage_stats(resolve(DataSplitConfig(train=[Selector(kind="all")]), plain))
    assert no_cats["train"] == {"samples": 2, "sources": 1, "groups": 1}
    assert no_cats["predict"] == {"samples": 2, "sources": 1, "groups": 1}
