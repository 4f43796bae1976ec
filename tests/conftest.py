"""Shared test helpers: fixture paths and a CLI runner that captures exit code and output."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from dvc_cuvis.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
#: A test double of Cubert's ``cuvis`` SDK (the real one needs libcuvis.so).
SDK_DOUBLE = Path(__file__).parent / "sdk_double"


@dataclass
class Run:
    code: int
    out: str
    err: str


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


def run_subprocess(*args: str, cwd: Path | None = None) -> Run:
    """Run the real console entry point in a child process."""
    proc = subprocess.run(
        [sys.executable, "-m", "dvc_cuvis", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, check=False,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def write_universe_csv(
    path: Path, rows: list[tuple[str, int]], header: str = "source,index"
) -> Path:
    """Write a tiny universe.csv (rows as given, LF endings)."""
    path.write_text(header + "\n" + "".join(f"{s},{i}\n" for s, i in rows), encoding="utf-8")
    return path


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
    from tests._repos import pristine

    return pristine("npz-pipeline", tmp_path_factory.getbasetemp() / "repos")
