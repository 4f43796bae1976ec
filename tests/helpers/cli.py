"""The CLI as a user runs it: exit code, stdout and stderr of ``dvc-cuvis`` (the in-process
runner is the ``cli`` fixture, in ``tests/conftest.py``)."""

from __future__ import annotations

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
