"""Materialize: a selection turned into one deterministic npz frame per sample,
incrementally, on a process pool or a Dask cluster.
"""

from __future__ import annotations

from dvc_cuvis.materialize.core import (
    MaterializeResult,
    Plan,
    ReaderParams,
    materialize,
    plan,
)

__all__ = [
    "MaterializeResult",
    "Plan",
    "ReaderParams",
    "materialize",
    "plan",
]
