"""``dvc-cuvis enumerate``: a dataset scanned into a canonical universe.csv plus metrics."""

from __future__ import annotations

import argparse
import sys

from dvc_cuvis.cli._settings import EXIT_OK, named_by, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import ENUMERATE

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``enumerate`` verb's flags (from the one spec, ``specs.ENUMERATE``)."""
    p = verb_parser(sub, "enumerate", "scan a dataset into a canonical universe.csv")
    register_options(p, ENUMERATE)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Scan a dataset into a canonical universe.csv plus universe metrics."""
    from dvc_cuvis.sources import EnumerateOptions, enumerate_dataset

    s = Settings(args)
    with named_by(s):
        done = enumerate_dataset(EnumerateOptions.from_settings(s))
    print(done.summary)
    for note in done.notes:
        print(f"dvc-cuvis: {note}", file=sys.stderr)
    return EXIT_OK
