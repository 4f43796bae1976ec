"""Fixtures of the drift check's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.repos import copy, pristine
from tests.helpers.shell import sh


@pytest.fixture
def repo(npz_pipeline: Path, tmp_path: Path) -> Path:
    """A private copy of the example npz pipeline after ``dvc repro``."""
    return copy(npz_pipeline, tmp_path / "repo")


@pytest.fixture(scope="session")
def tracked_pipeline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tracked npz pipeline (data under ``dvc add``, pushed to a local remote, all
    committed), built once (never modified: copy or clone it)."""
    return pristine("tracked-npz-pipeline", tmp_path_factory.getbasetemp() / "repos")


@pytest.fixture
def fresh_clone(tracked_pipeline: Path, tmp_path: Path) -> Path:
    """``git clone`` of the tracked pipeline: no data, no materialized/, no DVC cache."""
    sh("git", "clone", "-q", str(tracked_pipeline), str(tmp_path / "clone"), cwd=tmp_path)
    clone = tmp_path / "clone"
    assert not (clone / "data/npz").exists() and not (clone / ".dvc/cache").exists()
    return clone
