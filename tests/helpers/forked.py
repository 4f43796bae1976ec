"""A child process forked from this one: for a command whose imports this process has paid.

A fresh ``python`` that imports torch, Lightning or cuvis-ai-core spends 1.5-3 CPU s before
its first line runs; a forked child of the test process starts with them imported and runs
the same code on its own: its own process id (and process group), exit code (a ``kill -9``
is a real one), file descriptors, working folder and environment. :func:`python_c` runs a
source text as ``python -c`` would: a fresh ``__main__`` namespace (a block that lacks an
import fails), the ``sys.path`` of a fresh interpreter, none of this checkout's ``tests``,
``examples`` or ``benchmarks`` modules, and Python's default warning filters. What it cannot
undo: modules this process imported stay imported (their state too), and exit handlers the
code registers do not run. :func:`call` runs a function, for instance our CLI's ``main``
with a crash point in place. Output goes to temporary files, read back once the child ended.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

from tests.helpers.shell import point_dvc_handlers

ROOT = Path(__file__).resolve().parents[2]


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
                os.setpgid(0, 0)  # its own group: a timeout stops what it started too
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - flushed below
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                _point_log_handlers(sys.stdout, sys.stderr)
                os.chdir(cwd)
                os.environ.clear()
                os.environ.update(env)
                sys.argv = list(argv)
                code = _exit_code(fn)
                for thread in threading.enumerate():  # as the interpreter does at exit
                    if thread is not threading.current_thread() and not thread.daemon:
                        thread.join()
            finally:
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(Exception):  # nothing left to tell
                        stream.flush()
                os._exit(code)
        code = _wait(pid, timeout, argv)
        said = [f.seek(0) or f.read().decode(errors="replace") for f in (out, err)]
    return subprocess.CompletedProcess(argv, code, said[0], said[1])


def _point_log_handlers(out: object, err: object) -> None:
    """Log handlers that wrote to this process's console write to the child's."""
    point_dvc_handlers(out, err)  # type: ignore[arg-type]
    consoles = {id(sys.__stdout__): out, id(sys.__stderr__): err}
    for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
        for h in getattr(logger, "handlers", ()):
            if isinstance(h, logging.StreamHandler) and id(h.stream) in consoles:
                h.stream = consoles[id(h.stream)]


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


def _wait(pid: int, timeout: float, argv: list[str]) -> int:
    """The child's exit code (``-N`` for signal N, as ``subprocess`` gives it); on a timeout
    or an interruption here (^C) the child's process group is killed and reaped."""
    deadline = time.monotonic() + timeout
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(argv, timeout)
            time.sleep(0.01)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        raise


#: What the docs' and README's Python blocks import that costs most: imported before a fork,
#: where installed (the suite also runs without the optional extras).
HEAVY = ("torch", "pytorch_lightning", "cuvis_ai_core.data.datamodule",
         "cuvis_ai_dataloader.data.datamodule_npz_multi", "dvc_cuvis.plugin")


def installed(names: Iterable[str] = HEAVY) -> list[str]:
    """Those of ``names`` whose top-level package is installed."""
    return [n for n in names if importlib.util.find_spec(n.split(".")[0]) is not None]


@functools.cache
def _fresh_path(pythonpath: str | None) -> list[str]:
    """``sys.path`` of a fresh ``python -c`` (from another folder, so without its ``''``)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    said = subprocess.run([sys.executable, "-c", "import json, sys; print(json.dumps(sys.path))"],
                          cwd="/", env=env, capture_output=True, text=True, check=True)
    return [p for p in json.loads(said.stdout) if p != ""]


#: This checkout's folders that a user's interpreter cannot import from
CHECKOUT_ONLY = tuple(str(ROOT / name) + os.sep for name in ("tests", "examples", "benchmarks"))


def _checkout_only(module: object) -> bool:
    """``module`` is one of this checkout's tests, examples or benchmarks."""
    return (getattr(module, "__file__", None) or "").startswith(CHECKOUT_ONLY)


def python_c(source: str, cwd: Path, env: dict[str, str], *,
             preload: Iterable[str] = ()) -> subprocess.CompletedProcess[str]:
    """``python -c SOURCE`` in ``cwd``, forked after importing ``preload`` here (once)."""
    for name in preload:
        importlib.import_module(name)
    path = ["", *_fresh_path(env.get("PYTHONPATH"))]

    def main() -> None:
        import types

        for name in [n for n, m in list(sys.modules.items()) if _checkout_only(m)]:
            del sys.modules[name]
        sys.path[:] = path
        importlib.reload(warnings)  # its own showwarning, not pytest's recorder
        warnings.resetwarnings()  # Python's default filters, not pytest's
        for action, category in (("default", DeprecationWarning), ("ignore", DeprecationWarning),
                                 ("ignore", PendingDeprecationWarning),
                                 ("ignore", ImportWarning), ("ignore", ResourceWarning)):
            warnings.filterwarnings(action, category=category,  # type: ignore[arg-type]
                                    module="__main__" if action == "default" else "",
                                    append=True)
        module = types.ModuleType("__main__")
        module.__builtins__ = __builtins__  # type: ignore[attr-defined]
        sys.modules["__main__"] = module
        exec(compile(source, "<string>", "exec"), module.__dict__)

    return call(main, cwd, env, argv=["-c"])
