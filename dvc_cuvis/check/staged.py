"""The check of what a commit records: git's index instead of the working tree.

A pre-commit hook must judge the commit, not the working tree: a broken split that is
staged while a fixed one sits unstaged in the working tree must be refused, and a good
staged split must pass whatever the working tree holds.  :func:`staged_view` asks git
which tracked files differ between the working tree and the index; for those the check
reads the index's bytes (splits.json, universe.csv, dvc.lock, and the md5 of any file
dvc.lock records).  Files git does not track (the DVC-tracked data) are read where they
are.  The files that shape the check itself (the params file, dvc.yaml) cannot be read
from the index, so an unstaged change in one of them is refused.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from dvc_cuvis.errors import (
    DvcCuvisError,
    MissingSplitsFileError,
    MissingUniverseError,
    SplitsFileError,
)
from dvc_cuvis.model.splits import DataSplitConfig, parse_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import parse_universe_bytes
from dvc_cuvis.repo.git import Git
from dvc_cuvis.repo.lockfile import LockFile, LockReadError

__all__ = ["Staged", "staged_view"]

#: Files that decide how the check runs: read from the working tree only.
_SHAPING = ("dvc.yaml", "dvc.yml")


class Staged:
    """The files the commit records differently from the working tree, read from git's
    index on demand (a context manager: it holds git's reading process)."""

    def __init__(self, git: Git, paths: set[str]) -> None:
        """``paths``: absolute paths of the tracked files with unstaged changes."""
        self._git, self.paths = git, paths
        self._top = Path(os.path.abspath(git.top))

    def __enter__(self) -> Staged:
        """This view, closed at the end of the ``with`` block."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop git's reading process."""
        self._git.close()

    def holds(self, path: Path | str) -> bool:
        """True when the commit records ``path`` differently from the working tree."""
        return os.path.abspath(path) in self.paths

    def read(self, path: Path | str) -> bytes | None:
        """The index's bytes of ``path`` (None: the commit does not hold it)."""
        return self._git.staged(Path(os.path.abspath(path)).relative_to(self._top).as_posix())

    def _bytes(self, path: Path | str, missing: type[DvcCuvisError], what: str) -> bytes:
        data = self.read(path)
        if data is None:
            raise missing(f"{path}: {what} is not in git's index (deleted or never added): "
                          f"`git add {path}` it, or commit with --no-verify to skip the check")
        return data

    def splits(self, path: Path | str) -> DataSplitConfig:
        """The staged splits.json (errors name ``path``)."""
        data = self._bytes(path, MissingSplitsFileError, "the splits file")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise SplitsFileError(f"{path} (staged): not valid UTF-8 text") from None
        return parse_splits(text, path=f"{path} (staged)")

    def universe(self, path: Path | str) -> Universe:
        """The staged universe.csv; its rows name files relative to ``path``'s folder."""
        data = self._bytes(path, MissingUniverseError, "the universe file")
        return parse_universe_bytes(data, path=Path(path))

    def lock(self, path: Path) -> LockFile:
        """The staged dvc.lock, as the file at ``path`` (its paths relative to its folder)."""
        data = self._bytes(path, LockReadError, "dvc.lock")
        return LockFile.parse(data.decode("utf-8", errors="replace"), path)

    def md5s(self) -> Mapping[str, str | None]:
        """The md5 of each staged file, read when asked (None: the commit deletes it)."""
        return _StagedMd5(self)


class _StagedMd5(Mapping[str, "str | None"]):
    """absolute path -> md5 of the bytes the commit records, for dvc.lock's entries."""

    def __init__(self, staged: Staged) -> None:
        self._staged = staged

    def __getitem__(self, path: str) -> str | None:
        if path not in self._staged.paths:
            raise KeyError(path)
        data = self._staged.read(path)
        return None if data is None else hashlib.md5(data, usedforsecurity=False).hexdigest()

    def __contains__(self, path: object) -> bool:
        return path in self._staged.paths

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._staged.paths))

    def __len__(self) -> int:
        return len(self._staged.paths)


def staged_view(anchor: Path | str, shaping: list[Path] | None = None) -> Staged:
    """What the commit records where it differs from the working tree, in the repository
    holding ``anchor``; a :class:`DvcCuvisError` when a file in ``shaping`` (the params
    file) or a dvc.yaml has unstaged changes, since the check reads those from disk."""
    git = Git(anchor, purpose="--staged reads git's index")
    try:
        top = Path(os.path.abspath(git.top))
        shaping_abs = {os.path.abspath(p) for p in shaping or []}
        paths = {os.path.abspath(top / rel) for rel in git.unstaged()}
        for path in sorted(paths):
            if path in shaping_abs or os.path.basename(path) in _SHAPING:
                raise DvcCuvisError(
                    f"{os.path.relpath(path)}: has unstaged changes, and the check reads it "
                    "from the working tree: stage them (`git add`) or stash them (`git stash "
                    "--keep-index`) and commit again")
    except BaseException:
        git.close()
        raise
    return Staged(git, paths)
