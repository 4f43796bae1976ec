"""A real SSH remote (Debian's sshd on 127.0.0.1, through dvc-ssh): push, clone elsewhere,
pull, check; and what a clone that has not pulled is told."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml

from testbeds.sshd import Sshd, clone
from tests.helpers.remote import ssh_dataset
from tests.helpers.shell import run, sh

pytest.importorskip("dvc_ssh")

pytestmark = pytest.mark.slow  # a dataset repository pushed over SSH, ~11 s in all (2 cores)


def tree_digests(root: Path, folders: list[str]) -> dict[str, str]:
    """sha256 of every file below ``folders`` (relative posix path -> digest)."""
    out = {}
    for folder in folders:
        for p in sorted((root / folder).rglob("*")):
            if p.is_file():
                out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, sshd: Sshd) -> tuple[Path, Path]:
    repo, store = ssh_dataset(tmp_path_factory, sshd)
    return repo, store


def test_push_went_over_ssh(dataset: tuple[Path, Path], sshd: Sshd) -> None:
    repo, store = dataset
    config = (repo / ".dvc" / "config").read_text()
    assert f"ssh://{sshd.user}@127.0.0.1:{sshd.port}{store.as_posix()}" in config
    # this module's store is a copy of the one built: emptied, it is filled again over SSH
    shutil.rmtree(store / "files")
    assert "pushed" in sh("dvc", "push", cwd=repo)
    objects = [p for p in (store / "files" / "md5").rglob("*") if p.is_file()]
    assert len(objects) >= 18 * 2  # 18 raw frames + 18 materialized frames (+ .dir objects)
    assert "Everything is up to date" in sh("dvc", "push", cwd=repo)


def test_clone_pull_check_round_trip(dataset: tuple[Path, Path], sshd: Sshd,
                                     tmp_path: Path) -> None:
    repo, _ = dataset
    other = clone(repo, tmp_path / "elsewhere" / "clone", sshd, run=sh)
    out = sh("dvc", "pull", cwd=other)
    assert "fetched" in out
    folders = ["data/npz", "materialized"]
    assert tree_digests(other, folders) == tree_digests(repo, folders)
    checked = run("dvc-cuvis", "check", "--json", cwd=other)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    doc = json.loads(checked.stdout)
    assert doc["ok"] is True
    # No frame byte is read: DVC's state (filled by the pull) vouches for the data. Only the
    # small git-tracked pipeline outputs, which no DVC command hashed in this clone, are read
    # once for the staleness check ...
    stages = yaml.safe_load((other / "dvc.lock").read_text())["stages"]
    small = [o["path"] for name in ("enumerate", "bake") for o in stages[name]["outs"]]
    assert "universe.csv" in small and "splits.json" in small
    assert doc["hashing"]["bytes_hashed"] == sum((other / p).stat().st_size for p in small)
    # ... and a second check hashes nothing at all.
    again = json.loads(run("dvc-cuvis", "check", "--json", cwd=other).stdout)
    assert again["ok"] is True and again["hashing"]["bytes_hashed"] == 0, again["hashing"]


def test_clone_without_pull_is_told_to_pull(dataset: tuple[Path, Path], sshd: Sshd,
                                            tmp_path: Path) -> None:
    repo, _ = dataset
    other = clone(repo, tmp_path / "fresh", sshd, run=sh)
    checked = run("dvc-cuvis", "check", cwd=other)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "18 frames not pulled: `dvc pull`" in checked.stdout
    assert "dataset root not found" not in checked.stdout + checked.stderr
    assert "[PULL] content" in checked.stdout
    assert "[PULL] staleness" in checked.stdout and "dvc repro" not in checked.stdout


def test_a_lost_file_is_still_drift_not_a_pull(dataset: tuple[Path, Path], sshd: Sshd,
                                               tmp_path: Path) -> None:
    repo, _ = dataset
    other = clone(repo, tmp_path / "lost", sshd, run=sh)
    sh("dvc", "pull", cwd=other)
    victim = next((other / "data" / "npz").rglob("frame_*.npz"))
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))  # edited, not merely not pulled
    checked = run("dvc-cuvis", "check", cwd=other)
    assert checked.returncode == 1
    assert "not pulled" not in checked.stdout
    assert "DRIFT" in checked.stdout
