"""The drift check: is this split still valid for the data that is here now?

Upstream verifies ``universe_hash`` only while positional ``dir_indices`` remain; for baked
splits "staleness detection is the author's concern".  This module is that concern, run
by ``dvc-cuvis check`` and by :mod:`dvc_cuvis.datamodule` before anything loads.  Checks,
each reported on its own:

1. **universe** — the pinned ``universe_hash`` against universe.csv (and, given the
   enumerate options, universe.csv against what is on disk now: added, removed, renamed);
2. **content** — every physical file against its recorded ``md5`` (stat cache; ``deep``
   re-hashes everything);
3. **selection** — every selector resolves, and resolves fully (a partial match fails);
4. **constraints** — the file's constraints plus group leakage;
5. **staleness** — where a ``dvc.lock`` exists, its recorded hashes and params of the
   stages that produce or read these files against the workspace.

GUI-authored splits whose sources carry the ``{DATA_DIR}`` token are verified by
re-tokenizing the data-dir prefix before hashing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from cuvis_ai_schemas.training.data import DataSplitConfig, Selector

from dvc_cuvis import __version__
from dvc_cuvis.digests import Stamp, StatCache, dir_hash, stamp_of
from dvc_cuvis.errors import DvcCuvisError, SelectorError
from dvc_cuvis.params import diff_params
from dvc_cuvis.paths import PathGuard, is_within
from dvc_cuvis.splits import (
    EXCLUSIVE_STAGES,
    evaluate_constraints,
    load_splits_stamped,
    resolve,
)
from dvc_cuvis.universe import Universe, read_universe, universe_hash

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
        return self.status in ("drift", "violation")


@dataclass
class DriftReport:
    """All findings for one split + universe."""

    splits: str
    universe: str
    findings: list[Finding]
    #: True when the findings of the last clean check were reused (no file changed since)
    reused_verdict: bool = False

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
            mark = {"ok": "ok  ", "skipped": "skip", "drift": "DRIFT", "violation": "FAIL"}
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


def _selectors(cfg: DataSplitConfig) -> Iterable[Selector]:
    stack = [s for st in ("train", "val", "test", "predict") for s in getattr(cfg, st)]
    while stack:
        sel = stack.pop()
        yield sel
        stack.extend(sel.of)


def is_tokenized(cfg: DataSplitConfig) -> bool:
    """True if any selector names a source through the ``{DATA_DIR}`` token."""
    for sel in _selectors(cfg):
        names = [sel.source or "", *sel.paths, sel.pattern or ""]
        if any(TOKEN in n for n in names):
            return True
    return False


def detokenize(cfg: DataSplitConfig, data_dir: str) -> DataSplitConfig:
    """``cfg`` with ``{DATA_DIR}`` replaced by ``data_dir`` in every source, path and pattern."""
    data = json.loads(json.dumps(cfg.to_dict()).replace(TOKEN, data_dir.rstrip("/")))
    return DataSplitConfig.model_validate(data)


def tokenized_hash(uni: Universe, data_dir: str) -> str:
    """``universe_hash`` with the data-dir prefix of every source written as ``{DATA_DIR}``."""
    prefix = data_dir.rstrip("/") + "/"
    names = [TOKEN + "/" + s[len(prefix):] if s.startswith(prefix) else s
             for s in uni.source_names]
    order = sorted(range(len(names)), key=lambda c: names[c])
    off = uni.offsets
    idx = uni.indices.tolist()
    bare = uni.indexless
    return universe_hash(names[c] if bare is not None and bare[p] else f"{names[c]}#{idx[p]}"
                         for c in order for p in range(off[c], off[c + 1]))


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
        details["note"] = "the split pins no universe_hash"
    if current is not None:
        before, now = set(uni.uids()), set(current.uids())
        added, removed = sorted(now - before), sorted(before - now)
        renamed = _renames(uni, current, added, removed)
        if added or removed:
            problems.append(f"the data on disk differs from universe.csv: {len(added)} sample(s) "
                            f"added, {len(removed)} removed")
            details["added_sources"] = sorted({u.rsplit("#", 1)[0] for u in added})
            details["removed_sources"] = sorted({u.rsplit("#", 1)[0] for u in removed})
            details["renamed"] = [f"{a} -> {b}" for a, b in renamed]
            details["added_samples"] = len(added)
            details["removed_samples"] = len(removed)
    if problems:
        return Finding("universe", "drift", "; ".join(problems), details,
                       "re-enumerate and re-bake: `dvc repro` (or `dvc-cuvis enumerate` then "
                       "`dvc-cuvis bake --base <old splits.json>` to keep assignments)")
    summary = f"{len(uni)} samples, hash {actual[:12]} matches the pin"
    if current is not None:
        summary += "; universe.csv matches the data on disk"
    return Finding("universe", "ok", summary, details)


def _renames(
    old: Universe, new: Universe, added: list[str], removed: list[str]
) -> list[tuple[str, str]]:
    """Removed/added source pairs with identical content digests (a rename or move)."""
    if not (added and removed and old.has_column("md5") and new.has_column("md5")):
        return []

    def by_source(uni: Universe, uids: set[str]) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {}
        for p in range(len(uni)):
            if uni.uid(p) in uids:
                out.setdefault(uni.source(p), []).append(uni.value("md5", p))
        return {s: tuple(sorted(v)) for s, v in out.items()}

    gone = by_source(old, set(removed))
    came = by_source(new, set(added))
    pairs = []
    for src, digest in sorted(gone.items()):
        match = [s for s, d in sorted(came.items()) if d == digest and d]
        if match:
            pairs.append((src, match[0]))
            came.pop(match[0])
    return pairs


def _check_content(
    uni: Universe, cache: StatCache, assignment: np.ndarray | None,
    current: Universe | None = None, vouched: Mapping[str, Sequence[str]] | None = None,
    witness: list[tuple[str, Stamp | None]] | None = None,
) -> Finding:
    if not uni.has_column("md5"):
        return Finding("content", "skipped", "universe.csv has no md5 column (enumerate without "
                       "--no-hash to record content digests)")
    base = uni.path.parent if uni.path is not None else Path(".")
    guard = PathGuard(base)
    prefix = guard.base_abs + "/"
    covered: set[str] = set()  # relative to the universe's folder
    for top, rels in (vouched or {}).items():
        if not is_within(guard.root_real, os.path.realpath(top)):
            continue  # reached through a symlink out of the folder: the guard must see it
        if top.startswith(prefix):
            sub = top[len(prefix):]
            covered.update([f"{sub}/{r}" if r else sub for r in rels])
        elif top == guard.base_abs:
            covered.update(rels)
    files: dict[str, tuple[str, list[int]]] = {}
    skipped: set[str] = set()
    for column, digest_col in (("materialized_path", "md5"), ("annotation", "annotation_md5")):
        if not uni.has_column(digest_col):
            continue
        digests = uni.column(digest_col)
        paths = uni.column(column) if uni.has_column(column) else [""] * len(uni)
        if column == "materialized_path" and "" in paths:
            paths = [rel or uni.source(pos) for pos, rel in enumerate(paths)]
        distinct = set(paths)
        distinct.discard("")
        here = distinct & covered  # a dvc.lock hash that still matches covers these bytes
        skipped |= here
        if len(here) == len(distinct):
            continue
        for pos, (rel, digest) in enumerate(zip(paths, digests, strict=True)):
            if not rel or not digest or rel in here:
                continue
            entry = files.get(rel)
            if entry is None:
                files[rel] = (digest, [pos])
            else:
                entry[1].append(pos)
    # digests the re-enumeration just produced (same files, same stat cache): no second pass
    known: dict[str, str] = {}
    if current is not None:
        for column, digest_col in (("materialized_path", "md5"), ("annotation",
                                                                   "annotation_md5")):
            if current.has_column(column) and current.has_column(digest_col):
                known.update(zip(current.column(column), current.column(digest_col), strict=True))
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
    details: dict[str, Any] = {"missing": missing, "modified": modified}
    if not missing and not modified:
        via = f" ({len(skipped)} through dvc.lock's input hashes)" if skipped else ""
        return Finding("content", "ok",
                       f"{len(files) + len(skipped)} files match their recorded md5{via}")
    details["affected_samples"] = len(bad_rows)
    if assignment is not None:
        hit = np.fromiter(bad_rows, dtype=np.int64, count=len(bad_rows))
        codes = assignment[hit] if len(hit) else np.zeros(0, dtype=np.int8)
        details["affected_stages"] = {s: int((codes == c).sum())
                                      for c, s in enumerate(EXCLUSIVE_STAGES) if (codes == c).any()}
    summary = f"{len(modified)} file(s) modified, {len(missing)} missing since enumerate"
    return Finding("content", "drift", summary, details,
                   "restore the files (`dvc checkout` / `dvc pull`) or re-enumerate and re-bake "
                   "(`dvc repro`)")


def _check_selection(
    cfg: DataSplitConfig, uni: Universe, name_to_id: dict[str, int] | None, where: str
) -> tuple[Finding, Any]:
    try:
        res = resolve(cfg, uni, name_to_id=name_to_id, where=where)
    except SelectorError as exc:
        return Finding("selection", "violation", str(exc), {},
                       "fix the selector, or re-bake the split against this universe"), None
    if res.warnings:
        msgs = [w.message() for w in res.warnings]
        missing = sum(len(w.missing) for w in res.warnings)
        return Finding("selection", "violation",
                       f"{len(res.warnings)} selector(s) match only partly ({missing} requested "
                       "sample(s) absent)", {"partial": msgs},
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


def find_lock(start: Path) -> Path | None:
    """The dvc.lock of the repository containing ``start`` (None outside DVC projects)."""
    here = start.resolve()
    for d in (here, *here.parents):
        if (d / "dvc.lock").is_file():
            return d / "dvc.lock"
        if (d / ".dvc").is_dir() or (d / ".git").exists():
            return None
    return None


def _check_staleness(
    lock: Path | None, targets: list[Path], cache: StatCache, universe: Path | None = None
) -> tuple[Finding, dict[str, list[str]]]:
    """The staleness finding, and the files (absolute paths) that dvc.lock vouches for.

    The second value maps each dependency (absolute path) of the stage that wrote
    ``universe`` to the files below it (relative; ``""`` for a file dependency itself) when
    that stage is entirely unchanged (its recorded universe.csv, every dependency hash and
    its params): those files are then exactly the bytes universe.csv was enumerated from.
    Only files the matching hashes actually cover are listed (a folder reached through a
    symlink is not part of DVC's folder hash).
    """
    if lock is None:
        return Finding("staleness", "skipped", "no dvc.lock"), {}
    try:
        data = yaml.safe_load(lock.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        return Finding("staleness", "violation", f"{lock}: unreadable dvc.lock ({exc})"), {}
    root = lock.parent
    universe_rel = (os.path.normpath(os.path.relpath(universe.absolute(), root.absolute()))
                    if universe is not None else None)
    vouched: dict[str, list[str]] = {}
    hashed: dict[str, tuple[str, list[str]]] = {}
    wanted = {os.path.normpath(os.path.relpath(t.absolute(), root.absolute())) for t in targets}
    stages = data.get("stages", {}) if isinstance(data, dict) else {}
    changed: list[str] = []
    params_changed: list[str] = []
    relevant: list[str] = []
    params_cache: dict[str, Any] = {}
    for name, stage in sorted(stages.items()):
        cmd = str(stage.get("cmd", "")) if isinstance(stage, dict) else ""
        if not isinstance(stage, dict) or cmd.startswith(("dvc-cuvis check", "dvc-cuvis report")):
            continue  # a check/report stage's own (previous) record is not the pipeline's state
        entries = [*stage.get("deps", []), *stage.get("outs", [])]
        paths = {os.path.normpath(str(e.get("path", ""))) for e in entries if isinstance(e, dict)}
        if not any(w == p or w.startswith(p + os.sep) for w in wanted for p in paths):
            continue  # neither writes nor reads these files (nor a folder holding them)
        relevant.append(name)
        before = (len(changed), len(params_changed))
        covered: dict[str, list[str]] = {}  # this stage's entries whose recorded hash matches
        for e in entries:
            rel = str(e.get("path", ""))
            recorded = e.get("md5")
            if not recorded:
                continue
            p = root / rel
            top = os.path.abspath(p)
            if not p.exists():
                changed.append(f"{rel} (stage {name}): missing")
            elif str(recorded).endswith(".dir"):
                if not p.is_dir():
                    changed.append(f"{rel} (stage {name}): a folder in dvc.lock, now a file")
                    continue
                if top not in hashed:  # several stages may read the same folder
                    hashed[top] = dir_hash(top, cache)
                value, listed = hashed[top]
                if value != recorded:
                    changed.append(f"{rel} (stage {name})")
                else:
                    covered[top] = listed
            elif not p.is_file():
                changed.append(f"{rel} (stage {name}): a file in dvc.lock, now a folder")
            elif cache.md5(p) != recorded:
                changed.append(f"{rel} (stage {name})")
            else:
                covered[top] = [""]
        for pfile, values in (stage.get("params") or {}).items():
            if pfile not in params_cache:
                try:
                    params_cache[pfile] = yaml.safe_load((root / pfile).read_text()) or {}
                except (OSError, yaml.YAMLError):
                    params_cache[pfile] = {}
            for key, value in (values or {}).items():
                for leaf, _, _ in diff_params(key, value, _lookup(params_cache[pfile], key)):
                    params_changed.append(f"{pfile}:{leaf} (stage {name})")
        outs = {os.path.normpath(str(e.get("path", ""))) for e in stage.get("outs", [])
                if isinstance(e, dict)}
        if universe_rel in outs and (len(changed), len(params_changed)) == before:
            for e in stage.get("deps", []):
                top = os.path.abspath(root / str(e.get("path", ""))) if isinstance(e, dict) else ""
                if top in covered:
                    vouched[top] = covered[top]
    details = {"stages": relevant, "changed": changed, "params_changed": params_changed}
    if changed or params_changed:
        return Finding("staleness", "drift",
                       f"the workspace differs from dvc.lock: {len(changed)} file(s), "
                       f"{len(params_changed)} param(s)", details, "run `dvc repro`"), vouched
    if not relevant:
        return Finding("staleness", "skipped",
                       f"{lock.name} has no stage for these files"), vouched
    return Finding("staleness", "ok", f"matches {lock.name} (stages {', '.join(relevant)})",
                   details), vouched


def _lookup(tree: Any, dotted: str) -> Any:
    node = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


# -- entry point --------------------------------------------------------------------------


def verify(
    splits: Path | str | DataSplitConfig,
    universe: Path | str | Universe,
    *,
    current: Universe | Callable[[], Universe] | None = None,
    deep: bool = False,
    name_to_id: dict[str, int] | None = None,
    group_leakage: str = "auto",
    lock: Path | str | None = "auto",
    data_dir: str | None = None,
    cache: StatCache | None = None,
    checks: Iterable[str] = CHECKS,
) -> DriftReport:
    """Run the drift checks and return the report (never raises on drift; see :func:`ensure`).

    ``current`` is the universe enumerated from the data now (or a function producing it,
    called only when needed): when dvc.lock shows that the stage which wrote universe.csv is
    unchanged — its output, every input hash and its params — the data under its inputs is
    vouched for by DVC and neither the re-scan nor per-file hashing is repeated for it
    (``deep`` always re-reads everything).  ``lock="auto"`` finds the repository's
    dvc.lock; ``data_dir`` overrides the prefix that ``{DATA_DIR}`` stands for in
    GUI-authored splits.

    A clean verdict is remembered in ``cache`` with the stamps of every file it rests on;
    a later call with the same inputs (``universe`` given as a path, no ``current``, not
    ``deep``) reuses it while none of those files changed (``report.reused_verdict``).
    """
    wanted = set(checks)
    unknown = wanted - set(CHECKS)
    if unknown:
        raise DvcCuvisError(f"unknown check(s) {sorted(unknown)}; choose from {list(CHECKS)}")
    splits_path = None if isinstance(splits, DataSplitConfig) else Path(splits)
    where = str(splits_path or "splits")
    uni_path = universe.path if isinstance(universe, Universe) else Path(universe)
    cache = StatCache(None) if deep or cache is None else cache
    staleness: Finding | None = None
    vouched: dict[str, list[str]] = {}
    if "staleness" in wanted:
        lock_path: Path | None
        if lock == "auto":
            start = (splits_path or uni_path or Path("x")).parent
            lock_path = find_lock(start)
        else:
            lock_path = Path(lock) if lock else None
        targets = [p for p in (splits_path, uni_path) if p is not None]
        staleness, vouched = _check_staleness(lock_path, targets, cache, uni_path)
        if deep:
            vouched = {}
    options = [sorted(wanted & set(CHECKS[:4])), group_leakage, data_dir,
               sorted((name_to_id or {}).items())]
    memo = None
    if not deep and current is None and not vouched and uni_path is not None \
            and wanted - {"staleness"}:
        memo = _VerdictMemo.before_reading(cache, splits, universe, options)
        reused = memo.findings() if memo is not None else None
        if reused is not None:
            if staleness is not None:
                reused.append(staleness)
            cache.save()
            return DriftReport(where, str(uni_path), reused, reused_verdict=True)
    split_stamp = None
    if isinstance(splits, DataSplitConfig):
        cfg = splits
    else:
        cfg, split_stamp = load_splits_stamped(splits)
    uni = universe if isinstance(universe, Universe) else read_universe(universe)
    tokenized = is_tokenized(cfg)
    if tokenized:
        data_dir = (data_dir or infer_data_dir(uni)).rstrip("/")
        cfg_resolved = detokenize(cfg, data_dir)
    else:
        data_dir = None
        cfg_resolved = cfg
    if callable(current):
        current = None if vouched else current()
    findings: list[Finding] = []
    res = None
    sel_finding = None
    if tokenized:  # the pin is over tokenized uids; the universe check compares it
        cfg_resolved = cfg_resolved.model_copy(update={"universe_hash": None})
    if wanted & {"selection", "constraints", "content"}:
        sel_finding, res = _check_selection(cfg_resolved, uni, name_to_id, where)
    if "universe" in wanted:
        finding = _check_universe(cfg, uni, current, data_dir)
        if vouched and finding.status == "ok":
            finding.summary += "; dvc.lock vouches that the data is what it was enumerated from"
        findings.append(finding)
    witness: list[tuple[str, Stamp | None]] = []
    if "content" in wanted:
        findings.append(_check_content(uni, cache, res.assignment() if res else None,
                                       None if deep else current, vouched, witness))
    if "selection" in wanted and sel_finding is not None:
        findings.append(sel_finding)
    if "constraints" in wanted:
        findings.append(_check_constraints(cfg, res, group_leakage))
    if memo is not None and not any(f.failed for f in findings):
        memo.store(findings, witness, uni, splits, split_stamp, options)
    if staleness is not None:
        findings.append(staleness)
    cache.save()
    return DriftReport(where, str(uni.path or "universe"), findings)


class _VerdictMemo:
    """A clean verdict, remembered until any file it rests on changes.

    ``guard()`` and the DataModules check before every ``setup()``; when universe.csv,
    the split, the options and every content file's stamp are what they were at the last
    clean check, its findings stand without re-reading anything: the cost is one ``stat``
    per file and one folder listing per folder of folders.  Kept in the stat cache, under
    universe.csv's own entry (a few slots: one per split); a failed check is never
    remembered (it is re-run in full, so its details are current).

    Soundness: the stamps stored are those of the bytes the full check read (taken on the
    descriptors read, so a file swapped meanwhile is never remembered under the wrong
    stamp); files are compared without following a final symlink, and every folder on
    the way to them must still be the same real folder (not a symlink put in its place),
    so a reused verdict never covers a path the full check would refuse.
    """

    KEY = "verdict"
    SLOTS = 4  # a universe checked against a few splits (a path, an in-memory config, folds)

    def __init__(self, cache: StatCache, uni_abs: str, stamp: Stamp, split_id: str,
                 options: list[Any]) -> None:
        self.cache, self.uni_abs, self.stamp = cache, uni_abs, stamp
        self.split_id, self.key = split_id, self._key(split_id, options)
        self.base = os.path.dirname(uni_abs)

    @staticmethod
    def _key(split_id: str, options: list[Any]) -> str:
        text = json.dumps([_code_id(), split_id, options], separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    @staticmethod
    def _split_id(splits: Path | str | DataSplitConfig, stamp: Stamp | None) -> str | None:
        if isinstance(splits, DataSplitConfig):
            return "config:" + hashlib.sha256(splits.model_dump_json().encode()).hexdigest()
        return None if stamp is None else f"{os.path.abspath(splits)}:{list(stamp)}"

    @classmethod
    def before_reading(
        cls, cache: StatCache, splits: Path | str | DataSplitConfig,
        universe: Path | str | Universe, options: list[Any],
    ) -> _VerdictMemo | None:
        """The slot for the files as they are now (None if one is missing or unstamped)."""
        try:
            if isinstance(universe, Universe):  # keyed by the bytes it was read from
                if universe.path is None or universe.file_stamp is None:
                    return None
                uni_abs, uni_stamp = os.path.abspath(universe.path), universe.file_stamp
            else:
                uni_abs = os.path.abspath(universe)
                uni_stamp = stamp_of(os.stat(uni_abs))
            split_stamp = None if isinstance(splits, DataSplitConfig) else stamp_of(
                os.stat(splits))
        except OSError:
            return None
        split_id = cls._split_id(splits, split_stamp)
        if split_id is None:
            return None
        return cls(cache, uni_abs, uni_stamp, split_id, options)

    def _slots(self, stamp: Stamp) -> list[dict[str, Any]]:
        found, value = self.cache.lookup(self.uni_abs, self.KEY, stamp)
        slots = value.get("slots") if found and isinstance(value, dict) else None
        return [v for v in slots if isinstance(v, dict)] if isinstance(slots, list) else []

    def findings(self) -> list[Finding] | None:
        """The remembered findings, if every file and folder is unchanged; else None."""
        slot = next((v for v in self._slots(self.stamp) if v.get("key") == self.key), None)
        if slot is None:
            return None
        try:
            fd = os.open(self.base, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            try:
                for parent, children in slot["dirs"].items():
                    # one listing per folder of folders: each must still be a real folder
                    with os.scandir(os.path.join(self.base, parent)) as it:
                        here = {e.name: e for e in it}
                    for name, ino in children:
                        e = here.get(name)
                        if e is None or e.is_symlink() or not e.is_dir(follow_symlinks=False) \
                                or e.inode() != ino:
                            return None
                names = slot["paths"].split("\0") if slot["paths"] else []
                now: list[int] = []
                for name in names:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    now += (st.st_ino, st.st_size, st.st_mtime_ns)
            finally:
                os.close(fd)
            if now != slot["stamps"]:
                return None
            return [Finding(f["check"], f["status"], f["summary"], f["details"], f["fix"])
                    for f in slot["findings"]]
        except (OSError, KeyError, TypeError, AttributeError, ValueError,
                NotImplementedError):
            return None

    def store(
        self, findings: list[Finding], witness: list[tuple[str, Stamp | None]], uni: Universe,
        splits: Path | str | DataSplitConfig, split_stamp: Stamp | None, options: list[Any],
    ) -> None:
        """Remember clean findings and the stamps of the bytes they rest on."""
        # an in-memory config is the same object as before reading: its content id stands
        split_id = (self.split_id if isinstance(splits, DataSplitConfig)
                    else self._split_id(splits, split_stamp))
        if uni.file_stamp is None or split_id is None or uni.path is None \
                or os.path.abspath(uni.path) != self.uni_abs:
            return  # read from something without a stable stamp: nothing to key it by
        prefix = self.base.rstrip("/") + "/"
        flat: list[int] = []
        rels: list[str] = []
        for path, stamp in witness:
            if stamp is None or not path.startswith(prefix):
                return  # a file changed while it was hashed (or lies elsewhere)
            rels.append(path[len(prefix):])
            flat += stamp
        dirs: dict[str, list[list[Any]]] = {}
        try:
            for d in sorted({a for r in rels for a in _ancestors(r)}):
                parent, _, name = d.rpartition("/")
                st = os.lstat(os.path.join(self.base, d))
                dirs.setdefault(parent, []).append([name, st.st_ino])
        except OSError:
            return
        slot = {
            "key": self._key(split_id, options),
            "dirs": dirs,
            "paths": "\0".join(rels),
            "stamps": flat,
            "findings": [{"check": f.check, "status": f.status, "summary": f.summary,
                          "details": f.details, "fix": f.fix} for f in findings],
        }
        stamp = uni.file_stamp
        others = [v for v in self._slots(stamp) if v.get("key") != slot["key"]]
        self.cache.record(self.uni_abs, self.KEY, stamp, {"slots": [slot, *others][:self.SLOTS]})


@functools.lru_cache(maxsize=1)
def _code_id() -> str:
    """The version plus a digest of the modules that decide a verdict: a remembered verdict
    is never reused by different checking code (a development checkout, an upgrade)."""
    h = hashlib.sha256(__version__.encode())
    here = Path(__file__).parent
    for name in ("drift.py", "selectors.py", "splits.py", "universe.py", "paths.py",
                 "digests.py"):
        try:
            h.update((here / name).read_bytes())
        except OSError:
            h.update(name.encode())  # not readable (e.g. a zip import): the version decides
    return h.hexdigest()


def _ancestors(rel: str) -> list[str]:
    """``a/b/c.npz`` -> ``["a", "a/b"]``: every folder on the way to a file."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def ensure(report: DriftReport, mode: str = "strict") -> DriftReport:
    """Act on a report: ``strict`` raises :class:`DriftError`, ``warn`` logs, ``off`` nothing."""
    if mode not in ("strict", "warn", "off"):
        raise DvcCuvisError(f"verify must be strict, warn or off, got {mode!r}")
    if report.ok or mode == "off":
        return report
    if mode == "strict":
        raise DriftError(report)
    import logging

    logging.getLogger(__name__).warning("%s", report.render().rstrip())
    return report
