"""DVC's ignore rules (``.dvcignore``), applied through DVC's own machinery.

What DVC tracks under a data folder is what its walk yields: ``os.walk`` (a symlinked
folder is listed but not descended, a link to a file counts as the file, empty folders
hold nothing), filtered by ``dvc.ignore.DvcIgnoreFilter`` -- every ``.dvcignore`` from
the repository root down (nested ones included), DVC's default patterns (``.git``,
``.hg``, ``.dvc/``) and subrepositories (a folder holding ``.dvc``).  Every walk of a
data folder in dvc-cuvis (enumerate of each format, DVC's folder hash, the check's
staleness test and re-scan, materialize's inputs) asks this module, so the samples we
list and the folder hashes we compute are exactly those of ``dvc status``.

The patterns are never re-implemented here; only the question *can any rule apply?* is
answered without DVC, because importing and building DVC's filter is slow to start, on a path
(the check, the guarded ``setup()``) that must stay fast.  No rule can apply when the
folder lies in no DVC repository, when no ``.dvcignore`` between the repository root
and the folder holds a pattern (``dvc init`` writes one holding only comments), and when
the walk met none of the names DVC treats specially (:data:`SPECIAL`).  Otherwise the
filter is built, over a plain ``LocalFileSystem`` at the repository root (no ``Repo``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.paths.roots import dvc_root_of

IGNORE_FILE = ".dvcignore"
#: names that make DVC's walk differ from a plain one when met below a folder: an ignore
#: file, DVC's default patterns, and the marker of a subrepository
SPECIAL = frozenset({IGNORE_FILE, ".git", ".hg", ".dvc"})


class IgnoreInDataFolder(DvcCuvisError):
    """A ``.dvcignore`` inside a folder DVC hashes (DVC refuses to hash it)."""


def has_patterns(path: str) -> bool:
    """True if the ignore file at ``path`` holds a pattern (a line that is neither blank
    nor a comment, as DVC reads it); False when it is missing or unreadable."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return False
    return any(s and not s.startswith("#") for s in (ln.strip() for ln in lines))


def _rules_on_the_way(root: str, folder: str) -> bool:
    """True if an ignore file with patterns lies in ``root`` or a folder between it and
    ``folder`` (``folder`` included)."""
    d = os.path.abspath(folder)
    while True:
        if has_patterns(os.path.join(d, IGNORE_FILE)):
            return True
        if d == root or len(d) <= len(root):
            return False
        d = os.path.dirname(d)


def names_below(folder: str) -> Iterator[str]:
    """Every entry name below ``folder`` that DVC's walk could meet (symlinked folders are
    not descended, as DVC does not)."""
    stack = [folder]
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                yield e.name
                try:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                except OSError:
                    continue


class DvcIgnore:
    """DVC's ignore filter for one repository (``dvc.ignore.DvcIgnoreFilter``)."""

    def __init__(self, root: str) -> None:
        """Build DVC's filter for the repository at ``root`` (imports DVC)."""
        from dvc.fs import LocalFileSystem
        from dvc.ignore import DvcIgnoreFilter

        self.root = os.path.abspath(root)
        self.fs = LocalFileSystem()
        self.filter = DvcIgnoreFilter(self.fs, self.root)

    def walk(self, folder: str) -> Iterator[tuple[str, list[str], list[str]]]:
        """DVC's walk of ``folder``: ``(folder, dirs, files)`` with ignored entries left
        out and ignored folders not descended."""
        for top, dirs, files in self.filter.walk(self.fs, os.path.abspath(folder)):
            yield str(top), list(dirs), list(files)

    def files(self, folder: str) -> list[str]:
        """Posix paths (relative to ``folder``) of the files DVC sees below it, sorted."""
        base = os.path.abspath(folder)
        out = []
        for top, _, files in self.walk(base):
            rel = os.path.relpath(top, base).replace(os.sep, "/")
            pre = "" if rel == "." else rel + "/"
            out += [pre + f for f in files]
        return sorted(out)

    def is_ignored(self, path: str) -> bool:
        """True if DVC ignores the file ``path`` (or a folder it lies in)."""
        return bool(self.filter.is_ignored_file(os.path.abspath(path)))


def for_folder(folder: str, names: Iterable[str] | None = None) -> DvcIgnore | None:
    """DVC's filter for walking ``folder``, or None when no rule of DVC's can apply there.

    ``names``: the entry names a walk of ``folder`` met (if the caller walked it anyway);
    otherwise the folder is scanned for them (:func:`names_below`).
    """
    root = dvc_root_of(os.path.abspath(folder))  # as Repo.find_root
    if root is None:
        return None
    real = os.path.abspath(folder)
    if not _rules_on_the_way(root, real):
        met = names if names is not None else names_below(real)
        if SPECIAL.isdisjoint(met):
            return None
    try:
        return DvcIgnore(root)
    except ImportError:  # DVC missing: nothing can be tracked by it either
        return None


def dvc_listing(folder: str, ignore: DvcIgnore) -> list[str]:
    """The files DVC hashes for the folder ``folder`` (relative posix paths, sorted);
    :class:`IgnoreInDataFolder` where DVC refuses to hash it, as ``dvc status`` does."""
    base = os.path.abspath(folder)
    out = []
    for top, _, files in ignore.walk(base):
        if IGNORE_FILE in files:
            raise IgnoreInDataFolder(
                f"{top}/{IGNORE_FILE}: DVC does not hash a folder that holds a {IGNORE_FILE} "
                f"(dvc status fails: '.dvcignore file should not be in collected dir path'); "
                f"move its patterns to a {IGNORE_FILE} above {base}")
        rel = os.path.relpath(top, base).replace(os.sep, "/")
        pre = "" if rel == "." else rel + "/"
        out += [pre + f for f in files]
    return sorted(out)
