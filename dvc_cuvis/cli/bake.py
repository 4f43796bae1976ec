"""``dvc-cuvis bake``: a baked splits.json (or one per fold) from a universe, with metrics."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from dvc_cuvis.cli._inputs import require_file
from dvc_cuvis.cli._settings import EXIT_OK, named_by, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import BAKE
from dvc_cuvis.errors import terminal

if TYPE_CHECKING:
    from dvc_cuvis.baking.entry import SignatureReader


def add_parser(sub: object) -> None:
    """The ``bake`` verb's flags (from the one spec, ``specs.BAKE``)."""
    p = verb_parser(sub, "bake", "generate a baked splits.json from a universe")
    register_options(p, BAKE)
    p.set_defaults(func=run)


def _reader(mode: str) -> SignatureReader | None:
    """The stored-signature reader ``keep_duplicates_together`` needs (None when off, so a
    plain bake imports no check module)."""
    if mode == "off":
        return None
    from dvc_cuvis.check.duplicates import stored_signatures

    return stored_signatures


def run(args: argparse.Namespace) -> int:
    """Generate a baked splits.json (or one per fold) with split metrics: options, the one
    library call, the files written, then what the user must hear."""
    from dvc_cuvis.baking import BakeOptions, bake_run, write_bake

    s = Settings(args)
    with named_by(s):  # errors name the flag or params key each parameter came from
        opts = BakeOptions.from_settings(s)
        require_file(Path(opts.universe), "universe", s)
        result = bake_run(opts, _reader(opts.keep_duplicates_together))
    write_bake(result, opts)
    for line in result.warnings:
        print(terminal(f"dvc-cuvis: warning: {line}"), file=sys.stderr)
    print(result.summary(opts))
    return EXIT_OK
