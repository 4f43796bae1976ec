"""``dvc-cuvis report``: a self-contained HTML picture of a split (and of a change to it)."""

from __future__ import annotations

import argparse

from dvc_cuvis.cli._inputs import require_file, split_paths
from dvc_cuvis.cli._settings import EXIT_OK, named_by, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import REPORT


def add_parser(sub: object) -> None:
    """The ``report`` verb's flags (from the one spec, ``specs.REPORT``)."""
    p = verb_parser(sub, "report", "write a self-contained HTML report of a split")
    register_options(p, REPORT)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write a self-contained HTML report of a split (and of a change to it with --base):
    options, the one library call, the page written."""
    from dvc_cuvis.review.report_run import ReportOptions, report, write_report

    s = Settings(args)
    universe, splits = split_paths(s)  # flag > report > resolve > bake sections > default
    require_file(splits, "splits", s)
    require_file(universe, "universe", s)
    with named_by(s):  # errors name the flag or params key each parameter came from
        opts = ReportOptions.from_settings(s, universe, splits)
    result = report(opts)
    write_report(result, opts)
    print(result.summary(opts))
    return EXIT_OK
