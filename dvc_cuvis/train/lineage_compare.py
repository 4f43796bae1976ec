"""Dataset records read back: from checkpoints and trainrun folders, against the repository
now, and against each other.

A record (:mod:`dvc_cuvis.train.lineage`) holds the baked split, so the samples a model was
trained on are known without its commit.  Where universe.csv at the record's commit (or in
the workspace) has the recorded md5, it is the universe of the comparison, and the
per-sample comparison is exactly ``dvc-cuvis diff``'s (:func:`~dvc_cuvis.model.compare.
diff_versions`), content changes included; otherwise the samples come from the split's ids
and content changes are unknown.  A checkpoint is read without its tensors and without
running its code (:mod:`dvc_cuvis.train.checkpoint`): only its pickle, whatever it names
left inert.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, cast

from dvc_cuvis.errors import DvcCuvisError, first_line
from dvc_cuvis.limits import LimitError, loads_json
from dvc_cuvis.model.compare import SplitDiff, Version, diff_versions
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import parse_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import parse_universe_bytes
from dvc_cuvis.repo.lockfile import LockFile, LockReadError
from dvc_cuvis.review.history import GitTree, load_version
from dvc_cuvis.train.checkpoint import plain_record, read_checkpoint
from dvc_cuvis.train.lineage import KEY, RECORD_FILE, is_record, same_version
from dvc_cuvis.train.lineage_data import dvc_file_entry, lock_entries
from dvc_cuvis.train.lineage_split import split_samples
from dvc_cuvis.train.lineage_values import JsonRecord, LineageRecord, Transition, as_record

#: How many uids a comparison lists (the counts are always complete).
FIRST_UIDS = 5


# -- reading records --------------------------------------------------------------------


def _from_checkpoint(path: Path) -> list[JsonRecord]:
    """The records of a Lightning checkpoint (one per DataModule state that holds one), read
    without its tensors (:func:`~dvc_cuvis.train.checkpoint.read_checkpoint`)."""
    ckpt = read_checkpoint(path)
    if not isinstance(ckpt, dict):
        return []
    found = [v[KEY] for _, v in sorted(ckpt.items(), key=lambda kv: str(kv[0]))
             if isinstance(v, dict) and is_record(v.get(KEY))]
    for record in found:
        if not plain_record(record, path):
            raise DvcCuvisError(f"{path}: a damaged dataset record (it holds values other "
                                "than JSON's); take the record again with a guarded run")
        _check_shape(record, path)
    return found


def _from_json(path: Path) -> list[JsonRecord]:
    try:
        doc = loads_json(path.read_bytes(), path)
    except LimitError:
        raise
    except (OSError, ValueError) as exc:
        raise DvcCuvisError(f"{path}: not a dataset record ({first_line(exc)})") from None
    if not is_record(doc):
        return []
    _check_shape(doc, path)
    return [doc]


#: The parts of a record that hold objects, and the one that holds a list of them.
_OBJECTS = ("repo", "splits", "universe", "stages", "check", "split")


def _check_shape(record: JsonRecord, path: Path) -> None:
    """Refuse a record whose parts are not of the kinds a record holds (one line, exit 2)."""
    bad = [k for k in _OBJECTS if not isinstance(record.get(k) or {}, dict)]
    data = record.get("data") or []
    if not (isinstance(data, list) and all(isinstance(e, dict) for e in data)):
        bad.append("data")
    if bad:
        raise DvcCuvisError(f"{path}: a damaged dataset record ({', '.join(bad)} not as a "
                            "record holds them); take the record again with a guarded run")


def read_records(path: Path) -> list[tuple[str, JsonRecord]]:
    """``(file, record)`` for each model at ``path``: a .ckpt, a saved record, or a trainrun
    output folder (its ``dataset_lineage.json`` and every .ckpt below it)."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file()
                       and (p.suffix == ".ckpt" or p.name == RECORD_FILE))
        found = [(str(f), r) for f in files for r in _read_file(f, quiet=True)]
        if not found:
            raise DvcCuvisError(f"{path}: no dataset record in this folder (no {RECORD_FILE}, "
                                "no checkpoint carrying one): train with a guarded DataModule "
                                "(and, for a cuvis-ai trainrun, data.params.lineage: "
                                "${output_dir})")
        return found
    if not path.exists():
        raise DvcCuvisError(f"{path}: no such file or folder")
    found = [(str(path), r) for r in _read_file(path, quiet=False)]
    if not found:
        raise DvcCuvisError(f"{path}: holds no dataset record (a checkpoint of a DataModule "
                            "dvc-cuvis did not guard, or not a record)")
    return found


def _read_file(path: Path, *, quiet: bool) -> list[JsonRecord]:
    with path.open("rb") as fh:
        head = fh.read(4)
    if head.startswith(b"PK") or path.suffix in (".ckpt", ".pt", ".pth"):
        try:
            return _from_checkpoint(path)
        except DvcCuvisError:
            if quiet:
                return []
            raise
    return _from_json(path)


def one_record(path: Path) -> tuple[str, JsonRecord]:
    """The one dataset version at ``path`` (a folder whose models disagree is an error)."""
    found = read_records(path)
    first = found[0]
    if any(not same_version(first[1], r) for _, r in found[1:]):
        raise DvcCuvisError(f"{path}: holds models trained on different dataset versions; "
                            "name one of its files")
    return first


# -- a record's version -----------------------------------------------------------------


class Tree(Protocol):
    """Where a record's files are read: a git repository at revisions, or a plain folder."""

    def read(self, rev: str | None, path: str) -> bytes:
        """The bytes of ``path`` at ``rev`` (None: as the files are now)."""
        ...


class Workspace:
    """The files of a folder that is not a git repository (it has no revisions)."""

    def __init__(self, root: Path) -> None:
        """Files under ``root``."""
        self.root = root

    def read(self, rev: str | None, path: str) -> bytes:
        """The bytes of ``path``; any revision is an error."""
        if rev is not None:
            raise DvcCuvisError(f"{self.root}: not a git repository: --rev needs one")
        try:
            return (self.root / path).read_bytes()
        except OSError:
            raise DvcCuvisError(f"{path} does not exist in the workspace") from None


def open_repository(record: LineageRecord | JsonRecord, repo: str | None) -> Tree:
    """The repository a record is compared with: ``repo``, else the record's root if it is
    here, else the one holding the current folder.  A record taken outside any repository
    names its files by absolute path: they are read where they are."""
    root = repo or as_record(record).repo.root
    if root and Path(root).is_dir():
        try:
            return GitTree(root)
        except DvcCuvisError:
            return Workspace(Path(root))
    if not root:
        return Workspace(Path("/"))
    return GitTree(".")


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _recorded_universe(record: LineageRecord, tree: Tree | None) -> Universe | None:
    """universe.csv with the recorded md5, from the workspace or the record's commit."""
    path, md5 = record.universe.path, record.universe.md5
    if not path or not md5 or tree is None:
        return None
    for rev in (record.repo.commit, None):
        try:
            data = tree.read(rev, path)
        except DvcCuvisError:
            continue
        if _md5(data) == md5:
            return parse_universe_bytes(data, path=Path(f"{(rev or 'workspace')[:8]}:{path}"))
    return None


def _split_universe(doc: Mapping[str, object]) -> Universe | None:
    """The samples a baked split names, as a universe (None for a rule)."""
    stages = split_samples(doc)
    if stages is None:
        return None
    pairs = sorted({p for named in stages.values() for p in named},
                   key=lambda p: (p[0], -1 if p[1] is None else p[1]))
    return Universe.from_records([{"source": s, "index": i} for s, i in pairs])


def record_version(record: LineageRecord | JsonRecord, tree: Tree | None,
                   label: str) -> tuple[Version, bool]:
    """The version a record names, and whether its universe (content digests) is known."""
    record = as_record(record)
    uni = _recorded_universe(record, tree)
    known = uni is not None
    if uni is None:
        uni = _split_universe(record.split)
    if uni is None:
        raise DvcCuvisError(
            f"{label}: the recorded split holds rules (globs, tags, ...) and its universe.csv "
            "is neither in the workspace nor at the recorded commit with the recorded md5: "
            "its samples cannot be known")
    cfg = parse_splits(json.dumps(record.split), path=label)
    res = resolve(cfg.model_copy(update={"universe_hash": None}), uni, where=label)
    return Version(label, uni, res.stages, cfg.universe_hash, []), known


# -- a record against the repository now ------------------------------------------------


def _data_at(tree: Tree, rev: str | None, record: LineageRecord) -> dict[str, str | None]:
    """The md5s the same files (dvc.lock, ``.dvc``) record at ``rev``, by path."""
    now: dict[str, str | None] = {}
    uni_path = record.universe.path or ""
    for source in sorted({str(e.source) for e in record.data}):
        try:
            data = tree.read(rev, source)
        except DvcCuvisError:
            continue
        if source.endswith(".dvc"):
            from dvc_cuvis._io import parse_yaml

            path = next(str(e.path) for e in record.data if e.source == source)
            entries = [dvc_file_entry(parse_yaml(data, source), path, source)]
        else:
            try:
                lock = LockFile.parse(data.decode("utf-8"), Path(source))
            except (LockReadError, UnicodeDecodeError):
                continue
            rel = os.path.relpath(uni_path, os.path.dirname(source) or ".")
            entries = lock_entries(lock, rel, source)
        now.update({str(e.path): e.md5 for e in entries})
    return now


def changes_of(d: SplitDiff, content_known: bool) -> dict[str, object]:
    """What changed per sample, as ``dvc-cuvis diff`` counts it (content changes are
    unknown unless both universes are known and record content digests)."""
    content_known = content_known and all(v.universe.has_column("md5") for v in (d.a, d.b))
    files = sorted({d.b.universe.frame_file(p) for p in d.content.tolist()})
    return {
        "moved": d.moved,
        "added": d.transitions_total("new"),
        "removed": d.transitions_total("removed"),
        "modified_files": len(files) if content_known else None,
        "transitions": d.transitions,
        "content_changed": ({"total": len(d.content), "by_stage": d.content_by_stage()}
                            if content_known else None),
    }


def status(record: LineageRecord | JsonRecord, tree: Tree,
           rev: str | None) -> dict[str, Any]:
    """Whether the split and data at ``rev`` (None: the workspace) are the record's version,
    and what changed per sample if not."""
    record = as_record(record)
    splits, universe = record.splits_path, record.universe.path
    if not splits or not universe:
        raise DvcCuvisError("the record names no splits file or universe.csv in a repository "
                            "(an inline split or a listing): nothing to compare with")
    label = rev or "workspace"
    a, known = record_version(record, tree, "trained")
    # load_version reads through ``tree.read`` alone: a plain folder serves as well as git
    b = load_version(cast(GitTree, tree), rev, splits, universe, params_path=None)
    d = diff_versions(a, b)
    split_now = loads_json(tree.read(rev, splits), f"{label}: {splits}")
    uni_now = _md5(tree.read(rev, universe))
    now = _data_at(tree, rev, record)
    data_changed = sorted(p for p, m in record.recorded_md5s().items() if now.get(p, m) != m)
    split_changed = split_now != record.split
    current = not split_changed and uni_now == record.universe.md5 and not data_changed
    changes = changes_of(d, known)
    changes["data_changed"] = data_changed
    changes["splits_changed"] = split_changed
    changes["universe_changed"] = uni_now != record.universe.md5
    return {"rev": label, "current": current, "changes": changes}


def dataset_of(record: LineageRecord | JsonRecord) -> dict[str, object]:
    """The part of a record ``lineage --json`` shows under ``dataset``."""
    r = as_record(record)
    return {"commit": r.repo.commit, "dirty": r.repo.dirty, "origin": r.repo.origin,
            "root": r.repo.root, "splits": r.splits_path, "splits_sha256": r.splits_sha256,
            "universe": r.universe.path, "universe_md5": r.universe.md5,
            "universe_hash": r.universe_hash, "stages": dict(r.stages),
            "data": [e.to_json() for e in r.data], "dvc_cuvis": r.dvc_cuvis,
            "module": r.module, "check": r.check.to_json()}


# -- two records against each other -----------------------------------------------------


def _uids(v: Version, stages: tuple[str, ...]) -> set[str]:
    return {u for s in stages for u in v.universe.uids(v.stages[s])}


def _overlap(fit: set[str], test: set[str]) -> dict[str, object]:
    both = sorted(fit & test)
    return {"count": len(both), "first": both[:FIRST_UIDS]}


def compare_records(a: LineageRecord | JsonRecord, b: LineageRecord | JsonRecord,
                    trees: tuple[Tree | None, Tree | None] = (None, None)) -> dict[str, Any]:
    """Whether two models' test metrics are comparable: the same test set, and neither one's
    train or val samples in the other's test set."""
    va, _ = record_version(a, trees[0], "A")
    vb, _ = record_version(b, trees[1], "B")
    test_a, test_b = _uids(va, ("test",)), _uids(vb, ("test",))
    fit_a, fit_b = _uids(va, ("train", "val")), _uids(vb, ("train", "val"))
    identical = test_a == test_b
    b_in_a, a_in_b = _overlap(fit_b, test_a), _overlap(fit_a, test_b)
    comparable = identical and not b_in_a["count"] and not a_in_b["count"]
    if comparable:
        verdict = "comparable: the same test set, and neither model trained on the other's"
    elif b_in_a["count"] or a_in_b["count"]:
        verdict = ("not comparable: one model trained or validated on samples of the other's "
                   "test set")
    else:
        verdict = (f"not comparable: different test sets ({len(test_a)} and {len(test_b)} "
                   f"samples, {len(test_a & test_b)} shared)")
    return {"test_sets_identical": identical,
            "test_samples": {"a": len(test_a), "b": len(test_b), "shared": len(test_a & test_b)},
            "b_fit_in_a_test": b_in_a, "a_fit_in_b_test": a_in_b,
            "comparable": comparable, "verdict": verdict}


def describe_text(changes: dict[str, Any]) -> str:
    """One sentence of per-sample changes (``3 moved (train->test 2, ...), 1 added, ...``)."""
    moves = ", ".join(f"{k} {v}" for k, v in (changes.get("transitions") or {}).items()
                      if Transition.parse(k).is_move)
    parts = [f"{changes['moved']} sample(s) moved" + (f" ({moves})" if moves else ""),
             f"{changes['added']} added", f"{changes['removed']} removed"]
    if changes.get("modified_files") is not None:
        parts.append(f"{changes['modified_files']} modified file(s)")
    else:
        parts.append("modified files unknown (no content digests recorded at both ends)")
    if changes.get("data_changed"):
        parts.append("the recorded md5 of " + ", ".join(changes["data_changed"]) + " changed")
    return ", ".join(parts)
