"""Running per-file work on a Dask cluster: one client per run, failures as one clear error.

Used by materialize (frames) and enumerate (cold hashing).  A cluster's workers are other
processes, usually on other machines: they get plain data (absolute paths), read inputs and
write outputs by path, and keep nothing the caller needs, so whatever a worker learns that
the caller must remember (stat cache entries, hashing counters) comes back with its result.

A worker that dies is the scheduler's business first: Dask reruns its tasks on another
worker (results are deterministic, writes atomic, so a rerun task writes the same bytes).
Only when the scheduler gives up (``KilledWorker``), or the scheduler itself is gone, does
the run stop, with one error line; what was finished is kept and a rerun completes it.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from dvc_cuvis.digests.dvc_hashes import DvcKnownHashes
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError, MissingExtraError
from dvc_cuvis.progress import progress

if TYPE_CHECKING:
    from dvc_cuvis.digests.hashing import Stamp

_T = TypeVar("_T")
_R = TypeVar("_R")

_CLUSTER_LOGGERS = ("distributed", "tornado", "bokeh")


@contextlib.contextmanager
def client(scheduler: str | None) -> Iterator[Any]:
    """A Dask client of ``scheduler`` (None: an in-process cluster), closed on exit."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise MissingExtraError(
            "--executor dask needs dask.distributed: pip install 'dvc-cuvis[dask]'"
        ) from None
    with _quiet_cluster_logs():
        try:
            c = Client(scheduler) if scheduler else Client(processes=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise DvcCuvisError(
                f"cannot reach the Dask scheduler at {scheduler} ({exc}); start one "
                "(`dask scheduler`) or fix --scheduler / the 'scheduler' key in params.yaml"
            ) from None
        with c:
            yield c


@contextlib.contextmanager
def _quiet_cluster_logs() -> Iterator[None]:
    """Dask's own INFO/WARNING chatter (a worker lost, a task retried) stays off stderr.

    A rescheduled task is normal operation; a failure that stops the run becomes our own
    one-line error.  ``DVC_CUVIS_DEBUG=1`` users can raise the level again themselves.
    """
    names = [n for n in logging.root.manager.loggerDict  # Dask sets levels on children too
             if n.split(".")[0] in _CLUSTER_LOGGERS]
    loggers = [logging.getLogger(n) for n in sorted({*names, *_CLUSTER_LOGGERS})]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def results(futures: list[Any], describe: Callable[[int], str], scheduler: str | None,
            *, ordered: bool, on_lost: Callable[[int], None] | None = None) -> Iterator[Any]:
    """Each future's result (in order, or as they finish); a lost worker or scheduler is a
    :class:`DvcCuvisError` naming the work that did not finish.

    ``on_lost(i)`` runs first for every item not finished when the run stops (the items
    of a dead worker are among them; what it left, e.g. a temp file, may be removed).
    """
    from dask.distributed import as_completed
    from distributed import KilledWorker

    position = {f.key: i for i, f in enumerate(futures)}
    stream = iter(futures) if ordered else as_completed(futures)
    current, fut = 0, None
    finished: set[int] = set()

    def lost() -> None:
        for i in range(len(futures)):
            if on_lost is not None and i not in finished:
                on_lost(i)

    try:
        for fut in stream:
            current = position[fut.key]
            result = fut.result()
            finished.add(current)
            yield result
    except KilledWorker:
        lost()
        raise DvcCuvisError(
            f"Dask workers died (killed, or out of memory?) while running {describe(current)}, "
            "and the scheduler gave up on it; what finished is kept: rerun to complete it"
        ) from None
    except (OSError, TimeoutError) as exc:
        if fut is not None and fut.status == "error":  # the task's own error, as if local
            raise
        lost()
        raise DvcCuvisError(
            f"lost the Dask scheduler at {scheduler or 'in-process'} while running "
            f"{describe(current)} ({type(exc).__name__}: {exc}); what finished is kept: "
            "rerun to complete it"
        ) from None
    except Exception as exc:  # a cancelled future: the scheduler dropped our work
        if type(exc).__name__ not in ("CancelledError", "FutureCancelledError"):
            raise
        lost()
        raise DvcCuvisError(
            f"the Dask scheduler at {scheduler or 'in-process'} cancelled "
            f"{describe(current)} (restarted or shut down?); what finished is kept: rerun "
            "to complete it"
        ) from None


# -- enumerate: a per-file function and the stat cache it fills -----------------------------


def map_with_cache(
    func: Callable[[_T], _R], items: list[_T], cache: StatCache, *,
    scheduler: str | None, desc: str, show: bool,
) -> list[_R]:
    """``[func(x) for x in items]`` on Dask, in order, where ``func`` fills ``cache``.

    ``func`` (a closure of a format scanner) is shipped once with ``cache`` swapped for an
    empty in-memory one on the worker side; each chunk returns its rows, the cache entries
    it recorded and its hashing counters, merged here, so the next run finds them in our
    stat cache exactly as after a local run.
    """
    if not items:
        return []
    payload = _dumps_with_worker_cache(func, cache)
    out: list[_R] = []
    with client(scheduler) as c:
        workers = sum(c.nthreads().values()) or 1
        size = max(1, min(512, math.ceil(len(items) / (4 * workers))))
        chunks = [items[lo:lo + size] for lo in range(0, len(items), size)]
        shipped = c.scatter(payload, broadcast=True)
        seeds = [_known_md5s(cache, chunk) for chunk in chunks]
        futures = c.map(_run_chunk, chunks, seeds, payload=shipped, pure=False)
        done = results(futures, lambda i: f"{desc} of {_name(chunks[i][0])} and "
                       f"{len(chunks[i]) - 1} more file(s)", scheduler, ordered=True)
        for rows, entries, counts in progress(done, total=len(chunks), desc=desc,
                                              enabled=show):
            out.extend(rows)
            _merge(cache, entries, counts)
    return out


def _known_md5s(cache: StatCache, chunk: Sequence[object]) -> dict[str, tuple[Stamp, str]]:
    """md5s our cache or DVC (as this machine sees it) already knows for a chunk's files.

    Asked here, not on the worker: a worker on another machine has neither our stat cache
    nor this machine's DVC state, and would hash what is known.  Items that are files of
    a scan (:class:`~dvc_cuvis.sources.Located`: ``abs`` and ``st``) are looked up.
    """
    from dvc_cuvis.digests.hashing import stamp_of
    from dvc_cuvis.digests.stat_cache import CacheMiss

    known = {}
    for item in chunk:
        path, st = getattr(item, "abs", None), getattr(item, "st", None)
        if path is None or st is None:
            continue
        with contextlib.suppress(CacheMiss):
            known[path] = (stamp_of(st), cache.md5(path, st, cached_only=True))
    return known


def _name(item: object) -> str:
    return str(getattr(item, "abs", item))


def _dumps_with_worker_cache(func: Callable[[_T], _R], cache: StatCache) -> bytes:
    """Pickle ``(func, cache)`` with every reference to ``cache`` replaced by a worker cache."""
    import cloudpickle

    use_dvc = cache.dvc is not None

    class _Pickler(cloudpickle.Pickler):
        def reducer_override(self, obj: object) -> object:
            if obj is cache:
                return _worker_cache, (use_dvc,)
            return super().reducer_override(obj)

    buf = io.BytesIO()
    _Pickler(buf, protocol=5).dump((func, cache))
    return buf.getvalue()


_WORKER_DVC: DvcKnownHashes | None = None
_WORKER_LOCK = threading.Lock()


def _worker_cache(use_dvc: bool) -> StatCache:
    """An empty in-memory cache; asks DVC (as the worker sees it) when the caller's does."""
    global _WORKER_DVC
    if not use_dvc:
        return StatCache(None)
    with _WORKER_LOCK:  # one per worker process: DVC's Repo is opened once, not per chunk
        if _WORKER_DVC is None:
            _WORKER_DVC = DvcKnownHashes()
        return StatCache(None, dvc=_WORKER_DVC)


# what the workers did; their cache hits are the seeds, which we counted when we asked
_COUNTERS = ("misses", "md5_from_dvc", "md5_hashed", "bytes_hashed", "derived_computed",
             "derived_from_memo", "checked_computed", "checked_from_memo")


def _run_chunk(chunk: list[object], seeds: dict[str, tuple[Stamp, str]], payload: bytes
               ) -> tuple[list[object], dict[str, dict[str, object]], dict[str, int]]:
    """Worker side: run the shipped function over ``chunk`` with a fresh worker cache
    that knows the md5s the caller already had (``seeds``: path -> (stamp, md5))."""
    import cloudpickle

    func, cache = cloudpickle.loads(payload)
    for path, (stamp, md5) in seeds.items():
        cache.record(path, "md5", tuple(stamp), md5)
    rows = [func(x) for x in chunk]
    return rows, cache.recorded(), {k: getattr(cache, k) for k in _COUNTERS}


def _merge(cache: StatCache, entries: dict[str, Any], counts: dict[str, int]) -> None:
    for path, entry in entries.items():
        stamp = tuple(entry["st"])
        for key, value in entry.items():
            if key != "st":
                cache.record(path, key, stamp, value)
    for k in _COUNTERS:
        setattr(cache, k, getattr(cache, k) + int(counts.get(k, 0)))
