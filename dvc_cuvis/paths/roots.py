"""The root walk: which repository (git, DVC) holds a path, found by walking up from it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from dvc_cuvis.errors import DvcCuvisError


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
