"""Fixtures of the drift check's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.repos import copy


@pytest.fixture
def repo(npz_pipeline: Path, tmp_path: Path) -> Path:
    """A private copy of the example npz pipeline after ``dvc repro``."""
    return copy(npz_pipeline, tmp_path / "repo")
