"""dvc.lock's differences from the workspace as values: a stage, a path, what differs."""

from __future__ import annotations

from dvc_cuvis.repo.lockfile import Change


def test_a_change_reads_as_the_check_shows_it() -> None:
    assert str(Change("enumerate", "data/npz")) == "data/npz (stage enumerate)"
    assert str(Change("enumerate", "data/npz", "missing")) == (
        "data/npz (stage enumerate): missing")
    assert str(Change("bake", None, "command changed in dvc.yaml")) == (
        "stage bake: command changed in dvc.yaml")
    assert Change("bake", "splits.json") == Change("bake", "splits.json")
    assert Change("bake", "splits.json") != Change("bake", "splits.json", "missing")
