"""The drift check: is this split still valid for the data that is here now?

Upstream verifies ``universe_hash`` only while positional ``dir_indices`` remain; for baked
splits "staleness detection is the author's concern".  This module is that concern, run
by ``dvc-cuvis check`` and by :mod:`dvc_cuvis.train.datamodule` before anything loads.  Checks,
each reported on its own, each in a module of its own:

1. **universe** (:mod:`~dvc_cuvis.check.universe`) — the pinned ``universe_hash`` against
   universe.csv (and, given the enumerate options, universe.csv against what is on disk
   now: added, removed, renamed, re-digested); it also notes samples on which the two
   upstream notions of "anomalous" disagree
   (:data:`dvc_cuvis.model.universe.ANOMALOUS_FOR_PARITY`);
2. **content** (:mod:`~dvc_cuvis.check.content`) — every physical file against its recorded
   ``md5`` (stat cache; ``deep`` re-hashes everything);
3. **selection** (:mod:`~dvc_cuvis.check.selection`) — every selector resolves, and resolves
   fully (a partial match fails);
4. **constraints** (same module) — the file's constraints plus group leakage;
5. **staleness** (:mod:`~dvc_cuvis.check.staleness`) — where a ``dvc.lock`` exists, its
   recorded hashes and params of the stages that produce or read these files against the
   workspace.

GUI-authored splits whose sources carry the ``{DATA_DIR}`` token are verified by
re-tokenizing the data-dir prefix before hashing (:mod:`~dvc_cuvis.check.tokens`).

Reading dvc.lock lives in :mod:`dvc_cuvis.repo.lockfile`; remembering a clean verdict in
:mod:`dvc_cuvis.check.verdicts`; the report in :mod:`dvc_cuvis.check.report`; the fix lines
in :mod:`dvc_cuvis.check.fixes`.  This module runs the checks in order, as named steps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis.check.content import check_content
from dvc_cuvis.check.duplicates import check_duplicates, summaries_folder
from dvc_cuvis.check.facts import OtherStagesAbsent
from dvc_cuvis.check.fixes import Workspace
from dvc_cuvis.check.not_pulled import explain_not_pulled, stage_outputs_not_pulled
from dvc_cuvis.check.report import CHECKS, DriftReport, Finding
from dvc_cuvis.check.selection import check_constraints, check_selection
from dvc_cuvis.check.staged import Staged
from dvc_cuvis.check.staleness import check_staleness, lock_path
from dvc_cuvis.check.tokens import (
    TOKEN,
    detokenize,
    infer_data_dir,
    is_tokenized,
    resolve_tokens,
    tokenized_hash,
)
from dvc_cuvis.check.universe import check_universe
from dvc_cuvis.check.verdicts import VerdictMemo
from dvc_cuvis.config.specs import VERIFY_MODES
from dvc_cuvis.digests.hashing import Stamp
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError, NotPulledError, terminal
from dvc_cuvis.leakage.adjacent import check_k, check_severity
from dvc_cuvis.model.splits import effective_splits, load_splits_stamped
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe
from dvc_cuvis.repo.lockfile import find_lock

if TYPE_CHECKING:
    from dvc_cuvis.sources import EnumerateOptions

__all__ = ["CHECKS", "TOKEN", "VERIFY_MODES", "DriftError", "DriftReport", "Finding",
           "check_verify_mode", "detokenize", "ensure", "find_lock", "infer_data_dir",
           "is_tokenized", "tokenized_hash", "verify"]


class DriftError(DvcCuvisError):
    """Raised by strict verification; carries the report and the fix lines ``check`` prints.

    ``str(err)`` is the one-line verdict followed by one ``fix:`` line per failed check,
    each exactly as ``dvc-cuvis check`` prints it, so a caller who only sees the error can
    paste the same command; ``err.fixes`` holds those lines, ``err.summary`` the verdict.
    """

    exit_code = 1

    def __init__(self, report: DriftReport) -> None:
        """The error for ``report`` (a failed one)."""
        failed = ", ".join(f"{f.check} ({f.summary})" for f in report.findings if f.failed)
        self.summary = terminal(f"{report.splits} does not match the data: {failed}")
        self.fixes: tuple[str, ...] = tuple(
            terminal(f"fix: {f.fix}") for f in report.findings if f.failed and f.fix)
        super().__init__("\n".join([self.summary, *(f"  {fix}" for fix in self.fixes)]))
        self.report = report


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

    # the check compares md5s (a damaged frame is a modified one): not enumerate's door
    return enumerate_universe(dataclasses.replace(current, cache=cache, verify=False))[0], True


def _rescan(
    current: Current, cache: StatCache, vouched: Mapping[str, Sequence[str]], uni: Universe
) -> tuple[Universe | None, bool]:
    """:func:`_current_universe`, or :class:`NotPulledError` when the re-scan failed because
    the files universe.csv names are tracked by DVC and not pulled (any other error
    stands)."""
    try:
        return _current_universe(current, cache, vouched)
    except NotPulledError:
        raise
    except DvcCuvisError as exc:
        from dvc_cuvis.repo.pull import data_not_pulled

        if data_not_pulled(uni):
            raise NotPulledError(f"{uni.path}: the data it names is not pulled ({exc})") from exc
        raise


def _wanted(checks: Iterable[str]) -> set[str]:
    """The checks to run; a :class:`DvcCuvisError` for an unknown name."""
    wanted = set(checks)
    unknown = wanted - set(CHECKS)
    if unknown:
        raise DvcCuvisError(f"unknown check(s) {sorted(unknown)}; choose from {list(CHECKS)}")
    return wanted


@dataclass
class _Run:
    """One call of :func:`verify`: its inputs, and what each step hands the next."""

    splits: Path | str | DataSplitConfig
    universe: Path | str | Universe
    wanted: set[str]
    cache: StatCache
    deep: bool
    options: list[Any]
    where: str = ""
    staged: Staged | None = None
    stages: tuple[str, ...] | None = None
    splits_path: Path | None = None
    uni_path: Path | None = None
    staleness: Finding | None = None
    #: the duplicate constraints: the materialized folder (None: not run), severities
    duplicates: tuple[Path | None, str, str] = (None, "off", "off")
    vouched: dict[str, list[str]] = field(default_factory=dict)
    witness: list[tuple[str, Stamp | None]] = field(default_factory=list)
    ws: Workspace = field(init=False)

    def __post_init__(self) -> None:
        named = None
        if isinstance(self.splits, DataSplitConfig):  # cuvis-ai's splits_path idiom
            self.splits, named = effective_splits(self.splits)
        self.splits_path = (None if isinstance(self.splits, DataSplitConfig)
            else Path(self.splits))
        self.where = str(self.splits_path or named or "splits")
        self.uni_path = (self.universe.path if isinstance(self.universe, Universe)
            else Path(self.universe))
        anchor = self.uni_path or self.splits_path
        self.ws = Workspace(anchor.parent if anchor is not None else None)

    def check_staleness(self, lock: Path | str | None) -> None:
        """dvc.lock first: what it vouches for is neither re-scanned nor hashed."""
        if "staleness" not in self.wanted:
            return
        targets = [p for p in (self.splits_path, self.uni_path) if p is not None]
        self.staleness, self.vouched = check_staleness(
            lock_path(lock, self.splits_path, self.uni_path), targets, self.cache,
            self.uni_path, self.ws, self.staged)
        if self.deep:
            self.vouched = {}

    def memo(self, current: Current) -> VerdictMemo | None:
        """The verdict memo slot, where a remembered verdict may stand for this check."""
        if (self.deep or current is not None or self.vouched or self.uni_path is None
                or not self.wanted - {"staleness"} or (self.staged and self.staged.paths)):
            return None
        return VerdictMemo.before_reading(self.cache, self.splits, self.universe, self.options)

    def reused(self, memo: VerdictMemo | None) -> DriftReport | None:
        """The remembered clean verdict (with this call's staleness), if it stands."""
        records = memo.records() if memo is not None else None
        if records is None:
            return None
        findings = [Finding(**r) for r in records]
        if self.staleness is not None:
            findings.append(self.staleness)
        self.cache.save()
        return DriftReport(self.where, str(self.uni_path), findings, reused_verdict=True,
                           hashing=self.cache.stats())

    def run_checks(self, cfg: DataSplitConfig, uni: Universe, now: Universe | None,
                   own_digests: bool, data_dir: str | None, name_to_id: dict[str, int] | None,
                   group_leakage: str, allow_partial: bool, allow_unpinned: bool,
                   adjacent: tuple[str, int] = ("warn", 1)) -> list[Finding]:
        """universe, content, selection, constraints, in that order (those wanted)."""
        cfg_resolved, data_dir = resolve_tokens(cfg, uni, data_dir)
        findings: list[Finding] = []
        res = sel_finding = None
        if self.wanted & {"selection", "constraints", "content"}:
            sel_finding, res = check_selection(cfg_resolved, uni, name_to_id, self.where,
                                               allow_partial, self.ws, self.splits_path)
        if "universe" in self.wanted:
            finding = check_universe(cfg, uni, now, data_dir, allow_unpinned, self.ws,
                                     self.splits_path)
            if self.vouched and finding.status == "ok":
                finding.summary += "; dvc.lock vouches that the data is what it was enumerated from"
            findings.append(finding)
        if "content" in self.wanted:  # under deep, only digests computed in this call are reused
            rows = None
            if self.stages is not None and res is not None:
                rows = {int(p) for s in self.stages for p in res.stages[s]}
            findings.append(check_content(uni, self.cache, res.assignment() if res else None,
                                          now if own_digests or not self.deep else None,
                                          self.vouched, self.witness, self.ws, rows))
            elsewhere = findings[-1].facts
            if isinstance(elsewhere, OtherStagesAbsent) and self.staleness is not None:
                stage_outputs_not_pulled(self.staleness, uni, list(elsewhere.missing),
                                         self.stages or (), self.ws)
            if findings[-1].status == "drift":
                explain_not_pulled([*findings, *([self.staleness] if self.staleness else [])],
                                   uni, self.ws)
        if "selection" in self.wanted and sel_finding is not None:
            findings.append(sel_finding)
        if "constraints" in self.wanted:
            findings.append(check_constraints(cfg, res, group_leakage, adjacent,
                                              check_duplicates(res, *self.duplicates,
                                                               witness=self.witness)))
        return findings


def verify(
    splits: Path | str | DataSplitConfig,
    universe: Path | str | Universe,
    *,
    current: Current = None,
    deep: bool = False,
    name_to_id: dict[str, int] | None = None,
    group_leakage: str = "auto",
    adjacent_frames: str = "warn",
    adjacent_k: int = 1,
    content_duplicate: str = "error",
    near_duplicate: str = "warn",
    summaries: Path | str | None = None,
    lock: Path | str | None = "auto",
    data_dir: str | None = None,
    cache: StatCache | None = None,
    checks: Iterable[str] = CHECKS,
    allow_partial: bool = False,
    allow_unpinned: bool = False,
    staged: Staged | None = None,
    stages: Sequence[str] | None = None,
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
        column, else ``"off"``; a leaking recording derived from the files (no ``group``
        cell names it) is a warning under ``"auto"``.
    adjacent_frames : {"error", "warn", "off"}, default "warn"
        Severity of the neighbouring-frames check: frames of one recording within
        ``adjacent_k`` positions of each other in different stages
        (:mod:`dvc_cuvis.leakage.adjacent`).
    adjacent_k : int, default 1
        How many positions apart two frames still count as neighbours.
    content_duplicate : {"error", "warn", "off"}, default "error"
        Severity of the exact-duplicate check: frames of one content in different stages
        (:mod:`dvc_cuvis.check.duplicates`), and of samples without a signature.
    near_duplicate : {"error", "warn", "off"}, default "warn"
        Severity of the near-duplicate check: near copies in different stages.
    summaries : path-like, optional
        The materialized folder whose summaries shards hold the frames' signatures; default
        the universe's own folder when materialize wrote it (a ``summaries/`` beside it),
        else the duplicate checks do not run.
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
    staged : Staged, optional
        Check what a commit records (:func:`~dvc_cuvis.check.staged.staged_view`): the
        split, the universe and dvc.lock as git's index holds them.
    stages : sequence of str, optional
        Check the content of these stages' frames only (what a one-stage fetch brought):
        another stage's missing frame is noted as not pulled, not drift; a present frame
        that changed still fails, whatever its stage.  None checks every frame.

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
    >>> from dvc_cuvis import bake, BakeOptions, read_universe, save_splits, verify
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

    run = _Run(splits, universe, _wanted(checks), StatCache(None) if deep or cache is None
               else cache, deep, [], staged=staged,
               stages=_stage_names(stages))
    adjacent = (check_severity(adjacent_frames), check_k(adjacent_k, "adjacent_k"))
    run.duplicates = (summaries_folder(universe, summaries),
                      check_severity(content_duplicate, "content_duplicate"),
                      check_severity(near_duplicate, "near_duplicate"))
    run.options = [sorted(run.wanted & set(CHECKS[:4])), group_leakage, [*adjacent], data_dir,
                   allow_partial, allow_unpinned, sorted((name_to_id or {}).items())]
    if run.duplicates[0] is not None:  # the shards read are among the verdict's witnesses
        run.options.append([str(run.duplicates[0]), *run.duplicates[1:]])
    if run.stages is not None:  # a one-stage verdict never stands for the whole split's
        run.options.append(list(run.stages))
    run.check_staleness(lock)
    memo = run.memo(current)
    reused = run.reused(memo)
    if reused is not None:
        return reused
    cfg, split_stamp, uni = _inputs(run, universe, staged)
    try:
        now, own_digests = _rescan(current, run.cache, run.vouched, uni)
    except NotPulledError:  # a clone that has not pulled: the content check says so
        now, own_digests = None, False
    findings = run.run_checks(cfg, uni, now, own_digests, data_dir, name_to_id, group_leakage,
                              allow_partial, allow_unpinned, adjacent)
    partial = any(isinstance(f.facts, OtherStagesAbsent) for f in findings)
    if memo is not None and not partial and not any(f.failed for f in findings):
        # a verdict with other stages not pulled rests on absent files: never reused
        memo.store([f.record() for f in findings], run.witness, uni, run.splits, split_stamp,
                   run.options)
    if run.staleness is not None:
        findings.append(run.staleness)
    run.cache.save()
    return DriftReport(run.where, str(uni.path or "universe"), findings,
                       hashing=run.cache.stats())


def _inputs(run: _Run, universe: Path | str | Universe, staged: Staged | None
            ) -> tuple[DataSplitConfig, Any, Universe]:
    """The split (and its file's stamp, None when not read from a file) and the universe, as
    the working tree or, with ``staged``, git's index holds them."""
    split_stamp = None
    if isinstance(run.splits, DataSplitConfig):
        cfg = run.splits
    elif staged is not None and staged.holds(run.splits):
        cfg = staged.splits(run.splits)
    else:
        cfg, split_stamp = load_splits_stamped(run.splits)
    if isinstance(universe, Universe):
        return cfg, split_stamp, universe
    return cfg, split_stamp, (staged.universe(universe) if staged is not None
                              and staged.holds(universe) else read_universe(universe))


def _stage_names(stages: Sequence[str] | None) -> tuple[str, ...] | None:
    """``stages`` checked against the split's stage names (None stays None)."""
    if stages is None:
        return None
    from dvc_cuvis.model.splits import STAGES

    bad = [s for s in stages if s not in STAGES]
    if bad or not stages:
        raise DvcCuvisError(f"stage {', '.join(bad) or '(none)'}: choose from "
                            f"{', '.join(STAGES)}")
    return tuple(dict.fromkeys(stages))


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
