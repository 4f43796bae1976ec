"""The DVC pipeline for real: `dvc-cuvis init` + `dvc repro` in a git repo, twice, in a clone
at another path, and after the dataset grows (stability)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe_io import read_universe
from examples.generate import generate
from tests.helpers.repos import copy, pristine
from tests.helpers.shell import ENV, sh

pytestmark = pytest.mark.slow  # dvc repro in each test, ~11 s in all (2 cores)


def digest_tree(root: Path, names: list[str]) -> dict[str, str]:
    return {n: hashlib.sha256((root / n).read_bytes()).hexdigest() for n in names}


OUTPUTS = ["universe.csv", "splits.json", "metrics/universe.json", "metrics/splits.json",
           "plots/stages.json", "report.html", "dvc.lock"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10 sessions x 4 frames through ``dvc repro`` (the build asserts bake ran), committed,
    the data ignored by git: this module's own copy (its tests run ``dvc repro`` in it)."""
    built = pristine("ignored-data-pipeline", tmp_path_factory.getbasetemp() / "repos")
    return copy(built, tmp_path_factory.mktemp("repo") / "repo")


def test_repro_outputs_are_valid_and_committed(repo: Path) -> None:
    uni = read_universe(repo / "universe.csv")
    cfg = load_splits(repo / "splits.json")
    assert cfg.universe_hash == uni.hash and len(uni) == 40
    res = resolve(cfg, uni)
    assert sum(len(res.stages[s]) for s in ("train", "val", "test")) == 40
    tracked = sh("git", "ls-files", cwd=repo).split()
    assert {"universe.csv", "splits.json", "dvc.lock", "params.yaml", "dvc.yaml"} <= set(tracked)


def test_dvc_plots_and_report_are_produced(repo: Path) -> None:
    out = subprocess.run(["dvc", "plots", "show", "--json"], cwd=repo, env=ENV,
                         capture_output=True, text=True, check=True).stdout
    data = json.loads(out)["data"]
    assert {"plots/stages.json", "plots/categories.json", "plots/groups.json"} <= set(data)
    values = data["plots/stages.json"][0]["content"]["data"]["values"]
    assert {v["stage"] for v in values} == {"train", "val", "test"}
    html = (repo / "report.html").read_text()
    assert 'data-metric="universe-samples">40<' in html


def test_second_repro_changes_nothing(repo: Path) -> None:
    before = digest_tree(repo, OUTPUTS)
    out = sh("dvc", "repro", cwd=repo)
    assert "Running stage" not in out
    assert digest_tree(repo, OUTPUTS) == before
    assert "up to date" in sh("dvc", "status", cwd=repo)
    assert sh("git", "status", "--porcelain", cwd=repo).strip() == ""


def test_clone_at_another_path_is_byte_identical(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "elsewhere" / "clone"
    sh("git", "clone", "-q", str(repo), str(clone), cwd=tmp_path)
    generate(clone / "data", sessions=10, frames=4, size=(8, 8), bands=4, seed=3)
    sh("dvc", "repro", "--force", cwd=clone)
    assert digest_tree(clone, OUTPUTS[:6]) == digest_tree(repo, OUTPUTS[:6])


def test_growth_moves_no_existing_sample(repo: Path, tmp_path: Path) -> None:
    grown = tmp_path / "grown"
    shutil.copytree(repo, grown)
    old_uni = read_universe(grown / "universe.csv")
    old = resolve(load_splits(grown / "splits.json"), old_uni)
    generate(grown / "data", sessions=10, frames=4, size=(8, 8), bands=4, seed=3,
             extra_sessions=1)  # +10% sessions
    out = sh("dvc", "repro", cwd=grown)
    assert "Running stage 'bake'" in out
    new_uni = read_universe(grown / "universe.csv")
    new = resolve(load_splits(grown / "splits.json"), new_uni)
    assert len(new_uni) == 44
    moved = 0
    for stage in ("train", "val", "test"):
        moved += len(set(old.uids(stage)) - set(new.uids(stage)))
    assert moved == 0
