"""Both Lightning packages train with our modules: ``pytorch_lightning`` (cuvis-ai's) and
``lightning`` (``import lightning as L``, what Lightning's docs use).

Each Trainer takes only DataModules of its own package; a module of the other package was
refused with ``ValueError: Expected a parent``.  Per package: a real ``fit`` (one step, CPU)
of :class:`SplitDataModule` and of a module under ``guard()``, the dataset record in the
checkpoint and the logger, and the resume guard on a changed split.  Each resume builds its
module while only the *other* package is imported, so the module moves to the Trainer's
package when it is attached.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pickle
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from dvc_cuvis.train.datamodule import SplitDataModule, guard  # noqa: E402
from dvc_cuvis.train.lineage import KEY, LineageError  # noqa: E402

#: Each package's module path, and the sys.modules key of the other package.
PACKAGES = {"pytorch_lightning": ("pytorch_lightning", "lightning.pytorch"),
            "lightning": ("lightning.pytorch", "pytorch_lightning")}


def require(name: str) -> ModuleType:
    """The package; scripts/test.sh installs both: in CI a missing one fails, else skips."""
    try:
        return importlib.import_module(PACKAGES[name][0])
    except ImportError:
        why = f"{name} is not installed (scripts/test.sh installs it: the test extra)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {why}")
        pytest.skip(why)


@pytest.fixture(params=sorted(PACKAGES))
def pl(request: pytest.FixtureRequest) -> ModuleType:
    """``pytorch_lightning`` or ``lightning.pytorch``."""
    return require(request.param)


@contextlib.contextmanager
def only(pl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``pl`` is the only Lightning imported, as in a program that imports one of them."""
    other_key = "lightning.pytorch" if pl.__name__ == "pytorch_lightning" else "pytorch_lightning"
    with monkeypatch.context() as m:
        m.delitem(sys.modules, other_key, raising=False)
        yield


def tiny(pl: ModuleType) -> Any:
    class Tiny(pl.LightningModule):  # type: ignore[misc,name-defined]
        """A linear model over each frame's mean spectrum (3 bands)."""

        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(3, 1)

        def training_step(self, batch: dict[str, Any], _: int) -> Any:
            return self.layer(batch["cube"].mean(dim=(1, 2))).pow(2).mean()

        def validation_step(self, batch: dict[str, Any], _: int) -> None:
            self.log("val_loss", self.layer(batch["cube"].mean(dim=(1, 2))).mean())

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Tiny()


def trainer(pl: ModuleType, out: Path, epochs: int = 1) -> Any:
    return pl.Trainer(max_epochs=epochs, limit_train_batches=1, limit_val_batches=1,
                      accelerator="cpu", devices=1, logger=pl.loggers.CSVLogger(out),
                      default_root_dir=out, enable_progress_bar=False,
                      enable_model_summary=False, num_sanity_val_steps=0,
                      callbacks=[pl.callbacks.ModelCheckpoint(dirpath=out / "ckpt")])


def split_copies(tiny_split: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The tiny split, and a copy of it whose train and test stages are swapped."""
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(tiny_split, a)
    shutil.copytree(tiny_split, b)
    doc = json.loads((b / "splits.json").read_text())
    doc["train"], doc["test"] = doc["test"], doc["train"]
    (b / "splits.json").write_text(json.dumps(doc))
    return a, b


def other(pl: ModuleType) -> str:
    return "lightning" if pl.__name__ == "pytorch_lightning" else "pytorch_lightning"


def test_split_datamodule_fits_and_refuses_a_resume_with_each_package(
        pl: ModuleType, tiny_split: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = split_copies(tiny_split, tmp_path)
    with only(pl, monkeypatch):
        dm = SplitDataModule(a / "universe.csv", a / "splits.json", lock=None,
                             stat_cache=None)
        assert type(pickle.loads(pickle.dumps(dm))) is type(dm)  # by its plain class
    assert isinstance(dm, pl.LightningDataModule) and isinstance(dm, SplitDataModule)
    run = trainer(pl, tmp_path / "run")
    run.fit(tiny(pl), dm)  # positional: the Trainer takes it for a DataModule
    (ckpt,) = (tmp_path / "run/ckpt").glob("*.ckpt")
    record = torch.load(ckpt, map_location="cpu", weights_only=True)["SplitDataModule"][KEY]
    assert record == dm.state_dict()[KEY] and record["stages"]["train"] == 4
    hparams = (Path(run.logger.log_dir) / "hparams.yaml").read_text()
    assert "dataset/splits_sha256: " + record["splits"]["sha256"] in hparams
    # built while only the other package is imported, attached to this package's Trainer
    other_pl = require(other(pl))
    with only(other_pl, monkeypatch):
        changed = SplitDataModule(b / "universe.csv", b / "splits.json", lock=None,
                                  stat_cache=None)
    assert isinstance(changed, other_pl.LightningDataModule)
    with pytest.raises(LineageError, match="Refusing to resume training on changed data"):
        trainer(pl, tmp_path / "resume", epochs=2).fit(tiny(pl), datamodule=changed,
                                                        ckpt_path=str(ckpt))
    assert isinstance(changed, pl.LightningDataModule)
    assert type(changed).__qualname__ == "SplitDataModule"


def test_guard_fits_and_refuses_a_resume_with_each_package(
        pl: ModuleType, tiny_split: Path, tmp_path: Path) -> None:
    a, b = split_copies(tiny_split, tmp_path)

    class Frames(pl.LightningDataModule):  # type: ignore[misc,name-defined]
        """A user's module with a train loader only (the model has a validation_step)."""

        def train_dataloader(self) -> Any:
            return torch.utils.data.DataLoader([{"cube": torch.ones(2, 2, 3)}] * 2)

    def guarded(root: Path) -> Any:
        return guard(Frames(), splits=root / "splits.json", universe=root / "universe.csv",
                     cache=None, lock=None)

    dm = guarded(a)
    trainer(pl, tmp_path / "run").fit(tiny(pl), datamodule=dm)
    (ckpt,) = (tmp_path / "run/ckpt").glob("*.ckpt")
    saved = torch.load(ckpt, map_location="cpu", weights_only=True)
    assert saved[Frames.__qualname__][KEY] == dm.state_dict()[KEY]
    with pytest.raises(LineageError, match="Refusing to resume training on changed data"):
        trainer(pl, tmp_path / "resume", epochs=2).fit(tiny(pl), datamodule=guarded(b),
                                                        ckpt_path=str(ckpt))
