"""Where dvc-cuvis's cuvis-ai plugin manifest lives: the folder ``restore-trainrun
--plugins-dir`` and cuvis-ai's plugin loader are given (``dvc-cuvis plugins-dir`` prints it)."""

from __future__ import annotations

from pathlib import Path

from dvc_cuvis.errors import DvcCuvisError

__all__ = ["MANIFEST", "PLUGINS_DIR", "plugins_dir"]

#: The folder of the manifest (package data, beside the package's modules).
PLUGINS_DIR = Path(__file__).resolve().parent.parent / "plugins"

#: The manifest's file name in :data:`PLUGINS_DIR`.
MANIFEST = "dvc_cuvis.yaml"


def plugins_dir() -> Path:
    """The absolute folder holding the plugin manifest, so a trainrun or cuvis-ai's plugin
    loader finds our DataModules; a missing manifest (a broken install) is an error that
    says to reinstall.

    Returns
    -------
    Path
        The folder, ``.../dvc_cuvis/plugins``, that holds ``dvc_cuvis.yaml``.

    Raises
    ------
    DvcCuvisError
        The manifest is not there (dvc-cuvis ships it as package data).
    """
    if not (PLUGINS_DIR / MANIFEST).is_file():
        raise DvcCuvisError(f"{PLUGINS_DIR}: the plugin manifest {MANIFEST} is missing; "
                            "reinstall dvc-cuvis (it ships as package data)")
    return PLUGINS_DIR
