"""Outputs that ``dvc repro`` removed for a run that did not finish, and where to get them back.

Before DVC runs a stage's command it deletes the stage's outputs (all but those dvc.yaml
marks ``persist: true``); when the command then fails, or is stopped, dvc.lock keeps the
entry of the last good run and the outputs stay deleted.  That state looks like data
someone removed, so this module recognizes it (every removable output of a stage absent,
every dependency present) and says, per output, what holds the bytes dvc.lock records: DVC's
local cache (``dvc checkout``), git's index for an output DVC does not cache (``git
checkout --``), or a DVC remote (``dvc pull``).  DVC is imported lazily, only when a stage
is in that state.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dvc_cuvis.digests.hashing import is_folder_hash
from dvc_cuvis.limits import LimitError, loads_json
from dvc_cuvis.repo.lockfile import LockFile, Stage, stage_definitions

__all__ = ["FailedRun", "RemovedOutput", "failed_runs"]

#: Where an output's recorded bytes are: DVC's local cache, git's index, a DVC remote.
CACHE, GIT, REMOTE = "cache", "git", "remote"


@dataclass(frozen=True)
class RemovedOutput:
    """One output a failed run removed: its path (posix, relative to dvc.lock's folder) and
    what holds the version dvc.lock records (``cache``, ``git``, ``remote``; ``""``: nothing
    here)."""

    path: str
    source: str


@dataclass(frozen=True)
class FailedRun:
    """A stage whose last ``dvc repro`` removed its outputs and did not write them again."""

    stage: str
    cmd: str
    outs: tuple[RemovedOutput, ...]

    def paths(self) -> list[str]:
        """The removed outputs' paths, in dvc.lock's order."""
        return [o.path for o in self.outs]


def _declared(definition: Mapping[str, Any]) -> dict[str, dict[str, object]]:
    """dvc.yaml's outputs of a stage (outs, metrics, plots) -> their options."""
    found: dict[str, dict[str, object]] = {}
    for key in ("outs", "metrics", "plots"):
        for entry in definition.get(key) or []:
            if isinstance(entry, str):
                found[os.path.normpath(entry)] = {}
            elif isinstance(entry, dict):
                for path, options in entry.items():
                    found[os.path.normpath(str(path))] = (options if isinstance(options, dict)
                                                          else {})
    return found


def _removable(stage: Stage, definition: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """The outputs dvc.lock records that ``dvc repro`` deletes before the run: (path, md5,
    cached) of each output not marked ``persist``."""
    declared = _declared(definition)
    out = []
    for e in stage.outs:
        path, md5 = str(e.get("path", "")), e.get("md5")
        options = declared.get(os.path.normpath(path), {})
        if md5 and path and not options.get("persist"):
            out.append((path, str(md5), options.get("cache", True) is not False))
    return out


def failed_runs(lock: LockFile, stages: list[str] | None = None) -> list[FailedRun]:
    """The stages (of ``stages``, default all) whose last run removed their outputs and
    failed or was stopped: every output dvc.lock records that ``dvc repro`` deletes first
    is absent, and every dependency it records is present (DVC runs no stage without its
    dependencies; a clone that has not pulled lacks them too)."""
    definitions = stage_definitions(lock.root)
    found: list[tuple[Stage, list[tuple[str, str, bool]]]] = []
    for stage in lock.stages:
        definition = definitions.get(stage.name)
        if (stages is not None and stage.name not in stages) or not isinstance(definition,
                                                                                  dict):
            continue
        removable = _removable(stage, definition)
        if (removable and all(not os.path.lexists(lock.root / p) for p, _, _ in removable)
                and all(os.path.lexists(lock.root / str(d.get("path", ""))) for d in stage.deps)):
            found.append((stage, removable))
    if not found:
        return []
    where = _Sources(lock.root)
    return [FailedRun(stage.name, stage.cmd, tuple(
        RemovedOutput(Path(p).as_posix(), where.source(p, md5, cached))
        for p, md5, cached in removable)) for stage, removable in found]


class _Sources:
    """What holds a recorded version here: DVC's cache, git's index, a DVC remote."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._cache: Any = None
        self._remote: bool | None = None

    def source(self, path: str, md5: str, cached: bool) -> str:
        """Where the bytes dvc.lock records for ``path`` can be had (``""``: nowhere here)."""
        if cached:
            if self._in_cache(md5):
                return CACHE
            return REMOTE if self._has_remote() else ""
        return GIT if not is_folder_hash(md5) and self._in_index(path, md5) else ""

    def _odb(self) -> Any:
        if self._cache is None:
            self._cache = False
            try:
                from dvc.repo import Repo

                from dvc_cuvis.repo.pull import quiet_dvc

                with quiet_dvc(), Repo(os.fspath(self.folder)) as repo:
                    self._cache = repo.cache.local
            except Exception:  # no DVC repository DVC can open: no cache to restore from
                self._cache = False
        return self._cache

    def _in_cache(self, md5: str) -> bool:
        """True when the local cache holds the object (and, for a folder, every file)."""
        odb = self._odb()
        if odb is False:
            return False
        try:
            if not odb.exists(md5):
                return False
            if not is_folder_hash(md5):
                return True
            path = Path(odb.oid_to_path(md5))
            listing = loads_json(path.read_bytes(), path)  # nesting bounded before parsing
            return all(isinstance(e, dict) and odb.exists(str(e.get("md5", "")))
                       for e in listing)
        except (OSError, ValueError, LimitError):
            return False

    def _has_remote(self) -> bool:
        if self._remote is None:
            from dvc_cuvis.paths.roots import dvc_root
            from dvc_cuvis.repo.pull import pull_command

            root = dvc_root(self.folder)
            self._remote = root is not None and pull_command(root) is not None
        return self._remote

    def _in_index(self, path: str, md5: str) -> bool:
        """True when git's index holds the recorded bytes of ``path``."""
        try:
            from dvc_cuvis.repo.git import Git

            with Git(self.folder) as git:
                rel = os.path.relpath((self.folder / path).absolute(), git.top.absolute())
                data = git.staged(Path(rel).as_posix())
        except Exception:  # no git, or no repository here: nothing git can restore
            return False
        return data is not None and hashlib.md5(data).hexdigest() == md5
