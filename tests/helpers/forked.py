"""A child process forked from this one: for a command whose imports this process has paid.

A fresh ``python`` that imports torch, Lightning or cuvis-ai-core spends 1.5-3 CPU s before
its first line runs; a forked child of the test process starts with them imported and runs
the same code on its own: its own process id, exit code (a ``kill -9`` is a real one), file
descriptors, working folder and environment. :func:`python_c` runs a source text as
``python -c`` does (a fresh ``__main__`` namespace, so a block that lacks an import still
fails); :func:`call` runs a function, for instance our CLI's ``main`` with crash points in
place. Output goes to temporary files, read back once the child has ended.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path


def call(fn: Callable[[], int | None], cwd: Path, env: dict[str, str], *,
         argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``fn()`` in a forked child in ``cwd`` with ``env``: its exit code and output."""
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # the child: never returns into the test
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - flushed below
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                os.chdir(cwd)
                os.environ.clear()
                os.environ.update(env)
                sys.argv = list(argv)
                code = _exit_code(fn)
            finally:
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(Exception):  # nothing left to tell
                        stream.flush()
                os._exit(code)
        code = _wait(pid, timeout)
        said = [f.seek(0) or f.read().decode(errors="replace") for f in (out, err)]
    return subprocess.CompletedProcess(argv, code, said[0], said[1])


def _exit_code(fn: Callable[[], int | None]) -> int:
    """What ``sys.exit`` and an uncaught exception would make of ``fn()``, as Python does."""
    try:
        result = fn()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return result or 0


def _wait(pid: int, timeout: float) -> int:
    """The child's exit code (``-N`` for signal N, as ``subprocess`` gives it)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise subprocess.TimeoutExpired(["<forked>"], timeout)
        time.sleep(0.01)


#: What the docs' and README's Python blocks import that costs most: imported before a fork,
#: where installed (the suite also runs without the optional extras).
HEAVY = ("torch", "pytorch_lightning", "cuvis_ai_core.data.datamodule",
         "cuvis_ai_dataloader.data.datamodule_npz_multi", "dvc_cuvis.plugin")


def installed(names: Iterable[str] = HEAVY) -> list[str]:
    """Those of ``names`` whose top-level package is installed."""
    return [n for n in names if importlib.util.find_spec(n.split(".")[0]) is not None]


def python_c(source: str, cwd: Path, env: dict[str, str], *,
             preload: Iterable[str] = ()) -> subprocess.CompletedProcess[str]:
    """``python -c SOURCE`` in ``cwd``, forked after importing ``preload`` here (once)."""
    for name in preload:
        importlib.import_module(name)

    def main() -> None:
        import types

        module = types.ModuleType("__main__")
        module.__builtins__ = __builtins__  # type: ignore[attr-defined]
        sys.modules["__main__"] = module
        sys.path.insert(0, "")  # as python -c: the working folder first
        exec(compile(source, "<string>", "exec"), module.__dict__)

    return call(main, cwd, env, argv=["-c"])
