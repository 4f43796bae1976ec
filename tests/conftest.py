"""The suite's shared fixtures (the plain helpers they build on live in ``tests/helpers/``).

Fixtures used by one package's tests only live in that package's ``conftest.py``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from dvc_cuvis.cli import main
from tests.helpers.cli import Run
from tests.helpers.files import SDK_DOUBLE
from tests.helpers.repos import pristine
from tests.helpers.shell import ENV

if TYPE_CHECKING:
    from testbeds.sshd import Sshd


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under ``pytest -n``: the modules of ``ONE_WORKER_MODULES`` run on one worker each."""
    from tests.helpers.scheduling import make_scheduler

    return make_scheduler(config, log)


def pytest_collection_finish(session: pytest.Session) -> None:
    """In a whole run (``scripts/test.sh``), each worker first builds its share of the
    shared repositories (every test module has registered its builders by now)."""
    from tests.helpers.repos import PREBUILD_ENV, prebuild

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not os.environ.get(PREBUILD_ENV) or session.config.option.collectonly or (
            worker is None and getattr(session.config.option, "numprocesses", None)):
        return  # not asked for, or the controller of ``pytest -n`` (its workers build)
    worker = worker or "gw0"
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    factory = session.config._tmp_path_factory  # type: ignore[attr-defined]
    prebuild(factory.getbasetemp() / "repos", int(worker[2:]), count)


@pytest.fixture(autouse=True)
def _private_user_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> None:
    """Outside a DVC repository the stat cache lives in the user's cache folder: not ours."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture(autouse=True)
def _neutral_cwd(tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> None:
    """Each test starts in an empty folder: the project's own params.yaml must not leak in."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(autouse=True)
def _cold_range_cache() -> None:
    """Each test parses its id ranges itself: a range parsed by an earlier test (or by the
    unmutated run a mutation tool forks from) must not stand in for the code under test."""
    from dvc_cuvis.model import selectors

    selectors._cached_id_runs.cache_clear()


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run ``dvc-cuvis ARGS`` in-process; returns exit code, stdout, stderr."""

    def run(*args: str) -> Run:
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
        cap = capsys.readouterr()
        return Run(code, cap.out, cap.err)

    return run


@pytest.fixture
def sdk(monkeypatch: pytest.MonkeyPatch):
    """The cuvis SDK test double on ``sys.path`` (its call log cleared); yields the module."""
    monkeypatch.syspath_prepend(str(SDK_DOUBLE))
    sys.modules.pop("cuvis", None)
    import cuvis

    cuvis.CALLS.clear()
    yield cuvis
    sys.modules.pop("cuvis", None)


@pytest.fixture(scope="session")
def npz_pipeline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example npz pipeline after ``dvc repro``, built once (never modified: copy it)."""
    return pristine("npz-pipeline", tmp_path_factory.getbasetemp() / "repos")


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README workflow, run once: an initialized npz dataset repository, reproduced and
    committed (never modified: copy it)."""
    return pristine("committed-npz-pipeline", tmp_path_factory.getbasetemp() / "repos")


@pytest.fixture(scope="module")
def materialized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """6 sessions x 4 frames enumerated, baked (predict = test) and materialized in-process."""
    from dvc_cuvis.baking.core import BakeOptions, bake
    from dvc_cuvis.materialize import ReaderParams
    from dvc_cuvis.materialize import materialize_universe as materialize
    from dvc_cuvis.model.universe_io import read_universe, write_universe
    from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
    from examples.generate import generate

    root = tmp_path_factory.mktemp("dm")
    generate(root / "data", sessions=6, frames=4, size=(8, 8), bands=4, seed=4)
    uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=root / "data/npz",
                                                 out_dir=root))
    write_universe(uni, root / "universe.csv")
    uni = read_universe(root / "universe.csv")
    (b,) = bake(uni, BakeOptions(strategy="random", seed=3, group_by="group"))
    cfg = b.config.model_copy(update={"predict": b.config.test})
    materialize(uni, cfg, root / "mat", ReaderParams())
    return root / "mat"


# -- real git + DVC repositories with a private DVC site cache --------------------------------


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Child environment; DVC's site cache (its state database) in a private folder."""
    site = tmp_path_factory.mktemp("dvc-site-cache")
    return {**ENV, "DVC_SITE_CACHE_DIR": str(site)}


@pytest.fixture
def _site_cache(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process DVC (our lookups) must read the state the ``dvc`` commands wrote (a module
    that needs it says ``pytestmark = pytest.mark.usefixtures("_site_cache")``)."""
    monkeypatch.setenv("DVC_SITE_CACHE_DIR", env["DVC_SITE_CACHE_DIR"])
    monkeypatch.delenv("DVC_CUVIS_DVC_HASHES", raising=False)


@pytest.fixture(scope="session")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset repository with two revisions (tags v1, v2) pushed to a local remote, built
    once per run (never modified: tests clone it)."""
    return pristine("two-revisions-origin", tmp_path_factory.getbasetemp() / "repos")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every npz frame that enumerate opens to parse (its path), in call order."""
    import dvc_cuvis.sources.npz as npz_source

    seen: list[str] = []
    real = npz_source.frame_info

    def counting(path: Path) -> dict:
        seen.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(npz_source, "frame_info", counting)
    return seen


# -- a real SSH server ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A running sshd on 127.0.0.1 for the whole session (stopped at the end).  A missing
    ``sshd`` fails the run in CI (``scripts/test.sh`` installs openssh-server), else skips."""
    from testbeds.sshd import find_sshd, start_sshd

    binary = find_sshd()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("sshd not found: install openssh-server (scripts/test.sh does)")
        pytest.skip("sshd not found (apt-get install openssh-server)")
    server = start_sshd(tmp_path_factory.mktemp("sshd"), binary)
    try:
        yield server
    finally:
        server.stop()
