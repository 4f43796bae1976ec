"""The plan of a run: which frames to write, keep, rename from the older layout or delete,
from recipe keys compared with the manifest and the files on disk.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, cast

import numpy as np

from dvc_cuvis import limits
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError, MissingFileError, first_line
from dvc_cuvis.limits import LimitError, NestingError, loads_json
from dvc_cuvis.materialize.options import ReaderParams
from dvc_cuvis.materialize.tasks import (
    _CHUNK,
    Task,
)
from dvc_cuvis.materialize.v1_names import _v1_frame_name
from dvc_cuvis.model.frame_names import frame_name, frame_name_problem
from dvc_cuvis.model.resolution import check_pinned_universe
from dvc_cuvis.model.selectors import Resolver
from dvc_cuvis.model.splits import STAGES, DataSplitConfig
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.paths.guard import PathGuard
from dvc_cuvis.paths.owned import owned_files, owned_folder

FORMAT_VERSION = 2  # 2: frames/<source>.<index>.npz (1: frames/<source>/<index>.npz)


class ManifestEntry(TypedDict):
    """A frame as the manifest claims it: the recipe it was written by, its md5 and size
    (a dict, so that ``manifest.json`` is written as it always was)."""

    recipe: str
    md5: str
    size: int


#: The manifest's frames: name -> entry.
Manifest = dict[str, ManifestEntry]
#: Everything a frame's bytes depend on, as JSON (hashed into its recipe).
RecipeKey = dict[str, object]

@dataclass
class Plan:
    """What a run will do: frames to write, kept, renamed from an older layout, deleted."""

    rows: list[int]
    names: dict[int, str]
    recipes: dict[str, str]
    tasks: list[Task]
    keep: Manifest
    delete: list[Path]
    migrate: dict[str, tuple[str, ManifestEntry]] = field(default_factory=dict)  # new: old, entry
    #: per frame, the one-frame task that reads it (a kept frame's summary is taken from it)
    inputs: dict[str, Task] = field(default_factory=dict)
    #: what the run repairs on its way, one line each (a damaged manifest, summaries shard)
    notes: list[str] = field(default_factory=list)


def _format_of(uni: Universe, pos: int, path: str) -> str:
    fmt = uni.value("format", pos).lower()
    if fmt:
        return "tiff" if fmt == "tif" else fmt
    suffix = Path(path).suffix.lower()
    return {".cu3s": "cu3s", ".tif": "tiff", ".tiff": "tiff", ".npz": "npz"}.get(suffix, "")


def selected_rows(uni: Universe, splits_cfg: DataSplitConfig | None, select: str) -> list[int]:
    """Canonical positions to materialize: the split's samples, or the whole universe.

    Selectors that match nothing are tolerated here, so a shard's universe (one day, one
    line) picks exactly its own part of a split written for the whole dataset.
    """
    if select == "all" or splits_cfg is None:
        return list(range(len(uni)))
    if select != "splits":
        raise DvcCuvisError(f"select {select!r}: choose splits or all")
    check_pinned_universe(splits_cfg, uni)
    resolver = Resolver(uni)
    parts = [np.zeros(0, dtype=np.int64)]
    for stage in STAGES:
        selectors = getattr(splits_cfg, stage)
        if stage == "predict" and not selectors:
            return list(range(len(uni)))  # empty predict = the whole universe
        for i, sel in enumerate(selectors):
            parts.append(resolver.select(sel, f"{stage}[{i}]"))
    return np.unique(np.concatenate(parts)).tolist()


def _load_manifest(out_dir: Path) -> tuple[int | None, Manifest, str]:
    """The manifest's format version and frames, and why it was not read ('' when it was,
    or when there is none): a damaged manifest reads as none, so every frame is written."""
    path = out_dir / "manifest.json"
    try:
        data = loads_json(path.read_bytes(), path)
    except FileNotFoundError:
        return None, {}, ""
    except NestingError:
        return None, {}, "nested too deep"
    except LimitError:  # a DVC_CUVIS_MAX_* setting that is not a number: said, not hidden
        raise
    except (OSError, ValueError) as exc:
        return None, {}, first_line(exc, type(exc).__name__)[:120]
    version = data.get("version") if isinstance(data, dict) else None
    frames = data.get("frames") if isinstance(data, dict) else None
    if not (isinstance(version, int) and isinstance(frames, dict)
            and all(_is_entry(e) for e in frames.values())):
        return None, {}, "not a manifest of frames"
    return version, cast(Manifest, frames), ""


def _is_entry(entry: object) -> bool:
    """A manifest entry as materialize writes it: recipe, md5 and size."""
    return (isinstance(entry, dict) and isinstance(entry.get("recipe"), str)
            and isinstance(entry.get("md5"), str) and type(entry.get("size")) is int)


def plan(
    uni: Universe,
    rows: list[int],
    out_dir: Path,
    params: ReaderParams,
    cache: StatCache,
) -> Plan:
    """Compare recipe keys with the manifest and the files on disk."""
    base = uni.path.parent if uni.path is not None else Path(".")
    version, manifest, damage = _load_manifest(out_dir)
    legacy = manifest if version == 1 else {}  # a version-1 folder: its frames move, not rewrite
    manifest = manifest if version == FORMAT_VERSION else {}
    ref_md5 = _reference_md5s(params, cache)
    guard = PathGuard(base)
    max_name = limits.current().max_name_bytes
    names: dict[int, str] = {}
    recipes: dict[str, str] = {}
    todo: dict[tuple[str, str, str | None, str, str], list[tuple[int, str]]] = {}
    keep: Manifest = {}
    migrate: dict[str, tuple[str, ManifestEntry]] = {}
    inputs: dict[str, Task] = {}
    for pos in rows:
        source, index = uni.source(pos), uni.index(pos)
        fmt, phys, ann = _row_inputs(uni, pos, guard)
        key = _recipe_key(fmt, source, index, phys, ann, params, ref_md5, cache)
        wl = uni.value("wavelengths", pos) if fmt == "tiff" else ""
        if wl:  # enumerate's --wavelengths: part of what the frame's bytes depend on
            key["wavelengths"] = wl
        recipe = _recipe(key)
        name = frame_name(source, index)
        problem = frame_name_problem(name, max_name)
        if problem is not None:  # enumerate refuses it; a hand-written universe.csv may not
            raise LimitError(f"{uni.path}: {uni.uid(pos)}: cannot be materialized: {problem}; "
                             "rename the file and re-enumerate")
        inputs[name] = Task(fmt, str(phys), str(ann) if ann else None, source, ((index, name),),
                            os.path.abspath(out_dir), params, wavelengths=wl)
        names[pos], recipes[name] = name, recipe
        entry = manifest.get(name)
        target = out_dir / name
        old = _v1_frame_name(source, index) if legacy else ""
        old_entry = legacy.get(old)
        if entry and entry.get("recipe") == recipe and _intact(target, entry, cache):
            keep[name] = entry
        elif (old_entry and old_entry.get("recipe") == _recipe({**key, "version": 1})
              and _intact(out_dir / old, old_entry, cache)):  # same bytes, older layout
            migrate[name] = (old, {**old_entry, "recipe": recipe})
        else:
            todo.setdefault((fmt, str(phys), str(ann) if ann else None, source, wl), []).append(
                (index, name))
    tasks = _tasks(todo, out_dir, params)
    delete = _unwanted_files(out_dir, set(recipes) | {old for old, _ in migrate.values()})
    notes = [f"{out_dir / 'manifest.json'}: damaged ({damage}); rebuilding it: every "
             "selected frame is written again, none is taken on its word"] if damage else []
    return Plan(rows, names, recipes, tasks, keep, delete, migrate, inputs, notes)


def _reference_md5s(params: ReaderParams, cache: StatCache) -> dict[str, str]:
    """md5 of the cu3s white/dark reference files that ``params`` name (a cu3s recipe's part)."""
    return {
        kind: cache.md5(Path(spec.rpartition(":")[0] if _has_frame(spec) else spec))
        for kind, spec in (("white", params.white_ref), ("dark", params.dark_ref)) if spec
    }


def _row_inputs(uni: Universe, pos: int, guard: PathGuard) -> tuple[str, Path, Path | None]:
    """The format, physical file and annotation file of the row at ``pos``, all checked."""
    rel = uni.frame_file(pos)
    phys = Path(guard.resolve(rel, what=f"{uni.uid(pos)}: materialized_path"))
    fmt = _format_of(uni, pos, rel)
    if fmt not in ("npz", "tiff", "cu3s"):
        raise DvcCuvisError(
            f"{uni.path}: cannot tell the format of {uni.uid(pos)} ({rel!r}); set the "
            "'format' column to cu3s, tiff or npz"
        )
    if not phys.is_file():
        raise MissingFileError(
            f"{uni.path}: {uni.uid(pos)}: file {rel!r} not found (run `dvc pull` or "
            "re-enumerate)"
        )
    ann_rel = uni.value("annotation", pos)
    ann = Path(guard.resolve(ann_rel, what=f"{uni.uid(pos)}: annotation")) if ann_rel else None
    if ann is not None and not ann.is_file():
        raise MissingFileError(f"{uni.path}: {uni.uid(pos)}: annotation {ann_rel!r} not found")
    return fmt, phys, ann


def _recipe_key(
    fmt: str, source: str, index: int, phys: Path, ann: Path | None,
    params: ReaderParams, ref_md5: dict[str, str], cache: StatCache,
) -> RecipeKey:
    """Everything a frame's bytes depend on (cu3s alone reads the processing parameters)."""
    return {
        "version": FORMAT_VERSION,
        "format": fmt,
        "source": source,
        "index": index,
        "md5": cache.md5(phys),
        "annotation_md5": cache.md5(ann) if ann is not None else None,
        "params": params.key() if fmt == "cu3s" else {**params.key(), "processing_mode": None,
                                                       "white_ref": None, "dark_ref": None},
        "refs": ref_md5 if fmt == "cu3s" else {},
    }


def _tasks(
    todo: dict[tuple[str, str, str | None, str, str], list[tuple[int, str]]],
    out_dir: Path, params: ReaderParams,
) -> list[Task]:
    """The frames to write, per input file in path order, in chunks of ``_CHUNK``."""
    tasks = []
    for (fmt, phys_s, ann_s, source, wl), frames in sorted(todo.items(),
                                                           key=lambda kv: kv[0][1:]):
        for lo in range(0, len(frames), _CHUNK):
            tasks.append(Task(fmt, phys_s, ann_s, source, tuple(frames[lo:lo + _CHUNK]),
                              os.path.abspath(out_dir), params,  # workers: own cwd
                              wavelengths=wl))
    return tasks


def _unwanted_files(out_dir: Path, wanted: set[str]) -> list[Path]:
    """Our files under ``OUT/frames`` (frames, temporaries) that no frame of the plan is.

    ``frames/`` and every folder in it must be a real folder, not a link (refused with the
    link named): an entry listed here lies inside ``OUT``, and its ``unlink`` removes that
    entry, never a file a link leads to.
    """
    frames_dir = out_dir / "frames"
    owned_folder(frames_dir, out_dir)
    delete = []
    for f in owned_files(frames_dir):
        p = Path(f)
        ours = p.suffix == ".npz" or p.name.endswith(".tmp")
        if ours and p.relative_to(out_dir).as_posix() not in wanted:
            delete.append(p)
    return delete


def _recipe(key: RecipeKey) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _has_frame(spec: str) -> bool:
    head, sep, tail = spec.rpartition(":")
    return bool(sep) and tail.isdigit() and bool(head)


def _intact(path: Path, entry: ManifestEntry, cache: StatCache) -> bool:
    try:
        st = path.stat()
    except OSError:
        return False
    return st.st_size == entry.get("size") and cache.md5(path, st) == entry.get("md5")
