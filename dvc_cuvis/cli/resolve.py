"""``dvc-cuvis resolve``: every stage of a splits.json resolved against a universe.csv."""

from __future__ import annotations

import argparse
import json
import sys

from dvc_cuvis.cli._settings import (
    EXIT_CHECK_FAILED,
    EXIT_OK,
    named_by,
    register_options,
    verb_parser,
)
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import RESOLVE


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``resolve`` verb's flags (from the one spec, ``specs.RESOLVE``)."""
    p = verb_parser(sub, "resolve", "resolve every stage of a splits.json against a universe")
    register_options(p, RESOLVE)
    p.add_argument("--json", action="store_true",
                   help='print {"train": [uid...], "val": ..., "test": ..., "predict": ...}')
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Resolve every stage of a splits.json against a universe.csv."""
    from dvc_cuvis.check.resolving import ResolveOptions, resolve_split

    s = Settings(args)
    with named_by(s):
        done = resolve_split(ResolveOptions.from_settings(s))
    for line in done.warnings():
        print(line, file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps(done.resolution.as_uid_lists(), ensure_ascii=False) + "\n")
    else:
        print("\n".join(done.lines()))
    failure = done.failure()
    if failure is not None:
        print(failure, file=sys.stderr)
        return EXIT_CHECK_FAILED
    return EXIT_OK
