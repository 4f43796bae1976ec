"""``dvc-cuvis lineage``: which dataset version trained each model, and whether it changed."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dvc_cuvis.cli._settings import (
    EXIT_CHECK_FAILED,
    EXIT_OK,
    named_by,
    register_options,
    verb_parser,
)
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import LINEAGE


def add_parser(sub: Any) -> None:
    """The ``lineage`` verb's flags (its options from ``specs.LINEAGE``)."""
    p = verb_parser(sub, "lineage", "which dataset version trained each model, and whether "
                    "its split and data have changed since")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="a Lightning .ckpt, a trainrun output folder, or a saved "
                        "dataset_lineage.json")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"),
                   help="whether models A and B were tested on the same test set, and "
                        "whether either trained on the other's test samples (default: each "
                        "PATH's version against --rev)")
    register_options(p, LINEAGE)
    p.add_argument("--json", action="store_true", help="machine-readable")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Each model's dataset version, and whether the split and data at ``--rev`` are still it."""
    from dvc_cuvis.train.lineage_report import LineageOptions, lineage

    s = Settings(args)
    with named_by(s):
        options = LineageOptions.from_settings(s)
    result = lineage(options)
    sys.stdout.write(result.output())
    return EXIT_CHECK_FAILED if result.exit_code else EXIT_OK
