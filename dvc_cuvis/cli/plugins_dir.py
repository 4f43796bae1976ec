"""``dvc-cuvis plugins-dir``: the folder holding dvc-cuvis's cuvis-ai plugin manifest."""

from __future__ import annotations

import argparse

from dvc_cuvis.cli._settings import EXIT_OK, verb_parser


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``plugins-dir`` verb (no flags)."""
    p = verb_parser(sub, "plugins-dir", "print the folder of the cuvis-ai plugin manifest "
                    "(for restore-trainrun --plugins-dir)", section=False)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the absolute path of the folder holding ``dvc_cuvis.yaml``."""
    from dvc_cuvis.plugin.manifest import plugins_dir

    print(plugins_dir())
    return EXIT_OK
