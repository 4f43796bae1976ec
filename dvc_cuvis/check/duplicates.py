"""The duplicate constraints of ``check`` and the guards: ``content_duplicate`` (two stages
hold one frame's content) and ``near_duplicate`` (near copies across stages), from the
signatures materialize stored in its summaries shards; no frame is read.

A split's sample is found in the materialized folder by the frame name materialize gives its
``(source, index)`` (the shards read once for every constraint, by
:mod:`dvc_cuvis.check.summaries`); its shard entry's ``signature`` record is read with
:func:`~dvc_cuvis.leakage.signatures.from_record` and the stages are audited by
:func:`~dvc_cuvis.leakage.duplicates.audit`.  A sample without a current signature is named,
with the one command that signs it; a damaged shard or record raises (exit 2).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dvc_cuvis.check.summaries import (
    SplitSummaries,
    read_split_summaries,
    summaries_folder,
)
from dvc_cuvis.errors import DvcCuvisError, and_more
from dvc_cuvis.leakage.clusters import SignatureSet
from dvc_cuvis.leakage.duplicates import DuplicateAudit, DuplicatePair, audit_columns
from dvc_cuvis.leakage.signatures import (
    SIGNATURE_KEY,
    Signature,
    columns_from_records,
    from_record,
)
from dvc_cuvis.materialize.summary_store import load_summaries, shard_of
from dvc_cuvis.model.constraints import ConstraintResult
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.universe import Universe

__all__ = ["CONTENT_DUPLICATE", "NEAR_DUPLICATE", "Duplicates", "check_duplicates",
           "split_audit", "stored_signatures"]

#: The checks' names (in ``check``'s constraints finding and ``check --json``).
CONTENT_DUPLICATE = "content_duplicate"
NEAR_DUPLICATE = "near_duplicate"
#: The most pairs (and unsigned frames) a finding names one by one (the rest are counted).
SHOWN = 20


@dataclass
class Duplicates:
    """What the duplicate constraints found: results to list, details, counts for metrics."""

    results: list[ConstraintResult] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    folder: Path | None = None  # the materialized folder the signatures were read from

    @property
    def failed(self) -> bool:
        """Whether one of its results fails the check."""
        return any(r.failed for r in self.results)

    def rebake(self) -> str:
        """The fix of a violated duplicate constraint: the bake remedy that keeps each cluster
        of copies (and, when near copies failed, near copies) in one stage, pasteable."""
        near = any(r.failed and r.kind == NEAR_DUPLICATE for r in self.results)
        mode = "near" if near else "exact"
        where = (f" --summaries {shlex.quote(self.folder.as_posix())}" if self.folder else "")
        return (f"re-bake keeping each group of copies in one stage: add "
                f"--keep-duplicates-together {mode}{where} to dvc-cuvis bake (params.yaml: "
                f"bake.keep_duplicates_together: {mode}), then check again")


def _signatures(read: SplitSummaries) -> DuplicateAudit:
    """The audit of the samples of train/val/test from their stored signatures, read as
    columns (unsigned: none, or of another version); a damaged record raises naming its
    shard."""
    uni: Universe = read.universe
    stage_of: dict[str, str] = {}
    frames: dict[str, str] = {}
    for pos, stage in read.stage_of.items():
        uid = uni.uid(pos)
        stage_of[uid] = stage
        frames[uid] = read.names[pos]
    uids = sorted(stage_of)
    entries = [read.entries.get(frames[u]) for u in uids]
    held = [k for k, e in enumerate(entries) if e is not None and SIGNATURE_KEY in e]
    signed, cols = columns_from_records(
        [entries[k][SIGNATURE_KEY] for k in held],  # type: ignore[index]
        [read.folder / shard_of(frames[uids[k]]) for k in held])
    ok = [uids[k] for k, sg in zip(held, signed.tolist(), strict=True) if sg]
    unsigned = sorted(set(uids) - set(ok))
    return audit_columns(ok, [stage_of[u] for u in ok], cols, unsigned)


def _stored(folder: Path, frames: dict[str, str]) -> dict[str, Signature | None]:
    """Per sample (uid -> frame name): its stored signature (None: unsigned, or of another
    version); a damaged record raises naming its shard."""
    stored = load_summaries(folder, frames.values())
    sigs: dict[str, Signature | None] = {}
    for uid, frame in frames.items():
        entry = stored.get(frame)
        if entry is None or SIGNATURE_KEY not in entry:
            sigs[uid] = None
            continue
        sigs[uid] = from_record(entry[SIGNATURE_KEY], folder / shard_of(frame))
    return sigs


def stored_signatures(uni: Universe, given: Path | str | None) -> SignatureSet:
    """The signatures of every sample of ``uni`` stored in the materialized folder ``given``
    (else the universe's own, as the duplicate checks find it), so a bake can keep copies in
    one stage; no such folder is an error naming the option that gives it."""
    folder = summaries_folder(uni, given)
    if folder is None:
        raise DvcCuvisError(f"{uni.path or 'universe'}: no materialized folder beside it holds "
                            "the frames' signatures; give --summaries DIR (bake.summaries: "
                            "the folder dvc-cuvis materialize wrote)")
    if not folder.is_dir():
        raise DvcCuvisError(f"{folder}: no such materialized folder (--summaries names the "
                            "folder materialize wrote: its frames/ and summaries/)")
    # a whole-file sample's index is 0: the position materialize reads and names its frame by
    frames = {uni.uid(p): frame_name(uni.source(p), uni.index(p)) for p in range(len(uni))}
    return SignatureSet(_stored(folder, frames), folder.as_posix(), sign_command(folder))


def split_audit(res: Resolution, folder: Path | str) -> DuplicateAudit:
    """The duplicate audit of a resolved split from the signatures a materialized folder
    holds: the typed pairs ``check`` counts, for a notebook or the report.

    Parameters
    ----------
    res : Resolution
        The split resolved against its universe (:func:`dvc_cuvis.resolve`); train wins a
        sample that sits in two stages, as in the check.
    folder : Path or str
        The folder materialize wrote (its ``summaries/`` shards hold the signatures).

    Returns
    -------
    DuplicateAudit
        ``exact`` and ``near`` cross-stage pairs (frozen :class:`DuplicatePair` values, sorted
        by name), ``within_stage`` copies, ``unsigned`` samples (named, never guessed at);
        ``by_stages()`` counts them per pair of stages, ``worst(n)`` picks the first to look at.

    Raises
    ------
    DvcCuvisError
        No such folder, or a damaged shard or signature record (named, with the fix).
    """
    return _signatures(read_split_summaries(res, Path(folder)))


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


def check_duplicates(read: SplitSummaries | None, content: str, near: str) -> Duplicates:
    """The duplicate constraints of a resolved split (severities ``content``, ``near``: error,
    warn or off) from the signatures its summaries hold (``read``, from the materialized
    folder); nothing when there are none or both are off.

    A violated constraint is listed; so are unsigned samples, as ``unavailable`` under the
    first constraint that is on (an error then fails: its frames were not compared)."""
    out = Duplicates()
    if read is None or (content == "off" and near == "off"):
        return out
    folder = read.folder
    out.folder = folder
    found = _signatures(read)
    out.counts = {"content_duplicates": len(found.exact), "near_duplicates": len(found.near),
                  "unsigned_frames": len(found.unsigned)}
    out.details["duplicates"] = {"exact": len(found.exact), "near": len(found.near),
                                 "unsigned": len(found.unsigned)}
    out.details["duplicates_by_stages"] = {f"{a}_{b}": {"exact": n[0], "near": n[1]}
                                           for (a, b), n in found.by_stages().items()}
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
