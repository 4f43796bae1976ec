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


class PathGuard:
    """:func:`resolve_inside` for many paths under one base; each folder is resolved once."""

    def __init__(self, base: Path) -> None:
        """Guard paths relative to ``base``."""
        self.base = base
        self.base_abs = os.path.abspath(base)
        self.root_real = os.path.realpath(base)
        self._dirs: dict[str, bool] = {}

    def dir_ok(self, d: str) -> bool:
        """True if folder ``d`` (under the base) is reached without leaving the base.

        One ``lstat`` per new folder: a folder is fine when its parent is and it is not a
        symlink; a symlinked folder is fine when it resolves inside the base.
        """
        if len(d) <= len(self.base_abs):
            return d == self.base_abs
        ok = self._dirs.get(d)
        if ok is None:
            ok = self.dir_ok(os.path.dirname(d)) and (
                not os.path.islink(d) or is_within(self.root_real, os.path.realpath(d)))
            self._dirs[d] = ok
        return ok

    def resolve(self, rel: str, *, what: str = "path") -> str:
        """Absolute path of ``rel`` under the base, or a DvcCuvisError saying why not."""
        if "\x00" in rel:
            raise DvcCuvisError(f"{what} {rel!r} contains a NUL byte")
        norm = rel.replace("\\", "/")
        if norm.startswith("/") or _DRIVE.match(norm):
            raise DvcCuvisError(f"{what} {rel!r} is absolute; it must be relative to {self.base}")
        if ".." in norm.split("/"):
            raise DvcCuvisError(f"{what} {rel!r} contains '..'; it must stay inside {self.base}")
        path = f"{self.base_abs}/{norm}"
        if not self.dir_ok(os.path.dirname(path)) or os.path.islink(path):
            real = os.path.realpath(path)
            if not is_within(self.root_real, real):
                raise DvcCuvisError(f"{what} {rel!r} leads outside {self.base} (a symlink to "
                                    f"{real}); refusing to follow it")
        return path


def resolve_inside(base: Path, rel: str, *, what: str = "path") -> Path:
    """``base/rel``, refusing absolute/drive paths, ``..``, NUL and symlinks leaving ``base``."""
    return Path(PathGuard(base).resolve(rel, what=what))
