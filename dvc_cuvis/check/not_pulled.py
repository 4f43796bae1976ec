"""Not pulled is not drift: missing files that DVC tracks are named as such, with `dvc pull`.

The content, staleness and universe findings are revised through their typed facts
(:mod:`dvc_cuvis.check.facts`), never by the keys of their ``details``; a revision is a
new finding (``dataclasses.replace``), the checks' own findings are never edited.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

from dvc_cuvis.check.facts import ContentDrift, DiskDiff, NotPulled, Staleness, UniverseFacts
from dvc_cuvis.check.facts import UniverseProblem as Problem
from dvc_cuvis.check.fixes import Workspace
from dvc_cuvis.check.report import Finding
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.paths.roots import require_dvc_root
from dvc_cuvis.repo.pull import not_pulled, pending_files

__all__ = ["explain_not_pulled", "stage_outputs_not_pulled"]


def explain_not_pulled(findings: Mapping[str, Finding], uni: Universe,
                       ws: Workspace | None = None) -> dict[str, Finding]:
    """Tell "not pulled yet" from drift: missing files that DVC tracks make the content
    finding ``not-pulled`` ("N frames not pulled: `dvc pull`"), and the re-scan's samples
    that are absent for that reason only are not "removed".  ``findings`` by check name;
    the revised findings are returned, in the same order."""
    out = dict(findings)
    content = out.get("content")
    facts = content.facts if content is not None else None
    if (content is None or content.status != "drift" or not isinstance(facts, ContentDrift)
            or facts.modified or not facts.missing):
        return out
    missing = list(facts.missing)
    _, pending = pending_files(uni, missing)
    if len(pending) != len(missing):
        if pending:
            out["content"] = dataclasses.replace(
                content, facts=dataclasses.replace(facts, not_pulled=len(pending)))
        return out
    ws = ws or Workspace(uni.path.parent if uni.path is not None else None)
    out["content"] = dataclasses.replace(
        content, status="not-pulled", facts=NotPulled(tuple(missing)), fix=ws.pull_data(),
        summary=f"{facts.affected_samples} frames not pulled" + _pull_hint(ws))
    for check, revised in (("staleness", _outputs_not_pulled(out.get("staleness"), uni,
                                                             missing, ws)),
                           ("universe", _removed_as_not_pulled(out.get("universe"), uni,
                                                               pending))):
        if revised is not None:
            out[check] = revised
    return out


def _pull_hint(ws: Workspace) -> str:
    return f": `{ws.pull}`" if ws.pull is not None else ""


def _outputs_not_pulled(stale: Finding | None, uni: Universe, missing: list[str],
                        ws: Workspace) -> Finding | None:
    """A staleness drift whose every changed path DVC tracks and is absent, or holds
    files not pulled, is ``not-pulled`` too: that finding, else None (unrevised)."""
    facts = stale.facts if stale is not None else None
    if (stale is None or stale.status != "drift" or not isinstance(facts, Staleness)
            or not facts.changed or facts.params_changed
            or any(c.path is None for c in facts.changed)):  # dvc.yaml changed: re-run it
        return None
    # each changed path: DVC tracks it, and it is absent or holds files not pulled
    paths = sorted({c.path for c in facts.changed if c.path is not None})
    base = (uni.path.parent if uni.path is not None else Path(".")).resolve()
    try:
        root: Path | None = require_dvc_root(base).resolve()
    except DvcCuvisError:
        root = None
    if root is None:
        return None
    absent = {Path(os.path.relpath(base / m, root)).as_posix() for m in missing}
    if set(not_pulled(root, paths)) == set(paths) and all(
            not (root / p).exists() or any(a.startswith(p.rstrip("/") + "/") for a in absent)
            for p in paths):
        return dataclasses.replace(
            stale, status="not-pulled", fix=ws.pull_outputs(),
            summary=(f"{len(paths)} path(s) dvc.lock records are not (all) pulled "
                     f"({', '.join(paths)})" + _pull_hint(ws)))
    return None


def _removed_as_not_pulled(universe: Finding | None, uni: Universe,
                           pending: set[str]) -> Finding | None:
    """Samples the re-scan did not find only because their files are not pulled are not
    "removed": the universe finding, ok again (else None, unrevised)."""
    facts = universe.facts if universe is not None else None
    if universe is None or universe.status != "drift" or not isinstance(facts, UniverseFacts):
        return None
    disk = facts.disk
    if (facts.problems != (Problem.DISK,) or disk.added_samples or disk.redigested_samples
            or not disk.removed_samples):
        return None
    files = {uni.source(p) for p in range(len(uni))
             if uni.frame_file(p) in pending or uni.source(p) in pending}
    if not set(disk.removed_sources) <= files:
        return None
    return dataclasses.replace(
        universe, status="ok", fix="",
        summary=(f"{len(uni)} samples; {disk.removed_samples} not pulled, so "
                 "not compared with the data on disk"),
        facts=dataclasses.replace(facts, problems=(), disk=DiskDiff()))


def stage_outputs_not_pulled(stale: Finding, uni: Universe, absent: list[str],
                             stages: tuple[str, ...], ws: Workspace) -> Finding:
    """A one-stage check: a staleness drift due only to the other stages' files not being
    pulled (the outputs holding them, the inputs absent altogether) is a note, not drift;
    the finding, revised or as it was."""
    if _outputs_not_pulled(stale, uni, absent, ws) is None:
        return stale
    return dataclasses.replace(
        stale, status="ok", fix="",
        summary=(f"dvc.lock's outputs are pulled for {', '.join(stages)} only; the "
                 "other stages' files are not pulled here"))
