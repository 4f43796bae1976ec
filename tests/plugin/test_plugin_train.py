"""The plugin under cuvis-ai-core's real trainer: restore_trainrun (and its CLI) on the example.

The layout is the repository's: ``example/materialized`` (the pipeline's output),
``examples/data/dvc_example.yaml`` (written by ``dvc-cuvis export --to cuvis-ai``), the
repository's own ``examples/trainrun/dvc_rx_statistical.yaml`` (copied unchanged), and, in
place of its RX pipeline (cuvis-ai's nodes), a pipeline of the tiny statistical node from
:mod:`tests.helpers.nodes` under the same name.  A run trains on clean data and
stops before reading a frame on each kind of drift.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")
pytest.importorskip("hydra")

from cuvis_ai_dataloader.data.datamodule_npz_multi import MultiNpzDataModule  # noqa: E402

from dvc_cuvis.baking.core import BakeOptions, bake  # noqa: E402
from dvc_cuvis.check.drift import DriftError  # noqa: E402
from dvc_cuvis.model.universe_io import read_universe, write_universe  # noqa: E402
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe  # noqa: E402
from tests.helpers import nodes  # noqa: E402
from tests.helpers.plugin_project import (  # noqa: E402
    PLUGINS,
    REPO,
    TRAINRUN,
    build_project,
    flip_byte,
    frame,
    mat,
    swap_frame,
    tamper_pin,
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example, materialized, with its cuvis-ai data group and trainrun."""
    return build_project(tmp_path_factory.mktemp("project"))


@pytest.fixture
def proj(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy; the run starts in its trainrun folder (as docs/training.md says)."""
    root = tmp_path / "p"
    shutil.copytree(project, root)
    monkeypatch.chdir(root / "examples/trainrun")
    nodes.FRAMES.clear()
    return root


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every dataset npz_multi builds (building one reads its first frame)."""
    built: list[int] = []
    original = MultiNpzDataModule.build_dataset_from_refs

    def spy(self: Any, refs: list[Any]) -> Any:
        built.append(len(refs))
        return original(self, refs)

    monkeypatch.setattr(MultiNpzDataModule, "build_dataset_from_refs", spy)
    return built


def train(root: Path) -> None:
    from cuvis_ai_core.utils.restore import restore_trainrun

    restore_trainrun(TRAINRUN, mode="train", plugins_dirs=[str(PLUGINS)],
                     overrides=[f"output_dir={root / 'out'}"])


def set_param(root: Path, line: str) -> None:
    """Add ``line`` (``key: value``) to the data group's params, as a user edits it."""
    group = root / "examples/data/dvc_example.yaml"
    text = group.read_text()
    assert text.endswith("\nparams:\n" + text.split("\nparams:\n", 1)[1])
    group.write_text(text + f"  {line}\n")


def delete_frame(root: Path) -> str:
    frame(root, 3).unlink()
    return "content: 0 file(s) modified, 1 missing"


def edit_universe(root: Path) -> str:
    lines = (mat(root) / "universe.csv").read_text().splitlines(keepends=True)
    (mat(root) / "universe.csv").write_text("".join(lines[:-1]))  # a row deleted by hand
    return "universe.csv changed since the split was baked"


TAMPERS = [tamper_pin, swap_frame, flip_byte, delete_frame, edit_universe]


def test_trains_on_clean_data(proj: Path, reads: list[int]) -> None:
    train(proj)
    fit = sum(n for phase, n in nodes.FRAMES if phase == "fit")
    uni = read_universe(mat(proj) / "universe.csv")
    assert fit > 0 and fit < len(uni)  # the train stage, not the universe
    assert any(phase == "forward" for phase, _ in nodes.FRAMES)  # val/test evaluated
    assert reads and (proj / "out/trained_models/channel_mean_restored.yaml").is_file()


@pytest.mark.parametrize("tamper", TAMPERS, ids=lambda f: f.__name__)
def test_stops_before_reading_a_frame(proj: Path, reads: list[int], tamper: Any) -> None:
    what = tamper(proj)
    with pytest.raises(DriftError) as err:
        train(proj)
    msg = str(err.value)
    assert reads == [] and nodes.FRAMES == []  # no dataset built, nothing trained
    assert msg.startswith("dvc_npz_multi: refusing to train: ")
    assert str(mat(proj).resolve() / "splits.json") in msg
    assert what in msg.replace("  ", " ").replace("\n", " ") or what.split(": ", 1)[1] in msg
    # the example here is no DVC repository: the fix is said in words, with no DVC command
    # that would fail when pasted
    assert "fix: " in msg and "re-bake" in msg
    assert "`dvc repro`" not in msg and "`dvc pull`" not in msg
    assert err.value.report.exit_code == 1


@pytest.mark.parametrize("tamper", TAMPERS, ids=lambda f: f.__name__)
def test_stops_through_register_plugin_and_create_data_module(
        proj: Path, reads: list[int], tamper: Any) -> None:
    """The path the gRPC training service takes: register the manifest, build by name."""
    import yaml
    from cuvis_ai_core.data.datamodule import create_data_module
    from cuvis_ai_core.utils.node_registry import NodeRegistry
    from cuvis_ai_schemas.training import DataConfig

    group = proj / "examples/data/dvc_example.yaml"
    doc = yaml.safe_load(group.read_text())
    doc["splits"]["splits_path"] = str(group.parent / doc["splits"]["splits_path"])
    doc["params"]["universe_csv"] = str(group.parent / doc["params"]["universe_csv"])
    registry = NodeRegistry()
    registry.register_plugin(PLUGINS / "dvc_cuvis.yaml")
    clean = create_data_module(registry, DataConfig.model_validate(doc))
    clean.setup("fit")
    assert clean.drift_report.ok and reads
    reads.clear()
    tamper(proj)
    dm = create_data_module(registry, DataConfig.model_validate(doc))
    with pytest.raises(DriftError, match="refusing to train"):
        dm.setup("fit")
    assert reads == [] and dm.train_ds is None


def test_verify_warn_logs_once_and_trains(proj: Path, reads: list[int],
                                          caplog: pytest.LogCaptureFixture) -> None:
    swap_frame(proj)
    with caplog.at_level(logging.WARNING, logger="dvc_cuvis"):
        set_param(proj, "verify: warn")
        train(proj)
    warned = [r for r in caplog.records if r.name == "dvc_cuvis.check.drift"]
    assert len(warned) == 1 and "[DRIFT] content" in warned[0].getMessage()
    assert len(reads) > 1  # several setup() calls (fit, val, test), one report
    assert any(phase == "fit" for phase, _ in nodes.FRAMES)


def test_a_mistyped_parameter_is_refused(proj: Path, reads: list[int]) -> None:
    tamper_pin(proj)  # a typo must not switch the check off
    with pytest.raises(ValueError, match="unknown parameter 'verfy'; did you mean 'verify'"):
        set_param(proj, "verfy: off")
        train(proj)
    assert reads == [] and nodes.FRAMES == []


def _cli(root: Path) -> subprocess.CompletedProcess[str]:
    """The documented command (docs/training.md: ``restore-trainrun`` with ``--plugins-dir
    $(dvc-cuvis plugins-dir)``), run from the trainrun's folder in a child forked from this
    process: its entry point, exit code and output are the command's, without paying for
    torch, Lightning and cuvis-ai-core's imports again (tests/helpers/forked.py)."""
    from cuvis_ai_core.utils.restore import restore_trainrun_cli

    from dvc_cuvis.plugin import plugins_dir
    from tests.helpers import forked

    argv = ["restore-trainrun", "--trainrun-path", TRAINRUN, "--mode", "train",
            "--plugins-dir", str(plugins_dir()), "--override", f"output_dir={root / 'out'}"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return forked.call(restore_trainrun_cli, root / "examples/trainrun", env, argv=argv,
                       timeout=600)


@pytest.mark.slow  # ~3 s
@pytest.mark.child_process
def test_restore_trainrun_cli_exits_non_zero_on_drift(proj: Path) -> None:
    ok = _cli(proj)
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert (proj / "out/trained_models/channel_mean_restored.pt").is_file()
    delete_frame(proj)
    bad = _cli(proj)
    assert bad.returncode != 0
    assert "dvc_npz_multi: refusing to train" in bad.stderr
    assert "Fitting score" not in bad.stderr  # stopped before training started


# -- dvc_cu3s_multi (SDK double) and dvc_tiff_paired -----------------------------------------


def _registry() -> Any:
    from cuvis_ai_core.utils.node_registry import NodeRegistry

    registry = NodeRegistry()
    registry.register_plugin(PLUGINS / "dvc_cuvis.yaml")
    return registry


def test_dvc_cu3s_multi_with_the_sdk_double(sdk: Any, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from cuvis_ai_core.data.datamodule import create_data_module
    from cuvis_ai_dataloader.data.datamodule_cu3s_multi import MultiCu3sDataModule
    from cuvis_ai_schemas.training import DataConfig

    from dvc_cuvis.model.splits import save_splits
    from tests.helpers.files import write_session

    for k in range(4):
        write_session(tmp_path / f"day{k}/s.cu3s", 3, seed=k)
    uni, _ = enumerate_universe(EnumerateOptions(format="cu3s", root=tmp_path,
                                                 out_dir=tmp_path))
    write_universe(uni, tmp_path / "universe.csv")
    (b,) = bake(read_universe(tmp_path / "universe.csv"), BakeOptions())
    save_splits(b.config, tmp_path / "splits.json")
    built: list[int] = []

    class Frames(list):  # stands for the SDK-reading dataset: the guard is under test here
        label_free_sources: list[str] = []  # noqa: RUF012
        sources: list[str] = []  # noqa: RUF012

    monkeypatch.setattr(MultiCu3sDataModule, "build_dataset_from_refs",
                        lambda self, refs: built.append(len(refs)) or Frames(refs))
    cfg = DataConfig(data_module="dvc_cu3s_multi", splits={"splits_path": str(
        tmp_path / "splits.json")}, params={"universe_csv": str(tmp_path / "universe.csv"),
                                            "lock": None, "sdk_cuda": False})
    registry = _registry()
    dm = create_data_module(registry, cfg)
    dm.setup("fit")
    assert dm.drift_report.ok and built
    assert dm.drift_report.finding("content").status == "ok"  # cu3s md5s recorded and checked
    built.clear()
    write_session(tmp_path / "day1/s.cu3s", 3, seed=99)  # a re-recorded session
    with pytest.raises(DriftError, match=r"content \(1 file\(s\) modified"):
        create_data_module(registry, cfg).setup("fit")
    assert built == []
    # a module-owned split (no splits.json) has no pin to check: said, not skipped in silence
    with pytest.raises(ValueError, match="no splits given; the drift check needs the split"):
        create_data_module(registry, cfg.model_copy(update={"splits": None})).setup("fit")
    assert built == []
    with pytest.raises(ValueError, match="did you mean 'stat_cache'"):
        create_data_module(registry, cfg.model_copy(update={"params": {
            **cfg.params, "stat_cashe": None}}))


def test_dvc_tiff_paired_checks_its_own_listing(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tifffile")
    from cuvis_ai_core.data.datamodule import create_data_module
    from cuvis_ai_dataloader.data.datamodule_tiff_paired import TiffPairedDataModule
    from cuvis_ai_schemas.training import DataConfig

    from dvc_cuvis.model.splits import save_splits
    from tests.helpers.tiff import scrap_folder, write_cube

    root = scrap_folder(tmp_path / "ds")
    uni, _ = enumerate_universe(EnumerateOptions(format="tiff", root=root, out_dir=root))
    write_universe(uni, root / "universe.csv")
    (b,) = bake(read_universe(root / "universe.csv"), BakeOptions(val_ratio=0.2,
                                                                  test_ratio=0.2))
    save_splits(b.config, root / "splits.json")
    monkeypatch.chdir(root)  # upstream lists images_dir as given: relative to here
    built: list[int] = []
    original = TiffPairedDataModule.build_dataset_from_refs
    monkeypatch.setattr(TiffPairedDataModule, "build_dataset_from_refs",
                        lambda self, refs: built.append(len(refs)) or original(self, refs))
    registry = _registry()

    def config(**params: Any) -> DataConfig:
        return DataConfig(data_module="dvc_tiff_paired", splits={"splits_path": "splits.json"},
                          params={"images_dir": "images", "lock": None, **params})

    for params in ({}, {"universe_csv": "universe.csv"}):
        dm = create_data_module(registry, config(**params))
        dm.setup("fit")
        assert dm.drift_report.ok and built, params
    assert dm.drift_report.finding("content").status == "ok"
    built.clear()
    # a cube re-exported in place: only the universe.csv's md5 sees it
    write_cube(root / "images/scrap_01.tif", seed=42)
    create_data_module(registry, config()).setup("fit")
    built.clear()
    with pytest.raises(DriftError, match="content"):
        create_data_module(registry, config(universe_csv="universe.csv")).setup("fit")
    assert built == []
    # a file added to images_dir changes what it would train on: the pin no longer matches
    write_cube(root / "images/scrap_99.tif", seed=7)
    for params in ({}, {"universe_csv": "universe.csv"}):
        with pytest.raises(DriftError, match="universe"):
            create_data_module(registry, config(**params)).setup("fit")
    assert built == []


@pytest.mark.slow  # dvc init + commit
def test_dvc_lock_staleness_in_a_dvc_repository(proj: Path, reads: list[int]) -> None:
    """In a DVC repository the run also stops when dvc.lock no longer describes the data."""
    def sh(*args: str) -> None:
        subprocess.run(args, cwd=proj, check=True, capture_output=True, text=True,
                       env={**os.environ, "DVC_NO_ANALYTICS": "1"})

    dvc = str(Path(sys.executable).parent / "dvc")
    sh("git", "init", "-q")
    sh(dvc, "init", "-q")
    sh(dvc, "stage", "add", "-n", "materialize", "-d", "example/universe.csv",
       "-o", "example/materialized", "true")
    sh(dvc, "commit", "-f", "-q", "materialize")
    assert (proj / "dvc.lock").is_file()
    train(proj)
    assert reads  # dvc.lock matches: trains
    reads.clear()
    nodes.FRAMES.clear()
    with open(proj / "example/universe.csv", "a") as fh:  # the stage's input changed
        fh.write("new/frame.npz,0,new/frame.npz,npz,,,normal,\n")
    with pytest.raises(DriftError) as err:
        train(proj)
    assert "staleness" in str(err.value) and "dvc repro" in str(err.value)
    assert reads == [] and nodes.FRAMES == []
