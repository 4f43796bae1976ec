"""The staleness check: the workspace against what dvc.lock recorded.

Reading and comparing dvc.lock lives in :mod:`dvc_cuvis.repo.lockfile`; this check turns
the comparison into a finding, and hands on what dvc.lock vouches for (the files the
unchanged stage that wrote universe.csv read), so they are neither re-scanned nor hashed.
"""

from __future__ import annotations

from pathlib import Path

from dvc_cuvis.check.facts import Staleness
from dvc_cuvis.check.failed_run import explain_stale_outputs
from dvc_cuvis.check.fixes import Workspace
from dvc_cuvis.check.report import Finding
from dvc_cuvis.check.staged import Staged
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.repo.lockfile import LockFile, LockReadError, compare

__all__ = ["check_staleness"]


def check_staleness(
    lock: Path | None, targets: list[Path], cache: StatCache, universe: Path | None,
    ws: Workspace | None = None, staged: Staged | None = None,
) -> tuple[Finding, dict[str, list[str]]]:
    """The staleness finding, and the files (absolute paths) that dvc.lock vouches for.

    The second value is :attr:`dvc_cuvis.repo.lockfile.Comparison.vouched`: the inputs of the
    stage that wrote ``universe`` when that stage is entirely unchanged — exactly the
    bytes universe.csv was enumerated from.  With ``staged``, dvc.lock and the files it
    records are taken as the commit records them.
    """
    if lock is None:
        return Finding("staleness", "skipped", "no dvc.lock"), {}
    ws = ws or Workspace(lock.parent)
    try:
        parsed = (staged.lock(lock) if staged is not None and staged.holds(lock)
            else LockFile.read(lock))
    except LockReadError as exc:
        return Finding("staleness", "violation", str(exc), {"lock": str(lock)},
                       ws.relock(lock)), {}
    cmp = compare(parsed, targets, cache, universe, staged.md5s() if staged else None)
    facts = Staleness(tuple(cmp.relevant), tuple(cmp.changed), tuple(cmp.params_changed),
                      tuple(cmp.stale))
    if cmp.changed or cmp.params_changed:
        finding = Finding("staleness", "drift",
                          f"the workspace differs from dvc.lock: {len(cmp.changed)} file(s), "
                          f"{len(cmp.params_changed)} param(s)", fix=ws.rerun(), facts=facts)
        if staged is None:  # outputs a failed `dvc repro` removed: say so, and how to restore
            finding = explain_stale_outputs(finding, parsed, ws)
        return finding, cmp.vouched
    if not cmp.relevant:
        return Finding("staleness", "skipped",
                       f"{lock.name} has no stage for these files"), cmp.vouched
    return Finding("staleness", "ok", f"matches {lock.name} (stages {', '.join(cmp.relevant)})",
                   facts=facts), cmp.vouched

