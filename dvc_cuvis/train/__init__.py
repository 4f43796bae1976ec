"""Train: the DataModule over npz frames, ``guard()`` for any DataModule, and dataset versions
(a stage's frames at a git revision, fetched through DVC).

The DataModule needs PyTorch Lightning, an optional extra, so its names load on first use
(PEP 562): ``import dvc_cuvis.train`` never imports torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dvc_cuvis.train.versioned import StageFrames, open_version, resolve_commit, stage_frames

if TYPE_CHECKING:
    from dvc_cuvis.train.datamodule import NpzFrames, SplitDataModule, guard

#: Names whose module imports an optional heavy dependency (torch, Lightning).
_LAZY = {"NpzFrames": "dvc_cuvis.train.datamodule",
         "SplitDataModule": "dvc_cuvis.train.datamodule",
         "guard": "dvc_cuvis.train.datamodule"}

__all__ = ["NpzFrames", "SplitDataModule", "StageFrames", "guard", "open_version",
           "resolve_commit", "stage_frames"]


def __getattr__(name: str) -> Any:
    """Load a heavy name on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
