"""dvc-cuvis: reproducible, reviewable Cuvis.AI data splits as a DVC pipeline.

The public Python API is importable from here (``from dvc_cuvis import verify, guard``).  Each
name loads its package on first use (PEP 562), so ``import dvc_cuvis`` stays cheap and imports
no optional dependency (torch, cuvis, Dask).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dvc_cuvis._version import __version__

if TYPE_CHECKING:
    from dvc_cuvis.baking import Baked, BakeOptions, bake
    from dvc_cuvis.check import DriftError, DriftReport, Finding, ensure, verify
    from dvc_cuvis.errors import DvcCuvisError
    from dvc_cuvis.model import (
        DataSplitConfig,
        Universe,
        load_splits,
        read_universe,
        resolve,
        save_splits,
        write_universe,
    )
    from dvc_cuvis.plugin import (
        DvcCu3sMultiDataModule,
        DvcNpzMultiDataModule,
        DvcTiffPairedDataModule,
        TrainingDriftError,
    )
    from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
    from dvc_cuvis.train import SplitDataModule, guard

#: Each public name -> the package face that offers it.
_API = {
    "BakeOptions": "dvc_cuvis.baking", "Baked": "dvc_cuvis.baking", "bake": "dvc_cuvis.baking",
    "DriftError": "dvc_cuvis.check", "DriftReport": "dvc_cuvis.check",
    "Finding": "dvc_cuvis.check", "ensure": "dvc_cuvis.check", "verify": "dvc_cuvis.check",
    "DvcCuvisError": "dvc_cuvis.errors",
    "DataSplitConfig": "dvc_cuvis.model", "Universe": "dvc_cuvis.model",
    "load_splits": "dvc_cuvis.model", "read_universe": "dvc_cuvis.model",
    "resolve": "dvc_cuvis.model", "save_splits": "dvc_cuvis.model",
    "write_universe": "dvc_cuvis.model",
    "DvcCu3sMultiDataModule": "dvc_cuvis.plugin", "DvcNpzMultiDataModule": "dvc_cuvis.plugin",
    "DvcTiffPairedDataModule": "dvc_cuvis.plugin", "TrainingDriftError": "dvc_cuvis.plugin",
    "EnumerateOptions": "dvc_cuvis.sources", "enumerate_universe": "dvc_cuvis.sources",
    "SplitDataModule": "dvc_cuvis.train", "guard": "dvc_cuvis.train",
}

__all__ = [
    "BakeOptions",
    "Baked",
    "DataSplitConfig",
    "DriftError",
    "DriftReport",
    "DvcCu3sMultiDataModule",
    "DvcCuvisError",
    "DvcNpzMultiDataModule",
    "DvcTiffPairedDataModule",
    "EnumerateOptions",
    "Finding",
    "SplitDataModule",
    "TrainingDriftError",
    "Universe",
    "__version__",
    "bake",
    "ensure",
    "enumerate_universe",
    "guard",
    "load_splits",
    "read_universe",
    "resolve",
    "save_splits",
    "verify",
    "write_universe",
]


def __getattr__(name: str) -> Any:
    """Load a public name from its package on first use."""
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
