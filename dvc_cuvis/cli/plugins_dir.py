"""``dvc-cuvis plugins-dir``: the folder holding dvc-cuvis's cuvis-ai plugin manifest."""

from __future__ import annotations

import argparse
from pathlib import Path

from dvc_cuvis.cli._settings import EXIT_OK, verb_parser
from dvc_cuvis.errors import DvcCuvisError

#: The folder of the manifest (package data, beside the package's modules).
PLUGINS_DIR = Path(__file__).resolve().parent.parent / "plugins"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``plugins-dir`` verb (no flags)."""
    p = verb_parser(sub, "plugins-dir", "print the folder of the cuvis-ai plugin manifest "
                    "(for restore-trainrun --plugins-dir)", section=False)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the absolute path of the folder holding ``dvc_cuvis.yaml``."""
    if not (PLUGINS_DIR / "dvc_cuvis.yaml").is_file():
        raise DvcCuvisError(f"{PLUGINS_DIR}: the plugin manifest dvc_cuvis.yaml is missing; "
                            "reinstall dvc-cuvis (it ships as package data)")
    print(PLUGINS_DIR)
    return EXIT_OK
