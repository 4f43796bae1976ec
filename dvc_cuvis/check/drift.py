"""The drift check: is this split still valid for the data that is here now?

Upstream verifies ``universe_hash`` only while positional ``dir_indices`` remain; for baked
splits "staleness detection is the author's concern".  This module is that concern, run
by ``dvc-cuvis check`` and by :mod:`dvc_cuvis.train.datamodule` before anything loads.  Checks,
each reported on its own:

1. **universe** — the pinned ``universe_hash`` against universe.csv (and, given the
   enumerate options, universe.csv against what is on disk now: added, removed, renamed,
   re-digested); it also notes samples on which the two upstream notions of "anomalous"
   disagree (:data:`dvc_cuvis.model.universe.ANOMALOUS_FOR_PARITY`);
2. **content** — every physical file against its recorded ``md5`` (stat cache; ``deep``
   re-hashes everything);
3. **selection** — every selector resolves, and resolves fully (a partial match fails);
4. **constraints** — the file's constraints plus group leakage;
5. **staleness** — where a ``dvc.lock`` exists, its recorded hashes and params of the
   stages that produce or read these files against the workspace.

GUI-authored splits whose sources carry the ``{DATA_DIR}`` token are verified by
re-tokenizing the data-dir prefix before hashing.

Reading dvc.lock lives in :mod:`dvc_cuvis.repo.lockfile`; remembering a clean verdict in
:mod:`dvc_cuvis.check.verdicts`.  This module owns the checks and the report they make.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np
from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis.check.verdicts import VerdictMemo
from dvc_cuvis.config.specs import VERIFY_MODES
from dvc_cuvis.digests.hashing import Stamp, stamp_of
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError, SelectorError
from dvc_cuvis.model.selectors import walk
from dvc_cuvis.model.splits import (
    EXCLUSIVE_STAGES,
    effective_splits,
    evaluate_constraints,
    load_splits_stamped,
    resolve,
)
from dvc_cuvis.model.universe import (
    DIGEST_COLUMNS,
    Universe,
    anomaly_notions_differ,
    anomaly_notions_note,
)
from dvc_cuvis.model.universe_io import read_universe
from dvc_cuvis.paths import PathGuard
from dvc_cuvis.repo.lockfile import LockFile, LockReadError, compare, find_lock, vouched_below

if TYPE_CHECKING:
    from dvc_cuvis.sources import EnumerateOptions

__all__ = ["CHECKS", "TOKEN", "VERIFY_MODES", "DriftError", "DriftReport", "Finding",
           "check_verify_mode", "detokenize", "ensure", "find_lock", "infer_data_dir",
           "is_tokenized", "tokenized_hash", "verify"]

CHECKS: tuple[str, ...] = ("universe", "content", "selection", "constraints", "staleness")
TOKEN = "{DATA_DIR}"


@dataclass
class Finding:
    """The outcome of one check: ``ok``, ``drift``, ``violation`` or ``skipped``."""

    check: str
    status: str
    summary: str
    details: dict[str, Any] = field(default_factory=dict)
    fix: str = ""

    @property
    def failed(self) -> bool:
        """True for drift or a violation."""
        return self.status in ("drift", "violation", "not-pulled")

    def record(self) -> dict[str, Any]:
        """The finding as a plain record (what the verdict memo keeps)."""
        return {"check": self.check, "status": self.status, "summary": self.summary,
                "details": self.details, "fix": self.fix}


@dataclass
class DriftReport:
    """All findings for one split + universe."""

    splits: str
    universe: str
    findings: list[Finding]
    #: True when the findings of the last clean check were reused (no file changed since)
    reused_verdict: bool = False
    #: Where this check's md5s came from (:meth:`StatCache.stats` of the cache it used: under
    #: ``deep`` a fresh one, not the caller's); run statistics, not part of the verdict
    hashing: dict[str, int] = field(default_factory=dict, compare=False)

    @property
    def ok(self) -> bool:
        """True when no check found drift or a violation."""
        return not any(f.failed for f in self.findings)

    @property
    def exit_code(self) -> int:
        """0 clean, 1 drift or violation."""
        return 0 if self.ok else 1

    def finding(self, check: str) -> Finding:
        """The finding of ``check``."""
        return next(f for f in self.findings if f.check == check)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``--json``)."""
        return {
            "ok": self.ok,
            "reused_verdict": self.reused_verdict,
            "splits": self.splits,
            "universe": self.universe,
            "checks": {f.check: {"status": f.status, "summary": f.summary, "fix": f.fix,
                                 "details": f.details} for f in self.findings},
        }

    def render(self) -> str:
        """A readable verdict: one line per check, details, and the command that fixes it."""
        lines = [f"check {self.splits} against {self.universe}: "
                 + ("OK" if self.ok else "FAILED")
                 + (" (the last clean verdict: no file it rests on has changed)"
                    if self.reused_verdict else "")]
        for f in self.findings:
            mark = {"ok": "ok  ", "skipped": "skip", "drift": "DRIFT", "violation": "FAIL",
                    "not-pulled": "PULL"}
            lines.append(f"  [{mark.get(f.status, f.status)}] {f.check}: {f.summary}")
            for line in _detail_lines(f.details):
                lines.append(f"         {line}")
            if f.failed and f.fix:
                lines.append(f"         fix: {f.fix}")
        return "\n".join(lines) + "\n"


class DriftError(DvcCuvisError):
    """Raised by strict verification; carries the report."""

    exit_code = 1

    def __init__(self, report: DriftReport) -> None:
        failed = ", ".join(f"{f.check} ({f.summary})" for f in report.findings if f.failed)
        super().__init__(f"{report.splits} does not match the data: {failed}")
        self.report = report


def _detail_lines(details: dict[str, Any], limit: int = 8) -> list[str]:
    out = []
    for key, value in details.items():
        if isinstance(value, list):
            if not value:
                continue
            shown = ", ".join(str(v) for v in value[:limit])
            more = f" (+{len(value) - limit} more)" if len(value) > limit else ""
            out.append(f"{key}: {shown}{more}")
        elif isinstance(value, dict):
            if value:
                out.append(f"{key}: " + ", ".join(f"{k}={v}" for k, v in value.items()))
        elif value not in (None, ""):
            out.append(f"{key}: {value}")
    return out


# -- GUI-authored ({DATA_DIR}) splits -----------------------------------------------------


def is_tokenized(cfg: DataSplitConfig) -> bool:
    """True if any selector names a source through the ``{DATA_DIR}`` token."""
    for sel in walk(cfg):
        if any(n and TOKEN in n for n in (sel.source, *sel.paths, sel.pattern)):
            return True
    return False


def detokenize(cfg: DataSplitConfig, data_dir: str) -> DataSplitConfig:
    """``cfg`` with ``{DATA_DIR}`` replaced by ``data_dir`` in every source, path and pattern."""
    data = json.loads(json.dumps(cfg.to_dict()).replace(TOKEN, data_dir.rstrip("/")))
    return DataSplitConfig.model_validate(data)


def tokenized_hash(uni: Universe, data_dir: str) -> str:
    """``universe_hash`` with the data-dir prefix of every source written as ``{DATA_DIR}``."""
    prefix = data_dir.rstrip("/") + "/"
    return uni.spelled_hash([TOKEN + "/" + s[len(prefix):] if s.startswith(prefix) else s
                             for s in uni.source_names])


def infer_data_dir(uni: Universe) -> str:
    """The longest common folder of all (absolute) sources."""
    common = os.path.commonpath(uni.source_names) if uni.source_names else ""
    if len(uni.source_names) == 1:
        common = os.path.dirname(common)
    return common


# -- the checks ---------------------------------------------------------------------------


def _check_universe(
    cfg: DataSplitConfig,
    uni: Universe,
    current: Universe | None,
    data_dir: str | None,
    allow_unpinned: bool,
) -> Finding:
    details: dict[str, Any] = {}
    problems = []
    actual = tokenized_hash(uni, data_dir) if data_dir is not None else uni.hash
    if data_dir is not None:
        details["data_dir"] = data_dir
    if cfg.universe_hash and cfg.universe_hash != actual:
        problems.append(f"universe.csv changed since the split was baked "
                        f"(pinned {cfg.universe_hash[:12]}, now {actual[:12]})")
    if not cfg.universe_hash:
        details["note"] = ("the split pins no universe_hash: nothing ties it to the universe "
                           "it was made for")
        if not allow_unpinned:
            problems.append("the split is unpinned (no universe_hash): bake it to pin the "
                            "universe, or accept it with --allow-unpinned")
    notions = anomaly_notions_differ(uni)
    if notions:
        details["anomaly_notions"] = anomaly_notions_note(notions)
    if current is not None:
        problems += _compare_with_disk(uni, current, details)
    if problems:
        return Finding("universe", "drift", "; ".join(problems), details,
                       "re-enumerate and re-bake: `dvc repro` (or `dvc-cuvis enumerate` then "
                       "`dvc-cuvis bake --base <old splits.json>` to keep assignments)")
    summary = (f"{len(uni)} samples, hash {actual[:12]} matches the pin" if cfg.universe_hash
               else f"{len(uni)} samples, hash {actual[:12]}; unpinned split (allowed)")
    if current is not None:
        summary += "; universe.csv matches the data on disk"
    return Finding("universe", "ok", summary, details)


def _compare_with_disk(uni: Universe, current: Universe, details: dict[str, Any]) -> list[str]:
    """universe.csv against the re-enumeration: samples added, removed, renamed, re-digested."""
    problems = []
    before, now = set(uni.uids()), set(current.uids())
    added, removed = sorted(now - before), sorted(before - now)
    if added or removed:
        problems.append(f"the data on disk differs from universe.csv: {len(added)} sample(s) "
                        f"added, {len(removed)} removed")
        details["added_sources"] = _sources(current, added)
        details["removed_sources"] = _sources(uni, removed)
        details["renamed"] = [f"{a} -> {b}" for a, b in _renames(uni, current, added, removed)]
        details["added_samples"] = len(added)
        details["removed_samples"] = len(removed)
    changed = _redigested(uni, current)
    if changed:
        problems.append(f"{len(changed)} sample(s) on disk no longer have the md5 that "
                        "universe.csv records")
        details["redigested_sources"] = _sources(current, changed)
        details["redigested_samples"] = len(changed)
    return problems


def _sources(uni: Universe, uids: Iterable[str]) -> list[str]:
    """The sources of ``uids``, as the universe records them (never parsed out of a uid:
    a source may hold a ``#``)."""
    wanted = set(uids)
    return sorted({s for u, s in uni.rows("uid", "source") if u in wanted})


def _redigested(old: Universe, new: Universe) -> list[str]:
    """uids in both whose recorded md5 differs (only where both carry a digest)."""
    was = dict(old.rows("uid", "md5"))
    return sorted(u for u, d in new.rows("uid", "md5") if d and was.get(u) and was[u] != d)


def _renames(
    old: Universe, new: Universe, added: list[str], removed: list[str]
) -> list[tuple[str, str]]:
    """Removed/added source pairs with identical content digests (a rename or move)."""
    if not (added and removed):
        return []

    def by_source(uni: Universe, uids: set[str]) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {}
        for u, s, d in uni.rows("uid", "source", "md5"):
            if u in uids:
                out.setdefault(s, []).append(d)
        return {s: tuple(sorted(v)) for s, v in out.items() if all(v)}  # no digest: no pair

    gone = by_source(old, set(removed))
    came = by_source(new, set(added))
    pairs = []
    for src, digest in sorted(gone.items()):
        match = [s for s, d in sorted(came.items()) if d == digest]
        if match:
            pairs.append((src, match[0]))
            came.pop(match[0])
    return pairs


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


def _check_content(
    uni: Universe, cache: StatCache, assignment: np.ndarray | None,
    current: Universe | None, vouched: Mapping[str, Sequence[str]] | None,
    witness: list[tuple[str, Stamp | None]] | None,
) -> Finding:
    if not uni.has_column("md5"):
        return Finding("content", "skipped", "universe.csv has no md5 column (enumerate without "
                       "--no-hash to record content digests)")
    base = uni.path.parent if uni.path is not None else Path(".")
    files, skipped = _recorded_files(uni, vouched_below(vouched or {}, base))
    known = _known_digests(current)
    guard = PathGuard(base)
    missing, modified = [], []
    bad_rows: set[int] = set()
    for rel in sorted(files):
        expected, rows = files[rel]
        actual = known.get(rel)
        if actual is None:
            path = guard.resolve(rel, what="universe path")
            try:
                st = os.stat(path)
            except OSError:
                missing.append(rel)
                bad_rows.update(rows)
                continue
            actual, read_stamp = cache.md5_stamped(path, stamp_of(st))
            if witness is not None:
                witness.append((path, read_stamp))
        if actual != expected:
            modified.append(rel)
            bad_rows.update(rows)
    if not missing and not modified:
        via = f" ({len(skipped)} through dvc.lock's input hashes)" if skipped else ""
        return Finding("content", "ok",
                       f"{len(files) + len(skipped)} files match their recorded md5{via}")
    details: dict[str, Any] = {"missing": missing, "modified": modified,
                               "affected_samples": len(bad_rows)}
    if assignment is not None:
        codes = assignment[np.fromiter(bad_rows, dtype=np.int64)]
        details["affected_stages"] = {s: int((codes == c).sum())
                                      for c, s in enumerate(EXCLUSIVE_STAGES) if (codes == c).any()}
    summary = f"{len(modified)} file(s) modified, {len(missing)} missing since enumerate"
    return Finding("content", "drift", summary, details,
                   "restore the files (`dvc checkout` / `dvc pull`) or re-enumerate and re-bake "
                   "(`dvc repro`)")


def _check_selection(
    cfg: DataSplitConfig, uni: Universe, name_to_id: dict[str, int] | None, where: str,
    allow_partial: bool,
) -> tuple[Finding, Any]:
    try:
        res = resolve(cfg, uni, name_to_id=name_to_id, where=where)
    except SelectorError as exc:
        return Finding("selection", "violation", str(exc), {},
                       "fix the selector, or re-bake the split against this universe"), None
    if res.warnings:
        msgs = [w.message() for w in res.warnings]
        missing = sum(len(w.missing) for w in res.warnings)
        summary = (f"{len(res.warnings)} selector(s) match only partly ({missing} requested "
                   "sample(s) absent)")
        if allow_partial:
            return Finding("selection", "ok", summary + "; allowed (--allow-partial)",
                           {"partial": msgs}), res
        return Finding("selection", "violation", summary, {"partial": msgs},
                       "re-bake the split (`dvc repro`), or `dvc-cuvis bake --base` to keep "
                       "assignments"), res
    counts = {s: len(res.stages[s]) for s in ("train", "val", "test", "predict")}
    return Finding("selection", "ok", "every selector resolves fully: "
                   + " ".join(f"{k}={v}" for k, v in counts.items())), res


def _check_constraints(cfg: DataSplitConfig, res: Any, group_leakage: str) -> Finding:
    if res is None:
        return Finding("constraints", "skipped", "the split does not resolve")
    results = evaluate_constraints(res, cfg.constraints, group_leakage=group_leakage)
    failed = [r for r in results if r.failed]
    details = {r.kind: f"{r.status} ({r.severity})" + (f": {r.reason}" if r.reason else "")
               for r in results}
    if failed:
        return Finding("constraints", "violation",
                       ", ".join(f"{r.kind} {r.status}" for r in failed),
                       {"results": details, "offending": [o for r in failed for o in r.offending]},
                       "re-bake with a strategy that respects the constraint (e.g. --group-by "
                       "group, --ad-aware)")
    if not results:
        return Finding("constraints", "ok", "no constraints declared")
    return Finding("constraints", "ok", ", ".join(
        f"{r.kind} {r.status}" + (f" ({r.severity})" if r.status != "satisfied" else "")
        for r in results))


# -- dvc.lock staleness -------------------------------------------------------------------


def _check_staleness(
    lock: Path | None, targets: list[Path], cache: StatCache, universe: Path | None
) -> tuple[Finding, dict[str, list[str]]]:
    """The staleness finding, and the files (absolute paths) that dvc.lock vouches for.

    The second value is :attr:`dvc_cuvis.repo.lockfile.Comparison.vouched`: the inputs of the
    stage that wrote ``universe`` when that stage is entirely unchanged — exactly the
    bytes universe.csv was enumerated from.
    """
    if lock is None:
        return Finding("staleness", "skipped", "no dvc.lock"), {}
    try:
        parsed = LockFile.read(lock)
    except LockReadError as exc:
        return Finding("staleness", "violation", str(exc), {"lock": str(lock)},
                       f"restore {lock.name} (`git checkout {lock.name}`) or write it again "
                       "with `dvc repro`"), {}
    cmp = compare(parsed, targets, cache, universe)
    details = {"stages": cmp.relevant, "changed": cmp.changed,
               "params_changed": cmp.params_changed}
    if cmp.changed or cmp.params_changed:
        return Finding("staleness", "drift",
                       f"the workspace differs from dvc.lock: {len(cmp.changed)} file(s), "
                       f"{len(cmp.params_changed)} param(s)", details,
                       "run `dvc repro`"), cmp.vouched
    if not cmp.relevant:
        return Finding("staleness", "skipped",
                       f"{lock.name} has no stage for these files"), cmp.vouched
    return Finding("staleness", "ok", f"matches {lock.name} (stages {', '.join(cmp.relevant)})",
                   details), cmp.vouched


def _lock_path(lock: Path | str | None, splits: Path | None, universe: Path | None) -> Path | None:
    """``lock="auto"``: the dvc.lock of the repository holding the split (or universe)."""
    if lock == "auto":
        anchor = splits or universe
        return find_lock(anchor.parent if anchor is not None else Path.cwd())
    return Path(lock) if lock else None


# -- entry point --------------------------------------------------------------------------


#: What ``verify(current=...)`` accepts: the universe on disk now, the options to enumerate
#: it (preferred: enumerated through the check's own cache), or a function producing it.
Current = Union[Universe, "EnumerateOptions", Callable[[], Universe], None]


def _current_universe(
    current: Current, cache: StatCache, vouched: Mapping[str, Sequence[str]]
) -> tuple[Universe | None, bool]:
    """The universe on disk now (None when dvc.lock vouches for the data), and whether its
    digests were computed through ``cache`` in this call."""
    if current is None or isinstance(current, Universe):
        return current, False
    if vouched:
        return None, False
    if callable(current):
        return current(), False
    from dvc_cuvis.sources import enumerate_universe

    return enumerate_universe(dataclasses.replace(current, cache=cache))[0], True


def _resolve_tokens(
    cfg: DataSplitConfig, uni: Universe, data_dir: str | None
) -> tuple[DataSplitConfig, str | None]:
    """``cfg`` with ``{DATA_DIR}`` replaced (pin dropped: the universe check compares it
    against tokenized uids), and the data dir used; ``cfg`` itself when untokenized."""
    if not is_tokenized(cfg):
        return cfg, None
    data_dir = (data_dir or infer_data_dir(uni)).rstrip("/")
    return detokenize(cfg, data_dir).model_copy(update={"universe_hash": None}), data_dir


def verify(
    splits: Path | str | DataSplitConfig,
    universe: Path | str | Universe,
    *,
    current: Current = None,
    deep: bool = False,
    name_to_id: dict[str, int] | None = None,
    group_leakage: str = "auto",
    lock: Path | str | None = "auto",
    data_dir: str | None = None,
    cache: StatCache | None = None,
    checks: Iterable[str] = CHECKS,
    allow_partial: bool = False,
    allow_unpinned: bool = False,
) -> DriftReport:
    """Run the drift checks and return the report (never raises on drift; see :func:`ensure`).

    ``current`` is the universe enumerated from the data now — or, preferably, the
    :class:`~dvc_cuvis.sources.EnumerateOptions` to enumerate it with, so that it is
    enumerated through this check's cache and only when needed: when dvc.lock shows that
    the stage which wrote universe.csv is unchanged — its output, every input hash and
    its params — the data under its inputs is vouched for by DVC and neither the re-scan
    nor per-file hashing is repeated for it.  (A function producing the universe is
    accepted too; its digests are whatever cache it used.)  ``lock="auto"`` finds the
    repository's dvc.lock; ``data_dir`` overrides the prefix that ``{DATA_DIR}`` stands
    for in GUI-authored splits.

    ``deep`` is one switch for every digest: nothing is vouched for, no persistent cache
    is read, and each file is hashed once in the call — the re-enumeration (from
    ``EnumerateOptions``), dvc.lock's folder hashes and the content check share one fresh
    in-memory cache, so a file edited in place with its inode, size and mtime kept is
    seen by both the universe and the content check.  Without ``deep`` such an edit is
    invisible (the stat cache trusts an unchanged stamp).

    A ``DataSplitConfig(splits_path=...)`` is checked as cuvis-ai will load it (see
    :func:`~dvc_cuvis.model.splits.effective_splits`).  A split that pins no ``universe_hash`` fails
    the universe check unless ``allow_unpinned`` (nothing ties it to its universe); a
    selector that matches only some of its ids fails the selection check unless
    ``allow_partial``.

    A clean verdict is remembered in ``cache`` with the stamps of every file it rests on;
    a later call with the same inputs (``universe`` given as a path, no ``current``, not
    ``deep``) reuses it while none of those files changed (``report.reused_verdict``).

    Parameters
    ----------
    splits : path-like or DataSplitConfig
        The split to check: a splits.json, or a config (a ``splits_path`` pointer is
        followed as cuvis-ai follows it).
    universe : path-like or Universe
        The universe.csv the split was baked against (or its parsed form).
    current : Universe, EnumerateOptions or callable, optional
        The data on disk now, to compare universe.csv with (see above); None compares
        nothing on disk beyond the recorded digests.
    deep : bool, default False
        Trust no cache and no dvc.lock: hash every file once, in this call.
    name_to_id : dict of str to int, optional
        Category name to id, for ``categories`` selectors.
    group_leakage : {"auto", "error", "warn", "off"}, default "auto"
        Severity of our ``group_leakage`` check (a ``group`` shared by two of
        train/val/test); ``"auto"`` is ``"error"`` when the universe has a ``group``
        column, else ``"off"``.
    lock : path-like, "auto" or None, default "auto"
        The dvc.lock for the staleness check; None skips it.
    data_dir : str, optional
        What ``{DATA_DIR}`` stands for (default: inferred from the universe's sources).
    cache : StatCache, optional
        The stat cache (e.g. :func:`~dvc_cuvis.digests.stat_cache.open_stat_cache`); None uses a
        fresh in-memory one, so nothing is remembered between calls.
    checks : iterable of str, default CHECKS
        Which of ``universe, content, selection, constraints, staleness`` to run.
    allow_partial, allow_unpinned : bool, default False
        Accept a selector that matches only part of its ids / a split that pins no hash.

    Returns
    -------
    DriftReport
        ``ok`` (no drift, no violation), ``exit_code`` (0 or 1), ``findings`` (one
        :class:`Finding` per check run: ``check``, ``status`` — ``ok``, ``drift``,
        ``violation`` or ``skipped`` —, ``summary``, ``details``, ``fix``),
        ``render()`` for people and ``to_dict()`` for JSON.  A split that does not match
        the data is reported here, never raised: hand the report to :func:`ensure` to
        raise :class:`DriftError`.

    Raises
    ------
    DvcCuvisError
        An unknown name in ``checks``.
    MissingSplitsFileError, MissingUniverseError
        The split or universe file does not exist (both are ``FileNotFoundError``).
    SplitsFileError, UniverseError
        The split or universe file cannot be read or does not validate.

    See Also
    --------
    ensure : raise or log a failed report.
    dvc_cuvis.train.datamodule.guard : run this before a DataModule's ``setup()``.
    dvc_cuvis.model.splits.effective_splits : what a ``splits_path`` config loads.

    Notes
    -----
    What is trusted: without ``deep``, a file whose (inode, size, mtime) is unchanged
    keeps its cached md5, and files under a dvc.lock stage whose hashes and params still
    match are taken as DVC recorded them.  A check that cannot run is ``skipped``, and a
    skipped check does not fail the report: a universe.csv without an ``md5`` column
    (enumerated with ``--no-hash``) has no content check, and without a dvc.lock there
    is no staleness check.  The universe check compares the pin with the universe
    *file*; samples added on disk but not yet enumerated are seen only with ``current``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from dvc_cuvis import BakeOptions, bake
    >>> from dvc_cuvis import verify
    >>> from dvc_cuvis import save_splits
    >>> from dvc_cuvis import read_universe
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> rows = "".join(f"day{k}.cu3s,0-1\\n" for k in range(6))
    >>> _ = (d / "universe.csv").write_text("source,index\\n" + rows)
    >>> (baked,) = bake(read_universe(d / "universe.csv"), BakeOptions())
    >>> save_splits(baked.config, d / "splits.json")
    >>> report = verify(d / "splits.json", d / "universe.csv", lock=None)
    >>> report.ok, [(f.check, f.status) for f in report.findings]
    (True, [('universe', 'ok'), ('content', 'skipped'), ('selection', 'ok'),
            ('constraints', 'ok'), ('staleness', 'skipped')])

    A sample added to universe.csv after the bake is drift:

    >>> with open(d / "universe.csv", "a") as fh:
    ...     _ = fh.write("day6.cu3s,0\\n")
    >>> report = verify(d / "splits.json", d / "universe.csv", lock=None)
    >>> report.ok, report.exit_code, report.finding("universe").summary
    (False, 1, 'universe.csv changed since the split was baked (pinned ..., now ...)')
    """
    wanted = set(checks)
    unknown = wanted - set(CHECKS)
    if unknown:
        raise DvcCuvisError(f"unknown check(s) {sorted(unknown)}; choose from {list(CHECKS)}")
    named = None
    if isinstance(splits, DataSplitConfig):  # cuvis-ai's splits_path idiom: what will load
        splits, named = effective_splits(splits)
    splits_path = None if isinstance(splits, DataSplitConfig) else Path(splits)
    where = str(splits_path or named or "splits")
    uni_path = universe.path if isinstance(universe, Universe) else Path(universe)
    cache = StatCache(None) if deep or cache is None else cache
    staleness: Finding | None = None
    vouched: dict[str, list[str]] = {}
    if "staleness" in wanted:
        targets = [p for p in (splits_path, uni_path) if p is not None]
        staleness, vouched = _check_staleness(_lock_path(lock, splits_path, uni_path), targets,
                                              cache, uni_path)
        if deep:
            vouched = {}
    options = [sorted(wanted & set(CHECKS[:4])), group_leakage, data_dir, allow_partial,
               allow_unpinned,
               sorted((name_to_id or {}).items())]
    memo = None
    if not deep and current is None and not vouched and uni_path is not None \
            and wanted - {"staleness"}:
        memo = VerdictMemo.before_reading(cache, splits, universe, options)
        records = memo.records() if memo is not None else None
        if records is not None:
            reused = [Finding(**r) for r in records]
            if staleness is not None:
                reused.append(staleness)
            cache.save()
            return DriftReport(where, str(uni_path), reused, reused_verdict=True,
                               hashing=cache.stats())
    split_stamp = None
    if isinstance(splits, DataSplitConfig):
        cfg = splits
    else:
        cfg, split_stamp = load_splits_stamped(splits)
    uni = universe if isinstance(universe, Universe) else read_universe(universe)
    cfg_resolved, data_dir = _resolve_tokens(cfg, uni, data_dir)
    try:
        now, own_digests = _current_universe(current, cache, vouched)
    except DvcCuvisError:  # a clone that has not pulled: the content check says so
        from dvc_cuvis.repo.pull import data_not_pulled

        if not data_not_pulled(uni):
            raise
        now, own_digests = None, False
    findings: list[Finding] = []
    res = None
    sel_finding = None
    if wanted & {"selection", "constraints", "content"}:
        sel_finding, res = _check_selection(cfg_resolved, uni, name_to_id, where,
                                            allow_partial)
    if "universe" in wanted:
        finding = _check_universe(cfg, uni, now, data_dir, allow_unpinned)
        if vouched and finding.status == "ok":
            finding.summary += "; dvc.lock vouches that the data is what it was enumerated from"
        findings.append(finding)
    witness: list[tuple[str, Stamp | None]] = []
    if "content" in wanted:  # under deep, only digests computed in this call are reused
        findings.append(_check_content(uni, cache, res.assignment() if res else None,
                                       now if own_digests or not deep else None, vouched,
                                       witness))
        if findings[-1].status == "drift":
            from dvc_cuvis.check.not_pulled import explain_not_pulled

            explain_not_pulled([*findings, *([staleness] if staleness else [])], uni)
    if "selection" in wanted and sel_finding is not None:
        findings.append(sel_finding)
    if "constraints" in wanted:
        findings.append(_check_constraints(cfg, res, group_leakage))
    if memo is not None and not any(f.failed for f in findings):
        memo.store([f.record() for f in findings], witness, uni, splits, split_stamp, options)
    if staleness is not None:
        findings.append(staleness)
    cache.save()
    return DriftReport(where, str(uni.path or "universe"), findings, hashing=cache.stats())


def check_verify_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`VERIFY_MODES`, else a :class:`DvcCuvisError`."""
    if mode not in VERIFY_MODES:
        raise DvcCuvisError(f"verify must be strict, warn or off, got {mode!r}")
    return mode


def ensure(report: DriftReport, mode: str = "strict") -> DriftReport:
    """Act on a report: ``strict`` raises :class:`DriftError`, ``warn`` logs, ``off`` nothing.

    :func:`verify` only reports; this is the one place where a failed report stops a
    run, so a DataModule, a script and a notebook all refuse drift the same way.

    Parameters
    ----------
    report : DriftReport
        What :func:`verify` returned.
    mode : {"strict", "warn", "off"}, default "strict"
        ``strict`` raises on a failed report, ``warn`` logs ``report.render()`` as a
        warning (logger ``dvc_cuvis.check.drift``), ``off`` does nothing.

    Returns
    -------
    DriftReport
        ``report`` itself, when it is clean or ``mode`` lets it pass.

    Raises
    ------
    DriftError
        ``mode="strict"`` and the report failed; ``err.report`` holds the report, and
        the message names every failed check.  It is a
        :class:`~dvc_cuvis.errors.DvcCuvisError` with ``exit_code`` 1 (a check failed),
        not 2.
    DvcCuvisError
        ``mode`` is not one of the three.

    See Also
    --------
    verify : make the report.
    dvc_cuvis.train.datamodule.guard : verify and ensure before a DataModule's ``setup()``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from cuvis_ai_schemas.training.data import DataSplitConfig, Selector
    >>> from dvc_cuvis import DriftError, ensure, verify
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "universe.csv").write_text("source,index\\na.cu3s,0\\nb.cu3s,0\\n")
    >>> split = DataSplitConfig(train=[Selector(kind="files", paths=["a.cu3s", "c.cu3s"])])
    >>> report = verify(split, d / "universe.csv", lock=None)
    >>> ensure(report, "off") is report
    True
    >>> try:
    ...     ensure(report)
    ... except DriftError as err:
    ...     print(err.exit_code, [f.check for f in err.report.findings if f.failed])
    1 ['universe', 'selection']
    """
    check_verify_mode(mode)
    if report.ok or mode == "off":
        return report
    if mode == "strict":
        raise DriftError(report)
    import logging

    logging.getLogger(__name__).warning("%s", report.render().rstrip())
    return report
