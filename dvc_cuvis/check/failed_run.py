"""A failed ``dvc repro`` is not lost data: outputs DVC removed before a run that failed.

``dvc repro`` deletes a stage's outputs before it runs the stage; when the command fails
(or is stopped) they stay deleted while dvc.lock still records them.  The check then
finds a missing splits.json or universe.csv, or a staleness finding with outputs missing;
``dvc repro`` alone fails again, so the fix line says what happened and the command that
brings back the version dvc.lock records (:mod:`dvc_cuvis.repo.removed` finds where it is).
"""

from __future__ import annotations

import contextlib
import dataclasses
import shlex
from collections.abc import Iterator
from pathlib import Path

from dvc_cuvis.check.facts import Staleness
from dvc_cuvis.check.fixes import Workspace
from dvc_cuvis.check.report import Finding
from dvc_cuvis.errors import MissingFileError
from dvc_cuvis.repo.lockfile import LockFile, LockReadError, find_lock
from dvc_cuvis.repo.removed import CACHE, GIT, REMOTE, FailedRun, failed_runs

__all__ = ["explain_missing", "explain_stale_outputs", "failed_run_line", "missing_input"]

#: The command that restores outputs from each source.
_COMMANDS = {CACHE: "dvc checkout", GIT: "git checkout --", REMOTE: "dvc pull"}


def failed_run_line(run: FailedRun, ws: Workspace, folder: Path, named: str | None = None) -> str:
    """What happened to ``run``'s outputs and the command that brings them back, run from
    the user's folder (``folder``: dvc.lock's); ``named``: the output to name first."""
    outs = run.paths()
    head = named or outs[0]
    others = len(outs) - 1
    missing = (f"{head} is missing" if not others else
               f"{head} and {others} other output{'s' if others > 1 else ''} of stage "
               f"{run.stage} are missing")
    why = (f"{missing}: `dvc repro` removes a stage's outputs before it runs the stage, and "
           f"the last run of stage {run.stage} (command: {run.cmd}) failed or was stopped")
    rerun = ws.at(folder, "dvc repro")
    lost = [o.path for o in run.outs if not o.source]
    if lost:
        return (f"{why}; nothing here holds the version dvc.lock records of "
                f"{', '.join(lost)}: fix the stage's error and rerun `{rerun}`")
    steps = []
    for source in (CACHE, GIT, REMOTE):
        paths = [shlex.quote(o.path) for o in run.outs if o.source == source]
        if paths:
            steps.append(f"{_COMMANDS[source]} {' '.join(paths)}")
    restore = ws.at(folder, " && ".join(steps))
    return (f"{why}; `{restore}` brings back the version dvc.lock records (this discards "
            f"nothing you committed), or fix the stage's error and rerun `{rerun}`")


def explain_missing(path: Path, ws: Workspace | None = None) -> str | None:
    """For a missing input (universe.csv, splits.json) that a failed run removed: what
    happened and how to get it back; None when that is not why it is missing."""
    folder = path.absolute().parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    lock_path = find_lock(folder)
    if lock_path is None:
        return None
    try:
        lock = LockFile.read(lock_path)
    except LockReadError:
        return None
    rel = Path(lock.rel(path)).as_posix()
    ws = ws or Workspace(lock.root)
    for run in failed_runs(lock):
        if rel in run.paths():
            return failed_run_line(run, ws, lock.root.resolve(),
                                   named=ws.rel(path.absolute()))
    return None


@contextlib.contextmanager
def missing_input(*paths: Path | str | None) -> Iterator[None]:
    """Reading ``paths``: a :class:`MissingFileError` for one that a failed run removed says
    so (same error class, so a caller's handling and the exit code stay)."""
    try:
        yield
    except MissingFileError as exc:
        for path in paths:
            said = (explain_missing(Path(path)) if path is not None and not Path(path).exists()
                    else None)
            if said is not None:
                exc.args = (said,)
                break
        raise


def explain_stale_outputs(finding: Finding, lock: LockFile, ws: Workspace) -> Finding:
    """A staleness drift whose missing outputs a failed run removed: a new finding whose fix
    says so, with the command that brings them back (it stays a drift: exit 1)."""
    facts = finding.facts
    if finding.status != "drift" or not isinstance(facts, Staleness):
        return finding
    missing = {c.path for c in facts.changed if c.path is not None and c.problem == "missing"}
    if not missing:
        return finding
    runs = [r for r in failed_runs(lock, list(facts.stale)) if missing & set(r.paths())]
    if not runs:
        return finding
    explained = {p for r in runs for p in r.paths()}
    lines = [failed_run_line(r, ws, lock.root.resolve()) for r in runs]
    if any(c.path not in explained for c in facts.changed):  # other stages' changes
        lines.append(f"then {ws.rerun()}")
    return dataclasses.replace(finding, fix="; ".join(lines))
