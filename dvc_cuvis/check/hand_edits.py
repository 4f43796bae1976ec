"""A universe.csv edited by hand, told apart from data whose bytes changed.

An md5 in universe.csv that differs from the file's bytes has two causes: the file changed
(restore it, or re-enumerate), or the row was edited (regenerate universe.csv: restoring the
file changes nothing).  The row is an edit when both hold: the universe.csv in the work tree
is not the one its stage wrote (its md5 is not the one dvc.lock records for it), and the
universe.csv that stage wrote -- committed at ``HEAD`` with exactly dvc.lock's md5 -- records
the md5 the file has now.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from dvc_cuvis.model.universe import DIGEST_COLUMNS, Universe
from dvc_cuvis.repo.lockfile import LockFile, find_lock

__all__ = ["written_digests"]


def written_digests(uni: Universe) -> dict[str, str] | None:
    """What enumerate wrote for each file of ``uni`` (path relative to universe.csv's folder
    -> md5), when the universe.csv in the work tree is not what its stage wrote; None when it
    is, or when nothing vouched says what the stage wrote."""
    if uni.path is None:
        return None
    try:
        return _written(Path(uni.path))
    except Exception:  # an unreadable dvc.lock, no git, no commit: no evidence either way
        return None


def _written(path: Path) -> dict[str, str] | None:
    lock_path = find_lock(path.parent)
    if lock_path is None:
        return None
    lock = LockFile.read(lock_path)
    recorded = [e.get("md5") for s in lock.stages if (e := s.output(lock.rel(path)))]
    if not recorded or not isinstance(recorded[0], str):
        return None
    if hashlib.md5(path.read_bytes()).hexdigest() == recorded[0]:
        return None  # the work tree's universe.csv is the one the stage wrote
    from dvc_cuvis.model.universe_io import parse_universe_bytes
    from dvc_cuvis.repo.git import Git

    with Git(path.parent) as git:
        rel = Path(os.path.relpath(path.resolve(), git.top.resolve())).as_posix()
        data = git.read("HEAD", rel)
    if data is None or hashlib.md5(data).hexdigest() != recorded[0]:
        return None  # what the stage wrote is not at hand
    written = parse_universe_bytes(data, path=path)
    out: dict[str, str] = {}
    for column, digest_col in DIGEST_COLUMNS:
        if written.has_column(digest_col):
            for rel_file, digest in zip(written.files_in(column), written.column(digest_col),
                                        strict=True):
                if rel_file and digest:
                    out.setdefault(rel_file, digest)
    return out
