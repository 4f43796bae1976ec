"""``dvc-cuvis export``: a baked split (or its folds) as GloViTa, soma or index arrays, or a
materialized split as a cuvis-ai data group (the ``data:`` section of a trainrun)."""

from __future__ import annotations

import argparse

from dvc_cuvis.cli._settings import EXIT_OK, named_by, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import EXPORT


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``export`` verb's flags (from the one spec, ``specs.EXPORT``)."""
    p = verb_parser(sub, "export", "write a split as GloViTa, soma, index arrays or a cuvis-ai "
                    "data group")
    register_options(p, EXPORT)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write a baked split (or its folds) in GloViTa, soma or index-array form."""
    from dvc_cuvis.interop.exporting import ExportOptions, export_split

    s = Settings(args)
    with named_by(s):
        done = export_split(ExportOptions.from_settings(s))
    print(done.summary)
    return EXIT_OK
