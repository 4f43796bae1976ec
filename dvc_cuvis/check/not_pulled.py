"""Not pulled is not drift: missing files that DVC tracks are named as such, with `dvc pull`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.paths import require_dvc_root
from dvc_cuvis.repo.pull import not_pulled, pending_files


def explain_not_pulled(findings: list[Any], uni: Any) -> None:
    """Tell "not pulled yet" from drift: missing files that DVC tracks make the content
    finding ``not-pulled`` ("N frames not pulled: `dvc pull`"), and the re-scan's samples
    that are absent for that reason only are not "removed"."""
    content = next((f for f in findings if f.check == "content"), None)
    if content is None or content.status != "drift" or content.details.get("modified"):
        return
    missing = list(content.details.get("missing") or [])
    if not missing:
        return
    _, pending = pending_files(uni, missing)
    if len(pending) != len(missing):
        if pending:
            content.details["not_pulled"] = len(pending)
        return
    frames = int(content.details.get("affected_samples", len(missing)))
    content.status = "not-pulled"
    content.summary = f"{frames} frames not pulled: `dvc pull`"
    content.details = {"not_pulled": sorted(missing)}
    content.fix = ("`dvc pull` (everything), or `dvc-cuvis fetch --stage STAGE` for one "
                   "stage's files")
    stale = next((f for f in findings if f.check == "staleness"), None)
    changed = list(stale.details.get("changed") or []) if stale is not None else []
    if stale is not None and stale.status == "drift" and changed \
            and not stale.details.get("params_changed"):
        # each changed path: DVC tracks it, and it is absent or holds files not pulled
        paths = sorted({c.split(" (stage ")[0].removesuffix(": missing") for c in changed})
        base = (uni.path.parent if uni.path is not None else Path(".")).resolve()
        try:
            root: Path | None = require_dvc_root(base).resolve()
        except DvcCuvisError:
            root = None
        absent = {Path(os.path.relpath(base / m, root)).as_posix() for m in missing} \
            if root is not None else set()
        if root is not None and set(not_pulled(root, paths)) == set(paths) and all(
                not (root / p).exists() or any(a.startswith(p.rstrip("/") + "/")
                                               for a in absent) for p in paths):
            stale.status = "not-pulled"
            stale.summary = (f"{len(paths)} path(s) dvc.lock records are not (all) pulled "
                             f"({', '.join(paths)}): `dvc pull`")
            stale.fix = "`dvc pull` (the pipeline's outputs are on the remote)"
    universe = next((f for f in findings if f.check == "universe"), None)
    d = universe.details if universe is not None else {}
    if (universe is not None and universe.status == "drift" and not d.get("added_samples")
            and not d.get("redigested_samples") and d.get("removed_samples")
            and universe.summary.startswith("the data on disk differs")
            and "; " not in universe.summary):
        gone = set(d.get("removed_sources") or [])
        files = {uni.source(p) for p in range(len(uni))
                 if uni.frame_file(p) in pending or uni.source(p) in pending}
        if gone <= files:
            universe.status = "ok"
            universe.summary = (f"{len(uni)} samples; {d['removed_samples']} not pulled, so "
                                "not compared with the data on disk")
            universe.fix = ""
            for key in ("added_sources", "removed_sources", "renamed", "added_samples",
                        "removed_samples"):
                universe.details.pop(key, None)
