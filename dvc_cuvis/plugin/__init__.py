"""The cuvis-ai plugin: drift-guarded DataModules a trainrun selects by name.

The manifest in ``dvc_cuvis/plugins/`` names the classes by this path
(``dvc_cuvis.plugin.DvcNpzMultiDataModule``, ...).  They subclass cuvis-ai-dataloader's
modules, which import torch, so they load on first use (PEP 562): ``import dvc_cuvis.plugin``
alone imports neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dvc_cuvis.plugin.datamodules import (
        GUARD_PARAMS,
        DvcCu3sMultiDataModule,
        DvcNpzMultiDataModule,
        DvcTiffPairedDataModule,
        TrainingDriftError,
    )

__all__ = ["GUARD_PARAMS", "DvcCu3sMultiDataModule", "DvcNpzMultiDataModule",
           "DvcTiffPairedDataModule", "TrainingDriftError"]


def __getattr__(name: str) -> Any:
    """Load the plugin's classes (and cuvis-ai-dataloader with them) on first use; a
    torchvision that does not match torch is one line with the fix."""
    if name in __all__:
        from dvc_cuvis.train.lightning_env import import_stack

        return getattr(import_stack("dvc_cuvis.plugin.datamodules"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
