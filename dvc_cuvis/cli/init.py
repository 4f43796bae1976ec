"""``dvc-cuvis init``: the split pipeline (dvc.yaml + params.yaml) written into a repository."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._settings import EXIT_OK, register, verb_parser


def add_parser(sub: Any) -> None:
    """The ``init`` verb's flags."""
    p = verb_parser(sub, "init", "write the split pipeline (dvc.yaml, params.yaml) into a repo",
                    section=False)
    p.add_argument("--dir", default=".", help="repository folder (default: .)")
    p.add_argument("--format", default="cu3s", choices=["cu3s", "tiff", "npz", "universe"],
                   help="what the data is (default: cu3s)")
    p.add_argument("--root", default="data", help="dataset root inside the repository "
                   "(default: data)")
    p.add_argument("--force", action="store_true",
                   help="overwrite an existing dvc.yaml / params.yaml (default: refuse)")
    p.set_defaults(func=run)
    register("init", p)


def run(args: argparse.Namespace) -> int:
    """Write a dvc.yaml + params.yaml for the split pipeline into a repository."""
    from dvc_cuvis.project import init_project

    written = init_project(Path(args.dir), fmt=args.format, root=args.root, force=args.force)
    for p in written:
        print(f"wrote {p}")
    print("next: `dvc repro` (then commit universe.csv, splits.json, dvc.lock and metrics/)")
    return EXIT_OK
