"""The fix lines' wording for what the pipeline tests cannot build cheaply."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_more_files_than_a_command_lists_are_restored_by_one_checkout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past 8 files the checkout names none: it restores everything DVC tracks, and says so."""
    from dvc_cuvis.check.fixes import Workspace

    (tmp_path / ".dvc").mkdir()
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(Workspace, "restorable", lambda self, files: True)
    ws = Workspace(tmp_path)
    files = [tmp_path / f"f{k}.npz" for k in range(9)]
    assert ws.restore(files[:1], files[1:]) == (
        "`dvc checkout --force` (discards every edit to the data DVC tracks), or keep the "
        "edits: re-enumerate and re-bake: `dvc repro`")
    assert ws.restore(files, []) == (
        "restore them: `dvc checkout`, or accept the change: re-enumerate and re-bake: "
        "`dvc repro`")
    assert ws.restore([], files[:2]) == (
        "`dvc checkout --force f0.npz f1.npz` (discards the edits), or keep the edits: "
        "re-enumerate and re-bake: `dvc repro`")
