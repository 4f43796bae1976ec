"""Lineage under the real host: Lightning's Trainer writes the dataset record into its
checkpoints, ``dvc-cuvis lineage`` reads them back against the repository, and a resume on
a changed split is refused.

One repository (the example npz pipeline, committed) is trained on twice, before and after a
re-bake; every test reads those two checkpoints (or a copy of the repository)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pl = pytest.importorskip("pytorch_lightning")

from dvc_cuvis.model.resolution import resolve  # noqa: E402
from dvc_cuvis.model.splits import parse_splits  # noqa: E402
from dvc_cuvis.model.universe_io import parse_universe_bytes  # noqa: E402
from dvc_cuvis.train.datamodule import SplitDataModule, guard  # noqa: E402
from dvc_cuvis.train.lineage import KEY, RECORD_FILE, LineageError  # noqa: E402

BIN = str(Path(sys.executable).parent)
ENV = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", ""),
       "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
       "DVC_NO_ANALYTICS": "1"}


def sh(root: Path, *args: str) -> str:
    proc = subprocess.run(list(args), cwd=root, env=ENV, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, f"{args}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout.strip()


class Tiny(pl.LightningModule):
    """A linear model over each frame's mean spectrum (4 bands)."""

    def __init__(self, lr: float = 0.1) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(4, 1)

    def _loss(self, batch: dict[str, Any]) -> Any:
        return self.layer(batch["cube"].mean(dim=(1, 2))).pow(2).mean()

    def training_step(self, batch: dict[str, Any], _: int) -> Any:
        return self._loss(batch)

    def validation_step(self, batch: dict[str, Any], _: int) -> None:
        self.log("val_loss", self._loss(batch))

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def module(root: Path, **kwargs: Any) -> SplitDataModule:
    return SplitDataModule(root / "materialized/universe.csv", root / "materialized/splits.json",
                           batch_size=4, shuffle_train=False, **kwargs)


def trainer(out: Path, **kwargs: Any) -> Any:
    from pytorch_lightning.callbacks import ModelCheckpoint
    from pytorch_lightning.loggers import CSVLogger

    return pl.Trainer(max_epochs=kwargs.pop("max_epochs", 1), limit_train_batches=2,
                      limit_val_batches=1, accelerator="cpu", devices=1,
                      logger=CSVLogger(out), default_root_dir=out, enable_progress_bar=False,
                      enable_model_summary=False, num_sanity_val_steps=0,
                      callbacks=[ModelCheckpoint(dirpath=out / "checkpoints")], **kwargs)


def fit(root: Path, out: Path) -> Path:
    trainer(out).fit(Tiny(), datamodule=module(root))
    (ckpt,) = sorted((out / "checkpoints").glob("*.ckpt"))
    return ckpt


@dataclass
class Trained:
    root: Path
    c1: str
    c2: str
    ckpt_a: Path
    ckpt_b: Path
    logs_a: Path
    split_a: tuple[bytes, bytes]  # materialized splits.json and universe.csv at c1
    split_b: tuple[bytes, bytes]


def _snapshot(root: Path) -> tuple[bytes, bytes]:
    return ((root / "materialized/splits.json").read_bytes(),
            (root / "materialized/universe.csv").read_bytes())


@pytest.fixture(scope="module")
def trained(npz_pipeline: Path, tmp_path_factory: pytest.TempPathFactory) -> Trained:
    """The pipeline committed and trained on (c1), re-baked with another seed, committed and
    trained on again (c2); the workspace stays at c2."""
    base = tmp_path_factory.mktemp("lineage")
    root = base / "repo"
    shutil.copytree(npz_pipeline, root, symlinks=True)
    sh(root, "git", "add", "-A")
    sh(root, "git", "commit", "-qm", "v1")
    c1 = sh(root, "git", "rev-parse", "HEAD")
    ckpt_a, split_a = fit(root, base / "a"), _snapshot(root)
    params = (root / "params.yaml").read_text()
    assert "  seed: 0\n" in params
    (root / "params.yaml").write_text(params.replace("  seed: 0\n", "  seed: 1\n"))
    sh(root, "dvc", "repro", "-q")
    sh(root, "git", "add", "-A")
    sh(root, "git", "commit", "-qm", "v2: re-baked")
    c2 = sh(root, "git", "rev-parse", "HEAD")
    ckpt_b = fit(root, base / "b")
    return Trained(root, c1, c2, ckpt_a, ckpt_b, base / "a", split_a, _snapshot(root))


def _uids(snap: tuple[bytes, bytes]) -> dict[str, set[str]]:
    res = resolve(parse_splits(snap[0].decode()), parse_universe_bytes(snap[1]))
    return {s: set(res.uids(s)) for s in ("train", "val", "test")}


def lineage_json(cli: Any, *args: Any) -> dict[str, Any]:
    run = cli("lineage", *map(str, args), "--json")
    assert run.code == 0, run.err
    out: dict[str, Any] = json.loads(run.out)
    return out


@pytest.mark.slow
def test_a_checkpoint_names_its_dataset_version(cli: Any, trained: Trained) -> None:
    ckpt = torch.load(trained.ckpt_b, map_location="cpu", weights_only=True)
    assert ckpt["SplitDataModule"][KEY]["repo"]["commit"] == trained.c2
    (model,) = lineage_json(cli, trained.ckpt_b)["models"]
    ds = model["dataset"]
    splits = trained.split_b[0]
    counts = {s: len(u) for s, u in _uids(trained.split_b).items()}
    assert model["path"] == str(trained.ckpt_b) and model["current"] is True
    assert ds["commit"] == trained.c2 and ds["dirty"] is False
    assert ds["splits"] == "materialized/splits.json"
    assert ds["splits_sha256"] == hashlib.sha256(splits).hexdigest()
    assert ds["universe_hash"] == json.loads(splits)["universe_hash"]
    assert {s: ds["stages"][s] for s in counts} == counts
    assert [d["path"] for d in ds["data"]] == ["materialized"]
    assert ds["check"] == {"mode": "strict", "verdict": "ok", "reused_verdict": False,
                           "failed": []} or ds["check"]["verdict"] == "ok"
    assert model["changes"]["moved"] == 0 and model["changes"]["modified_files"] == 0
    # the logger shows the version beside the model's own hyperparameters
    (hparams,) = trained.logs_a.rglob("hparams.yaml")
    text = hparams.read_text()
    assert f"dataset/commit: {trained.c1}" in text and "lr: 0.1" in text
    assert "dataset/samples/train: " in text


@pytest.mark.slow
def test_after_a_rebake_lineage_says_stale_with_diffs_counts(
        cli: Any, trained: Trained, monkeypatch: pytest.MonkeyPatch) -> None:
    (model,) = lineage_json(cli, trained.ckpt_a)["models"]
    assert model["current"] is False and model["dataset"]["commit"] == trained.c1
    monkeypatch.chdir(trained.root)
    run = cli("diff", trained.c1, trained.c2, "--splits", "materialized/splits.json",
              "--universe", "materialized/universe.csv", "--json")
    assert run.code == 0, run.err
    diff = json.loads(run.out)
    ch = model["changes"]
    assert ch["moved"] == diff["moved"] > 0
    assert ch["transitions"] == diff["transitions"]
    assert ch["added"] == diff["universe"]["added"] and ch["removed"] == diff["universe"]["removed"]
    assert ch["content_changed"]["total"] == diff["content_changed"]["total"]
    assert ch["splits_changed"] is True and ch["data_changed"] == ["materialized"]
    stale = cli("lineage", str(trained.ckpt_a), "--fail-on-stale")
    assert stale.code == 1 and "STALE" in stale.out
    assert f"{ch['moved']} sample(s) moved" in stale.out
    assert cli("lineage", str(trained.ckpt_b), "--fail-on-stale").code == 0
    # at its own commit the first model's data is current
    (back,) = lineage_json(cli, trained.ckpt_a, "--rev", trained.c1)["models"]
    assert back["current"] is True and back["rev"] == trained.c1


@pytest.mark.slow
def test_compare_finds_exactly_the_overlap_of_the_two_splits(cli: Any, trained: Trained) -> None:
    a, b = _uids(trained.split_a), _uids(trained.split_b)
    out = lineage_json(cli, "--compare", trained.ckpt_a, trained.ckpt_b)
    b_in_a = sorted((b["train"] | b["val"]) & a["test"])
    a_in_b = sorted((a["train"] | a["val"]) & b["test"])
    assert out["test_sets_identical"] is (a["test"] == b["test"]) is False
    assert out["b_fit_in_a_test"] == {"count": len(b_in_a), "first": b_in_a[:5]}
    assert out["a_fit_in_b_test"] == {"count": len(a_in_b), "first": a_in_b[:5]}
    assert out["comparable"] is False
    same = lineage_json(cli, "--compare", trained.ckpt_b, trained.ckpt_b)
    assert same["test_sets_identical"] and same["comparable"]
    assert same["b_fit_in_a_test"]["count"] == 0
    text = cli("lineage", "--compare", str(trained.ckpt_a), str(trained.ckpt_b)).out
    assert text.splitlines()[-1].startswith("not comparable")


@pytest.mark.slow
def test_resume_on_a_changed_split_is_refused(trained: Trained, tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(LineageError) as err:
        trainer(tmp_path / "r", max_epochs=2).fit(Tiny(), datamodule=module(trained.root),
                                                  ckpt_path=str(trained.ckpt_a))
    msg = str(err.value)
    assert "\n" not in msg and "Refusing to resume training" in msg
    assert f"commit {trained.c1[:8]}" in msg and f"commit {trained.c2[:8]}" in msg
    assert "sample(s) moved (" in msg and "0 modified file(s)" in msg
    # under warn it resumes, and says so
    with caplog.at_level(logging.WARNING, logger="dvc_cuvis"):
        trainer(tmp_path / "w", max_epochs=2).fit(
            Tiny(), datamodule=module(trained.root, verify="warn"),
            ckpt_path=str(trained.ckpt_a))
    assert any("resuming training anyway" in r.getMessage() for r in caplog.records)
    caplog.clear()
    # validating an old checkpoint on the new split is logged, not refused
    with caplog.at_level(logging.WARNING, logger="dvc_cuvis"):
        trainer(tmp_path / "v").validate(Tiny(), datamodule=module(trained.root),
                                         ckpt_path=str(trained.ckpt_a))
    assert any("not those of its own test set" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_a_checkpoint_without_a_record_passes_with_a_note(
        cli: Any, trained: Trained, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ckpt = torch.load(trained.ckpt_b, map_location="cpu", weights_only=True)
    del ckpt["SplitDataModule"]
    bare = tmp_path / "bare.ckpt"
    torch.save(ckpt, bare)
    with caplog.at_level(logging.WARNING, logger="dvc_cuvis"):
        trainer(tmp_path / "r", max_epochs=2).fit(Tiny(), datamodule=module(trained.root),
                                                  ckpt_path=str(bare))
    assert any("carries no dataset record" in r.getMessage() for r in caplog.records)
    run = cli("lineage", str(bare))
    assert run.code == 2 and str(bare) in run.err and "no dataset record" in run.err


# -- without Lightning's trainer: the record itself ------------------------------------------


def _small(d: Path) -> tuple[Path, Path]:
    from dvc_cuvis.baking.core import BakeOptions, bake
    from dvc_cuvis.model.splits import save_splits
    from dvc_cuvis.model.universe_io import read_universe

    rows = "".join(f"day{k}.cu3s,0-2\n" for k in range(6))
    (d / "universe.csv").write_text("source,index\n" + rows)
    (baked,) = bake(read_universe(d / "universe.csv"), BakeOptions())
    save_splits(baked.config, d / "splits.json")
    return d / "splits.json", d / "universe.csv"


def test_guard_merges_the_record_with_the_modules_own_state(tmp_path: Path) -> None:
    splits, universe = _small(tmp_path)
    loaded: list[dict[str, Any]] = []

    class Module:
        def setup(self, stage: str | None = None) -> None:
            pass

        def state_dict(self) -> dict[str, Any]:
            return {"epoch_seed": 7}

        def load_state_dict(self, state: dict[str, Any]) -> None:
            loaded.append(state)

    dm = guard(Module(), splits=splits, universe=universe, cache=None, lock=None)
    assert dm.state_dict() == {"epoch_seed": 7}  # nothing to add before setup()
    dm.setup("fit")
    state = dm.state_dict()
    assert state["epoch_seed"] == 7 and state[KEY]["splits"]["sha256"] == hashlib.sha256(
        splits.read_bytes()).hexdigest()
    assert state[KEY]["stages"]["train"] + state[KEY]["stages"]["val"] + \
        state[KEY]["stages"]["test"] == 18
    assert state[KEY]["repo"] == {"root": None, "origin": None, "commit": None, "dirty": None}
    dm.load_state_dict(state)  # the same version: the module gets its own state back
    assert loaded == [{"epoch_seed": 7}]
    json.dumps(state)  # plain types only


def test_verify_off_still_names_the_version(tmp_path: Path) -> None:
    splits, universe = _small(tmp_path)
    sh(tmp_path, "git", "init", "-q")
    sh(tmp_path, "git", "remote", "add", "origin", "https://example.com/data.git")
    sh(tmp_path, "git", "add", "splits.json", "universe.csv")
    sh(tmp_path, "git", "commit", "-qm", "data")
    dm = guard(type("M", (), {"setup": lambda self, stage=None: None})(), splits=splits,
               universe=universe, verify_mode="off", cache=None)
    dm.setup()
    rec = dm.dataset_record
    assert rec["check"]["verdict"] == "not checked" and rec["check"]["mode"] == "off"
    from dvc_cuvis._version import __version__

    assert rec["dvc_cuvis"] == __version__
    assert rec["repo"]["commit"] == sh(tmp_path, "git", "rev-parse", "HEAD")
    assert rec["repo"]["origin"] == "https://example.com/data.git"
    assert rec["splits"]["path"] == "splits.json" and rec["universe"]["path"] == "universe.csv"
    assert rec["split"] == json.loads(splits.read_text())


def test_the_lineage_folder_gets_the_record_when_training_reads(tmp_path: Path,
                                                               cli: Any) -> None:
    import numpy as np

    from dvc_cuvis.baking.core import BakeOptions, bake
    from dvc_cuvis.materialize import ReaderParams
    from dvc_cuvis.materialize import materialize_universe as materialize
    from dvc_cuvis.model.universe_io import read_universe

    for k in range(4):
        np.savez(tmp_path / f"f{k}.npz", cube=np.full((2, 2, 3), k, np.float32),
                 wavelengths=np.array([500, 600, 700]))
    (tmp_path / "universe.csv").write_text(
        "source,index,format\n" + "".join(f"f{k}.npz,0,npz\n" for k in range(4)))
    uni = read_universe(tmp_path / "universe.csv")
    (baked,) = bake(uni, BakeOptions(val_ratio=0.25, test_ratio=0.25))
    materialize(uni, baked.config, tmp_path / "mat", ReaderParams())
    dm = SplitDataModule(tmp_path / "mat/universe.csv", tmp_path / "mat/splits.json",
                         lock=None, stat_cache=None, lineage=tmp_path / "run")
    dm.setup("fit")
    dm.val_dataloader()
    assert not (tmp_path / "run").exists()  # validating is not training
    dm.train_dataloader()
    saved = json.loads((tmp_path / "run" / RECORD_FILE).read_text())
    assert saved == dm.dataset_record and saved["stages"]["train"] == 2
    (model,) = lineage_json(cli, tmp_path / "run")["models"]
    assert model["current"] is True and model["path"] == str(tmp_path / "run" / RECORD_FILE)


class _Logger:
    def __init__(self) -> None:
        self.logged: list[dict[str, Any]] = []

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        self.logged.append(params)


def test_the_logger_gets_the_version_under_dataset_keys_once(tmp_path: Path) -> None:
    from types import SimpleNamespace

    splits, universe = _small(tmp_path)
    log = _Logger()
    model = SimpleNamespace(hparams={"lr": 0.1, "dataset/commit": "the model's own"})
    trainer = SimpleNamespace(loggers=[log], lightning_module=model, state=None)
    module = type("M", (), {"setup": lambda self, stage=None: None})()
    module.trainer = trainer
    dm = guard(module, splits=splits, universe=universe, cache=None, lock=None)
    dm.setup("fit")
    dm.setup("test")  # the same version: not logged again
    (params,) = log.logged
    assert all(k.startswith("dataset/") for k in params)
    assert "dataset/commit" not in params  # the model's key is never overwritten
    assert params["dataset/splits_sha256"] == hashlib.sha256(splits.read_bytes()).hexdigest()
    assert params["dataset/samples/train"] == dm.dataset_record["stages"]["train"]
    assert params["dataset/verdict"] == "ok" and params["dataset/verify"] == "strict"


def test_a_record_of_another_version_is_refused_only_when_resuming_a_fit(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from types import SimpleNamespace

    splits, universe = _small(tmp_path)
    module = type("M", (), {"setup": lambda self, stage=None: None})()
    dm = guard(module, splits=splits, universe=universe, cache=None, lock=None)
    dm.setup("fit")
    old = json.loads(json.dumps(dm.state_dict()))
    doc = old[KEY]["split"]
    doc["train"], doc["test"] = doc["test"], doc["train"]  # a checkpoint of another split
    moved = dm.dataset_record["stages"]["train"] + dm.dataset_record["stages"]["test"]
    dm.trainer = SimpleNamespace(state=SimpleNamespace(fn="fit"), loggers=[])
    with pytest.raises(LineageError, match=rf"{moved} sample\(s\) moved \(test->train "):
        dm.load_state_dict(old)
    dm.trainer = SimpleNamespace(state=SimpleNamespace(fn="validate"), loggers=[])
    with caplog.at_level(logging.WARNING, logger="dvc_cuvis"):
        dm.load_state_dict(old)
    (warned,) = [r.getMessage() for r in caplog.records if "another dataset version" in
                 r.getMessage()]
    assert "test samples now were in its train or val stages" in warned
