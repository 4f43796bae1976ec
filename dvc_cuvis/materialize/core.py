"""Deterministic, incremental, parallel npz materialization of a split's frames.

Output folder layout (one DVC output, ``persist: true``)::

    OUT/frames/<source, path-escaped>.<index:06d>.npz   one frame per selected sample
    OUT/universe.csv      source,index,materialized_path,... (paths relative to it)
    OUT/splits.json       the split, resolving against OUT/universe.csv (same identities;
                          a whole-file TIFF sample becomes npz_multi's (source, 0), re-pinned)
    OUT/manifest.json     per frame: recipe key, md5 and size of the written file

*Deterministic*: frame bytes come from :mod:`dvc_cuvis.model.frames` (sorted members, fixed
zip timestamps and attributes, never pickled), ``source`` is the logical id, and nothing
depends on the checkout path.  *Incremental*: a frame's recipe key covers
the source file's content md5, the index, every reader and writer parameter and the
format version; a rerun rewrites exactly the frames whose key changed (or whose file no
longer matches the manifest) and deletes frames that left the selection; frames of a
folder written in an older layout (format version 1) whose recipe is unchanged are renamed
into the current one, not rewritten.  *Safe*: every
file is written to a temporary sibling and renamed, the manifest is checkpointed, and a
lock file keeps two runs off one folder; an npz input's zip CRCs are checked (while its
frame is hashed, see ``frames.write_frame``) before its frame gets a name, so a damaged
input leaves no frame.  *Parallel*: per-source tasks run on a process
pool (``jobs``) or on a Dask cluster (``executor="dask"``) through the same function; a
local worker takes consecutive tasks in groups and hashes each frame (md5, the slowest
pass) while it writes the next, so small files run near the speed of one md5 per frame;
it maps each npz input rather than reading it (no copy of the input, see
``frames.open_npz_input``), and checks the input's CRCs with libdeflate where the system
has it (``frames.crc32``).  A task that fails ends the run with its error, but only after
the tasks finished before it in its group, and the groups already running, are recorded
(``run_group``): the rerun writes only what is missing.

*Durable* (``sync``, measured in ``benchmarks/bench_materialize.py``): a frame is claimed
only by the manifest, and the manifest is written only after the file system has been
synced (``syncfs``), so it never names a frame a power cut could take.  Frames of a local
run are written without a per-file ``fsync`` (``sync="fs"``): the kernel writes them back
while the next ones are encoded, and the run waits for the disk once per checkpoint (a few
seconds apart) instead of once per file (an fsync per frame is markedly slower: figures in
docs/performance.md).  What a
power cut can lose: the frames written since the last checkpoint — the manifest does not
claim them, so the next run (which checks size and md5 of every claimed frame that its
stat cache cannot vouch for) writes them again; an empty or torn file under a frame's
name is rewritten the same way.  A ``kill -9`` loses nothing written (the page cache
survives the process), and leaves no half-written file under a final name.  Dask workers
may write from other machines, whose page cache a ``syncfs`` here cannot reach: with
``executor="dask"`` each frame is fsynced by its writer (``sync="file"``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import time
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from dvc_cuvis import limits
from dvc_cuvis._io import atomic_write_text, dumps_json, sync_file_system
from dvc_cuvis.config.specs import MATERIALIZE
from dvc_cuvis.digests.hashing import list_tree
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError, FileSystemError, MissingFileError, first_line
from dvc_cuvis.interop.modules import MODULE_COLUMN
from dvc_cuvis.limits import LimitError, NestingError, loads_json
from dvc_cuvis.materialize.summaries import ceiling_of, summarize, to_record
from dvc_cuvis.materialize.summary_store import THUMBNAIL_CAP, refresh, thumbnail_frames
from dvc_cuvis.model.frames import (
    Compression,
    FrameWriter,
    NpzInput,
    frame_arrays,
    frame_name,
    frame_name_problem,
    open_npz_input,
)
from dvc_cuvis.model.frames import (
    parse_frame_name as parse_frame_name,  # (its home is model.frames, as frame_name's)
)
from dvc_cuvis.model.selectors import Resolver
from dvc_cuvis.model.splits import STAGES, check_pinned_universe, dumps_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import format_universe
from dvc_cuvis.paths import PathGuard, dvc_root_of, owned_files, owned_folder
from dvc_cuvis.progress import progress

FORMAT_VERSION = 2  # 2: frames/<source>.<index>.npz (1: frames/<source>/<index>.npz)
_CHUNK = 32  # frames per task: small enough to balance two workers, large enough to amortize


# -- options ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReaderParams:
    """Everything that changes the bytes of a frame (part of every recipe key)."""

    crop: tuple[int, int, int, int] | None = None
    processing_mode: str | None = MATERIALIZE.default("processing_mode")
    white_ref: str | None = None
    dark_ref: str | None = None
    compress: Compression = field(default_factory=Compression)

    def key(self) -> dict[str, Any]:
        """JSON-ready form for the recipe key."""
        d = asdict(self)
        d["crop"] = list(self.crop) if self.crop else None
        return d


def reader_params(values: dict[str, Any]) -> ReaderParams:
    """The frame recipe (:class:`ReaderParams`) from ``MATERIALIZE`` values."""
    mode = values["processing_mode"]
    return ReaderParams(
        crop=parse_crop(values["crop"]),
        processing_mode=None if str(mode).lower() == "none" else str(mode),
        white_ref=values["white_ref"],
        dark_ref=values["dark_ref"],
        compress=Compression.parse(values["compress"]),
    )


def parse_crop(spec: str | list[int] | tuple[int, ...] | None) -> tuple[int, int, int, int] | None:
    """``"T,B,L,R"`` (or a list of 4 ints) into a crop tuple; None/empty = no crop."""
    if spec is None or spec == "" or spec == []:
        return None
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    try:
        values = tuple(int(str(p).strip()) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 4 or any(v < 0 for v in values):
        raise DvcCuvisError(f"crop {spec!r}: expected TOP,BOTTOM,LEFT,RIGHT (4 ints >= 0)")
    return values[0], values[1], values[2], values[3]


# -- frame names --------------------------------------------------------------------------


def _v1_frame_name(source: str, index: int) -> str:
    """The layout of format version 1, ``frames/<encoded source>/<index:06d>.npz``.

    Kept only to find the frames of a version-1 folder, which a rerun renames into the
    current layout instead of rewriting them.
    """
    enc = [_v1_encode_part(part, i == 0) for i, part in enumerate(source.split("/"))]
    return "frames/" + "/".join(enc) + f"/{index:06d}.npz"


def _v1_encode_part(part: str, first: bool) -> str:
    if part == "":
        return "%2F" if first else "%00"
    if part in (".", ".."):
        return part.replace(".", "%2E")
    return quote(part, safe="-_.,@+=()~ ")


# -- readers (run inside workers) ---------------------------------------------------------


#: One written frame: its name, md5, size, and its spectral summary (None: summaries off).
Written = tuple[str, str, int, "dict[str, Any] | None"]


@dataclass(frozen=True)
class Task:
    """Frames of one physical file to (re)write; plain data so it pickles to any executor."""

    fmt: str
    path: str
    annotation: str | None
    source: str
    frames: tuple[tuple[int, str], ...]  # (index, relative output name)
    out_dir: str
    params: ReaderParams
    fsync: bool = True  # False: the caller syncs the file system before it claims the frames
    mapped: bool = False  # map (not read) npz inputs: in a worker process only, see execute
    summaries: bool = True  # summarize each frame's spectra while its cube is in memory
    thumbs: frozenset[str] = frozenset()  # the frames whose summary keeps a thumbnail
    wavelengths: str = ""  # tiff: the universe.csv ``wavelengths`` cell (enumerate's option)


def run_task(task: Task) -> list[Written]:
    """Read, convert and atomically write the task's frames; returns (name, md5, size,
    summary).

    Any failure leaves the frame it was producing unwritten (atomic writes) and comes back
    as one error naming the file and frame, even from a worker process or a Dask node.
    """
    return run_tasks([task])[0]


def run_tasks(tasks: list[Task]) -> list[list[Written]]:
    """:func:`run_task` of each task, in order, with one writer for all of them.

    A frame's md5 is taken while the next frame (of this task or the next) is read and
    written (:class:`~dvc_cuvis.model.frames.FrameWriter`): with one small file per frame, as
    npz inputs are, that overlap is what keeps a worker near the speed of its md5.
    """
    return list(_run_tasks(tasks))


def run_group(tasks: list[Task]) -> tuple[list[list[Written]], Exception | None]:
    """:func:`run_tasks` for a worker process: the results of the tasks that finished, and
    the error that stopped the rest (None), so a failing task does not take its finished
    group-mates down with it (the caller records them before it reports the error)."""
    done: list[list[Written]] = []
    try:
        for results in _run_tasks(tasks):
            done.append(results)
    except Exception as exc:  # returned, not raised: what finished still counts
        return done, exc
    return done, None


def _run_tasks(tasks: list[Task]) -> Iterator[list[Written]]:
    """Each task's results as soon as its frames' md5s are known (those done before a
    failure first, then the failure)."""
    with FrameWriter() as writer:
        pending: list[tuple[str, Any, dict[str, Any] | None]] | None = None
        for task in tasks:
            try:
                written = _write_task(task, writer)
            except BaseException:
                if pending is not None:
                    yield [(name, *writer.result(h), summary) for name, h, summary in pending]
                raise
            if pending is not None:
                yield [(name, *writer.result(h), summary) for name, h, summary in pending]
            pending = written
        if pending is not None:
            yield [(name, *writer.result(h), summary) for name, h, summary in pending]


def _write_task(task: Task, writer: FrameWriter) -> list[tuple[str, Any, dict[str, Any] | None]]:
    """Write the task's frames; returns (name, md5 handle, summary) for each."""
    written: list[tuple[str, Any, dict[str, Any] | None]] = []
    try:
        for _index, name, arrays, origin, ceiling in _read_frames(task):
            summary = _summary(task, name, arrays, ceiling)
            try:
                handle = writer.write(Path(task.out_dir) / name, arrays, task.params.compress,
                                      fsync=task.fsync, origin=origin)
            except zipfile.BadZipFile as exc:  # the input's CRC, checked while writing
                raise DvcCuvisError(f"{task.path}: cannot read npz frame ({exc})") from None
            written.append((name, handle, summary))
    except DvcCuvisError:
        raise
    except Exception as exc:  # a reader or the disk failed on an input we did not foresee
        index = task.frames[min(len(written), len(task.frames) - 1)][0]
        hint = ""
        if isinstance(exc, OSError) and exc.errno == errno.EFAULT and task.mapped:
            hint = "; the input was cut short while mapped (by another program?): rerun"
        raise DvcCuvisError(
            f"{task.path}: cannot materialize frame {index} of {task.source} "
            f"({type(exc).__name__}: {exc}){hint}"
        ) from None
    return written


def _summary(task: Task, name: str, arrays: dict[str, np.ndarray], ceiling: float | None
             ) -> dict[str, Any] | None:
    """The frame's spectral summary as stored (None when summaries are off)."""
    if not task.summaries:
        return None
    return to_record(summarize(arrays["cube"], arrays["wavelengths"], arrays.get("class_mask"),
                               ceiling=ceiling, with_thumbnail=name in task.thumbs))


def _read_frames(
    task: Task,
) -> Iterator[tuple[int, str, dict[str, np.ndarray], NpzInput | None, float | None]]:
    """Each frame's arrays, the input npz they are views of (its CRC not yet checked), and
    the saturation value of the input's dtype."""
    p = task.params
    if task.fmt == "npz":
        where = f"{task.path}"
        try:  # one read of the file, its stored arrays used in place (no np.load copies)
            src = open_npz_input(task.path, mapped=task.mapped)
            if p.crop is not None:  # no member is copied unchanged: check the CRC now
                src.verify()
            z = src.arrays
            cube, wl, classes = z["cube"], z["wavelengths"], z.get("class_mask")
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            raise DvcCuvisError(f"{where}: cannot read npz frame ({exc})") from None
        for index, name in task.frames:
            try:
                arrays = frame_arrays(cube, wl, task.source, classes, p.crop, where)
            except DvcCuvisError:  # a damaged file says so before its odd shapes do
                try:
                    src.verify()
                except zipfile.BadZipFile as exc:
                    raise DvcCuvisError(f"{where}: cannot read npz frame ({exc})") from None
                raise
            # write_frame checks the CRC (beside its md5 thread) before the frame is named
            yield index, name, arrays, src, ceiling_of(cube.dtype)
    elif task.fmt == "tiff":
        from dvc_cuvis.sources.tiff import read_cube, read_label_map

        for index, name in task.frames:
            from dvc_cuvis.sources.wavelengths import cell_wavelengths

            cube, wl = read_cube(Path(task.path), cell_wavelengths(
                task.wavelengths, f"{task.path}: universe.csv wavelengths"))
            classes = (read_label_map(Path(task.annotation), cube.shape[:2])
                       if task.annotation else None)
            yield index, name, frame_arrays(cube, wl, task.source, classes, p.crop,
                                            task.path), None, ceiling_of(cube.dtype)
    elif task.fmt == "cu3s":
        from dvc_cuvis.sources.cu3s import Cu3sReader

        reader = Cu3sReader(Path(task.path), p.processing_mode, p.white_ref, p.dark_ref)
        coco = None
        if task.annotation:
            from dvc_cuvis.sources.coco import load_coco

            coco = load_coco(Path(task.annotation))
        for index, name in task.frames:
            cube, wl = reader.read(index)
            classes = None
            if coco is not None:
                from dvc_cuvis.sources.coco import class_mask

                classes = class_mask(coco, index, cube.shape[:2], where=Path(task.annotation or ""))
            yield index, name, frame_arrays(
                cube, wl, task.source, classes, p.crop, f"{task.path}#{index}"
            ), None, ceiling_of(cube.dtype)
    else:
        raise DvcCuvisError(f"{task.path}: no reader for format {task.fmt!r}")


# -- executors ----------------------------------------------------------------------------


def execute(
    tasks: list[Task], *, jobs: int, executor: str = "local", scheduler: str | None = None
) -> Iterator[list[Written]]:
    """Run ``run_task`` over ``tasks`` locally (process pool) or on Dask; yields results."""
    if not tasks:
        return
    if executor == "dask":  # a lost worker's tasks are rerun elsewhere by the scheduler
        from dvc_cuvis.digests import cluster as _dask

        with _dask.client(scheduler) as client:
            futures = client.map(run_task, tasks, pure=False)
            yield from _dask.results(
                futures, lambda i: f"{tasks[i].path} (frames of {tasks[i].source})",
                scheduler, ordered=False, on_lost=lambda i: _drop_temps(tasks[i]))
        return
    if executor != "local":
        raise DvcCuvisError(f"unknown executor {executor!r}; choose local or dask")
    if jobs <= 1 or len(tasks) == 1:
        yield from _run_tasks(tasks)
        return
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    unfinished: list[Task] = []
    error: Exception | None = None
    with ProcessPoolExecutor(max_workers=limits.pool_size(jobs, len(tasks))) as pool:
        # a worker maps its inputs (frames.open_npz_input): no copy of each input, and a
        # file truncated under it kills only the worker, reported below
        futures = {pool.submit(run_group, [replace(t, mapped=True) for t in g]): g
                   for g in _groups(tasks, jobs)}
        pending = set(futures)
        while pending and not unfinished:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: futures[f][0].path):
                if fut.cancelled():
                    continue
                try:
                    results, failed = fut.result()
                except BrokenProcessPool:  # a worker died: every task not done is lost
                    unfinished = [t for f, g in futures.items() for t in g
                                  if not f.done() or f.cancelled() or f.exception() is not None]
                    break
                except BaseException:
                    for other in pending:
                        other.cancel()
                    raise
                yield from results  # what a group finished counts, even before its error
                if failed is not None and error is None:
                    error = failed  # groups not started are dropped; running ones finish
                    for other in pending:
                        other.cancel()
    if error is not None and not unfinished:
        raise error
    if unfinished:  # the pool's workers are gone now: no writer is left to race with
        for t in unfinished:
            for _index, name in t.frames:
                target = Path(t.out_dir) / name
                with contextlib.suppress(OSError):
                    target.with_name(f".{target.name}.tmp").unlink()
        raise DvcCuvisError(
            f"a materialize worker process died (killed, out of memory, or an input file "
            f"truncated while it was read?) with "
            f"{len(unfinished)} file(s) unfinished, among them {unfinished[0].path}; the frames "
            "written so far are kept: rerun to finish (with fewer --jobs if memory ran out)"
        )


def _groups(tasks: list[Task], jobs: int) -> list[list[Task]]:
    """Consecutive tasks, one worker call each: a worker's writer overlaps one frame's md5
    with the next frame's read and write only within a call, so small files (one npz per
    frame) go in groups of up to ``_CHUNK`` frames, ~4 groups per worker for balance (per
    worker that runs: never more than the tasks or the CPUs, ``limits.pool_size``)."""
    total = sum(len(t.frames) for t in tasks)
    size = max(1, min(_CHUNK, -(-total // (4 * limits.pool_size(jobs, len(tasks))))))
    groups: list[list[Task]] = []
    frames = size
    for t in tasks:
        if frames + len(t.frames) > size:
            groups.append([])
            frames = 0
        groups[-1].append(t)
        frames += len(t.frames)
    return groups


def _drop_temps(task: Task) -> None:
    """Remove the temp files a killed writer of ``task`` left: those nobody holds locked.

    A writer holds its temp file locked until the rename (see ``atomic_write_bytes``), so
    a lock we can take means a dead writer; one we cannot take belongs to a live worker
    (a task Dask is still running), whose rename will consume it.
    """
    for _index, name in task.frames:
        target = Path(task.out_dir) / name
        tmp = target.with_name(f".{target.name}.tmp")
        try:
            fd = os.open(tmp, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(fd).st_ino == os.stat(tmp, follow_symlinks=False).st_ino:
                os.unlink(tmp)
        except OSError:
            pass
        finally:
            os.close(fd)


# -- the lock -----------------------------------------------------------------------------


@contextlib.contextmanager
def output_lock(out_dir: Path, *, wait_s: float = 0.0) -> Iterator[None]:
    """Exclusive lock on ``out_dir`` (``.materialize.lock``); waits up to ``wait_s`` seconds."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / ".materialize.lock"
    try:  # never through a link: a dangling one would create a file where it leads
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise FileSystemError(exc, path) from None
    deadline = time.monotonic() + wait_s
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise DvcCuvisError(
                        f"{out_dir}: another `dvc-cuvis materialize` is writing this folder; "
                        "wait for it (or pass --lock-wait SECONDS)"
                    ) from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)  # closing releases the flock


# -- planning and running -----------------------------------------------------------------


@dataclass
class Plan:
    """What a run will do: frames to write, kept, renamed from an older layout, deleted."""

    rows: list[int]
    names: dict[int, str]
    recipes: dict[str, str]
    tasks: list[Task]
    keep: dict[str, dict[str, Any]]
    delete: list[Path]
    migrate: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # new: old, entry
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


def selected_rows(uni: Universe, splits_cfg: Any, select: str) -> list[int]:
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


def _load_manifest(out_dir: Path) -> tuple[int | None, dict[str, dict[str, Any]], str]:
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
    return version, frames, ""


def _is_entry(entry: Any) -> bool:
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
    keep: dict[str, dict[str, Any]] = {}
    migrate: dict[str, tuple[str, dict[str, Any]]] = {}
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
            todo.setdefault((fmt, str(phys), str(ann) if ann else None, source, wl),
                            []).append(
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
) -> dict[str, Any]:
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


def _recipe(key: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _has_frame(spec: str) -> bool:
    head, sep, tail = spec.rpartition(":")
    return bool(sep) and tail.isdigit() and bool(head)


def _intact(path: Path, entry: dict[str, Any], cache: StatCache) -> bool:
    try:
        st = path.stat()
    except OSError:
        return False
    return st.st_size == entry.get("size") and cache.md5(path, st) == entry.get("md5")


@dataclass
class MaterializeResult:
    """Counts of a run and the universe/splits written beside the frames."""

    written: int
    kept: int
    deleted: int
    universe: Universe
    out_dir: Path
    migrated: int = 0  # frames of an older layout renamed into the current one, not rewritten
    #: what the run repaired on its way, one line each (a damaged manifest or summaries shard)
    notes: list[str] = field(default_factory=list)


def materialize(
    uni: Universe,
    splits_cfg: Any,
    out_dir: Path,
    params: ReaderParams,
    *,
    select: str = "splits",
    jobs: int = 1,
    executor: str = "local",
    scheduler: str | None = None,
    cache: StatCache | None = None,
    lock_wait: float = 0.0,
    show_progress: bool = False,
    sync: str = "auto",
    summaries: bool = True,
) -> MaterializeResult:
    """Bring ``out_dir`` to exactly the bytes of a clean run for this universe/split/params.

    ``sync`` is the durability scheme (see the module docstring): ``"fs"`` writes frames
    without a per-file ``fsync`` and syncs the file system once before every manifest
    write; ``"file"`` fsyncs every frame file; ``"auto"`` is ``"fs"`` for the local
    executor and ``"file"`` for Dask, whose workers may write from other machines.

    Training code then reads one small npz per sample (``npz_multi``,
    :class:`~dvc_cuvis.train.datamodule.SplitDataModule`) instead of opening cu3s sessions or
    TIFF cubes, and a rerun after a change rewrites only the frames it affects.

    Parameters
    ----------
    uni : Universe
        The source universe (its ``materialized_path``, else ``source``, names each
        physical file, relative to the universe.csv's folder; ``format`` or the suffix
        tells cu3s, tiff or npz).
    splits_cfg : DataSplitConfig or None
        The split whose samples to write, copied to ``OUT/splits.json`` (re-pinned to the
        new universe when its pin matched ``uni``); None writes no splits.json.
    out_dir : Path
        The output folder (created; one DVC output with ``persist: true``).
    params : ReaderParams
        Everything that changes a frame's bytes: crop, cu3s processing mode and
        references, compression.
    select : {"splits", "all"}, default "splits"
        The split's samples (train, val, test and predict), or every sample of ``uni``.
    jobs : int, default 1
        Worker processes of the local executor.
    executor : {"local", "dask"}, default "local"
    scheduler : str, optional
        Address of a Dask scheduler (default: an in-process cluster).
    cache : StatCache, optional
        Remembers md5s across runs so unchanged inputs are not re-hashed; default: in
        memory, for this call only.
    lock_wait : float, default 0.0
        Seconds to wait for another run holding ``out_dir``'s lock.
    show_progress : bool, default False
        A progress bar on stderr.
    sync : {"auto", "fs", "file"}, default "auto"
        The durability scheme (above).
    summaries : bool, default True
        Record each frame's spectral summary while its cube is in memory
        (:mod:`dvc_cuvis.materialize.summaries`), in ``OUT/summaries/``; a frame kept
        without one is read once more. False leaves valid summaries as they are.

    Returns
    -------
    MaterializeResult
        ``written``, ``kept``, ``deleted`` and ``migrated`` frame counts, ``out_dir``,
        and ``universe``: the npz universe written to ``OUT/universe.csv``.

    Raises
    ------
    MissingFileError
        A selected sample's file or annotation does not exist (also a
        ``FileNotFoundError``).
    SelectorError
        The split still uses ``dir_indices`` and pins another universe.
    DvcCuvisError
        A format that cannot be told, a path leaving the universe's folder, a bad
        ``select``/``executor``/``sync``, another run holding the lock, or a frame that
        cannot be read or written (one line naming the file and frame, also from a
        worker process or a Dask node).

    See Also
    --------
    dvc_cuvis.baking.core.bake : make the split to materialize.
    dvc_cuvis.train.datamodule.SplitDataModule : train on the folder.

    Notes
    -----
    ``select="splits"`` with an empty predict stage writes the *whole* universe, since an
    empty predict means every sample; give predict selectors (e.g. ``BakeOptions(
    predict="test")``) to write only the split's samples.  Selectors that match nothing
    are tolerated here, so a shard's universe picks its own part of a larger split.
    Identities do not change: a frame keeps its ``source`` and ``index`` (a whole-file
    TIFF sample becomes index 0), so the split resolves the same in ``OUT``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from cuvis_ai_schemas.training.data import DataSplitConfig, Selector
    >>> from dvc_cuvis.materialize import ReaderParams, materialize
    >>> from dvc_cuvis import read_universe
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("a", "b", "c"):
    ...     np.savez(d / f"{name}.npz", cube=np.ones((2, 2, 3), np.float32),
    ...              wavelengths=np.array([500, 600, 700]))
    >>> _ = (d / "universe.csv").write_text(
    ...     "source,index,format\\na.npz,0,npz\\nb.npz,0,npz\\nc.npz,0,npz\\n")
    >>> uni = read_universe(d / "universe.csv")
    >>> result = materialize(uni, None, d / "out", ReaderParams(), select="all")
    >>> result.written, result.kept, result.deleted
    (3, 0, 0)
    >>> result.universe.column("materialized_path")
    ['frames/a.npz.000000.npz', 'frames/b.npz.000000.npz', 'frames/c.npz.000000.npz']

    A rerun with a split that names two of the samples writes nothing, keeps two
    frames and deletes the third:

    >>> split = DataSplitConfig(train=[Selector(kind="files", paths=["a.npz"])],
    ...                         predict=[Selector(kind="files", paths=["b.npz"])])
    >>> result = materialize(uni, split, d / "out", ReaderParams())
    >>> result.written, result.kept, result.deleted
    (0, 2, 1)
    >>> header, first = (d / "out" / "universe.csv").read_text().splitlines()[:2]
    >>> header
    'source,index,materialized_path,format,md5,data_module'
    >>> first.startswith("a.npz,0,frames/a.npz.000000.npz,npz,"), first.endswith(",npz_multi")
    (True, True)
    """
    if sync not in ("auto", "fs", "file"):
        raise DvcCuvisError(f"sync {sync!r}: choose auto, fs or file")
    per_file = sync == "file" or (sync == "auto" and executor != "local")
    cache = cache if cache is not None else StatCache(None)
    rows = selected_rows(uni, splits_cfg, select)
    with output_lock(out_dir, wait_s=lock_wait):
        p = plan(uni, rows, out_dir, params, cache)
        thumbs = _thumbnails(uni, p) if summaries else frozenset()
        p.tasks = [replace(t, fsync=t.fsync and per_file, summaries=summaries,
                           thumbs=frozenset(n for _, n in t.frames if n in thumbs))
                   for t in p.tasks]
        for path in p.delete:  # first, so that no stale file or folder is in a new frame's way
            path.unlink(missing_ok=True)
        manifest: dict[str, dict[str, Any]] = dict(p.keep)
        if p.migrate:
            manifest.update(_migrate(out_dir, p.migrate, cache))
            _write_manifest(out_dir, manifest)
        results = progress(
            execute(p.tasks, jobs=jobs, executor=executor, scheduler=scheduler),
            total=len(p.tasks), desc="materialize", enabled=show_progress,
        )
        fresh: dict[str, dict[str, Any]] = {}
        written = _record_results(results, p.recipes, out_dir, manifest, cache, fresh)
        _prune_empty_dirs(out_dir / "frames")
        manifest = {k: manifest[k] for k in sorted(manifest) if k in p.recipes}
        npz_uni = _npz_universe(uni, rows, p.names, manifest, out_dir)
        _write_universe_and_splits(npz_uni, uni, splits_cfg, out_dir)
        # Before the manifest: its one sync of the file system makes the shards durable too.
        _refresh_summaries(out_dir, p, manifest, fresh, thumbs, summaries)
        _write_manifest(out_dir, manifest)
        _hand_over_outputs(out_dir, cache)
        cache.save()
    return MaterializeResult(written, len(p.keep), len(p.delete), npz_uni, out_dir,
                             migrated=len(p.migrate), notes=p.notes)


def _record_results(
    results: Iterable[list[Written]], recipes: dict[str, str], out_dir: Path,
    manifest: dict[str, dict[str, Any]], cache: StatCache, fresh: dict[str, dict[str, Any]],
) -> int:
    """Enter each written frame in ``manifest`` (checkpointed every few seconds) and its summary in
    ``fresh``; returns the count.

    On a failed frame the manifest is written before the error goes on, so the rerun keeps
    every frame finished before it.
    """
    written = 0
    last_checkpoint = time.monotonic()
    try:
        for batch in results:
            for name, md5, size, summary in batch:
                manifest[name] = {"recipe": recipes[name], "md5": md5, "size": size}
                if summary is not None:
                    fresh[name] = summary
                cache.put(out_dir / name, "md5", md5)  # the next run need not re-hash it
                written += 1
            if time.monotonic() - last_checkpoint > 5:
                _write_manifest(out_dir, manifest)
                last_checkpoint = time.monotonic()
    except BaseException:  # a failed frame: the rerun keeps every frame finished before it
        with contextlib.suppress(Exception):
            _write_manifest(out_dir, manifest)
            cache.save()
        raise
    return written


def _thumbnails(uni: Universe, p: Plan) -> frozenset[str]:
    """The frames whose summaries keep a thumbnail (a capped sample, by uid hash)."""
    return thumbnail_frames({p.names[pos]: uni.uid(pos) for pos in p.rows}, THUMBNAIL_CAP)


def _refresh_summaries(
    out_dir: Path, p: Plan, manifest: dict[str, dict[str, Any]],
    fresh: dict[str, dict[str, Any]], thumbs: frozenset[str], enabled: bool,
) -> None:
    """Bring the summaries shards in step with the frames of ``manifest``."""

    def again(name: str) -> dict[str, Any]:
        task = replace(p.inputs[name], thumbs=frozenset({name} & thumbs))
        for _index, frame, arrays, _origin, ceiling in _read_frames(task):
            summary = _summary(task, frame, arrays, ceiling)
            if summary is not None:
                return summary
        raise DvcCuvisError(f"{task.path}: no frame to summarize for {name}")  # unreachable

    frames = {name: (p.inputs[name].source, p.inputs[name].frames[0][0], entry["md5"])
              for name, entry in manifest.items() if name in p.inputs}
    refresh(out_dir, frames, fresh, thumbs, summarize_frame=again if enabled else None,
            sync=False, notes=p.notes)


def _write_universe_and_splits(
    npz_uni: Universe, uni: Universe, splits_cfg: Any, out_dir: Path
) -> None:
    """``OUT/universe.csv``, and ``OUT/splits.json`` re-pinned to it when its pin was ``uni``."""
    atomic_write_text(out_dir / "universe.csv", format_universe(npz_uni))
    if splits_cfg is not None:
        copy = splits_cfg
        if splits_cfg.universe_hash == uni.hash:  # re-pin; a stale pin stays stale
            copy = splits_cfg.model_copy(update={"universe_hash": npz_uni.hash})
        atomic_write_text(out_dir / "splits.json", dumps_splits(copy))


def _hand_over_outputs(out_dir: Path, cache: StatCache) -> None:
    """Give DVC's state the md5 of every file in ``out_dir`` (frames: the md5 taken while
    writing them; the small files beside them are hashed here), so that DVC's commit of the
    stage's output reads none of them again (:func:`dvc_cuvis.digests.dvc_state.hand_over`)."""
    from dvc_cuvis.digests.dvc_state import hand_over, hand_over_enabled

    if not hand_over_enabled():
        return
    root = os.path.abspath(out_dir)
    if dvc_root_of(root) is None:
        return
    files = cache.take_hashed()  # inputs read for their md5 (DVC tracks them too)
    try:
        listing = list_tree(root)
    except DvcCuvisError:  # DVC refuses this folder (a .dvcignore in it): nothing to give
        return
    for rel, ino, size, mtime, link in listing:
        if link:
            continue
        stamp = (ino, size, mtime)
        md5, read_stamp = cache.md5_stamped(f"{root}/{rel}", stamp)
        if read_stamp == stamp:
            files.append((f"{root}/{rel}", stamp, md5))
    hand_over(files)


def _migrate(
    out_dir: Path, moves: dict[str, tuple[str, dict[str, Any]]], cache: StatCache
) -> dict[str, dict[str, Any]]:
    """Rename frames of an older layout into the current one; returns their manifest entries.

    Two passes (old names to temporary ones, emptied old folders pruned, temporary names to
    new ones), because a new file may have the name of an old folder.  A run killed in
    between leaves ``.tmp`` files, which the next run deletes and rewrites.
    """
    frames_dir = out_dir / "frames"
    staged = []
    for k, new in enumerate(sorted(moves)):
        tmp = frames_dir / f".migrate.{k:06d}.tmp"
        os.replace(out_dir / moves[new][0], tmp)
        staged.append((tmp, new))
    _prune_empty_dirs(frames_dir)
    entries = {}
    for tmp, new in staged:
        target = out_dir / new
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, target)
        entries[new] = moves[new][1]
        cache.put(target, "md5", entries[new]["md5"])  # same bytes, new path: never re-hashed
    return entries


def _write_manifest(out_dir: Path, frames: dict[str, dict[str, Any]]) -> None:
    """Claim ``frames`` in the manifest, once every byte written so far is durable.

    Frames may have been written without a per-file ``fsync``: the file system is synced
    first, so the manifest (itself fsynced and renamed into place) never claims a frame
    that a power cut could still take away.
    """
    body = {"version": FORMAT_VERSION, "frames": {k: frames[k] for k in sorted(frames)}}
    sync_file_system(out_dir)
    atomic_write_text(out_dir / "manifest.json", dumps_json(body))


def _prune_empty_dirs(root: Path) -> None:
    if not root.is_dir():
        return
    for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            d.rmdir()


def _npz_universe(
    uni: Universe,
    rows: list[int],
    names: dict[int, str],
    manifest: dict[str, dict[str, Any]],
    out_dir: Path,
) -> Universe:
    carry = [c for c in ("group", "tags", "category_ids") if uni.has_column(c)]
    records = []
    for pos in rows:
        name = names[pos]
        rec: dict[str, Any] = {
            "source": uni.source(pos),
            # npz_multi needs an integer index: a whole-file TIFF cube's frame is its read
            # position 0 (its source, and so every files selector, is unchanged)
            "index": uni.index(pos),
            "materialized_path": name,
            "format": "npz",
            "md5": manifest[name]["md5"],
            MODULE_COLUMN: "npz_multi",  # the universe states its reader (upstream ignores it)
        }
        for c in carry:
            rec[c] = uni.value(c, pos)
        records.append(rec)
    return Universe.from_records(records, path=out_dir / "universe.csv")
