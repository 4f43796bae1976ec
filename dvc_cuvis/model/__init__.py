"""The data model: the universe (rows, uid, order, ``universe_hash``), the id-range grammar,
selectors, splits.json, the npz frame, and the per-sample comparison of two splits.
"""

from __future__ import annotations

from dvc_cuvis.model.categories import (
    load_category_map,
    parse_category_map,
)
from dvc_cuvis.model.compare import (
    SplitDiff,
    Version,
    diff_versions,
)
from dvc_cuvis.model.constraints import evaluate_constraints
from dvc_cuvis.model.frame_bytes import FrameWriter, write_frame
from dvc_cuvis.model.frame_read import read_npz
from dvc_cuvis.model.ids import (
    MAX_RANGE_IDS,
    parse_id_range,
)
from dvc_cuvis.model.resolution import Resolution, resolve, stage_codes
from dvc_cuvis.model.selectors import (
    Resolver,
    describe,
    expand_ids,
    resolve_selectors,
    split_ids,
    walk,
)
from dvc_cuvis.model.split_state import is_baked
from dvc_cuvis.model.splits import (
    STAGES,
    DataSplitConfig,
    dumps_splits,
    load_splits,
    parse_splits,
    save_splits,
)
from dvc_cuvis.model.stats import stage_stats
from dvc_cuvis.model.universe import (
    DIGEST_COLUMNS,
    Sample,
    Universe,
    uid,
    universe_hash,
)
from dvc_cuvis.model.universe_io import (
    format_universe,
    parse_universe_bytes,
    read_header,
    read_universe,
    write_universe,
)

__all__ = [
    "DIGEST_COLUMNS",
    "MAX_RANGE_IDS",
    "STAGES",
    "DataSplitConfig",
    "FrameWriter",
    "Resolution",
    "Resolver",
    "Sample",
    "SplitDiff",
    "Universe",
    "Version",
    "describe",
    "diff_versions",
    "dumps_splits",
    "evaluate_constraints",
    "expand_ids",
    "format_universe",
    "is_baked",
    "load_category_map",
    "load_splits",
    "parse_category_map",
    "parse_id_range",
    "parse_splits",
    "parse_universe_bytes",
    "read_header",
    "read_npz",
    "read_universe",
    "resolve",
    "resolve_selectors",
    "save_splits",
    "split_ids",
    "stage_codes",
    "stage_stats",
    "uid",
    "universe_hash",
    "walk",
    "write_frame",
    "write_universe",
]
