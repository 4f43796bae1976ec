"""The Lightning stage map: which split stages ``setup(stage)`` reads is upstream's rule.

cuvis-ai-core's ``BaseCuvisAIDataModule.setup`` decides which stage datasets each Lightning
stage builds (``None`` builds all four, predict included).  SplitDataModule builds the same
datasets, and a pinned dataset version fetches the frames of exactly those stages: a stage
left out would leave upstream building a dataset over frames that were never fetched.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

from cuvis_ai_core.data.datamodule import BaseCuvisAIDataModule

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.train.versioned import plugin_fetch

SETUPS = [None, "fit", "validate", "test", "predict"]


class Recorder(BaseCuvisAIDataModule):
    """An upstream module with module-owned splits: records the stages setup() builds."""

    DATA_MODULE_NAME = "recorder"
    OWNS_SPLITS = True

    def __init__(self) -> None:
        super().__init__()
        self.built: list[str] = []

    @staticmethod
    def validate_params(params: dict[str, Any]) -> None:
        return None

    def build_stage_dataset(self, stage: str) -> Any:
        self.built.append(stage)
        return [0]


def upstream_builds(stage: str | None) -> list[str]:
    module = Recorder()
    module.setup(stage)
    return sorted(module.built)


class Version:
    """Stands for a dataset version: records the stages fetched."""

    def __init__(self) -> None:
        self.fetched: list[str] = []

    def fetch(self, name: str, *, splits: Any = None) -> Any:
        self.fetched.append(name)
        return SimpleNamespace(uids=[], fetched=0)

    def describe(self) -> str:
        return "repo@v1 (commit 0)"


@pytest.mark.parametrize("stage", SETUPS)
def test_a_pinned_version_fetches_what_upstream_builds(stage: str | None) -> None:
    version = Version()
    plugin_fetch(SimpleNamespace(version=version, version_splits=None), stage)
    assert sorted(version.fetched) == upstream_builds(stage)
    assert len(version.fetched) == len(set(version.fetched))  # each stage once


def test_setup_none_builds_predict_upstream() -> None:
    """The fact the map follows: upstream's setup(None) builds predict too."""
    assert upstream_builds(None) == ["predict", "test", "train", "val"]


@pytest.mark.parametrize("stage", SETUPS)
def test_split_datamodule_builds_what_upstream_builds(stage: str | None,
                                                      tiny_split: Path) -> None:
    from dvc_cuvis.train.datamodule import SplitDataModule

    mat = tiny_split
    dm = SplitDataModule(mat / "universe.csv", mat / "splits.json", lock=None,
                         stat_cache=None)
    dm.setup(stage)
    assert sorted(dm.datasets) == upstream_builds(stage)


def test_an_unknown_stage_is_refused(tiny_split: Path) -> None:
    from dvc_cuvis.train.datamodule import SplitDataModule

    mat = tiny_split
    dm = SplitDataModule(mat / "universe.csv", mat / "splits.json", lock=None,
                         stat_cache=None)
    with pytest.raises(DvcCuvisError, match=r"^unknown stage 'train'; use fit, validate, "
                                            r"test or predict$"):
        dm.setup("train")
