"""guard() with cuvis-ai's own idiom: a DataSplitConfig(splits_path=...) loaded at setup."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis.check.drift import DriftError
from dvc_cuvis.model.splits import load_splits

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")
from dvc_cuvis.train.datamodule import guard  # noqa: E402


def _module(root: Path, splits: DataSplitConfig, calls: list[str | None]):
    from cuvis_ai_dataloader.data.datamodule_npz_multi import MultiNpzDataModule

    dm = MultiNpzDataModule(universe_csv=str(root / "universe.csv"), splits=splits, batch_size=2)
    original = dm.setup
    dm.setup = lambda stage=None: (calls.append(stage), original(stage))[1]
    return guard(dm, lock=None)


def test_a_splits_path_config_is_checked_as_the_module_loads_it(
    materialized: Path, tmp_path: Path
) -> None:
    root = tmp_path / "mat"
    shutil.copytree(materialized, root)
    pointer = DataSplitConfig(splits_path=str(root / "splits.json"))
    calls: list[str | None] = []
    dm = _module(root, pointer, calls)
    dm.setup("fit")
    assert calls == ["fit"] and dm.drift_report.ok
    assert "matches the pin" in dm.drift_report.render()
    n_train = len(load_splits(root / "splits.json").train)
    assert n_train > 0 and len(dm.train_dataloader().dataset) > 0

    # the file's pin is tampered with: stopped before the module reads a frame
    doc = json.loads((root / "splits.json").read_text())
    doc["universe_hash"] = "0" * 64
    (root / "splits.json").write_text(json.dumps(doc, indent=2))
    calls.clear()
    tampered = _module(root, pointer, calls)
    with pytest.raises(DriftError) as err:
        tampered.setup("fit")
    assert calls == []
    assert str(root / "splits.json") in str(err.value)


def test_inline_stages_overlay_the_file_as_upstream_does(
    materialized: Path, tmp_path: Path
) -> None:
    root = tmp_path / "mat"
    shutil.copytree(materialized, root)
    doc = json.loads((root / "splits.json").read_text())
    inline_val = load_splits(root / "splits.json").val
    overlay = DataSplitConfig(splits_path=str(root / "splits.json"), val=inline_val)
    calls: list[str | None] = []
    dm = _module(root, overlay, calls)
    dm.setup("fit")  # the merged config (file's pin + inline val) matches
    assert calls == ["fit"] and dm.drift_report.ok
    # universe_hash is file-owned: a tampered file pin fails the merged config too
    doc["universe_hash"] = "0" * 64
    (root / "splits.json").write_text(json.dumps(doc, indent=2))
    calls.clear()
    with pytest.raises(DriftError):
        _module(root, overlay, calls).setup("fit")
    assert calls == []
