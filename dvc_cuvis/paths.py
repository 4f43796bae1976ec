"""Path safety: every path read through a universe stays inside the folder it is relative to.

universe.csv paths are relative to the CSV (absolute paths, ``..`` and NUL bytes are refused
when the file is read); here the same promise is kept on disk: a symlink that leads out of
the dataset folder is refused instead of followed, so a crafted dataset cannot make
dvc-cuvis read (or hash, or copy into frames) a file outside it.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
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


# -- the dataset walk: each file once, no loops --


@dataclass
class Walk:
    """What :func:`walk_glob` found: matching paths (relative, sorted), and the links to
    folders inside the root it did not descend (each with why), sorted."""

    paths: list[str]
    skipped_links: list[tuple[str, str]]


def walk_glob(root: Path | str, pattern: str) -> Walk:
    """The paths under ``root`` that ``pattern`` matches (glob's rules: ``**`` any number
    of folders, hidden names only for a pattern part that starts with ``.``).

    Unlike ``glob``, a symlink to a folder is never descended: each file is listed once,
    under its own path, and a loop of links cannot make the walk endless. A link to a
    folder inside the root is reported in ``skipped_links`` (its files are listed where
    they really lie, as DVC's own walk does); one that leads out of the root is refused.
    A link to a file is listed (DVC tracks it as the file).
    """
    walk = _GlobWalk(root, [p for p in pattern.split("/") if p not in ("", ".")])
    walk.step("", 0)
    return Walk(sorted(walk.found), sorted(walk.skipped.items()))


class _GlobWalk:
    """One :func:`walk_glob`: each folder listed once, links to folders never entered."""

    def __init__(self, root: Path | str, parts: list[str]) -> None:
        self.root, self.parts = root, parts
        self.top = os.path.abspath(root)
        self.root_real = os.path.realpath(self.top)
        self.found: set[str] = set()
        self.skipped: dict[str, str] = {}
        self.listing: dict[str, list[os.DirEntry[str]]] = {}

    def entries(self, rel: str) -> list[os.DirEntry[str]]:
        """The entries of folder ``rel``, sorted (none when it cannot be listed)."""
        if rel not in self.listing:
            try:
                with os.scandir(f"{self.top}/{rel}" if rel else self.top) as it:
                    self.listing[rel] = sorted(it, key=lambda e: e.name)
            except OSError:
                self.listing[rel] = []
        return self.listing[rel]

    def folder(self, rel: str, entry: os.DirEntry[str] | None) -> bool:
        """True if ``rel`` is a real folder to descend; a linked one is noted or refused."""
        full = f"{self.top}/{rel}"
        link = entry.is_symlink() if entry is not None else os.path.islink(full)
        if not link:
            return entry.is_dir() if entry is not None else os.path.isdir(full)
        if not os.path.isdir(full):
            return False
        real = os.path.realpath(full)
        if not is_within(self.root_real, real):
            raise DvcCuvisError(f"{full}: leads outside the dataset root {self.root} (a "
                                f"symlink to {real}); refusing to follow it")
        loop = is_within(real, os.path.realpath(os.path.dirname(full)))
        self.skipped[rel] = (
            "a loop: it leads back to a folder above it" if loop
            else f"a link to {os.path.relpath(real, self.root_real)} inside the root")
        return False

    def step(self, rel: str, i: int) -> None:
        """Match ``parts[i:]`` below folder ``rel``."""
        if i == len(self.parts):
            if rel:
                self.found.add(rel)
            return
        part, last = self.parts[i], i + 1 == len(self.parts)
        prefix = f"{rel}/" if rel else ""
        if part == "**":
            self.step(rel, i + 1)
            for e in self.entries(rel):
                if e.name.startswith("."):
                    continue
                if self.folder(prefix + e.name, e):
                    self.step(prefix + e.name, i)
                elif last:
                    self.found.add(prefix + e.name)
        elif glob.has_magic(part):
            hidden = part.startswith(".")
            for e in self.entries(rel):
                if (hidden or not e.name.startswith(".")) and fnmatch.fnmatchcase(e.name, part):
                    if last:
                        self.found.add(prefix + e.name)
                    elif self.folder(prefix + e.name, e):
                        self.step(prefix + e.name, i + 1)
        elif last:
            if os.path.lexists(f"{self.top}/{prefix}{part}"):
                self.found.add(prefix + part)
        elif self.folder(prefix + part, None):
            self.step(prefix + part, i + 1)


# -- folders we own: deletion never follows a link out of them --


class LinkedFolderError(DvcCuvisError):
    """A folder dvc-cuvis writes and deletes in is a symlink (exit 2): it would lead the
    deletion of stale files (or the writes) out of the folder we own."""

    def __init__(self, link: str) -> None:
        """The error naming ``link`` and where it leads."""
        try:
            target = os.readlink(link)
        except OSError:
            target = "?"
        super().__init__(
            f"{link}: a symlink (to {target}) where dvc-cuvis keeps its own files; it writes "
            f"and deletes only inside real folders it owns, so it refuses to follow it: "
            f"remove the link (rm {link}) and rerun")
        self.link = link


def owned_folder(folder: Path | str, owner: Path | str) -> None:
    """Refuse ``folder`` when it, or a folder between ``owner`` and it, is a symlink.

    ``owner`` itself is the caller's choice (a flag, a params key) and may be a link; what
    lies below it is ours. Parts that do not exist yet are fine (we make them as folders).
    """
    top, path = os.path.abspath(owner), os.path.abspath(folder)
    if not is_within(top, path):
        raise DvcCuvisError(f"{folder}: not inside {owner}")
    rest = path[len(top):].strip("/")
    here = top
    for part in rest.split("/") if rest else ():
        here = f"{here}/{part}"
        if os.path.islink(here):
            raise LinkedFolderError(here)


def owned_files(folder: Path | str) -> list[str]:
    """Every entry below ``folder`` that is not a folder, sorted (links listed as the links
    they are, never followed); a link to a folder inside it is refused.

    The walk a deletion may trust: what it lists lies in ``folder`` itself, so an
    ``os.unlink`` of an entry removes that entry and never anything a link leads to.
    """
    found: list[str] = []
    stack = [os.fspath(folder)]
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except (FileNotFoundError, NotADirectoryError):
            continue
        with it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif e.is_symlink() and os.path.isdir(e.path):
                    raise LinkedFolderError(e.path)
                else:
                    found.append(e.path)
    return sorted(found)


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
