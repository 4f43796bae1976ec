"""Tasks: the frames of one physical file to write, and the readers and writer that run them
inside a worker (a process of the pool, a Dask node, or this process).
"""

from __future__ import annotations

import errno
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.materialize.options import ReaderParams
from dvc_cuvis.materialize.summaries import ceiling_of, summarize, to_record
from dvc_cuvis.model.frame_bytes import FrameHandle, FrameWriter
from dvc_cuvis.model.frame_read import NpzInput, open_npz_input
from dvc_cuvis.model.frames import frame_arrays

_CHUNK = 32  # frames per task: small enough to balance two workers, large enough to amortize

#: A frame's spectral summary as its shard keeps it (:func:`summaries.to_record`: JSON types).
Summary = dict[str, Any]
#: One written frame: its name, md5, size, and its spectral summary (None: summaries off).
Written = tuple[str, str, int, "Summary | None"]
#: A frame being written: its name, the writer's handle to its md5, its summary.
_Pending = tuple[str, FrameHandle, "Summary | None"]


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
    written (:class:`~dvc_cuvis.model.frame_bytes.FrameWriter`): with one small file per frame, as
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
        pending: list[_Pending] | None = None
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


def _write_task(task: Task, writer: FrameWriter) -> list[_Pending]:
    """Write the task's frames; returns (name, md5 handle, summary) for each."""
    written: list[_Pending] = []
    try:
        for _index, name, arrays, origin, ceiling in _read_frames(task):
            crcs: dict[str, int] = {}  # the members' data CRCs: the signature's digest
            try:
                handle = writer.write(Path(task.out_dir) / name, arrays, task.params.compress,
                                      fsync=task.fsync, origin=origin, data_crcs=crcs)
            except zipfile.BadZipFile as exc:  # the input's CRC, checked while writing
                raise DvcCuvisError(f"{task.path}: cannot read npz frame ({exc})") from None
            written.append((name, handle, _summary(task, name, arrays, ceiling,
                                                   crcs.get("cube"))))
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


def _summary(task: Task, name: str, arrays: dict[str, np.ndarray], ceiling: float | None,
             cube_crc: int | None = None) -> Summary | None:
    """The frame's spectral summary as stored (None when summaries are off; ``cube_crc``:
    the CRC-32 of the cube's bytes, taken by the frame writer)."""
    if not task.summaries:
        return None
    return to_record(summarize(arrays["cube"], arrays["wavelengths"], arrays.get("class_mask"),
                               ceiling=ceiling, with_thumbnail=name in task.thumbs,
                               cube_crc=cube_crc))


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
