"""The dataset record: which version of the data a guarded DataModule set up.

Every guarded module (:class:`~dvc_cuvis.train.datamodule.SplitDataModule`,
:func:`~dvc_cuvis.train.datamodule.guard` and the plugin's ``dvc_*`` modules) takes one at
``setup()``, right after the drift check: the repository (root, ``origin``, commit, dirty),
the splits file (its repository path, sha256 and the baked split itself, as plain JSON),
the pinned ``universe_hash``, the samples per stage, universe.csv's md5, the md5 that
dvc.lock (or a ``.dvc`` file) records for the data, the dvc-cuvis version and the check's
mode and verdict.  :mod:`dvc_cuvis.train.lineage_hooks` keeps it where the host keeps the
model; :mod:`dvc_cuvis.train.lineage_compare` reads it back and compares versions.

Taking it is cheap: the split file is read (it is small: ids are ranges), universe.csv's md5
comes from the stat cache, the commit from ``.git/HEAD`` and its ref (no git process), the
dvc.lock is parsed once per change of its stamp, and the dirty flag (one ``git status``)
is computed only when the record is first kept (:func:`finish`).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis._version import __version__
from dvc_cuvis.check.drift import DriftReport
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.limits import loads_json
from dvc_cuvis.model.ids import parse_id_range
from dvc_cuvis.model.splits import STAGES, dumps_splits, effective_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.paths import ancestors
from dvc_cuvis.repo.lockfile import REPORTING_COMMANDS, LockFile, LockReadError, find_lock

__all__ = ["KEY", "KIND", "RECORD_FILE", "LineageError", "finish", "hyperparams", "is_record",
           "same_version", "take_record", "version_key"]

#: The key of the record in a DataModule's ``state_dict()`` (and so in a Lightning .ckpt).
KEY = "dvc_cuvis_lineage"
#: What a record says it is (a saved record is refused without it).
KIND = "dvc-cuvis dataset record"
#: The file a record is written to in a trainrun's output folder (the ``lineage`` parameter).
RECORD_FILE = "dataset_lineage.json"
#: The version of the record's layout.
FORMAT = 1


class LineageError(DvcCuvisError):
    """A checkpoint trained on another dataset version was refused (exit code 1)."""

    exit_code = 1


# -- the split --------------------------------------------------------------------------


def _read_split(path: Path) -> tuple[dict[str, Any], str, dict[str, int | None]]:
    """A splits file as plain JSON, the sha256 of its bytes, and its samples per stage."""
    try:
        data = path.read_bytes()
        doc = loads_json(data, path)
    except (OSError, ValueError) as exc:
        raise DvcCuvisError(f"{path}: cannot read the split for the dataset record "
                            f"({exc})") from None
    return doc, hashlib.sha256(data).hexdigest(), _stage_counts(doc)


def _split_facts(
    splits: Path | str | DataSplitConfig,
) -> tuple[dict[str, Any], str, dict[str, int | None], Path | None]:
    """The split as plain JSON, the sha256 of its bytes, its samples per stage and its file
    (None: inline); a file is read again only when its stamp changed."""
    if isinstance(splits, DataSplitConfig):
        effective, _ = effective_splits(splits)
        if isinstance(effective, DataSplitConfig):
            text = dumps_splits(effective).encode("utf-8")
            doc = json.loads(text)
            return doc, hashlib.sha256(text).hexdigest(), _stage_counts(doc), None
        splits = effective
    path = Path(splits)
    facts = _stamped(path, _read_split)
    if facts is None:
        raise DvcCuvisError(f"{path}: cannot read the split for the dataset record")
    return (*facts, path)


def _selector_samples(sel: dict[str, Any]) -> set[tuple[str, int | None]] | None:
    """The (source, index) pairs a concrete selector names; None for a rule (a glob, ...)."""
    kind = sel.get("kind")
    if kind == "files":
        return {(str(p), None) for p in sel.get("paths") or []}
    if kind != "file_indices":
        return None
    out: set[tuple[str, int | None]] = set()
    source = str(sel.get("source"))
    for i in sel.get("ids") or []:
        run = parse_id_range(i) if isinstance(i, str) else None
        if run is not None:
            out.update((source, k) for k in run)
        else:
            out.add((source, int(i)))
    return out


def split_samples(doc: dict[str, Any]) -> dict[str, list[tuple[str, int | None]]] | None:
    """Per stage, the samples a baked split names, in file order (first occurrence kept);
    None when a stage holds a rule (its samples depend on the universe)."""
    stages: dict[str, list[tuple[str, int | None]]] = {}
    for stage in STAGES:
        seen: set[tuple[str, int | None]] = set()
        ordered: list[tuple[str, int | None]] = []
        for sel in doc.get(stage) or []:
            named = _selector_samples(sel) if isinstance(sel, dict) else None
            if named is None:
                return None
            for pair in sorted(named, key=lambda p: (p[0], -1 if p[1] is None else p[1])):
                if pair not in seen:
                    seen.add(pair)
                    ordered.append(pair)
        stages[stage] = ordered
    return stages


def _runs(ids: list[Any]) -> list[range]:
    """A selector's ids as ranges (an int is a range of one)."""
    runs = []
    for i in ids:
        run = parse_id_range(i) if isinstance(i, str) else None
        runs.append(run if run is not None else range(int(i), int(i) + 1))
    return runs


def _union_size(runs: list[range]) -> int:
    """How many distinct ids ``runs`` hold (intervals merged; stepped ones expanded)."""
    if any(r.step != 1 for r in runs):
        return len(set().union(*runs))
    total, end = 0, None
    for r in sorted(runs, key=lambda r: r.start):
        start = r.start if end is None else max(r.start, end)
        if r.stop > start:
            total += r.stop - start
            end = r.stop if end is None else max(end, r.stop)
    return total


def _stage_counts(doc: dict[str, Any]) -> dict[str, int | None]:
    """Samples per stage of a baked split, counted from its ids without expanding a range
    (no universe is read); a rule stage, and an empty predict (the whole universe), count
    as None."""
    counts: dict[str, int | None] = {}
    for stage in STAGES:
        selectors = doc.get(stage) or []
        files: set[str] = set()
        by_source: dict[str, list[range]] = {}
        for sel in selectors:
            kind = sel.get("kind") if isinstance(sel, dict) else None
            if kind == "files":
                files.update(str(p) for p in sel.get("paths") or [])
            elif kind == "file_indices":
                by_source.setdefault(str(sel.get("source")), []).extend(
                    _runs(sel.get("ids") or []))
            else:
                break
        else:
            if selectors or stage != "predict":
                counts[stage] = len(files) + sum(_union_size(r) for r in by_source.values())
                continue
        counts[stage] = None
    return counts


# -- the repository ---------------------------------------------------------------------

#: Parsed files, by path, with the stamp they were parsed at (git's and DVC's small files).
_MEMO: dict[str, tuple[tuple[int, int, int], Any]] = {}


def _stamped(path: Path, parse: Any) -> Any:
    """``parse(path)``, remembered until the file's (inode, size, mtime) changes."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    key = f"{parse.__qualname__}:{path}"
    known = _MEMO.get(key)
    if known is not None and known[0] == stamp:
        return known[1]
    value = parse(path)
    _MEMO[key] = (stamp, value)
    return value


def _git_dirs(top: Path) -> tuple[Path, Path] | None:
    """The git folder of the work tree ``top`` and its common folder (refs, config)."""
    dot = top / ".git"
    if dot.is_dir():
        git_dir = dot
    else:
        try:
            text = dot.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        if not text.startswith("gitdir:"):
            return None
        git_dir = (top / text[len("gitdir:"):].strip()).resolve()
    common = git_dir
    if (git_dir / "commondir").is_file():
        common = (git_dir / (git_dir / "commondir").read_text().strip()).resolve()
    return git_dir, common


def _packed_refs(path: Path) -> dict[str, str]:
    refs: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line and line[0] not in "#^" and " " in line:
            sha, name = line.split(" ", 1)
            refs[name.strip()] = sha
    return refs


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _head_commit(git_dir: Path, common: Path) -> str | None:
    """The commit HEAD names, read from git's files (no git process); None when unborn."""
    head = _read_text(os.path.join(git_dir, "HEAD"))
    if not head or not head.startswith("ref:"):
        return head or None
    ref = head[4:].strip()
    for folder in (git_dir, common):
        sha = _read_text(os.path.join(folder, ref))
        if sha:
            return sha
    packed = _stamped(common / "packed-refs", _packed_refs) or {}
    return packed.get(ref)


def _origin(path: Path) -> str | None:
    """The ``url`` of ``[remote "origin"]`` in a git config file."""
    section = None
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]").replace('"', "").split()
            continue
        if section == ["remote", "origin"] and "=" in line:
            key, value = line.split("=", 1)
            if key.strip().lower() == "url":
                return value.strip()
    return None


#: Folder -> (its git work tree's top, git folder, common folder); found repositories only.
_TOPS: dict[str, tuple[Path, tuple[Path, Path] | None]] = {}


def _git_top(anchor: Path) -> tuple[Path, tuple[Path, Path] | None] | None:
    """The git work tree holding ``anchor`` and its git folders (remembered while it exists)."""
    known = _TOPS.get(str(anchor))
    if known is not None and os.path.exists(os.path.join(known[0], ".git")):
        return known
    top = next((f for f in ancestors(anchor) if (f / ".git").exists()), None)
    if top is None:
        return None
    _TOPS[str(anchor)] = (top, _git_dirs(top))
    return _TOPS[str(anchor)]


def _repo_facts(anchor: Path) -> dict[str, Any]:
    """Root, origin and commit of the repository holding ``anchor`` (dirty: see finish)."""
    found = _git_top(anchor)
    if found is None:
        dvc_top = next((f for f in ancestors(anchor) if (f / ".dvc").is_dir()), None)
        return {"root": str(dvc_top) if dvc_top else None, "origin": None, "commit": None,
                "dirty": None}
    git_top, dirs = found
    commit = _head_commit(*dirs) if dirs else None
    origin = _stamped(dirs[1] / "config", _origin) if dirs else None
    return {"root": str(git_top), "origin": origin, "commit": commit, "dirty": None}


def _rel(path: Path | str | None, root: str | None) -> str | None:
    """``path`` relative to the repository root, posix (absolute when outside it)."""
    if path is None:
        return None
    absolute = os.path.abspath(path)
    if root is not None and absolute.startswith(root.rstrip(os.sep) + os.sep):
        return absolute[len(root.rstrip(os.sep)) + 1:].replace(os.sep, "/")
    return absolute.replace(os.sep, "/")


# -- what DVC recorded for the data -----------------------------------------------------


def lock_entries(lock: LockFile, universe_rel: str, source: str) -> list[dict[str, Any]]:
    """The data ``universe_rel`` (relative to the lock's folder) names, as dvc.lock records
    it: the output that holds it (a materialized folder), else the dependencies of the
    stage that wrote it (the data it was enumerated from).  ``source``: the lock's
    repository path, named in each entry."""
    norm = os.path.normpath(universe_rel)
    stages = [s for s in lock.stages if not s.cmd.startswith(REPORTING_COMMANDS)]
    for stage in stages:
        for out in stage.outs:
            path = os.path.normpath(str(out.get("path", "")))
            if norm.startswith(path + os.sep):
                return [_entry(out, source, stage.name)]
    for stage in stages:
        if stage.writes(norm):
            return [_entry(dep, source, stage.name)
                    for dep in sorted(stage.deps, key=lambda d: str(d.get("path")))]
    return []


def _entry(raw: dict[str, Any], source: str, stage: str | None) -> dict[str, Any]:
    """One recorded md5: the path it covers, the md5, the file and stage recording it."""
    return {"path": Path(os.path.normpath(str(raw.get("path", "")))).as_posix(),
            "md5": raw.get("md5"), "source": source, "stage": stage}


def dvc_file_entry(doc: Any, path: str, source: str) -> dict[str, Any]:
    """The entry of a parsed ``.dvc`` file (``source``) tracking the folder ``path``."""
    outs = doc.get("outs") if isinstance(doc, dict) else None
    out = outs[0] if isinstance(outs, list) and outs and isinstance(outs[0], dict) else {}
    return _entry({**out, "path": path}, source, None)


def _dvc_file_entries(universe: Path, root: str | None) -> list[dict[str, Any]]:
    """The ``.dvc`` file tracking universe.csv's folder (or a folder above it) in the repo."""
    from dvc_cuvis._io import read_yaml

    for folder in ancestors(universe.parent):
        if root is None or str(folder) == root or not str(folder).startswith(root):
            break
        dvc_file = folder.parent / f"{folder.name}.dvc"
        if dvc_file.is_file():
            return [dvc_file_entry(_stamped(dvc_file, read_yaml), str(_rel(folder, root)),
                                   str(_rel(dvc_file, root)))]
    return []


#: Folder -> the dvc.lock found for it (while that file exists).
_LOCKS: dict[str, Path] = {}


def _find_lock(folder: Path) -> Path | None:
    known = _LOCKS.get(str(folder))
    if known is not None and known.is_file():
        return known
    found = find_lock(folder)
    if found is not None:
        _LOCKS[str(folder)] = found
    return found


def _data_entries(universe: Path | None, lock: Path | str | None,
                  root: str | None) -> list[dict[str, Any]]:
    if universe is None:
        return []
    lock_path = _find_lock(universe.parent) if lock == "auto" else (
        Path(lock) if lock else None)
    if lock_path is not None:
        try:
            parsed = _stamped(lock_path, LockFile.read)
        except LockReadError:
            parsed = None
        if parsed is not None:
            found = _lock_entries_of(parsed, os.path.abspath(universe), lock_path, root)
            if found:
                return [dict(e) for e in found]
    return _dvc_file_entries(Path(os.path.abspath(universe)), root)


#: (parsed dvc.lock, universe.csv, root) -> its entries: one parse, one search per lock.
_ENTRIES: dict[tuple[int, str, str | None], tuple[LockFile, list[dict[str, Any]]]] = {}


def _lock_entries_of(parsed: LockFile, universe: str, lock_path: Path,
                     root: str | None) -> list[dict[str, Any]]:
    key = (id(parsed), universe, root)
    known = _ENTRIES.get(key)
    if known is not None and known[0] is parsed:
        return known[1]
    found = lock_entries(parsed, os.path.relpath(universe, parsed.root.absolute()),
                         str(_rel(lock_path, root)))
    _ENTRIES[key] = (parsed, found)
    return found


# -- the record -------------------------------------------------------------------------


def _check_facts(mode: str, report: DriftReport | None) -> dict[str, Any]:
    if mode == "off" or report is None:
        return {"mode": mode, "verdict": "not checked", "reused_verdict": False, "failed": []}
    return {"mode": mode, "verdict": "ok" if report.ok else "failed",
            "reused_verdict": report.reused_verdict,
            "failed": [f.check for f in report.findings if f.failed]}


def _universe_facts(universe: Path | str | Universe, cache: StatCache | None,
                    root: str | None) -> tuple[dict[str, Any], Path | None]:
    path = universe.path if isinstance(universe, Universe) else Path(universe)
    if isinstance(universe, Universe) and universe.path is None:  # a listing (tiff_paired)
        return {"path": None, "md5": None, "listing_hash": universe.hash}, None
    assert path is not None
    try:
        md5 = cache.md5(path) if cache is not None else hashlib.md5(
            path.read_bytes()).hexdigest()
    except OSError:
        md5 = None
    return {"path": _rel(path, root), "md5": md5}, path


def take_record(
    splits: Path | str | DataSplitConfig,
    universe: Path | str | Universe,
    *,
    module: str,
    mode: str,
    report: DriftReport | None,
    cache: StatCache | None = None,
    lock: Path | str | None = "auto",
    counts: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The dataset record of a module set up on ``splits`` and ``universe`` (plain JSON types).

    ``report`` is the drift check's (None: not checked, ``verify: off``); ``counts`` the
    samples per stage when the caller resolved the split anyway (else they are counted from
    the baked split's ids, without reading the universe).
    """
    split_file = _split_file(splits)
    uni_file = universe.path if isinstance(universe, Universe) else Path(universe)
    key = (str(split_file), str(uni_file), str(lock), id(cache))
    known = _FACTS.get(key) if split_file is not None and uni_file is not None else None
    if known is not None and [_stamp(p) for p in known[0]] == known[1]:
        facts = known[2]
    else:
        facts, witnesses = _facts(splits, universe, cache, lock)
        if split_file is not None and uni_file is not None:
            _FACTS[key] = (witnesses, [_stamp(p) for p in witnesses], facts)
    return {
        "kind": KIND, "format": FORMAT, "dvc_cuvis": __version__, "module": module,
        **facts,
        "repo": dict(facts["repo"]),
        "stages": dict(counts if counts is not None else facts["stages"]),
        "check": _check_facts(mode, report),
    }


#: The facts of the last record per (split file, universe.csv, lock, cache), with the files
#: they were read from and those files' stamps: while no stamp changed they stand.
_FACTS: dict[tuple[str, str, str, int], tuple[list[str], list[Any], dict[str, Any]]] = {}


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _split_file(splits: Path | str | DataSplitConfig) -> Path | None:
    """The file a split is read from (None: an inline config), without reading it."""
    if isinstance(splits, DataSplitConfig):
        if not splits.splits_path or any(getattr(splits, s) for s in STAGES):
            return None
        return Path(splits.splits_path)
    return Path(splits)


def _facts(splits: Path | str | DataSplitConfig, universe: Path | str | Universe,
           cache: StatCache | None, lock: Path | str | None) -> tuple[dict[str, Any], list[str]]:
    """The record's facts about the data, and every file they were read from."""
    doc, sha, stage_counts, split_file = _split_facts(splits)
    anchor = split_file or (universe.path if isinstance(universe, Universe) else Path(universe))
    repo = _repo_facts(Path(os.path.abspath(anchor or ".")).parent)
    uni_facts, uni_path = _universe_facts(universe, cache, repo["root"])
    data = _data_entries(uni_path, lock, repo["root"])
    witnesses = [os.path.abspath(p) for p in (split_file, uni_path) if p is not None]
    witnesses += _git_witnesses(Path(os.path.abspath(anchor or ".")).parent)
    witnesses += [os.path.join(repo["root"] or "/", str(e["source"])) for e in data]
    facts = {"repo": repo, "splits": {"path": _rel(split_file, repo["root"]), "sha256": sha},
             "universe": uni_facts, "universe_hash": doc.get("universe_hash"),
             "stages": stage_counts, "data": data, "split": doc}
    return facts, witnesses


def _git_witnesses(anchor: Path) -> list[str]:
    """git's files the commit and origin were read from (HEAD, its ref, packed-refs, config)."""
    found = _git_top(anchor)
    if found is None or found[1] is None:
        return [os.path.join(a, ".git") for a in map(str, ancestors(anchor))]
    git_dir, common = map(str, found[1])
    head = _read_text(os.path.join(git_dir, "HEAD")) or ""
    paths = [os.path.join(git_dir, "HEAD"), os.path.join(common, "packed-refs"),
             os.path.join(common, "config")]
    if head.startswith("ref:"):
        ref = head[4:].strip()
        paths += sorted({os.path.join(git_dir, ref), os.path.join(common, ref)})
    return paths


def finish(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with the dirty flag filled in (one ``git status``, the first time only)."""
    repo = record.get("repo") or {}
    if repo.get("dirty") is None and repo.get("commit") and repo.get("root"):
        try:
            proc = subprocess.run(
                ["git", "-C", repo["root"], "status", "--porcelain", "--untracked-files=no"],
                capture_output=True, text=True, check=False, timeout=60)
            repo["dirty"] = bool(proc.stdout.strip()) if proc.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            repo["dirty"] = None
    return record


def is_record(obj: Any) -> bool:
    """True for a dataset record (a mapping that says it is one)."""
    return isinstance(obj, dict) and obj.get("kind") == KIND


def version_key(record: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two records the same dataset version: the split, universe.csv's bytes and
    the data's recorded md5s (not the commit: a commit that touched other files keeps it)."""
    split = json.dumps(record.get("split"), sort_keys=True)
    uni = record.get("universe") or {}
    data = tuple(sorted((d.get("path"), d.get("md5")) for d in record.get("data") or []))
    return split, uni.get("md5"), uni.get("listing_hash"), data


def same_version(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """True when two records name the same split on the same data."""
    return version_key(a) == version_key(b)


def hyperparams(record: dict[str, Any]) -> dict[str, Any]:
    """The record as flat ``dataset/...`` hyperparameters (scalars only) for a logger."""
    repo, check = record.get("repo") or {}, record.get("check") or {}
    flat: dict[str, Any] = {
        "dataset/commit": repo.get("commit") or "",
        "dataset/dirty": repo.get("dirty"),
        "dataset/origin": repo.get("origin") or "",
        "dataset/splits": (record.get("splits") or {}).get("path") or "",
        "dataset/splits_sha256": (record.get("splits") or {}).get("sha256"),
        "dataset/universe_hash": record.get("universe_hash") or "",
        "dataset/universe_md5": (record.get("universe") or {}).get("md5") or "",
        "dataset/dvc_cuvis": record.get("dvc_cuvis"),
        "dataset/verify": check.get("mode"),
        "dataset/verdict": check.get("verdict"),
    }
    for stage, n in (record.get("stages") or {}).items():
        flat[f"dataset/samples/{stage}"] = -1 if n is None else n
    for entry in record.get("data") or []:
        flat[f"dataset/md5/{entry.get('path')}"] = entry.get("md5") or ""
    return {k: ("" if v is None else v) for k, v in flat.items()}
