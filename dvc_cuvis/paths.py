"""Path safety: every path read through a universe stays inside the folder it is relative to.

universe.csv paths are relative to the CSV (absolute paths, ``..`` and NUL bytes are refused
when the file is read); here the same promise is kept on disk: a symlink that leads out of
the dataset folder is refused instead of followed, so a crafted dataset cannot make
dvc-cuvis read (or hash, or copy into frames) a file outside it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
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


# -- the root walk: which repository holds a path --


def ancestors(start: Path | str) -> Iterator[Path]:
    """``start`` (made absolute, links kept) and each folder above it, nearest first."""
    here = Path(os.path.abspath(start))
    yield here
    yield from here.parents


def repo_root(start: Path | str) -> Path | None:
    """The nearest folder at or above ``start`` holding ``.git`` or a ``.dvc`` folder."""
    for folder in ancestors(start):
        if (folder / ".git").exists() or (folder / ".dvc").is_dir():
            return folder
    return None


def dvc_root(start: Path | str, memo: dict[str, str | None] | None = None) -> Path | None:
    """The DVC repository holding ``start``: the nearest folder with a ``.dvc`` folder.

    ``memo``: a dict the caller keeps for one walk over many files (folder -> root), so each
    folder is asked once; without it nothing is remembered (a repository created meanwhile is
    always found).
    """
    found = dvc_root_of(os.path.abspath(start), memo)
    return Path(found) if found is not None else None


_UNSET = ""  # not a folder: what a memo answers for a folder it has not seen


def dvc_root_of(folder: str, memo: dict[str, str | None] | None = None) -> str | None:
    """:func:`dvc_root` of an absolute, normalized folder given as a string (no ``Path`` is
    built: the form for a walk over many files, with the caller's ``memo``)."""
    seen: list[str] = []
    found: str | None = None
    while True:
        if memo is not None:
            known = memo.get(folder, _UNSET)
            if known != _UNSET:
                found = known
                break
        seen.append(folder)
        if os.path.isdir(os.path.join(folder, ".dvc")):
            found = folder
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    if memo is not None:
        for s in seen:
            memo[s] = found
    return found


def require_dvc_root(start: Path | str) -> Path:
    """:func:`dvc_root` of ``start``, or an error saying to run it in the dataset repository."""
    found = dvc_root(start)
    if found is None:
        raise DvcCuvisError(f"{start}: not inside a DVC repository (run it in the dataset "
                            "repository)")
    return found
