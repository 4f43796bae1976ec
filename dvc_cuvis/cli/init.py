"""``dvc-cuvis init``: the split pipeline (dvc.yaml + params.yaml) written into a repository."""

from __future__ import annotations

import argparse
from pathlib import Path

from dvc_cuvis.cli._settings import EXIT_OK, verb_parser
from dvc_cuvis.config.specs import FORMATS


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``init`` verb's flags."""
    p = verb_parser(sub, "init", "write the split pipeline (dvc.yaml, params.yaml) into a repo",
                    section=False)
    p.add_argument("--dir", default=".", help="repository folder (default: .)")
    p.add_argument("--format", default="cu3s", choices=list(FORMATS),
                   help="what the data is (default: cu3s)")
    p.add_argument("--root", default="data", help="dataset root inside the repository "
                   "(default: data)")
    p.add_argument("--force", action="store_true",
                   help="overwrite an existing dvc.yaml / params.yaml (default: refuse)")
    p.add_argument("--no-track", dest="no_track", action="store_true",
                   help="do not `dvc add` the data root (default: track it unless a .dvc file "
                   "already does)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write a dvc.yaml + params.yaml for the split pipeline into a repository."""
    import sys

    from dvc_cuvis.repo.project import NEXT_STEPS, init_project

    done = init_project(Path(args.dir), fmt=args.format, root=args.root, force=args.force,
                        track=not args.no_track)
    for p in done.written:
        print(f"wrote {p}")
    if done.ignored:
        print(f"ignored in {Path(args.dir) / '.gitignore'}: {', '.join(done.ignored)}")
    if done.tracked:
        print(f"tracked the data with DVC: {done.tracked}")
    if done.categories:
        print(f"category names: from {done.categories}")
    for note in done.notes:
        print(f"dvc-cuvis: note: {note}", file=sys.stderr)
    print(NEXT_STEPS, end="")
    return EXIT_OK
