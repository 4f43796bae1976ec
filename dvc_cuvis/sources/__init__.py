"""Enumerate: each format's files on disk (cu3s, TIFF, npz, universe.csv) as universe rows,
with content digests, and the metrics ``dvc metrics`` shows.
"""

from __future__ import annotations

from dvc_cuvis.sources._common import (
    EnumerateOptions,
    Located,
    Scan,
    list_files,
    locate,
    parallel_map,
    rel_to_out,
    scan_rows,
    source_id,
)
from dvc_cuvis.sources.enumeration import (
    Enumerated,
    enumerate_dataset,
    enumerate_universe,
    scan,
    universe_metrics,
)

__all__ = [
    "EnumerateOptions",
    "Enumerated",
    "Located",
    "Scan",
    "enumerate_dataset",
    "enumerate_universe",
    "list_files",
    "locate",
    "parallel_map",
    "rel_to_out",
    "scan",
    "scan_rows",
    "source_id",
    "universe_metrics",
]
