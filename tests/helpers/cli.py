"""The CLI as a user runs it: exit code, stdout and stderr of ``dvc-cuvis`` (the in-process
runner is the ``cli`` fixture, in ``tests/conftest.py``): in a fresh interpreter, or in a
child forked from the test process (its own process, exit code and streams, without paying
for the imports again)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Run:
    """One ``dvc-cuvis`` run: its exit code and what it printed."""

    code: int
    out: str
    err: str


def run_subprocess(*args: str, cwd: Path | None = None) -> Run:
    """Run the real console entry point in a child process."""
    proc = subprocess.run(
        [sys.executable, "-m", "dvc_cuvis", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, check=False,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def run_forked(*args: str, cwd: Path | None = None) -> Run:
    """Run the console entry point's ``main`` in a child forked from this process."""
    from dvc_cuvis.cli import main
    from tests.helpers import forked

    argv = [str(a) for a in args]
    proc = forked.call(lambda: main(argv), cwd or Path.cwd(), dict(os.environ),
                       argv=["dvc-cuvis", *argv])
    return Run(proc.returncode, proc.stdout, proc.stderr)
