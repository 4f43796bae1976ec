"""``dvc-cuvis diff`` and ``dvc-cuvis log``: a split's history between git revisions."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dvc_cuvis.cli._inputs import split_paths
from dvc_cuvis.cli._settings import EXIT_OK, named_by, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import DIFF, LOG


def add_parser(sub: Any) -> None:
    """The ``diff`` and ``log`` verbs' flags (their options from ``specs.DIFF``/``LOG``)."""
    p = verb_parser(sub, "diff", "per-sample split changes between two git revisions")
    p.add_argument("revs", nargs="*", metavar="REV",
                   help="REV_A [REV_B] (default: HEAD against the workspace)")
    register_options(p, DIFF)
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--md", action="store_true", help="markdown, for a pull-request comment")
    fmt.add_argument("--json", action="store_true", help="machine-readable")
    p.set_defaults(func=run_diff)

    p = verb_parser(sub, "log", "commits that changed the split, with stage counts")
    p.add_argument("rev", nargs="?", default="HEAD", help="revision to start from "
                   "(default: HEAD)")
    register_options(p, LOG)
    p.add_argument("--json", action="store_true", help="machine-readable")
    p.set_defaults(func=run_log)


def run_diff(args: argparse.Namespace) -> int:
    """Per-sample difference of a split between two revisions (default HEAD vs workspace)."""
    from dvc_cuvis.review.history_options import DiffOptions
    from dvc_cuvis.review.history_run import diff

    s = Settings(args)
    with named_by(s):
        options = DiffOptions.from_settings(s, split_paths(s))
    sys.stdout.write(diff(options).output())
    return EXIT_OK


def run_log(args: argparse.Namespace) -> int:
    """Commits that changed the split, with per-stage counts and samples moved."""
    from dvc_cuvis.review.history_options import LogOptions
    from dvc_cuvis.review.history_run import log

    s = Settings(args)
    with named_by(s):
        options = LogOptions.from_settings(s, split_paths(s))
    sys.stdout.write(log(options).output())
    return EXIT_OK
