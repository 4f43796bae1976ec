"""Crash points for the kill tests: named moments at which a test makes dvc-cuvis die or pause.

A crash test must prove that a kill left a *partial* state (a temp file beside an output,
frames without a manifest, an old output still in place) and that the rerun repairs it.
A kill at a random moment rarely lands there; a kill at a named moment always does.

The package itself holds no test code: each point is a patch this module puts on the real
code from outside, around a function (the point sits at its entry or its exit) or around
the system call that sits between two statements (``os.replace`` and ``fcntl.flock`` as
``_io`` sees them; no other caller's view of ``os`` or ``fcntl`` changes).  ``POINTS``
lists them; docs/robustness.md says what moment each one reaches.

What a point does when it is hit (``Hits``):

- ``kill="<name>[:<k>]"``: at the k-th hit (default 1) of ``name`` in this process, the
  process sends itself SIGKILL -- no cleanup handler, ``finally`` or atexit runs, exactly
  as with ``kill -9`` or a power cut;
- with ``pause=<folder>`` as well: at that hit, pause instead of dying: create
  ``<folder>/<name>.reached``, then wait (at most 120 s) until ``<folder>/<name>.go``
  exists, and go on.  A concurrency test holds one run at a known point while it starts
  another;
- ``log=<file>``: append every hit's name as a line, so a test learns the points a clean
  run passes (and how often) and can then kill at each of them.

Three ways in:

- in the test process: ``with installed(log=path): ...`` (the patches are gone after it);
- a child process (``command``): ``python -m tests.helpers.crashpoints [--kill P]
  [--pause DIR] [--log FILE] -- ARGS...`` runs ``dvc_cuvis.cli.main(ARGS)`` with the
  points in place (the repository root on ``PYTHONPATH``: ``child_env``);
- a Dask worker (``worker_options``): ``dask worker ADDRESS --preload
  tests.helpers.crashpoints [--kill P] [--log FILE]`` (``dask_setup``), so the points
  fire where the tasks run.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # the repository
MODULE = "tests.helpers.crashpoints"

#: every point: where its patch sits
POINTS = {
    "io.before-lock": "_io: fcntl.flock, before the call (atomic write's temp-file lock)",
    "io.before-rename": "_io: os.replace, before the call (atomic write's rename)",
    "io.after-rename": "_io: os.replace, after the call",
    "stat_cache.save": "digests.stat_cache: atomic_write_bytes, before the call",
    "materialize.locked": "materialize.core: output_lock, once the lock is held",
    "materialize.frame-written": "model.frame_bytes: FrameWriter.write, after it returns",
    "materialize.before-manifest": "materialize.core: _write_manifest, on entry",
    "materialize.synced": "materialize.core: sync_file_system, after it returns",
}


class Hits:
    """Counts the hits of each point in this process and acts on them (see the module doc)."""

    def __init__(self, kill: str | None = None, pause: str | Path | None = None,
                 log: str | Path | None = None) -> None:
        name, sep, k = (kill or "").rpartition(":")
        if not (sep and k.isdigit() and name):
            name, k = kill or "", "1"
        if name and name not in POINTS:
            raise ValueError(f"unknown crash point {name!r}; choose from {sorted(POINTS)}")
        self.target, self.at = name, max(int(k), 1)
        self.pause = Path(pause) if pause else None
        self.log = Path(log) if log else None
        self.hits = 0
        self._lock = threading.Lock()

    def __call__(self, name: str) -> None:
        with self._lock:
            if self.log is not None:
                with open(self.log, "a", encoding="utf-8") as fh:
                    fh.write(name + "\n")
            if name != self.target:
                return
            self.hits += 1
            if self.hits != self.at:
                return
        if self.pause is None:
            os.kill(os.getpid(), signal.SIGKILL)
        (self.pause / f"{name}.reached").touch()
        deadline = time.monotonic() + 120
        while not (self.pause / f"{name}.go").exists() and time.monotonic() < deadline:
            time.sleep(0.01)


class _ModuleView:
    """A module as one importer sees it: some attributes replaced, the rest the module's."""

    def __init__(self, module: Any, **replaced: Any) -> None:
        self._module = module
        self.__dict__.update(replaced)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


def _before(fn: Callable[..., Any], hit: Hits, name: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        hit(name)
        return fn(*args, **kwargs)
    return wrapper


def _after(fn: Callable[..., Any], hit: Hits, name: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        hit(name)
        return result
    return wrapper


def _around(fn: Callable[..., Any], hit: Hits, before: str, after: str) -> Callable[..., Any]:
    return _after(_before(fn, hit, before), hit, after)


def _held(lock: Callable[..., Any], hit: Hits, name: str) -> Callable[..., Any]:
    """A context manager like ``lock`` that hits ``name`` first thing inside it."""
    @contextlib.contextmanager
    @functools.wraps(lock)
    def wrapper(*args: Any, **kwargs: Any) -> Iterator[None]:
        with lock(*args, **kwargs):
            hit(name)
            yield
    return wrapper


def _patches(hit: Hits) -> list[tuple[Any, str, Any]]:
    """(owner, attribute, replacement) for every point; an owner that lost its attribute
    (code moved) fails here, naming it, instead of leaving a point that never fires."""
    from dvc_cuvis import _io
    from dvc_cuvis.digests import stat_cache
    from dvc_cuvis.materialize import core
    from dvc_cuvis.model import frame_bytes

    def wrap(owner: Any, attr: str, make: Callable[[Any], Any]) -> tuple[Any, str, Any]:
        if attr not in vars(owner):
            raise AttributeError(f"crash points: {owner.__name__}.{attr} is gone; "
                                 "patch it where it now lives (tests/helpers/crashpoints.py)")
        return owner, attr, make(vars(owner)[attr])

    return [
        wrap(_io, "os", lambda m: _ModuleView(
            m, replace=_around(m.replace, hit, "io.before-rename", "io.after-rename"))),
        wrap(_io, "fcntl", lambda m: _ModuleView(
            m, flock=_before(m.flock, hit, "io.before-lock"))),
        wrap(stat_cache, "atomic_write_bytes", lambda f: _before(f, hit, "stat_cache.save")),
        wrap(core, "output_lock", lambda f: _held(f, hit, "materialize.locked")),
        wrap(frame_bytes.FrameWriter, "write",
             lambda f: _after(f, hit, "materialize.frame-written")),
        wrap(core, "_write_manifest", lambda f: _before(f, hit, "materialize.before-manifest")),
        wrap(core, "sync_file_system", lambda f: _after(f, hit, "materialize.synced")),
    ]


def install(hit: Hits) -> Callable[[], None]:
    """Put every point in place in this process; returns the function that takes them out."""
    patches = _patches(hit)
    saved = [(owner, attr, vars(owner)[attr]) for owner, attr, _ in patches]
    for owner, attr, new in patches:
        setattr(owner, attr, new)

    def undo() -> None:
        for owner, attr, old in saved:
            setattr(owner, attr, old)
    return undo


@contextlib.contextmanager
def installed(kill: str | None = None, pause: str | Path | None = None,
              log: str | Path | None = None) -> Iterator[Hits]:
    """The points in place in this process for the ``with`` block."""
    hit = Hits(kill, pause, log)
    undo = install(hit)
    try:
        yield hit
    finally:
        undo()


def options(kill: str | None = None, pause: str | Path | None = None,
            log: str | Path | None = None) -> list[str]:
    """The command-line options of ``main`` and ``dask_setup`` for these settings."""
    given = {"--kill": kill, "--pause": pause, "--log": log}
    return [s for opt, v in given.items() if v is not None for s in (opt, str(v))]


def command(*args: str, kill: str | None = None, pause: str | Path | None = None,
            log: str | Path | None = None) -> list[str]:
    """The argv of a child process that runs ``dvc-cuvis ARGS`` with the points in place."""
    return [sys.executable, "-m", MODULE, *options(kill, pause, log), "--", *args]


def worker_options(kill: str | None = None, pause: str | Path | None = None,
                   log: str | Path | None = None) -> list[str]:
    """The ``dask worker`` options that preload the points (its env: ``child_env``)."""
    return ["--preload", MODULE, *options(kill, pause, log)]


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: ours) with the repository root first on ``PYTHONPATH``."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.helpers.crashpoints [options] -- ARGS``: the CLI, points in place."""
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}")
    parser.add_argument("--kill")
    parser.add_argument("--pause")
    parser.add_argument("--log")
    opts = parser.parse_args(argv[:split])
    install(Hits(opts.kill, opts.pause, opts.log))
    from dvc_cuvis.cli import main as cli_main

    return cli_main(argv[split + 1:])


try:  # a Dask worker's --preload hook; click comes with distributed
    import click
except ImportError:  # pragma: no cover - no Dask here: no worker to preload
    click = None

if click is not None:
    @click.command()
    @click.option("--kill", default=None)
    @click.option("--pause", default=None)
    @click.option("--log", default=None)
    def dask_setup(worker: Any, kill: str | None, pause: str | None, log: str | None) -> None:
        """Put the points in place in a ``dask worker`` process."""
        install(Hits(kill, pause, log))


if __name__ == "__main__":
    sys.exit(main())
