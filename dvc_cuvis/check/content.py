"""The content check: every physical file universe.csv records a digest for, against it.

md5s come through the stat cache (an unchanged stamp costs a ``stat``), from a
re-enumeration that just hashed the file through the same cache, or not at all for the
files dvc.lock vouches for (:func:`dvc_cuvis.repo.lockfile.vouched_below`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from dvc_cuvis.check.facts import ContentDrift, OtherStagesAbsent
from dvc_cuvis.check.fixes import Workspace
from dvc_cuvis.check.report import Finding
from dvc_cuvis.digests.hashing import Stamp, stamp_of
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES
from dvc_cuvis.model.universe import DIGEST_COLUMNS, Universe
from dvc_cuvis.paths.guard import PathGuard
from dvc_cuvis.repo.lockfile import vouched_below

__all__ = ["check_content"]


def _recorded_files(
    uni: Universe, covered: set[str]
) -> tuple[dict[str, tuple[str, list[int]]], set[str]]:
    """Each file universe.csv records a digest for -> (digest, its rows), except the files
    in ``covered``; and the covered files the universe names."""
    files: dict[str, tuple[str, list[int]]] = {}
    skipped: set[str] = set()
    for column, digest_col in DIGEST_COLUMNS:
        if not uni.has_column(digest_col):
            continue
        digests = uni.column(digest_col)
        paths = uni.files_in(column)  # all '' when the column is absent
        distinct = set(paths)
        distinct.discard("")
        here = distinct & covered  # a dvc.lock hash that still matches covers these bytes
        skipped |= here
        if len(here) == len(distinct):
            continue
        for pos, digest in enumerate(digests):
            rel = paths[pos]
            if not rel or not digest or rel in here:
                continue
            entry = files.get(rel)
            if entry is None:
                files[rel] = (digest, [pos])
            else:
                entry[1].append(pos)
    return files, skipped


def _known_digests(current: Universe | None) -> dict[str, str]:
    """Digests a re-enumeration just computed through the same cache: never read twice."""
    known: dict[str, str] = {}
    if current is not None:
        for column, digest_col in DIGEST_COLUMNS:
            if current.has_column(column) and current.has_column(digest_col):
                known.update(current.rows(column, digest_col))
    return known


def _affected_stages(assignment: np.ndarray, bad_rows: set[int]) -> dict[str, int]:
    """Stage -> how many of ``bad_rows`` it holds (exclusive stages only)."""
    codes = assignment[np.fromiter(bad_rows, dtype=np.int64)]
    return {s: int((codes == c).sum()) for c, s in enumerate(EXCLUSIVE_STAGES)
            if (codes == c).any()}


def check_content(
    uni: Universe, cache: StatCache, assignment: np.ndarray | None,
    current: Universe | None, vouched: Mapping[str, Sequence[str]] | None,
    witness: list[tuple[str, Stamp | None]] | None, ws: Workspace | None = None,
    stage_rows: set[int] | None = None,
) -> Finding:
    """The content finding; each file read is added to ``witness`` with the stamp of the
    bytes read (what the verdict memo rests on).  With ``stage_rows`` (the rows of the
    stages a one-stage fetch brought), a missing file none of those rows reads is another
    stage's, not pulled here: noted, not drift."""
    if not uni.has_column("md5"):
        return Finding("content", "skipped", "universe.csv has no md5 column (enumerate without "
                       "--no-hash to record content digests)")
    base = uni.path.parent if uni.path is not None else Path(".")
    files, skipped = _recorded_files(uni, vouched_below(vouched or {}, base))
    known = _known_digests(current)
    missing, modified, elsewhere, actuals, bad_rows = _compare_files(
        files, known, PathGuard(base), cache, witness, stage_rows)
    if not missing and not modified:
        via = f" ({len(skipped)} through dvc.lock's input hashes)" if skipped else ""
        if elsewhere:
            absent = OtherStagesAbsent(tuple(elsewhere))
            return Finding("content", "ok",
                           f"{len(files) - len(elsewhere) + len(skipped)} files match their "
                           f"recorded md5{via}; {len(elsewhere)} file(s) of other stages not "
                           "pulled here, not checked", facts=absent)
        return Finding("content", "ok",
                       f"{len(files) + len(skipped)} files match their recorded md5{via}")
    edited = _hand_edited(uni, files, actuals)
    modified = [m for m in modified if m not in edited]
    facts = ContentDrift(tuple(missing), tuple(modified), len(bad_rows),
                         _affected_stages(assignment, bad_rows) if assignment is not None
                         else None, edited_rows=tuple(sorted(edited.values())))
    ws = ws or Workspace(uni.path.parent if uni.path is not None else None)
    said = []
    if missing or modified:
        said.append(f"{len(modified)} file(s) modified, {len(missing)} missing since enumerate")
    fixes = ([ws.restore([base / m for m in missing], [base / m for m in modified])]
        if missing or modified else [])
    if edited:
        lines = sorted(edited.values())
        numbers = ", ".join(map(str, lines))
        whose = (f"row {numbers}'s md5 differs" if len(lines) == 1
                 else f"rows {numbers}' md5s differ")
        said.append(f"universe.csv {whose} from the file's bytes and from what enumerate "
                    "wrote; universe.csv was edited by hand")
        fixes.append(ws.regenerate())
    return Finding("content", "drift", "; ".join(said), fix="; ".join(fixes), facts=facts)


def _compare_files(
    files: Mapping[str, tuple[str, list[int]]], known: Mapping[str, str], guard: PathGuard,
    cache: StatCache, witness: list[tuple[str, Stamp | None]] | None,
    stage_rows: set[int] | None,
) -> tuple[list[str], list[str], list[str], dict[str, str], set[int]]:
    """Each recorded file against its md5: missing, modified, other stages' absent files,
    the digests read, and the universe rows the damage touches."""
    missing: list[str] = []
    modified: list[str] = []
    elsewhere: list[str] = []
    actuals: dict[str, str] = {}
    bad_rows: set[int] = set()
    for rel in sorted(files):
        expected, rows = files[rel]
        actual = known.get(rel)
        if actual is None:
            path = guard.resolve(rel, what="universe path")
            try:
                st = os.stat(path)
            except OSError:
                if stage_rows is not None and stage_rows.isdisjoint(rows):
                    elsewhere.append(rel)
                    continue
                missing.append(rel)
                bad_rows.update(rows)
                continue
            actual, read_stamp = cache.md5_stamped(path, stamp_of(st))
            if witness is not None:
                witness.append((path, read_stamp))
        if actual != expected:
            modified.append(rel)
            actuals[rel] = actual
            bad_rows.update(rows)
    return missing, modified, elsewhere, actuals, bad_rows


def _hand_edited(uni: Universe, files: Mapping[str, tuple[str, list[int]]],
                 actuals: Mapping[str, str]) -> dict[str, int]:
    """The modified files whose row, not bytes, changed (:mod:`dvc_cuvis.check.hand_edits`):
    file -> the universe.csv line of its first row."""
    if not actuals:
        return {}
    from dvc_cuvis.check.hand_edits import written_digests

    written = written_digests(uni)
    if not written:
        return {}
    return {rel: uni.line_of(files[rel][1][0]) or files[rel][1][0] + 2
            for rel, actual in sorted(actuals.items()) if written.get(rel) == actual}
