"""The cuvis-ai plugin: drift-guarded DataModules a trainrun selects by name.

The manifest in ``dvc_cuvis/plugins/`` names the classes by this path
(``dvc_cuvis.plugin.DvcNpzMultiDataModule``, ...).  They subclass cuvis-ai-dataloader's
modules, which import torch, so they load on first use (PEP 562): ``import dvc_cuvis.plugin``
alone imports neither.  :func:`plugins_dir` is the folder of the manifest, as
``dvc-cuvis plugins-dir`` prints it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dvc_cuvis.plugin.manifest import PLUGINS_DIR, plugins_dir

if TYPE_CHECKING:
    from dvc_cuvis.plugin.datamodules import (
        GUARD_PARAMS,
        DvcCu3sMultiDataModule,
        DvcNpzMultiDataModule,
        DvcTiffPairedDataModule,
        TrainingDriftError,
    )

#: The names that load cuvis-ai-dataloader (and torch) on first use.
_LAZY = ("GUARD_PARAMS", "DvcCu3sMultiDataModule", "DvcNpzMultiDataModule",
         "DvcTiffPairedDataModule", "TrainingDriftError")

__all__ = ["GUARD_PARAMS", "PLUGINS_DIR", "DvcCu3sMultiDataModule", "DvcNpzMultiDataModule",
           "DvcTiffPairedDataModule", "TrainingDriftError", "plugins_dir"]


def __getattr__(name: str) -> Any:
    """Load the plugin's classes (and cuvis-ai-dataloader with them) on first use; a
    torchvision that does not match torch is one line with the fix."""
    if name in _LAZY:
        from dvc_cuvis.train.lightning_env import import_stack

        return getattr(import_stack("dvc_cuvis.plugin.datamodules"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
