"""``dvc-cuvis`` command line: a thin layer over the library, one module per verb.

Each verb module owns its flags (``add_parser``) next to its handler (``run``); the settings
rule (flag > params section > default) lives in :mod:`dvc_cuvis.cli._settings`.

Exit codes (scripts and CI rely on them): 0 ok, 1 a check failed, 2 bad input or usage.
Every error is one line on stderr naming the file, row or selector; no tracebacks
(set ``DVC_CUVIS_DEBUG=1`` to see one).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from dvc_cuvis._version import __version__
from dvc_cuvis.cli import (
    bake,
    check,
    enumerate,
    export,
    fetch,
    history,
    hook,
    init,
    lineage,
    materialize,
    plugins_dir,
    report,
    resolve,
)
from dvc_cuvis.cli._settings import EXIT_BAD_INPUT, EXIT_CODES, EXIT_OK, Parser
from dvc_cuvis.errors import DvcCuvisError

#: Verb modules in the order ``dvc-cuvis --help`` lists them (the pipeline's order).
VERBS = (init, enumerate, bake, resolve, materialize, fetch, check, history, report, export,
         lineage, hook, plugins_dir)


def build_parser() -> tuple[Parser, dict[str, Parser]]:
    """The argparse tree of every verb, and each verb's own parser by name."""
    parser = Parser(
        prog="dvc-cuvis",
        description="Reproducible, reviewable Cuvis.AI data splits as a DVC pipeline.",
        epilog=EXIT_CODES + "\n`dvc-cuvis VERB --help` shows a verb's flags and defaults.",
    )
    parser.add_argument("--version", action="version", version=f"dvc-cuvis {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also show info messages (e.g. why DVC re-hashes a file); "
                             "before the verb")
    sub = parser.add_subparsers(dest="command", metavar="VERB", parser_class=Parser)
    sub.required = True
    for verb in VERBS:
        verb.add_parser(sub)
    return parser, dict(sub.choices)


class _Stderr(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is now (not the one at creation)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class _Prefix(logging.Formatter):
    """``dvc-cuvis: warning:`` before a record, ``dvc-cuvis: info:`` before an INFO one."""

    def format(self, record: logging.LogRecord) -> str:
        kind = "warning" if record.levelno >= logging.WARNING else "info"
        return f"dvc-cuvis: {kind}: {super().format(record)}"


def _log_once() -> None:
    """Library warnings as one ``dvc-cuvis: warning:`` line each, none repeated.

    A partly matching selector is reported by the verb itself, with the file it is in, and
    decides the exit code; the resolver's own log record of it would print it a second time.
    The records still propagate (to a notebook's or a test's handlers); with a handler here,
    Python's last-resort printer stays silent.
    """
    log = logging.getLogger("dvc_cuvis")
    if any(isinstance(h, _Stderr) for h in log.handlers):
        return
    handler = _Stderr()
    handler.setFormatter(_Prefix("%(message)s"))
    handler.addFilter(lambda record: record.name != "dvc_cuvis.model.selectors")
    log.addHandler(handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dvc-cuvis`` console script."""
    _log_once()
    parser, verbs = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        verbs[args.command].unknown(extras)
    func: Callable[[argparse.Namespace], int] = args.func
    log = logging.getLogger("dvc_cuvis")
    level = log.level
    if args.verbose:  # INFO records too (the level is restored after the verb)
        log.setLevel(logging.INFO)
    try:
        return func(args)
    except DvcCuvisError as exc:
        print(f"dvc-cuvis: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("dvc-cuvis: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except PermissionError as exc:  # the environment, not the file's bytes: nothing cached
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"dvc-cuvis: error: {where}permission denied; give this user read access "
              "and run again", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:
        print("dvc-cuvis: error: out of memory", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # never a traceback for users; opt in with DVC_CUVIS_DEBUG=1
        if os.environ.get("DVC_CUVIS_DEBUG"):
            raise
        print(f"dvc-cuvis: internal error: {type(exc).__name__}: {exc} "
              "(please report it; set DVC_CUVIS_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        log.setLevel(level)


__all__ = ["build_parser", "main"]
