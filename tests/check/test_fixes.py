"""The fix lines' wording for what the pipeline tests cannot build cheaply."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_a_checkout_names_every_file_it_overwrites_and_says_so_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """However many files, the checkout names each one (never a checkout of everything DVC
    tracks, which would discard every other edit), and says what it discards before it."""
    from dvc_cuvis.check.fixes import Workspace

    (tmp_path / ".dvc").mkdir()
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(Workspace, "restorable", lambda self, files: True)
    ws = Workspace(tmp_path)
    files = [tmp_path / f"f{k}.npz" for k in range(9)]
    named = " ".join(f"f{k}.npz" for k in range(9))
    assert ws.restore(files[:1], files[1:]) == (
        "discard the edits to these 8 files (nothing else is touched): `dvc checkout --force "
        f"{named}`, or keep them: re-enumerate and re-bake: `dvc repro`")
    assert ws.restore(files, []) == (
        f"restore them: `dvc checkout {named}`, or accept the change: re-enumerate and "
        "re-bake: `dvc repro`")
    assert ws.restore([], files[:1]) == (
        "discard the edit (nothing else is touched): `dvc checkout --force f0.npz`, or keep "
        "it: re-enumerate and re-bake: `dvc repro`")


def test_absolute_fixes_name_every_path_from_anywhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fix read far from this process's folder (the plugin's error in the cuvis-ai GUI)
    names each path absolutely; every command runs as printed from any folder."""
    from dvc_cuvis.check.fixes import Workspace

    data = tmp_path / "data"
    (data / ".dvc").mkdir(parents=True)
    (data / "dvc.yaml").write_text("stages: {}\n")
    (tmp_path / "server").mkdir()
    monkeypatch.chdir(tmp_path / "server")  # the service's folder, not the user's
    monkeypatch.setattr(Workspace, "restorable", lambda self, files: True)
    plain, ws = Workspace(None), Workspace(None, absolute=True)
    split, uni = data / "splits.json", data / "universe.csv"
    assert "--base ../data/splits.json" in plain.rebake(split)  # the folder the message hides
    assert f"--base {split} to keep" in ws.rebake(split)
    assert (f"`dvc-cuvis bake --universe {uni} --base {split} --out {split} "
            "--allow-removed`") in ws.reselect(split, uni)
    repo = Workspace(data, absolute=True)
    assert repo.rerun() == f"run `cd {data} && dvc repro`"
    assert f"`cd {data} && dvc checkout --force f.npz`" in repo.restore([], [data / "f.npz"])
