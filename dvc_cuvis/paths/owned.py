"""Folders we own: dvc-cuvis writes and deletes in them, and deletion never follows a link
out of them.
"""

from __future__ import annotations

import os
from pathlib import Path

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.paths.guard import is_within


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
