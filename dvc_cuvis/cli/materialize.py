"""``dvc-cuvis materialize``: one deterministic npz per selected frame, incrementally."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._inputs import require_file
from dvc_cuvis.cli._settings import EXIT_OK, named_by, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import MATERIALIZE
from dvc_cuvis.errors import terminal


def add_parser(sub: Any) -> None:
    """The ``materialize`` verb's flags (from the one spec, ``specs.MATERIALIZE``)."""
    p = verb_parser(sub, "materialize", "write one deterministic npz per selected frame")
    register_options(p, MATERIALIZE)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write one deterministic npz per selected frame, incrementally: the options from the
    flags and params, one library call, and what it did printed."""
    from dvc_cuvis.materialize import MaterializeOptions, materialize

    s = Settings(args)
    if s.flag("sign_only"):
        from dvc_cuvis.materialize.summary_store import sign_materialized

        out_dir = Path(s.required("out_dir", "--out-dir DIR"))
        signed, shards = sign_materialized(out_dir)
        print(f"signed {signed} frame(s) of {out_dir} ({shards} summaries shard(s) written)")
        return EXIT_OK
    with named_by(s):
        opts = MaterializeOptions.from_settings(s)
    require_file(opts.universe, "universe", s)
    if opts.splits is not None:
        require_file(opts.splits, "splits", s)
    for warning in opts.warnings():  # before the run: the user learns it while it runs
        print(f"dvc-cuvis: warning: {s.origin(warning.param)} {warning.text}", file=sys.stderr)
    result = materialize(opts)
    for note in result.notes:
        print(terminal(f"dvc-cuvis: {note}"), file=sys.stderr)
    print(result.summary(s.get("out_dir")))
    print(f"dvc-cuvis: {result.hashing}", file=sys.stderr)
    return EXIT_OK
