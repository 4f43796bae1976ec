"""The dataset record: which version of the data a guarded DataModule set up.

Every guarded module (:class:`~dvc_cuvis.train.datamodule.SplitDataModule`,
:func:`~dvc_cuvis.train.datamodule.guard` and the plugin's ``dvc_*`` modules) takes one at
``setup()``, right after the drift check: the repository (root, ``origin``, commit, dirty),
the splits file (its repository path, sha256 and the baked split itself, as plain JSON),
the pinned ``universe_hash``, the samples per stage, universe.csv's md5, the md5 that
dvc.lock (or a ``.dvc`` file) records for the data, the dvc-cuvis version and the check's
mode and verdict: a :class:`~dvc_cuvis.train.lineage_values.LineageRecord`.
:mod:`dvc_cuvis.train.lineage_hooks` keeps it where the host keeps the model;
:mod:`dvc_cuvis.train.lineage_compare` reads it back and compares versions.

Taking it is cheap: the split file is read (it is small: ids are ranges;
:mod:`~dvc_cuvis.train.lineage_split`), universe.csv's md5 comes from the stat cache, the
commit from git's files through :class:`~dvc_cuvis.repo.git.HeadReader` (no git process),
the dvc.lock is parsed once per change of its stamp (:mod:`~dvc_cuvis.train.lineage_data`),
all remembered in the caller's :class:`~dvc_cuvis.train.lineage_memo.LineageMemo`; the dirty
flag (one ``git status``) is computed only when the record is first kept (:func:`finish`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import overload

from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis.check.drift import DriftReport
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.paths.roots import ancestors
from dvc_cuvis.repo.git import Stamp, worktree_dirty
from dvc_cuvis.train.lineage_data import data_entries, rel_to
from dvc_cuvis.train.lineage_memo import FactsKey, LineageMemo, Witnessed
from dvc_cuvis.train.lineage_split import split_facts, split_file
from dvc_cuvis.train.lineage_values import (
    KIND,
    CheckFacts,
    JsonRecord,
    LineageRecord,
    RepoFacts,
    UniverseFacts,
    as_record,
)

__all__ = ["KEY", "KIND", "RECORD_FILE", "LineageError", "LineageRecord", "finish",
           "hyperparams", "is_record", "same_version", "take", "take_record", "version_key"]

#: The key of the record in a DataModule's ``state_dict()`` (and so in a Lightning .ckpt).
KEY = "dvc_cuvis_lineage"
#: The file a record is written to in a trainrun's output folder (the ``lineage`` parameter).
RECORD_FILE = "dataset_lineage.json"

#: A record as given to a reader: the value, or its JSON (a checkpoint read back).
AnyRecord = LineageRecord | Mapping[str, object]


class LineageError(DvcCuvisError):
    """A checkpoint trained on another dataset version was refused (exit code 1)."""

    exit_code = 1


def _repo_facts(anchor: Path, memo: LineageMemo) -> RepoFacts:
    """Root, origin and commit of the repository holding ``anchor`` (dirty: see finish)."""
    found = memo.head.facts(anchor)
    if found is None:
        dvc_top = next((f for f in ancestors(anchor) if (f / ".dvc").is_dir()), None)
        return RepoFacts(str(dvc_top) if dvc_top else None)
    return RepoFacts(found.root, found.origin, found.commit)


def _check_facts(mode: str, report: DriftReport | None) -> CheckFacts:
    if mode == "off" or report is None:
        return CheckFacts(mode, "not checked", False, ())
    return CheckFacts(mode, "ok" if report.ok else "failed", report.reused_verdict,
                      tuple(f.check for f in report.findings if f.failed))


def _universe_facts(universe: Path | str | Universe, cache: StatCache | None,
                    root: str | None) -> tuple[UniverseFacts, Path | None]:
    path = universe.path if isinstance(universe, Universe) else Path(universe)
    if isinstance(universe, Universe) and universe.path is None:  # a listing (tiff_paired)
        return UniverseFacts(None, None, universe.hash), None
    assert path is not None
    try:
        md5 = cache.md5(path) if cache is not None else hashlib.md5(
            path.read_bytes()).hexdigest()
    except OSError:
        md5 = None
    return UniverseFacts(rel_to(path, root), md5), path


def take(
    splits: Path | str | DataSplitConfig,
    universe: Path | str | Universe,
    *,
    module: str,
    mode: str,
    report: DriftReport | None,
    cache: StatCache | None = None,
    lock: Path | str | None = "auto",
    counts: dict[str, int] | None = None,
    memo: LineageMemo | None = None,
) -> LineageRecord:
    """The dataset record of a module set up on ``splits`` and ``universe``.

    ``report`` is the drift check's (None: not checked, ``verify: off``); ``counts`` the
    samples per stage when the caller resolved the split anyway (else they are counted from
    the baked split's ids, without reading the universe); ``memo`` what the caller keeps
    between records (a fresh one: every file is read).
    """
    memo = memo if memo is not None else LineageMemo()
    sfile = split_file(splits)
    ufile = universe.path if isinstance(universe, Universe) else Path(universe)
    key = FactsKey(str(sfile), str(ufile), str(lock), cache)
    known = memo.facts.get(key) if sfile is not None and ufile is not None else None
    if known is not None and known.holds():
        facts = known.record
    else:
        facts, witnesses = _facts(splits, universe, cache, lock, memo)
        if sfile is not None and ufile is not None:
            memo.facts[key] = Witnessed(witnesses, tuple(Stamp.of(p) for p in witnesses),
                                        facts)
    check = _check_facts(mode, report)
    setting = (facts, module, check, counts)
    last = memo.taken.get(key)
    if last is not None and last[1][0] is facts and last[1][1:] == setting[1:]:
        return last[0]
    record = replace(facts, module=module, check=check,
                     stages=dict(counts) if counts is not None else facts.stages)
    memo.taken[key] = (record, setting)
    return record


def take_record(splits: Path | str | DataSplitConfig, universe: Path | str | Universe, *,
                module: str, mode: str, report: DriftReport | None,
                cache: StatCache | None = None, lock: Path | str | None = "auto",
                counts: dict[str, int] | None = None,
                memo: LineageMemo | None = None) -> JsonRecord:
    """The dataset record (:func:`take`) as the plain JSON a checkpoint and
    ``dataset_lineage.json`` hold."""
    return take(splits, universe, module=module, mode=mode, report=report, cache=cache,
                lock=lock, counts=counts, memo=memo).to_json()


def _facts(splits: Path | str | DataSplitConfig, universe: Path | str | Universe,
           cache: StatCache | None, lock: Path | str | None,
           memo: LineageMemo) -> tuple[LineageRecord, tuple[str, ...]]:
    """The record's facts about the data, and every file they were read from."""
    doc, sha, stage_counts, sfile = split_facts(splits, memo.files)
    anchor = sfile or (universe.path if isinstance(universe, Universe) else Path(universe))
    folder = Path(os.path.abspath(anchor or ".")).parent
    repo = _repo_facts(folder, memo)
    uni_facts, uni_path = _universe_facts(universe, cache, repo.root)
    data = data_entries(uni_path, lock, repo.root, memo)
    witnesses = [os.path.abspath(p) for p in (sfile, uni_path) if p is not None]
    witnesses += memo.head.witnesses(folder)
    witnesses += [os.path.join(repo.root or "/", str(e.source)) for e in data]
    facts = LineageRecord(repo=repo, splits_path=rel_to(sfile, repo.root), splits_sha256=sha,
                          universe=uni_facts, universe_hash=doc.get("universe_hash"),
                          stages=stage_counts, data=data, split=doc)
    return facts, tuple(witnesses)


@overload
def finish(record: LineageRecord) -> LineageRecord: ...
@overload
def finish(record: JsonRecord) -> JsonRecord: ...


def finish(record: LineageRecord | JsonRecord) -> LineageRecord | JsonRecord:
    """``record`` with the dirty flag filled in (one ``git status``, unless it is known);
    a record given as JSON comes back as JSON (a new object: the one given is left as is)."""
    repo = as_record(record).repo
    if repo.dirty is not None or not repo.commit or not repo.root:
        return record
    dirty = worktree_dirty(repo.root)
    if isinstance(record, LineageRecord):
        return record.finished(dirty)
    return {**record, "repo": {**record["repo"], "dirty": dirty}}


def is_record(obj: object) -> bool:
    """True for a dataset record (a value, or a mapping that says it is one)."""
    return isinstance(obj, LineageRecord) or (isinstance(obj, dict)
                                              and obj.get("kind") == KIND)


def version_key(record: AnyRecord) -> tuple[object, ...]:
    """What makes two records the same dataset version (:meth:`LineageRecord.version_key`)."""
    return as_record(record).version_key()


def same_version(a: AnyRecord, b: AnyRecord) -> bool:
    """True when two records name the same split on the same data."""
    return version_key(a) == version_key(b)


def hyperparams(record: AnyRecord) -> dict[str, str | int | bool]:
    """The record as flat ``dataset/...`` hyperparameters (scalars only) for a logger."""
    r = as_record(record)
    flat: dict[str, str | int | bool | None] = {
        "dataset/commit": r.repo.commit or "",
        "dataset/dirty": r.repo.dirty,
        "dataset/origin": r.repo.origin or "",
        "dataset/splits": r.splits_path or "",
        "dataset/splits_sha256": r.splits_sha256,
        "dataset/universe_hash": r.universe_hash or "",
        "dataset/universe_md5": r.universe.md5 or "",
        "dataset/dvc_cuvis": r.dvc_cuvis,
        "dataset/verify": r.check.mode,
        "dataset/verdict": r.check.verdict,
    }
    for stage, n in r.stages.items():
        flat[f"dataset/samples/{stage}"] = -1 if n is None else n
    for entry in r.data:
        flat[f"dataset/md5/{entry.path}"] = entry.md5 or ""
    return {k: ("" if v is None else v) for k, v in flat.items()}
