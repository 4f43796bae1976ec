"""Child processes for the tests: one environment and one way to run a command.

``dvc`` is the exception: ``run("dvc", ...)`` and ``sh("dvc", ...)`` call DVC's own command
line (``dvc.cli.main``, what the ``dvc`` executable runs) in this process, in ``cwd``, with the
child's environment, and give back what the process would have: its exit code, stdout and
stderr. A ``dvc`` process costs 0.3-0.5 CPU s in Python and imports before it does any work,
and the suite ran some two hundred of them; in this process a ``dvc init`` or ``dvc push``
takes a few hundredths of a second. What DVC runs in turn (a stage's ``dvc-cuvis`` command,
``git``) is still a child process. A test that is about the ``dvc`` process itself runs it
as ``sys.executable -m dvc`` or in ``bash -c``, as a user's shell does.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

#: This environment's ``bin`` (its dvc, dvc-cuvis, python), first on a child's PATH.
BIN = str(Path(sys.executable).parent)
#: A child's environment: this venv first on PATH, a git identity, no DVC analytics, and
#: no mutant of a mutation run (a child process runs the code as written; a forked child or
#: DVC in this process is not a fresh interpreter, and the mutation runs leave out the tests
#: that use them).
ENV = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", ""),
       "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
       "DVC_NO_ANALYTICS": "1"}
ENV.pop("MUTANT_UNDER_TEST", None)


@contextlib.contextmanager
def _environ(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` is ``env`` inside (what DVC reads, and what its children inherit)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def dvc_handlers() -> set[logging.StreamHandler[Any]]:
    """DVC's console log handlers: bound to the streams of DVC's first import, not to
    whatever ``sys.stdout`` and ``sys.stderr`` are when it logs."""
    return {h for name in ("dvc", "dvc_objects", "dvc_data")
            for h in logging.getLogger(name).handlers
            if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)}


def point_dvc_handlers(out: IO[str], err: IO[str]) -> None:
    """DVC's handlers write to ``out`` (info and below) and ``err`` (warnings and errors)."""
    for h in dvc_handlers():  # not setStream: it flushes the old stream, which may be closed
        h.stream = err if h.level >= logging.WARNING else out


@contextlib.contextmanager
def _fd_streams() -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """File descriptors 1 and 2, and ``sys.stdout``/``sys.stderr`` and DVC's log handlers,
    go to two temporary files inside, as a process's would: what DVC prints and what the
    commands it runs (a stage's ``dvc-cuvis``) print land in one file each, in order."""
    # colorama (DVC's logger set it up) puts back the streams of DVC's first import
    # around some writes (`dvc plots diff --json`): inside, they are the call's streams
    import colorama.initialise as colorama

    names = ("orig_stdout", "wrapped_stdout", "orig_stderr", "wrapped_stderr")
    saved_colorama = [getattr(colorama, n) for n in names]
    saved_streams = [(h, h.stream) for h in dvc_handlers()]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved_fds = os.dup(1), os.dup(2)
        try:  # whatever fails from here on, this process gets its console back
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            # unbuffered text onto the descriptors: DVC's lines and its children's interleave
            text_out, text_err = (io.TextIOWrapper(io.FileIO(fd, "w", closefd=False),
                                                   write_through=True) for fd in (1, 2))
            point_dvc_handlers(text_out, text_err)
            for n, stream in zip(names, (text_out, text_out, text_err, text_err), strict=True):
                setattr(colorama, n, stream)
            with contextlib.redirect_stdout(text_out), contextlib.redirect_stderr(text_err):
                yield out, err
        finally:
            for n, stream in zip(names, saved_colorama, strict=True):
                setattr(colorama, n, stream)
            for h, stream in saved_streams:
                h.stream = stream
            for fd, saved in zip((1, 2), saved_fds, strict=True):
                os.dup2(saved, fd)
                os.close(saved)


def _dvc(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``dvc ARGS`` in this process: exit code, stdout and stderr, as the process gives them."""
    from dvc.cli import main
    from dvc.ui import ui

    enabled = ui._enabled  # main() turns DVC's console on for good; a process ends there
    with _environ(env), contextlib.chdir(cwd), _fd_streams() as (out, err):
        try:
            code = main(args)
        except SystemExit as exc:  # argparse's refusal, --help, --version
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        finally:
            ui._enabled = enabled
        said = [f.seek(0) or f.read().decode(errors="replace") for f in (out, err)]
    return subprocess.CompletedProcess(["dvc", *args], code, said[0], said[1])


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """Run a command in ``cwd`` (``ENV`` unless ``env``); its result, whatever its exit code."""
    words = [str(a) for a in args]
    if words[0] == "dvc":
        return _dvc(words[1:], Path(cwd), ENV if env is None else env)
    return subprocess.run(words, cwd=cwd, env=ENV if env is None else env,
                          capture_output=True, text=True, check=False)


def sh(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command in ``cwd``; its stdout and stderr (the test fails on a non-zero exit)."""
    proc = run(*args, cwd=cwd, env=env)
    assert proc.returncode == 0, f"{args}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr
