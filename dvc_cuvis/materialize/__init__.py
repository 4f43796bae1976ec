"""Materialize: a selection turned into one deterministic npz frame per sample,
incrementally, on a process pool or a Dask cluster.

One module per concept: :mod:`~dvc_cuvis.materialize.options` (:class:`MaterializeOptions`,
:class:`ReaderParams`), :mod:`~dvc_cuvis.materialize.v1_names` (the older layout),
:mod:`~dvc_cuvis.materialize.tasks`, :mod:`~dvc_cuvis.materialize.executors`,
:mod:`~dvc_cuvis.materialize.lock`, :mod:`~dvc_cuvis.materialize.planning` and
:mod:`~dvc_cuvis.materialize.core` (the run: :func:`materialize`).
"""

from __future__ import annotations

from dvc_cuvis.materialize.core import (
    MaterializeResult,
    materialize,
    materialize_universe,
)
from dvc_cuvis.materialize.options import MaterializeOptions, OptionWarning, ReaderParams
from dvc_cuvis.materialize.planning import Plan, plan

__all__ = [
    "MaterializeOptions",
    "MaterializeResult",
    "OptionWarning",
    "Plan",
    "ReaderParams",
    "materialize",
    "materialize_universe",
    "plan",
]
