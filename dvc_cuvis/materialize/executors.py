"""Where tasks run: in this process, on a local process pool (consecutive tasks grouped per
worker call), or on a Dask cluster; what a failed or killed worker leaves is cleaned up.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from dvc_cuvis import limits
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.materialize.tasks import (
    _CHUNK,
    Task,
    Written,
    _run_tasks,
    run_group,
    run_task,
)


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
