"""Path safety: every path read through a universe stays inside the folder it is relative to.

universe.csv paths are relative to the CSV (absolute paths, ``..`` and NUL bytes are refused
when the file is read); here the same promise is kept on disk: a symlink that leads out of
the dataset folder is refused instead of followed, so a crafted dataset cannot make
dvc-cuvis read (or hash, or copy into frames) a file outside it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dvc_cuvis.errors import DvcCuvisError

_DRIVE = re.compile(r"^[A-Za-z]:")


def is_within(root_real: str, path: str) -> bool:
    """True if ``path`` (already resolved) is ``root_real`` or below it."""
    return path == root_real or path.startswith(root_real.rstrip("/") + "/")


def resolve_inside(base: Path, rel: str, *, what: str = "path") -> Path:
    """``base/rel``, refusing absolute/drive paths, ``..``, NUL and symlinks leaving ``base``."""
    if "\x00" in rel:
        raise DvcCuvisError(f"{what} {rel!r} contains a NUL byte")
    norm = rel.replace("\\", "/")
    if norm.startswith("/") or _DRIVE.match(norm):
        raise DvcCuvisError(f"{what} {rel!r} is absolute; it must be relative to {base}")
    if ".." in norm.split("/"):
        raise DvcCuvisError(f"{what} {rel!r} contains '..'; it must stay inside {base}")
    path = base / norm
    real = os.path.realpath(path)
    root_real = os.path.realpath(base)
    if not is_within(root_real, real):
        raise DvcCuvisError(
            f"{what} {rel!r} leads outside {base} (a symlink to {real}); refusing to follow it"
        )
    return path
