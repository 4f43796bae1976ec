"""The drift check: is this split still valid for the data that is here now?

Upstream verifies ``universe_hash`` only while positional ``dir_indices`` remain; for baked
splits "staleness detection is the author's concern".  This module is that concern, run
by ``dvc-cuvis check`` and by :mod:`dvc_cuvis.train.datamodule` before anything loads.  Checks,
each reported on its own, each in a module of its own:

1. **universe** (:mod:`~dvc_cuvis.check.universe`) — the pinned ``universe_hash`` against
   universe.csv (and, given the enumerate options, universe.csv against what is on disk
   now: added, removed, renamed, re-digested); it also notes samples on which the two
   upstream notions of "anomalous" disagree
   (:data:`dvc_cuvis.model.anomalous.ANOMALOUS_FOR_PARITY`);
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
in :mod:`dvc_cuvis.check.fixes`.  This module runs the checks in order, as named steps
that share one signature (``step(ctx: CheckContext) -> Finding``, :data:`STEPS`) over one
frozen context built once per call; :class:`~dvc_cuvis.check.options.CheckOptions` holds
every option.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis.check.content import check_content
from dvc_cuvis.check.duplicates import check_duplicates
from dvc_cuvis.check.facts import OtherStagesAbsent, Plain, UniverseFacts, rescan_note
from dvc_cuvis.check.failed_run import missing_input
from dvc_cuvis.check.fixes import Workspace
from dvc_cuvis.check.not_pulled import explain_not_pulled, stage_outputs_not_pulled
from dvc_cuvis.check.options import CheckOptionError, CheckOptions, Current
from dvc_cuvis.check.report import CHECKS, DriftReport, Finding
from dvc_cuvis.check.selection import check_constraints, check_selection
from dvc_cuvis.check.spectral import NO_FOLDER, spectral_results
from dvc_cuvis.check.staged import Staged
from dvc_cuvis.check.staleness import check_staleness
from dvc_cuvis.check.summaries import missing_note, read_split_summaries, unpulled
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
from dvc_cuvis.digests.stat_cache import StatCache, open_stat_cache
from dvc_cuvis.errors import DvcCuvisError, NotPulledError, terminal
from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.splits import effective_splits, load_splits_stamped
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe
from dvc_cuvis.repo.lockfile import find_lock

__all__ = ["CHECKS", "STEPS", "TOKEN", "VERIFY_MODES", "CheckContext", "CheckOptionError",
           "CheckOptions", "DriftError", "DriftReport", "Finding", "Target",
           "check_verify_mode", "detokenize", "ensure", "find_lock", "infer_data_dir",
           "is_tokenized", "tokenized_hash", "verify"]

#: What the universe finding's summary adds when dvc.lock vouches for the data.
VOUCHED = "; dvc.lock vouches that the data is what it was enumerated from"


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


@dataclass(frozen=True)
class Target:
    """What one call checks: the split and universe as given, their paths, the name a
    report gives the split, and the workspace its fix lines name."""

    splits: Path | str | DataSplitConfig
    universe: Path | str | Universe
    splits_path: Path | None
    uni_path: Path | None
    where: str
    ws: Workspace

    @classmethod
    def of(cls, splits: Path | str | DataSplitConfig, universe: Path | str | Universe,
           absolute: bool = False) -> Target:
        """The target; a config's ``splits_path`` is followed as cuvis-ai follows it."""
        named = None
        if isinstance(splits, DataSplitConfig):
            splits, named = effective_splits(splits)
        splits_path = None if isinstance(splits, DataSplitConfig) else Path(splits)
        uni_path = universe.path if isinstance(universe, Universe) else Path(universe)
        anchor = uni_path or splits_path
        return cls(splits, universe, splits_path, uni_path, str(splits_path or named or "splits"),
                   Workspace(anchor.parent if anchor is not None else None, absolute=absolute))

    @property
    def folder(self) -> Path | None:
        """The split's folder (else the universe's): where ``lock="auto"`` looks."""
        anchor = self.splits_path or self.uni_path
        return anchor.parent if anchor is not None else None


@dataclass(frozen=True)
class CheckContext:
    """Everything the steps read, built once per call: options, inputs, what dvc.lock
    vouches for, the data on disk now and the split's resolution.  ``witness`` collects
    the stamps of the bytes the content step read (what a remembered verdict rests on)."""

    opts: CheckOptions
    target: Target
    cache: StatCache
    cfg: DataSplitConfig
    split_stamp: Stamp | None
    uni: Universe
    data_dir: str | None
    now: Universe | None
    own_digests: bool
    staleness: Finding | None
    vouched: Mapping[str, Sequence[str]]
    selection: Finding | None
    resolution: Resolution | None
    witness: list[tuple[str, Stamp | None]] = dataclasses.field(default_factory=list)


#: One check: what it found in the context (None: nothing to report).
Step = Callable[[CheckContext], "Finding | None"]


def _universe_step(ctx: CheckContext) -> Finding:
    """The pin against universe.csv, and universe.csv against the data on disk."""
    found = check_universe(ctx.cfg, ctx.uni, ctx.now, ctx.data_dir, ctx.opts.allow_unpinned,
                           ctx.target.ws, ctx.target.splits_path)
    facts = found.facts
    if ctx.vouched and found.status == "ok" and isinstance(facts, UniverseFacts):
        return dataclasses.replace(found, summary=found.summary + VOUCHED,
                                   facts=dataclasses.replace(facts, vouched=True))
    return found


def _content_step(ctx: CheckContext) -> Finding:
    """Every file's bytes against its recorded md5 (under ``deep``, only digests computed
    in this call are reused)."""
    res, rows = ctx.resolution, None
    if ctx.opts.stages is not None and res is not None:
        rows = {int(p) for s in ctx.opts.stages for p in res.stages[s]}
    return check_content(ctx.uni, ctx.cache, res.assignment() if res else None,
                         ctx.now if ctx.own_digests or not ctx.opts.deep else None,
                         ctx.vouched, ctx.witness, ctx.target.ws, rows)


def _selection_step(ctx: CheckContext) -> Finding | None:
    """Every selector resolves, fully (resolved once, in the context)."""
    return ctx.selection


def _constraints_step(ctx: CheckContext) -> Finding:
    """The split's constraints, group leakage, neighbouring frames, duplicates and spectra
    (the summaries they read are read once, each shard a witness of the verdict)."""
    o, t, res = ctx.opts, ctx.target, ctx.resolution
    wanted = {o.content_duplicate, o.near_duplicate, o.spectral_shift, o.wavelength_grid}
    read, absent = None, NO_FOLDER
    if o.summaries is not None and res is not None and wanted != {"off"}:
        if unpulled(o.summaries, o.lock if isinstance(o.lock, Path) else None):
            absent = f"{t.ws.rel(o.summaries)} is a DVC output that is not (all) pulled"
        else:
            read = read_split_summaries(res, o.summaries, ctx.witness)
    duplicates = check_duplicates(read, o.content_duplicate, o.near_duplicate)
    say = functools.partial(missing_note, ws=t.ws, folder=o.summaries, universe=t.uni_path,
                            splits=t.splits_path, pull=absent != NO_FOLDER)
    spectra = (spectral_results(res, read, o.spectral_shift, o.wavelength_grid, say, absent)
               if res is not None else None)
    return check_constraints(ctx.cfg, res, o.group_leakage, (o.adjacent_frames, o.adjacent_k),
                             spectra, duplicates)


#: The checks :func:`verify` runs, in order (staleness runs first, outside: see verify).
STEPS: tuple[tuple[str, Step], ...] = (
    ("universe", _universe_step), ("content", _content_step),
    ("selection", _selection_step), ("constraints", _constraints_step))


def _load(t: Target, staged: Staged | None) -> tuple[DataSplitConfig, Stamp | None, Universe]:
    """The split (and its file's stamp) and the universe, as given, staged or on disk."""
    split_stamp = None
    if isinstance(t.splits, DataSplitConfig):
        cfg = t.splits
    elif staged is not None and staged.holds(t.splits):
        cfg = staged.splits(t.splits)
    else:
        cfg, split_stamp = load_splits_stamped(t.splits)
    if isinstance(t.universe, Universe):
        return cfg, split_stamp, t.universe
    if staged is not None and staged.holds(t.universe):
        return cfg, split_stamp, staged.universe(t.universe)
    return cfg, split_stamp, read_universe(t.universe)


def _context(t: Target, opts: CheckOptions, cache: StatCache, staleness: Finding | None,
             vouched: Mapping[str, Sequence[str]]) -> CheckContext:
    """Read the inputs, re-scan the data if asked, resolve the split: the steps' context."""
    with missing_input(t.splits_path, t.uni_path):  # removed by a failed `dvc repro`?
        cfg, split_stamp, uni = _load(t, opts.staged)
    try:
        now, own_digests = _rescan(opts.current, cache, vouched, uni)
    except NotPulledError:  # a clone that has not pulled: the content check says so
        now, own_digests = None, False
    resolved_cfg, data_dir = resolve_tokens(cfg, uni, opts.data_dir)
    selection, res = None, None
    if set(opts.checks) & {"selection", "constraints", "content"}:
        selection, res = check_selection(
            resolved_cfg, uni, dict(opts.name_to_id) if opts.name_to_id else None, t.where,
            opts.allow_partial, t.ws, t.splits_path)
    return CheckContext(opts, t, cache, cfg, split_stamp, uni, data_dir, now, own_digests,
                        staleness, vouched, selection, res)


def _revised(ctx: CheckContext, found: dict[str, Finding]) -> dict[str, Finding]:
    """The steps' findings and staleness, with "not pulled" told from drift (new findings,
    none edited)."""
    content = found.get("content")
    if ctx.staleness is None:
        pass
    elif content is not None and isinstance(content.facts, OtherStagesAbsent):
        found["staleness"] = stage_outputs_not_pulled(
            ctx.staleness, ctx.uni, list(content.facts.missing), ctx.opts.stages or (),
            ctx.target.ws)
    else:
        found["staleness"] = ctx.staleness
    if content is not None and content.status == "drift":
        return explain_not_pulled(found, ctx.uni, ctx.target.ws)
    return found


def _noted(found: Mapping[str, Finding], opts: CheckOptions) -> list[Finding]:
    """The findings, the universe finding saying why the data was not re-scanned (unless
    dvc.lock vouches for it)."""
    universe = found.get("universe")
    why = opts.not_rescanned if opts.current is None else ""
    if universe is None or not why:
        return list(found.values())
    facts = universe.facts
    noted: UniverseFacts | Plain
    if isinstance(facts, UniverseFacts):
        noted = facts if facts.vouched else dataclasses.replace(facts, not_rescanned=why)
    else:  # a remembered verdict's plain details
        noted = Plain({**universe.details, **rescan_note(why)})
    return [dataclasses.replace(f, facts=noted) if f is universe else f for f in found.values()]


def _staleness(t: Target, opts: CheckOptions, cache: StatCache
               ) -> tuple[Finding | None, Mapping[str, Sequence[str]]]:
    """dvc.lock first: what it vouches for is neither re-scanned nor hashed."""
    if "staleness" not in opts.checks:
        return None, {}
    targets = [p for p in (t.splits_path, t.uni_path) if p is not None]
    lock = Path(opts.lock) if opts.lock else None
    finding, vouched = check_staleness(lock, targets, cache, t.uni_path, t.ws, opts.staged)
    return finding, ({} if opts.deep else vouched)


def _memo(t: Target, opts: CheckOptions, cache: StatCache,
          vouched: Mapping[str, Sequence[str]]) -> VerdictMemo | None:
    """The verdict memo slot, where a remembered verdict may stand for this check."""
    if (opts.deep or opts.current is not None or vouched or t.uni_path is None
            or not set(opts.checks) - {"staleness"} or (opts.staged and opts.staged.paths)):
        return None
    return VerdictMemo.before_reading(cache, t.splits, t.universe, opts.memo_key())


def verify(
    splits: Path | str | DataSplitConfig,
    universe: Path | str | Universe,
    opts: CheckOptions | None = None,
    cache: StatCache | None = None,
    **keywords: Any,
) -> DriftReport:
    """Run the drift checks and return the report (never raises on drift; see :func:`ensure`).

    ``opts`` holds every option (:class:`~dvc_cuvis.check.options.CheckOptions`); the
    keyword form ``verify(splits, universe, lock=None)`` is shorthand for
    ``verify(splits, universe, CheckOptions(lock=None))`` (keywords override ``opts``).

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
    opts : CheckOptions, optional
        The options below, as one value (default: ``CheckOptions()``).
    cache : StatCache, optional
        The stat cache (e.g. :func:`~dvc_cuvis.digests.stat_cache.open_stat_cache`); None
        opens ``opts.stat_cache`` (None there: a fresh in-memory one, so nothing is
        remembered between calls).
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
    spectral_shift : {"error", "warn", "off"}, default "warn"
        Whether the stages' recording mean spectra differ (a permutation test over whole
        recordings, :mod:`dvc_cuvis.leakage.shift`), from the frames' summaries.
    wavelength_grid : {"error", "warn", "off"}, default "error"
        Whether the split's frames lie on more than one wavelength grid
        (:mod:`dvc_cuvis.leakage.grids`), from the frames' summaries.
    adjacent_k : int, default 1
        How many positions apart two frames still count as neighbours.
    content_duplicate : {"error", "warn", "off"}, default "error"
        Severity of the exact-duplicate check: frames of one content in different stages
        (:mod:`dvc_cuvis.check.duplicates`), and of samples without a signature.
    near_duplicate : {"error", "warn", "off"}, default "warn"
        Severity of the near-duplicate check: near copies in different stages.
    summaries : path-like, optional
        The materialized folder whose summaries shards hold the frames' signatures and
        spectral summaries; default the universe's own folder when materialize wrote it (a
        ``summaries/`` beside it).  Without either the duplicate checks do not run and the
        spectral checks say, once, that they did not, and the command that produces the
        summaries.
    lock : path-like, "auto" or None, default "auto"
        The dvc.lock for the staleness check; None skips it.
    data_dir : str, optional
        What ``{DATA_DIR}`` stands for (default: inferred from the universe's sources).
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
    absolute_paths : bool, default False
        Name every path in the fixes absolutely (each command runs from any folder), for a
        report read where this process's working folder means nothing: a DataModule run by
        a training service, whose errors reach a GUI.

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
    OptionError
        An impossible option (an unknown name in ``checks``, a bad severity), naming it.
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

    opts = dataclasses.replace(opts or CheckOptions(), **keywords)
    t = Target.of(splits, universe, opts.absolute_paths)
    opts = opts.resolved(t.folder, t.uni_path)
    if opts.deep or (cache is None and opts.stat_cache is None):
        cache = StatCache(None)
    elif cache is None:
        cache = open_stat_cache(opts.stat_cache)
    staleness, vouched = _staleness(t, opts, cache)
    memo = _memo(t, opts, cache, vouched)
    records = memo.records() if memo is not None else None
    if records is not None:  # the remembered clean verdict, with this call's staleness
        kept = {r["check"]: Finding(**r) for r in records}
        return _report(t, {**kept, **({"staleness": staleness} if staleness else {})}, opts,
                       cache, str(t.uni_path), reused=True)
    ctx = _context(t, opts, cache, staleness, vouched)
    ran = {name: step(ctx) for name, step in STEPS if name in opts.checks}
    found = _revised(ctx, {name: f for name, f in ran.items() if f is not None})
    checked = [f for name, f in found.items() if name != "staleness"]
    if memo is not None and not any(isinstance(f.facts, OtherStagesAbsent) or f.failed
                                    for f in checked):
        # a verdict with other stages not pulled rests on absent files: never reused
        memo.store([f.record() for f in checked], ctx.witness, ctx.uni, t.splits,
                   ctx.split_stamp, opts.memo_key())
    return _report(t, found, opts, cache, str(ctx.uni.path or "universe"))


def _report(t: Target, found: Mapping[str, Finding], opts: CheckOptions, cache: StatCache,
            universe: str, reused: bool = False) -> DriftReport:
    """The report of ``found``, with the cache saved and its statistics."""
    cache.save()
    return DriftReport(t.where, universe, _noted(found, opts), reused_verdict=reused,
                       hashing=cache.stats())


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
