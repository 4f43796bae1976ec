"""Shared test repositories: built once (git + ``dvc init`` + ``dvc repro``), copied per test.

A real pipeline takes seconds to build; a copy takes milliseconds.  :func:`pristine` builds
a named repository once per test run (in pytest's tmp folder of the run, which the workers of
``pytest -n`` share) and every test works on its own :func:`copy` of it, so tests that break
a file never see each other.

Mutation testing (``scripts/mutation.sh``) starts one pytest session per mutant; there the
variable ``DVC_CUVIS_TEST_REPOS`` names a folder that keeps the built repositories across
sessions.  Their folder name carries a digest of this module and the example generator, so
an edit to either builds them again.  The pipeline is built by the ``dvc-cuvis`` command of
the environment (a child process, so an in-process mutant never reaches the build).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.helpers.shell import sh

REPOS_ENV = "DVC_CUVIS_TEST_REPOS"
ROOT = Path(__file__).resolve().parents[2]


def build_npz_pipeline(root: Path) -> None:
    """The example npz dataset (8 sessions x 3 frames) through ``dvc repro``, in git."""
    from examples.generate import generate

    sh("git", "init", "-q", cwd=root)
    sh("dvc", "init", "-q", cwd=root)
    sh("dvc-cuvis", "init", "--format", "npz", "--root", "data/npz", cwd=root)
    generate(root / "data", sessions=8, frames=3, size=(8, 8), bands=4, seed=9)
    sh("dvc", "repro", cwd=root)


def build_tracked_npz_pipeline(root: Path) -> None:
    """A small npz dataset (4 sessions x 2 frames) whose data DVC tracks (``dvc-cuvis init``
    runs ``dvc add data/npz``), the pipeline run and pushed to a local remote beside it,
    everything committed: a ``git clone`` of it is a clone that has not pulled (no data, no
    ``materialized/``, no DVC cache)."""
    from examples.generate import generate

    sh("git", "init", "-q", cwd=root)
    sh("dvc", "init", "-q", cwd=root)
    generate(root / "data", sessions=4, frames=2, size=(8, 8), bands=4, seed=5)
    shutil.rmtree(root / "data" / "tiff")
    sh("dvc-cuvis", "init", "--format", "npz", "--root", "data/npz", cwd=root)
    sh("dvc", "repro", cwd=root)
    remote = root.parent / "tracked-npz-pipeline.remote"  # beside the repo: a stable path
    shutil.rmtree(remote, ignore_errors=True)
    sh("dvc", "remote", "add", "-d", "store", str(remote), cwd=root)
    sh("dvc", "push", "-q", cwd=root)
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", "dataset", cwd=root)


def build_committed_npz_pipeline(root: Path) -> None:
    """The README workflow on a small npz dataset (4 sessions x 2 frames, 3 bands):
    git + ``dvc init`` + ``dvc-cuvis init`` + ``dvc repro``, everything committed."""
    from examples.generate import generate

    gen = root.parent / f"{root.name}.gen"
    shutil.rmtree(gen, ignore_errors=True)
    generate(gen, sessions=4, frames=2, size=(8, 8), bands=3, seed=3)
    sh("git", "init", "-q", str(root), cwd=root.parent)
    sh("dvc", "init", "-q", cwd=root)
    shutil.copytree(gen / "npz", root / "data/npz")
    shutil.rmtree(gen)
    sh("dvc-cuvis", "init", "--format", "npz", "--root", "data/npz", cwd=root)
    sh("dvc", "repro", "-q", cwd=root)
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", "split pipeline", cwd=root)


def build_ignored_data_pipeline(root: Path) -> None:
    """The example npz dataset (10 sessions x 4 frames) through ``dvc repro``, its outputs
    committed and its data ignored by git (not tracked by DVC either)."""
    from examples.generate import generate

    sh("git", "init", "-q", cwd=root)
    sh("dvc", "init", "-q", cwd=root)
    sh("dvc-cuvis", "init", "--format", "npz", "--root", "data/npz", cwd=root)
    generate(root / "data", sessions=10, frames=4, size=(8, 8), bands=4, seed=3)
    (root / ".gitignore").write_text("/data/\n")
    out = sh("dvc", "repro", cwd=root)
    assert "Running stage 'bake'" in out
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", "split v1", cwd=root)


def build_two_revisions_origin(root: Path) -> None:
    """A dataset repository whose data DVC tracks, with two revisions (tags v1, v2: other
    pixels in every frame, and one more session), both pushed to a local remote beside it."""
    from examples.generate import generate

    remote = root.parent / "two-revisions-origin.remote"  # beside the repo: a stable path
    shutil.rmtree(remote, ignore_errors=True)
    sh("git", "init", "-q", cwd=root)
    sh("dvc", "init", "-q", cwd=root)
    sh("dvc", "remote", "add", "-d", "store", str(remote), cwd=root)
    generate(root / "data", sessions=3, frames=4, size=(8, 8), bands=4, seed=1)
    sh("dvc", "add", "-q", "data", cwd=root)
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", "v1", cwd=root)
    sh("git", "tag", "v1", cwd=root)
    generate(root / "data", sessions=3, frames=4, size=(8, 8), bands=4, seed=2,
             extra_sessions=1)
    sh("dvc", "add", "-q", "data", cwd=root)
    sh("git", "commit", "-qam", "v2", cwd=root)
    sh("git", "tag", "v2", cwd=root)
    sh("dvc", "push", "-q", "-a", "-T", cwd=root)


BUILDERS: dict[str, Callable[[Path], None]] = {
    "npz-pipeline": build_npz_pipeline,
    "tracked-npz-pipeline": build_tracked_npz_pipeline,
    "committed-npz-pipeline": build_committed_npz_pipeline,
    "ignored-data-pipeline": build_ignored_data_pipeline,
    "two-revisions-origin": build_two_revisions_origin,
}


def _fingerprint() -> str:
    h = hashlib.sha256()
    for f in (Path(__file__), Path(__file__).with_name("shell.py"),
              ROOT / "examples" / "generate.py"):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _shared(session_dir: Path) -> Path:
    """``session_dir`` of a pytest-xdist worker (``<run>/popen-gw0/repos``) as the folder
    every worker of the run shares (``<run>/repos``): a repository is built once per run,
    not once per worker (the lock makes the others wait for it)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and session_dir.parent.name == f"popen-{worker}":
        return session_dir.parent.parent / session_dir.name
    return session_dir


def pristine(name: str, session_dir: Path) -> Path:
    """The built repository ``name`` (never to be modified, not even by a read-only ``dvc``
    command, which writes DVC's temporary files: copy it)."""
    keep = os.environ.get(REPOS_ENV)
    base = Path(keep) / _fingerprint() if keep else _shared(session_dir)
    target = base / name
    if target.is_dir():
        return target
    with _locked(base / f".{name}.lock"):
        if not target.is_dir():
            work = base / f".{name}.building"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            BUILDERS[name](work)
            work.rename(target)
    return target


#: Set by ``scripts/test.sh`` for its whole run: each worker builds its share of every
#: repository first (see :func:`prebuild`).
PREBUILD_ENV = "DVC_CUVIS_TEST_PREBUILD"


def prebuild(session_dir: Path, worker: int, workers: int) -> list[str]:
    """Build this worker's share of every registered repository (names sorted, every
    ``workers``-th from ``worker``); the names it built or found.

    Without it, the first tests of a run that need the same repository find it being built
    by the other worker and wait for it, idle.  With it, the workers of a whole run build
    the repositories side by side before their first test, each building different ones.
    A partial run (one module, the fast tier) needs only some of them: there it is off.
    """
    names = sorted(BUILDERS)[worker::workers]
    for name in names:
        pristine(name, session_dir)
    return names


def copy(src: Path, dest: Path) -> Path:
    """A private copy of a built repository at ``dest``."""
    shutil.copytree(src, dest, symlinks=True)
    return dest


def fresh_clone(origin: Path, where: Path, env: dict[str, str]) -> Path:
    """``git clone`` of ``origin`` into ``where/clone``, then ``dvc pull``."""
    clone = where / "clone"
    sh("git", "clone", "-q", str(origin), str(clone), cwd=where, env=env)
    sh("dvc", "pull", "-q", cwd=clone, env=env)
    return clone
