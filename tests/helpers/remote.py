"""The dataset repository whose data lives on the SSH remote: built once per worker, copied.

Three modules (push and pull, ``fetch``, a trainer at a pinned revision) start from the same
repository: npz data tracked, the pipeline ``init`` writes run, committed and pushed to the
session's SSH server. Building it runs the pipeline; a copy of the repository and its store
is a few dozen small files. A copy's remote points at its own store (the URL is committed, so
the commit is amended), so what one module pushes no other sees.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testbeds.sshd import Sshd, make_dataset_repo
from tests.helpers.repos import copy
from tests.helpers.shell import sh

#: (server port) -> the repository and store built on this worker
_BUILT: dict[int, tuple[Path, Path]] = {}


def ssh_dataset(tmp_path_factory: pytest.TempPathFactory, server: Sshd) -> tuple[Path, Path]:
    """A private copy of the SSH dataset repository (6 recordings of 3 frames): repo, store."""
    if server.port not in _BUILT:
        base = tmp_path_factory.mktemp("ssh-dataset-built")
        repo = make_dataset_repo(base / "repo", server, base / "store", sessions=6, frames=3,
                                 run=sh)
        _BUILT[server.port] = repo, base / "store"
    built, built_store = _BUILT[server.port]
    base = tmp_path_factory.mktemp("ssh-dataset")
    repo, store = copy(built, base / "repo"), base / "store"
    shutil.copytree(built_store, store)
    sh("dvc", "remote", "modify", "store", "url", server.url(store), cwd=repo)
    sh("git", "commit", "-q", "--amend", "--no-edit", "--", ".dvc/config", cwd=repo)
    return repo, store
