"""``dvc-cuvis fetch``: pull only the files some stages of the split need (DVC granular pull)."""

from __future__ import annotations

import argparse
import json
import sys

from dvc_cuvis.cli._settings import EXIT_OK, named_by, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import FETCH


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``fetch`` verb's flags (from the one spec, ``specs.FETCH``)."""
    p = verb_parser(sub, "fetch", "pull only the files some stages of the split need")
    register_options(p, FETCH)
    p.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Pull exactly the files the named stages need, then verify their md5."""
    from dvc_cuvis.repo.fetching import FetchOptions, fetch_stages

    s = Settings(args)
    with named_by(s, {"stages": "stage"}):
        done = fetch_stages(FetchOptions.from_settings(s))
    if args.json:
        sys.stdout.write(json.dumps(done.as_json(), indent=2) + "\n")
    else:
        print("\n".join(done.lines()))
    return EXIT_OK
