"""A split's constraints evaluated on its resolution: the upstream ones (the same statuses and
offending lists as ``cuvis_ai_core``) and group leakage, which upstream reserves but does not
enforce.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from cuvis_ai_schemas.training.data import (
    Constraint,
    ConstraintKind,
)

from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.selectors import (
    norm_source,
)
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES, GROUP_LEAKAGE

if TYPE_CHECKING:
    pass

@dataclass(frozen=True)
class ConstraintResult:
    """Outcome of one constraint: ``satisfied``, ``violated`` or ``unavailable``."""

    kind: str
    severity: str
    status: str
    count: int = 0
    offending: tuple[str, ...] = ()
    reason: str = ""

    @property
    def failed(self) -> bool:
        """True for an error-severity violation or an unverifiable error-severity check."""
        return self.severity == "error" and self.status in ("violated", "unavailable")

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form (offending list truncated to 100 entries)."""
        return {
            "kind": self.kind,
            "severity": self.severity,
            "status": self.status,
            "count": self.count,
            "offending": list(self.offending[:100]),
            "reason": self.reason,
        }


def evaluate_constraints(
    res: Resolution,
    constraints: Sequence[Constraint],
    *,
    available_attrs: frozenset[str] | None = None,
    group_leakage: str = "auto",
) -> list[ConstraintResult]:
    """Evaluate the file's constraints (upstream semantics) plus group leakage.

    ``available_attrs`` defaults to what the universe carries (``category_ids`` when it
    has that column).  ``group_leakage``: ``"auto"`` (error when the universe has a
    ``group`` column), ``"error"``, ``"warn"`` or ``"off"``.
    """
    uni = res.universe
    if available_attrs is None:
        available_attrs = frozenset({"category_ids"} if uni.has_column("category_ids") else ())
    out: list[ConstraintResult] = []
    for c in constraints:
        kind, sev = c.kind.value, c.severity.value
        if c.kind == ConstraintKind.NO_SPLIT_OVERLAP:
            out.append(_split_overlap(res, sev))
        elif c.kind == ConstraintKind.NO_SOURCE_OVERLAP:
            out.append(_source_overlap(res, sev))
        elif c.kind == ConstraintKind.NO_TRAIN_ANOMALOUS:
            if "category_ids" not in available_attrs:
                out.append(ConstraintResult(kind, sev, "unavailable",
                                            reason="the universe has no category_ids column"))
                continue
            train = res.stages["train"]
            hit = train[uni.anomalous()[train]]
            names = uni.source_names
            bad = sorted(names[c] for c in np.unique(uni.codes[hit]).tolist())
            out.append(_result(kind, sev, bad,
                               f"{len(bad)} source(s) with an anomalous frame in train"))
    mode = group_leakage
    if mode == "auto":
        if uni.has_column("group"):
            mode = "auto"  # error for a declared group, warn for a derived recording
        else:
            per_source, _flat = uni.recording_layout()
            mode = "warn" if per_source != uni.source_names else "off"
    if mode != "off":
        out.append(_group_leakage(res, mode))
    return out


def _result(kind: str, sev: str, offending: list[str], reason: str) -> ConstraintResult:
    if offending:
        return ConstraintResult(kind, sev, "violated", len(offending), tuple(offending), reason)
    return ConstraintResult(kind, sev, "satisfied")


def _split_overlap(res: Resolution, sev: str) -> ConstraintResult:
    n = len(res.universe)
    masks = {}
    for s in EXCLUSIVE_STAGES:
        m = np.zeros(n, dtype=bool)
        m[res.stages[s]] = True
        masks[s] = m
    shared_all = np.zeros(n, dtype=bool)
    reasons = []
    for a, b in (("train", "val"), ("train", "test"), ("val", "test")):
        both = masks[a] & masks[b]
        k = int(both.sum())
        if k:
            reasons.append(f"{k} shared between {a} and {b}")
            shared_all |= both
    offending = sorted(res.universe.uids(np.flatnonzero(shared_all)))
    return _result(ConstraintKind.NO_SPLIT_OVERLAP.value, sev, offending, "; ".join(reasons))


def _source_overlap(res: Resolution, sev: str) -> ConstraintResult:
    uni = res.universe
    names = uni.source_names
    norm = [norm_source(s) for s in names]
    spans: dict[str, set[str]] = {}
    first_seen: dict[str, str] = {}
    for s in EXCLUSIVE_STAGES:
        codes = uni.codes[res.stages[s]]
        # first-seen representative per normalized source, in resolution order
        _, first = np.unique(codes, return_index=True)
        for c in codes[np.sort(first)].tolist():
            key = norm[c]
            spans.setdefault(key, set()).add(s)
            first_seen.setdefault(key, names[c])
    offending = sorted(first_seen[k] for k, v in spans.items() if len(v) > 1)
    return _result(ConstraintKind.NO_SOURCE_OVERLAP.value, sev, offending,
                   f"{len(offending)} source(s) span >1 of train/val/test")


def _group_leakage(res: Resolution, sev: str) -> ConstraintResult:
    """Groups (a ``group`` cell, else the recording) in more than one of train/val/test.

    ``sev`` ``"auto"``: an error where a leaking group is declared in a ``group`` cell, a
    warning where every leaking group is a recording derived from the files (a split made
    ``--group-by sample`` on purpose, as upstream does, is warned of, not refused)."""
    uni = res.universe
    names, codes = uni.groups()
    stage_of = np.zeros((len(names), len(EXCLUSIVE_STAGES)), dtype=bool)
    for j, s in enumerate(EXCLUSIVE_STAGES):
        stage_of[codes[res.stages[s]], j] = True
    leaking = np.flatnonzero(stage_of.sum(axis=1) > 1)
    offending = [names[g] for g in leaking.tolist()]
    if sev == "auto":
        cells = uni.raw_column("group")
        declared = np.zeros(len(names), dtype=bool)
        if cells is not None and len(cells):
            declared[codes[cells != b""]] = True
        sev = "error" if declared[leaking].any() or not len(leaking) else "warn"
    return _result(GROUP_LEAKAGE, sev, offending,
                   f"{len(offending)} group(s) span >1 of train/val/test")


def failed_constraints(results: Sequence[ConstraintResult]) -> list[ConstraintResult]:
    """The results that must stop a run (error severity, violated or unavailable)."""
    return [r for r in results if r.failed]
