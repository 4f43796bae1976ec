"""A pinned dataset version under cuvis-ai-core's real trainer, from a folder holding no
checkout: the data-registry pattern of docs/team.md.

The trainrun names the dataset repository by path and a tag; ``splits_path`` and
``universe_csv`` are paths inside that repository.  ``restore_trainrun`` makes the
``splits_path`` absolute against the trainrun's folder, and upstream's ``validate_params``
asks for ``universe_csv`` in the current folder: neither may stop a run whose folder holds
nothing but the trainrun.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")
pytest.importorskip("hydra")

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe_io import read_universe
from tests.helpers import nodes
from tests.helpers.plugin_project import PIPELINE
from tests.helpers.repos import copy, pristine
from tests.helpers.shell import sh

pytestmark = pytest.mark.slow

PLUGINS = Path(__file__).resolve().parents[2] / "dvc_cuvis" / "plugins"


DATA = """\
data_module: dvc_npz_multi
splits:
  splits_path: materialized/splits.json
batch_size: 2
params:
  universe_csv: materialized/universe.csv
  rev: v1
  repo: {repo}
  cache_dir: {cache}
"""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The dataset repository (its data pushed to a local remote), tagged v1 with one commit
    after it, its materialized split gone from the working tree; v1's stage sizes."""
    built = pristine("tracked-npz-pipeline", tmp_path_factory.getbasetemp() / "repos")
    repo = copy(built, tmp_path_factory.mktemp("registry") / "dataset")
    sh("git", "tag", "v1", cwd=repo)
    uni = read_universe(repo / "materialized/universe.csv")
    res = resolve(load_splits(repo / "materialized/splits.json"), uni)
    sizes = {s: len(res.stages[s]) for s in ("train", "val", "test")}
    commit = sh("git", "rev-parse", "v1", cwd=repo).strip()
    shutil.rmtree(repo / "materialized")  # read at the tag, never from a working tree
    sh("git", "commit", "-q", "--allow-empty", "-m", "after v1", cwd=repo)
    return {"repo": repo, "sizes": sizes, "commit": commit}


def write_trainrun(folder: Path, dataset: dict[str, Any], cache: Path) -> Path:
    """A trainrun (and its pipeline) alone in ``folder``, its data group inline."""
    folder.mkdir(parents=True)
    (folder / "pipeline.yaml").write_text(PIPELINE)
    data = "".join(f"  {line}\n" for line in DATA.format(repo=dataset["repo"],
                                                          cache=cache).splitlines())
    (folder / "trainrun.yaml").write_text(
        "name: pinned\npipeline: pipeline.yaml\noutput_dir: outputs\nmetric_nodes: []\n"
        f"loss_nodes: []\ndata:\n{data}")
    return folder / "trainrun.yaml"


def test_restore_trainrun_trains_on_the_tag_from_an_empty_folder(
        dataset: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from cuvis_ai_core.utils.restore import restore_trainrun

    trainrun = write_trainrun(tmp_path / "elsewhere" / "runs", dataset, tmp_path / "cache")
    monkeypatch.chdir(trainrun.parent)
    nodes.FRAMES.clear()
    caplog.set_level(logging.INFO, logger="dvc_cuvis")
    restore_trainrun(trainrun.name, mode="train", plugins_dirs=[str(PLUGINS)],
                     overrides=[f"output_dir={tmp_path / 'out'}"])
    fit = sum(n for phase, n in nodes.FRAMES if phase == "fit")
    assert fit == dataset["sizes"]["train"]  # v1's train stage, read at the tag
    assert any(phase == "forward" for phase, _ in nodes.FRAMES)  # val/test evaluated
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert f"@v1 (commit {dataset['commit']})" in logged
    assert "splits_path" in logged and "materialized/splits.json" in logged  # said how read
    assert sorted(p.name for p in trainrun.parent.iterdir()) == ["pipeline.yaml",
                                                                 "trainrun.yaml"]
    assert sh("git", "status", "--porcelain", cwd=dataset["repo"]).strip() == ""


def test_create_data_module_builds_the_tag_from_an_empty_folder(
        dataset: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The path the gRPC training service takes: the registry builds the module by name,
    here with the absolute splits_path restore_trainrun would have made of it."""
    import yaml
    from cuvis_ai_core.data.datamodule import create_data_module
    from cuvis_ai_core.utils.node_registry import NodeRegistry
    from cuvis_ai_schemas.training import DataConfig

    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    registry = NodeRegistry()
    registry.register_plugin(PLUGINS / "dvc_cuvis.yaml")
    doc = yaml.safe_load(DATA.format(repo=dataset["repo"], cache=tmp_path / "cache"))
    for splits_path in ("materialized/splits.json",
                        str(tmp_path / "trainruns" / "materialized/splits.json")):
        doc["splits"]["splits_path"] = splits_path
        dm = create_data_module(registry, DataConfig.model_validate(doc))
        dm.setup("fit")
        assert (len(dm.train_ds), len(dm.val_ds)) == (dataset["sizes"]["train"],
                                                      dataset["sizes"]["val"])
    dm.setup("test")  # a stage the shared cache has not seen, after a fetch of nothing new
    assert len(dm.test_ds) == dataset["sizes"]["test"]
    assert not list(empty.iterdir())
    # a path that names no file of the repository is still an error naming it
    doc["params"]["universe_csv"] = "materialized/nope.csv"
    with pytest.raises(DvcCuvisError, match=r"materialized/nope\.csv does not exist at that "
                                            r"revision"):
        create_data_module(registry, DataConfig.model_validate(doc))
    doc["params"]["universe_csv"] = "materialized/universe.csv"
    doc["splits"]["splits_path"] = str(tmp_path / "nowhere.json")
    with pytest.raises(DvcCuvisError, match=r"nowhere\.json"):
        create_data_module(registry, DataConfig.model_validate(doc)).setup("fit")
