"""The Lightning stage map: which split stages a DataModule's ``setup(stage)`` reads.

Upstream's rule (cuvis-ai-core's ``BaseCuvisAIDataModule.setup``): ``fit`` builds train and
val, ``validate`` val, ``test`` test, ``predict`` predict, and ``None`` all four, predict
included.  :class:`~dvc_cuvis.train.datamodule.SplitDataModule` builds those datasets and a
pinned dataset version (:mod:`dvc_cuvis.train.versioned`) fetches those stages' frames, both
from this one map.
"""

from __future__ import annotations

from dvc_cuvis.errors import DvcCuvisError

#: ``setup(stage)`` -> the split stages it reads, in order.
SETUP_STAGES: dict[str | None, tuple[str, ...]] = {
    None: ("train", "val", "test", "predict"),
    "fit": ("train", "val"),
    "validate": ("val",),
    "test": ("test",),
    "predict": ("predict",),
}


def setup_stages(stage: str | None) -> tuple[str, ...]:
    """The split stages ``setup(stage)`` reads; an unknown stage is an error naming it."""
    wanted = SETUP_STAGES.get(stage)
    if wanted is None:
        raise DvcCuvisError(f"unknown stage {stage!r}; use fit, validate, test or predict")
    return wanted
