"""``dvc-cuvis install-hook``: a git pre-commit hook that runs the drift check on what a
commit records (``check --staged``), and fails closed (:mod:`dvc_cuvis.repo.hooks`)."""

from __future__ import annotations

import argparse
import sys

from dvc_cuvis.cli._settings import EXIT_OK, verb_parser

__all__ = ["add_parser", "run"]

#: Where ``--force`` keeps a hook that is not ours (``dvc_cuvis.repo.hooks.KEPT``; spelled
#: here so that building the parser imports no library module).
KEPT = "pre-commit.before-dvc-cuvis"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``install-hook`` verb's flags."""
    p = verb_parser(sub, "install-hook",
                    "install a git pre-commit hook running `dvc-cuvis check --staged`",
                    section=False)
    p.add_argument("--params", metavar="FILE",
                   help="params file the hook passes to check (default: the check's own rule)")
    p.add_argument("--force", action="store_true",
                   help=f"replace a pre-commit hook that is not ours (kept as {KEPT}), and "
                        "install into a folder core.hooksPath names (default: refuse both)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Install a pre-commit hook that runs `dvc-cuvis check --staged`, where git looks for it."""
    from dvc_cuvis.repo.hooks import install_hook

    done = install_hook(".", params=args.params, force=args.force, python=sys.executable)
    if done.kept is not None:
        print(f"dvc-cuvis: kept the previous hook as {done.kept}", file=sys.stderr)
    print(f"installed {done.hook}")
    return EXIT_OK
