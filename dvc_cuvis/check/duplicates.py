"""The duplicate constraints of ``check`` and the guards: ``content_duplicate`` (two stages
hold one frame's content) and ``near_duplicate`` (near copies across stages), from the
signatures materialize stored in its summaries shards; no frame is read.

A split's sample is found in the materialized folder by the frame name materialize gives its
``(source, index)``; its shard entry's ``signature`` record is read with
:func:`~dvc_cuvis.leakage.signatures.from_record` and the stages are audited by
:func:`~dvc_cuvis.leakage.duplicates.audit`.  A sample without a current signature is named,
with the one command that signs it; a damaged shard or record raises (exit 2).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dvc_cuvis.digests.hashing import Stamp, stamp_of
from dvc_cuvis.errors import DvcCuvisError, and_more
from dvc_cuvis.leakage.duplicates import DuplicateAudit, DuplicatePair, audit_columns
from dvc_cuvis.leakage.signatures import SIGNATURE_KEY, columns_from_records
from dvc_cuvis.materialize.summary_store import (
    SUMMARIES_DIR,
    load_summaries,
    shard_of,
)
from dvc_cuvis.model.constraints import ConstraintResult
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES
from dvc_cuvis.model.universe import Universe

__all__ = ["CONTENT_DUPLICATE", "NEAR_DUPLICATE", "Duplicates", "check_duplicates",
           "summaries_folder"]

#: The checks' names (in ``check``'s constraints finding and ``check --json``).
CONTENT_DUPLICATE = "content_duplicate"
NEAR_DUPLICATE = "near_duplicate"
#: The most pairs (and unsigned frames) a finding names one by one (the rest are counted).
SHOWN = 20


def summaries_folder(universe: Path | str | Universe, given: Path | str | None) -> Path | None:
    """The materialized folder whose shards hold the signatures: ``given``, else the
    universe's own folder when it is materialize's (a ``summaries/`` folder beside it)."""
    if given:
        return Path(given)
    path = universe.path if isinstance(universe, Universe) else Path(universe)
    if path is None or not (path.parent / SUMMARIES_DIR).is_dir():
        return None
    return path.parent


@dataclass
class Duplicates:
    """What the duplicate constraints found: results to list, details, counts for metrics."""

    results: list[ConstraintResult] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """Whether one of its results fails the check."""
        return any(r.failed for r in self.results)


def _read_index(uni: Universe, pos: int) -> int:
    """The index materialize names a sample's frame by (a whole-file sample: 0)."""
    return 0 if uni.indexless is not None and bool(uni.indexless[pos]) else int(uni.indices[pos])


def _signatures(res: Any, folder: Path, witness: list[tuple[str, Stamp | None]] | None
                ) -> DuplicateAudit:
    """The audit of the samples of train/val/test from their stored signatures, read as
    columns (unsigned: none, or of another version); a damaged record raises naming its
    shard. Each shard is added to ``witness`` with its stamp taken before it is read (None
    when absent: a verdict resting on a shard that may yet appear is never reused)."""
    uni: Universe = res.universe
    stage_of: dict[str, str] = {}
    frames: dict[str, str] = {}
    for stage in reversed(EXCLUSIVE_STAGES):  # train wins an overlap (no_split_overlap says so)
        for pos in res.stages[stage].tolist():
            uid = uni.uid(int(pos))
            stage_of[uid] = stage
            frames[uid] = frame_name(uni.source(int(pos)), _read_index(uni, int(pos)))
    if witness is not None:
        for shard in sorted({shard_of(f) for f in frames.values()}):
            path = os.path.abspath(folder / shard)
            try:
                witness.append((path, stamp_of(os.stat(path))))
            except OSError:
                witness.append((path, None))
    stored = load_summaries(folder, frames.values())
    uids = sorted(stage_of)
    entries = [stored.get(frames[u]) for u in uids]
    held = [k for k, e in enumerate(entries) if e is not None and SIGNATURE_KEY in e]
    signed, cols = columns_from_records(
        [entries[k][SIGNATURE_KEY] for k in held],  # type: ignore[index]
        [folder / shard_of(frames[uids[k]]) for k in held])
    ok = [uids[k] for k, s in zip(held, signed.tolist(), strict=True) if s]
    unsigned = sorted(set(uids) - set(ok))
    return audit_columns(ok, [stage_of[u] for u in ok], cols, unsigned)


def _pair(p: DuplicatePair) -> dict[str, Any]:
    out: dict[str, Any] = {"a": p.first, "a_stage": p.first_stage, "b": p.second,
                           "b_stage": p.second_stage}
    if p.kind == "near":
        out["distance"] = p.distance
    return out


def _line(p: DuplicatePair) -> str:
    sign = "=" if p.kind == "exact" else "~"
    return f"{p.first} ({p.first_stage}) {sign} {p.second} ({p.second_stage})"


def _result(kind: str, severity: str, pairs: tuple[DuplicatePair, ...], what: str
            ) -> ConstraintResult:
    lines = [_line(p) for p in pairs[:SHOWN]]
    reason = (f"{len(pairs)} pair(s) of {what} in different stages: {'; '.join(lines[:3])}"
              f"{and_more(len(pairs), min(3, len(lines)))}")
    return ConstraintResult(kind, severity, "violated", len(pairs), tuple(lines), reason)


def sign_command(folder: Path) -> str:
    """The command that signs the frames of a materialized folder (pasteable as printed)."""
    return f"dvc-cuvis materialize --sign-only --out-dir {shlex.quote(folder.as_posix())}"


def check_duplicates(res: Any, folder: Path | None, content: str, near: str, *,
                     witness: list[tuple[str, Stamp | None]] | None = None) -> Duplicates:
    """The duplicate constraints of a resolved split (severities ``content``, ``near``: error,
    warn or off) from the signatures in ``folder``; nothing when it is None or both are off.

    A violated constraint is listed; so are unsigned samples, as ``unavailable`` under the
    first constraint that is on (an error then fails: its frames were not compared); each
    shard read is added to ``witness`` (the verdict memo's)."""
    out = Duplicates()
    if folder is None or (content == "off" and near == "off") or res is None:
        return out
    if not folder.is_dir():
        raise DvcCuvisError(f"{folder}: no such materialized folder (--summaries names the "
                            "folder materialize wrote: its frames/ and summaries/)")
    found = _signatures(res, folder, witness)
    out.counts = {"content_duplicates": len(found.exact), "near_duplicates": len(found.near),
                  "unsigned_frames": len(found.unsigned)}
    out.details["duplicates"] = {"exact": len(found.exact), "near": len(found.near),
                                 "unsigned": len(found.unsigned)}
    pairs: dict[str, Any] = {}
    for kind, severity, got, what in ((CONTENT_DUPLICATE, content, found.exact,
                                       "frames with one content"),
                                      (NEAR_DUPLICATE, near, found.near, "near-copy frames")):
        if severity != "off" and got:
            out.results.append(_result(kind, severity, got, what))
            pairs[kind] = {"count": len(got), "pairs": [_pair(p) for p in got[:SHOWN]],
                           "more": and_more(len(got), SHOWN).strip()}
    if found.unsigned:
        kind, severity = ((CONTENT_DUPLICATE, content) if content != "off"
                          else (NEAR_DUPLICATE, near))
        fix = sign_command(folder)
        names = list(found.unsigned[:SHOWN])
        reason = (f"{len(found.unsigned)} frame(s) without a signature, not compared: "
                  f"{', '.join(names[:3])}{and_more(len(found.unsigned), min(3, len(names)))};"
                  f" sign them: {fix}")
        if not any(r.kind == kind for r in out.results):
            out.results.append(ConstraintResult(kind, severity, "unavailable",
                                                len(found.unsigned), tuple(names), reason))
        pairs["unsigned"] = {"count": len(found.unsigned), "frames": names,
                             "more": and_more(len(found.unsigned), SHOWN).strip(), "fix": fix}
    if pairs:
        out.details["duplicate_pairs"] = pairs
    return out
