"""``dvc-cuvis enumerate``: a dataset scanned into a canonical universe.csv plus metrics."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dvc_cuvis.cli._settings import EXIT_OK, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import ENUMERATE
from dvc_cuvis.errors import DvcCuvisError

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """The ``enumerate`` verb's flags (from the one spec, ``specs.ENUMERATE``)."""
    p = verb_parser(sub, "enumerate", "scan a dataset into a canonical universe.csv")
    register_options(p, ENUMERATE)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Scan a dataset into a canonical universe.csv plus universe metrics."""
    from dvc_cuvis._io import atomic_write_text, write_json
    from dvc_cuvis.digests.stat_cache import hashing_line
    from dvc_cuvis.model.universe_io import format_universe
    from dvc_cuvis.sources import EnumerateOptions, enumerate_universe

    s = Settings(args)
    opts, out, metrics = EnumerateOptions.from_values(ENUMERATE.values(s.get))
    if opts.format != "universe" and not opts.root.is_dir() and not s.typed("root"):
        raise DvcCuvisError(f"{opts.root}: dataset root not found or not a directory (named by "
                            f"{s.origin('root')})")
    from dvc_cuvis.sources.seed import (
        attach,  # HEAD's run, if DVC vouches for it (dvc_cuvis.sources.seed)
    )

    attach(opts.cache, opts.format, out, metrics)
    uni, info = enumerate_universe(opts)
    atomic_write_text(out, format_universe(uni))
    if metrics:
        write_json(metrics, info)
    print(f"enumerated {info['samples']} samples from {info['sources']} sources "
          f"({info['format']}) -> {out}; universe_hash {info['universe_hash'][:12]}")
    if opts.cache is not None and opts.hash_content:
        # run statistics go to stderr: the tracked metrics stay the same cold or warm
        print(f"dvc-cuvis: {hashing_line(opts.cache)}", file=sys.stderr)
    return EXIT_OK
