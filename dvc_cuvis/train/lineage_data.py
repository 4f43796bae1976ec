"""What DVC recorded for a dataset record's data: the md5 in dvc.lock (the output holding
universe.csv, else the inputs it was enumerated from), else in the ``.dvc`` file tracking
its folder."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dvc_cuvis.paths.roots import ancestors
from dvc_cuvis.repo.lockfile import REPORTING_COMMANDS, LockFile, LockReadError, find_lock
from dvc_cuvis.train.lineage_memo import LineageMemo
from dvc_cuvis.train.lineage_values import DataEntry

__all__ = ["data_entries", "dvc_file_entry", "lock_entries", "rel_to"]


def rel_to(path: Path | str | None, root: str | None) -> str | None:
    """``path`` relative to the repository root, posix (absolute when outside it)."""
    if path is None:
        return None
    absolute = os.path.abspath(path)
    if root is not None and absolute.startswith(root.rstrip(os.sep) + os.sep):
        return absolute[len(root.rstrip(os.sep)) + 1:].replace(os.sep, "/")
    return absolute.replace(os.sep, "/")


def _entry(raw: Mapping[str, Any], source: str, stage: str | None) -> DataEntry:
    """One recorded md5: the path it covers, the md5, the file and stage recording it."""
    return DataEntry(Path(os.path.normpath(str(raw.get("path", "")))).as_posix(),
                     raw.get("md5"), source, stage)


def lock_entries(lock: LockFile, universe_rel: str, source: str) -> list[DataEntry]:
    """The data ``universe_rel`` (relative to the lock's folder) names, as dvc.lock records
    it: the output that holds it (a materialized folder), else the dependencies of the
    stage that wrote it (the data it was enumerated from).  ``source``: the lock's
    repository path, named in each entry."""
    norm = os.path.normpath(universe_rel)
    stages = [s for s in lock.stages if not s.cmd.startswith(REPORTING_COMMANDS)]
    for stage in stages:
        for out in stage.outs:
            path = os.path.normpath(str(out.get("path", "")))
            if norm.startswith(path + os.sep):
                return [_entry(out, source, stage.name)]
    for stage in stages:
        if stage.writes(norm):
            return [_entry(dep, source, stage.name)
                    for dep in sorted(stage.deps, key=lambda d: str(d.get("path")))]
    return []


def dvc_file_entry(doc: object, path: str, source: str) -> DataEntry:
    """The entry of a parsed ``.dvc`` file (``source``) tracking the folder ``path``."""
    outs = doc.get("outs") if isinstance(doc, dict) else None
    out = outs[0] if isinstance(outs, list) and outs and isinstance(outs[0], dict) else {}
    return _entry({**out, "path": path}, source, None)


def _dvc_file_entries(universe: Path, root: str | None,
                      memo: LineageMemo) -> tuple[DataEntry, ...]:
    """The ``.dvc`` file tracking universe.csv's folder (or a folder above it) in the repo."""
    from dvc_cuvis._io import read_yaml

    for folder in ancestors(universe.parent):
        if root is None or str(folder) == root or not str(folder).startswith(root):
            break
        dvc_file = folder.parent / f"{folder.name}.dvc"
        if dvc_file.is_file():
            return (dvc_file_entry(memo.files.parsed(dvc_file, read_yaml),
                                   str(rel_to(folder, root)), str(rel_to(dvc_file, root))),)
    return ()


def _find_lock(folder: Path, memo: LineageMemo) -> Path | None:
    known = memo.locks.get(str(folder))
    if known is not None and known.is_file():
        return known
    found = find_lock(folder)
    if found is not None:
        memo.locks[str(folder)] = found
    return found


def data_entries(universe: Path | None, lock: Path | str | None, root: str | None,
                 memo: LineageMemo) -> tuple[DataEntry, ...]:
    """What DVC recorded for the data of ``universe`` (dvc.lock first: ``lock`` is "auto",
    a path, or None for none; then a ``.dvc`` file)."""
    if universe is None:
        return ()
    lock_path = _find_lock(universe.parent, memo) if lock == "auto" else (
        Path(lock) if lock else None)
    if lock_path is not None:
        try:
            parsed = memo.files.parsed(lock_path, LockFile.read)
        except LockReadError:
            parsed = None
        if parsed is not None:
            found = _lock_entries_of(parsed, os.path.abspath(universe), lock_path, root, memo)
            if found:
                return found
    return _dvc_file_entries(Path(os.path.abspath(universe)), root, memo)


def _lock_entries_of(parsed: LockFile, universe: str, lock_path: Path, root: str | None,
                     memo: LineageMemo) -> tuple[DataEntry, ...]:
    """One search per parse of a lock (the parsed object itself says whether it changed)."""
    key = (str(lock_path), universe, root)
    known = memo.entries.get(key)
    if known is not None and known[0] is parsed:
        return known[1]
    found = tuple(lock_entries(parsed, os.path.relpath(universe, parsed.root.absolute()),
                               str(rel_to(lock_path, root))))
    memo.entries[key] = (parsed, found)
    return found
