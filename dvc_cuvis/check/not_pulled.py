"""Not pulled is not drift: missing files that DVC tracks are named as such, with `dvc pull`.

The content, staleness and universe findings are revised through their typed facts
(:mod:`dvc_cuvis.check.facts`), never by the keys of their ``details``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from dvc_cuvis.check.facts import ContentDrift, DiskDiff, NotPulled, Staleness, UniverseFacts
from dvc_cuvis.check.facts import UniverseProblem as Problem
from dvc_cuvis.check.fixes import Workspace
from dvc_cuvis.check.report import Finding
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.paths import require_dvc_root
from dvc_cuvis.repo.pull import not_pulled, pending_files

__all__ = ["explain_not_pulled", "stage_outputs_not_pulled"]


def _of(findings: list[Finding], check: str) -> Finding | None:
    return next((f for f in findings if f.check == check), None)


def explain_not_pulled(findings: list[Finding], uni: Universe,
                       ws: Workspace | None = None) -> None:
    """Tell "not pulled yet" from drift: missing files that DVC tracks make the content
    finding ``not-pulled`` ("N frames not pulled: `dvc pull`"), and the re-scan's samples
    that are absent for that reason only are not "removed"."""
    content = _of(findings, "content")
    facts = content.facts if content is not None else None
    if (content is None or content.status != "drift" or not isinstance(facts, ContentDrift)
            or facts.modified or not facts.missing):
        return
    missing = list(facts.missing)
    _, pending = pending_files(uni, missing)
    if len(pending) != len(missing):
        if pending:
            content.facts = dataclasses.replace(facts, not_pulled=len(pending))
            content.details = content.facts.details()
        return
    ws = ws or Workspace(uni.path.parent if uni.path is not None else None)
    pulled = NotPulled(tuple(missing))
    content.status, content.facts, content.details = "not-pulled", pulled, pulled.details()
    content.summary = f"{facts.affected_samples} frames not pulled" + _pull_hint(ws)
    content.fix = ws.pull_data()
    _outputs_not_pulled(_of(findings, "staleness"), uni, missing, ws)
    _removed_as_not_pulled(_of(findings, "universe"), uni, pending)


def _pull_hint(ws: Workspace) -> str:
    return f": `{ws.pull}`" if ws.pull is not None else ""


def _outputs_not_pulled(stale: Finding | None, uni: Universe, missing: list[str],
                        ws: Workspace) -> None:
    """A staleness drift whose every changed path DVC tracks and is absent, or holds
    files not pulled, is ``not-pulled`` too."""
    facts = stale.facts if stale is not None else None
    if (stale is None or stale.status != "drift" or not isinstance(facts, Staleness)
            or not facts.changed or facts.params_changed
            or any(c.path is None for c in facts.changed)):  # dvc.yaml changed: re-run it
        return
    # each changed path: DVC tracks it, and it is absent or holds files not pulled
    paths = sorted({c.path for c in facts.changed if c.path is not None})
    base = (uni.path.parent if uni.path is not None else Path(".")).resolve()
    try:
        root: Path | None = require_dvc_root(base).resolve()
    except DvcCuvisError:
        root = None
    if root is None:
        return
    absent = {Path(os.path.relpath(base / m, root)).as_posix() for m in missing}
    if set(not_pulled(root, paths)) == set(paths) and all(
            not (root / p).exists() or any(a.startswith(p.rstrip("/") + "/") for a in absent)
            for p in paths):
        stale.status = "not-pulled"
        stale.summary = (f"{len(paths)} path(s) dvc.lock records are not (all) pulled "
                         f"({', '.join(paths)})" + _pull_hint(ws))
        stale.fix = ws.pull_outputs()


def _removed_as_not_pulled(universe: Finding | None, uni: Universe, pending: set[str]) -> None:
    """Samples the re-scan did not find only because their files are not pulled are not
    "removed": the universe finding is ok again."""
    facts = universe.facts if universe is not None else None
    if universe is None or universe.status != "drift" or not isinstance(facts, UniverseFacts):
        return
    disk = facts.disk
    if (facts.problems != (Problem.DISK,) or disk.added_samples or disk.redigested_samples
            or not disk.removed_samples):
        return
    files = {uni.source(p) for p in range(len(uni))
             if uni.frame_file(p) in pending or uni.source(p) in pending}
    if set(disk.removed_sources) <= files:
        universe.status = "ok"
        universe.summary = (f"{len(uni)} samples; {disk.removed_samples} not pulled, so "
                            "not compared with the data on disk")
        universe.fix = ""
        universe.facts = dataclasses.replace(facts, problems=(), disk=DiskDiff())
        universe.details = universe.facts.details()


def stage_outputs_not_pulled(stale: Finding, uni: Universe, absent: list[str],
                             stages: tuple[str, ...], ws: Workspace) -> None:
    """A one-stage check: a staleness drift due only to the other stages' files not being
    pulled (the outputs holding them, the inputs absent altogether) is a note, not drift."""
    _outputs_not_pulled(stale, uni, absent, ws)
    if stale.status == "not-pulled":
        stale.status = "ok"
        stale.summary = (f"dvc.lock's outputs are pulled for {', '.join(stages)} only; the "
                         "other stages' files are not pulled here")
        stale.fix = ""
