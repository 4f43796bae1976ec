"""A statistical cuvis-ai trainrun leaves its dataset record in its output folder.

cuvis-ai-core's ``restore_trainrun`` builds no Lightning trainer for a statistical run and gives
the DataModule no ``output_dir``: the repository's example trainrun names the folder itself
(``data.params.lineage: ${output_dir}``), and ``dvc-cuvis lineage`` reads the run's output.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("hydra")

from tests.helpers.plugin_project import REPO, TRAINRUN, build_project

GIT = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, env=GIT, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example, materialized, with the repository's own trainrun, committed."""
    root = build_project(tmp_path / "p", sessions=4, frames=3, batch_size=None)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "dataset")
    monkeypatch.chdir(root / "examples/trainrun")
    return root


@pytest.mark.slow
def test_a_statistical_trainrun_output_is_traced(project: Path, cli: Any) -> None:
    from cuvis_ai_core.utils.restore import restore_trainrun

    restore_trainrun(TRAINRUN, mode="train", plugins_dirs=[str(REPO / "dvc_cuvis/plugins")],
                     overrides=[f"output_dir={project / 'out'}"])
    out = project / "out"
    assert (out / "trained_models/channel_mean_restored.yaml").is_file()
    record = json.loads((out / "dataset_lineage.json").read_text())
    assert record["module"] == "dvc_npz_multi" and record["check"]["verdict"] == "ok"
    run = cli("lineage", str(out), "--json")
    assert run.code == 0, run.err
    (model,) = json.loads(run.out)["models"]
    splits = project / "example/materialized/splits.json"
    res_counts = record["stages"]
    assert model["path"] == str(out / "dataset_lineage.json") and model["current"] is True
    assert model["dataset"]["commit"] == git(project, "rev-parse", "HEAD")
    assert model["dataset"]["splits"] == "example/materialized/splits.json"
    assert model["dataset"]["universe_hash"] == json.loads(splits.read_text())["universe_hash"]
    assert model["dataset"]["stages"] == res_counts and res_counts["train"] > 0


def test_a_plugin_checkpoint_carries_the_record_and_guards_a_resume(project: Path) -> None:
    from types import SimpleNamespace

    from cuvis_ai_schemas.training.data import DataSplitConfig

    from dvc_cuvis.plugin.datamodules import DvcNpzMultiDataModule
    from dvc_cuvis.train.lineage import KEY, LineageError

    mat = project / "example/materialized"
    dm = DvcNpzMultiDataModule(universe_csv=str(mat / "universe.csv"), batch_size=2,
                               splits=DataSplitConfig(splits_path=str(mat / "splits.json")),
                               stat_cache=None)
    dm.setup("fit")
    state = json.loads(json.dumps(dm.state_dict()))  # plain types: what a .ckpt keeps
    record = state[KEY]
    assert record["module"] == "dvc_npz_multi" and record["repo"]["dirty"] is False
    assert record["repo"]["commit"] == git(project, "rev-parse", "HEAD")
    dm.trainer = SimpleNamespace(state=SimpleNamespace(fn="fit"), loggers=[], ckpt_path=None)
    dm.load_state_dict(state)  # the same version resumes
    record["split"]["val"], record["split"]["test"] = (record["split"]["test"],
                                                       record["split"]["val"])
    with pytest.raises(LineageError, match="dvc_npz_multi: the checkpoint was trained on "
                                           "another dataset version"):
        dm.load_state_dict(state)
