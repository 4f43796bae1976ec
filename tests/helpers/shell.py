"""Child processes for the tests: one environment and one way to run a command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: This environment's ``bin`` (its dvc, dvc-cuvis, python), first on a child's PATH.
BIN = str(Path(sys.executable).parent)
#: A child's environment: this venv first on PATH, a git identity, no DVC analytics, and
#: no mutant of a mutation run (a child always runs the code as written).
ENV = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", ""),
       "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
       "DVC_NO_ANALYTICS": "1"}
ENV.pop("MUTANT_UNDER_TEST", None)


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """Run a command in ``cwd`` (``ENV`` unless ``env``); its result, whatever its exit code."""
    return subprocess.run([str(a) for a in args], cwd=cwd, env=ENV if env is None else env,
                          capture_output=True, text=True, check=False)


def sh(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command in ``cwd``; its stdout and stderr (the test fails on a non-zero exit)."""
    proc = run(*args, cwd=cwd, env=env)
    assert proc.returncode == 0, f"{args}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr
