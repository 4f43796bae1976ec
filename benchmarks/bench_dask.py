"""Cold enumerate hashed on a Dask cluster vs local threads, on the same files, in one run.

How to run (from the repository root)::

    .venv/bin/python -m benchmarks.bench_dask            # 4000 frames of ~128 KiB (~1 min)
    .venv/bin/python -m benchmarks.bench_dask --quick    # 400 frames of ~32 KiB, < 30 s
    .venv/bin/python -m benchmarks.bench_dask --frames 20000 --pad-kib 512 --json out.json

Options: ``--workdir DIR``, ``--keep``, ``--json PATH``, ``--strict`` (see ``_common``),
``--frames N`` (100 per session folder), ``--pad-kib K`` (K KiB more bytes per frame, in a
member enumerate does not read: only hashing grows with it), ``--repeat R`` (default 3).

It is a report, not a test: no target, the exit code is 0 unless the script crashes.

Setup (untimed): N npz frames (``bench_dvc_hashes.make_frames``); a cluster started by
this script on 127.0.0.1: ``dask scheduler`` and 2 ``dask worker`` processes (1 thread
each, no nanny), in their own working folder; one untimed local run and one untimed Dask
run (page cache warm, worker imports done).  Then, interleaved, ``--repeat`` times each:
in-process ``enumerate_universe`` of the npz folder with an empty in-memory stat cache
(cold: every file is read and hashed; DVC lookups off) and (a) ``jobs=1``, (b) ``jobs=2``
local threads, (c) ``executor="dask"`` on the cluster (client connect included).  Rows:
medians; ratios = local median / Dask median (> 1: Dask faster).  Every run's universe.csv
must be byte-identical to run (a)'s.  On a 2-core machine shared with other work the three
contend for the same cores and the same page cache: figures are noisy, and the Dask row
pays pickling and a TCP round trip per chunk that a real cluster of other machines would
repay with their cores and disks.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import _common
from benchmarks._common import Row, median
from benchmarks.bench_dvc_hashes import make_frames
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.model.universe_io import format_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from testbeds.dask_cluster import cluster as local_cluster

WORKERS = 2


def cold_enumerate(root: Path, out_dir: Path, **kw: Any) -> tuple[float, str, dict[str, int]]:
    """One cold in-process enumerate: seconds, universe.csv text, the cache's counters."""
    cache = StatCache(None)  # empty, in memory, no DVC lookups: every file is read
    t0 = time.perf_counter()
    uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=root, out_dir=out_dir,
                                                 cache=cache, **kw))
    text = format_universe(uni)
    return time.perf_counter() - t0, text, cache.stats()


def time_ways(data: Path, work: Path, address: str, repeat: int,
              log: Callable[[str], None]) -> tuple[dict[str, list[float]],
                                                   dict[str, dict[str, int]]]:
    """Cold enumerate ``repeat`` times each way (local 1 and 2 jobs, Dask); every run's
    universe.csv must equal the 1-job run's."""
    ways = ways_for(address)
    _, reference, _ = cold_enumerate(data, work, jobs=1)  # warm the page cache
    cold_enumerate(data, work, **ways[list(ways)[2]])  # worker imports
    times: dict[str, list[float]] = {w: [] for w in ways}
    hashed: dict[str, dict[str, int]] = {}
    for r in range(repeat):
        for way, kw in ways.items():
            s, text, stats = cold_enumerate(data, work, **kw)
            if text != reference:
                raise SystemExit(f"bench_dask: {way}: universe.csv differs from the "
                                 "1-job run's")
            times[way].append(s)
            hashed[way] = stats
            log(f"run {r + 1}: {way}: {s:.2f} s ({stats['md5_hashed']} files, "
                f"{stats['bytes_hashed'] / 2**20:.0f} MiB hashed)")
    return times, hashed


def ways_for(address: str) -> dict[str, dict[str, Any]]:
    """The three ways to enumerate, by label: their keyword arguments."""
    return {
        "local, 1 job": {"jobs": 1},
        "local, 2 jobs": {"jobs": 2},
        f"dask, {WORKERS} worker processes": {"executor": "dask", "scheduler": address},
    }


def dask_rows(times: dict[str, list[float]], hashed: dict[str, dict[str, int]], repeat: int,
              frames: int, nbytes: int) -> list[Row]:
    """Each way's median, then Dask against each local way."""
    ways = list(times)
    med = {w: median(ts) for w, ts in times.items()}
    dask_way = ways[2]
    rows = [Row(f"cold_{way.split(',')[0]}_{way.split()[1]}",
                f"cold enumerate, {way} (median of {repeat})", med[way],
                details={"runs_s": times[way], **hashed[way]}) for way in ways]
    for way in ways[:2]:
        rows.append(Row(f"dask_vs_{way.split()[1]}_local", f"{dask_way} vs {way}",
                        med[dask_way], baseline=med[way],
                        details={"frames": frames, "bytes": nbytes}))
    return rows


def main() -> int:
    """Build the frames, start the cluster, time the three ways, print the table."""
    ap = _common.standard_args(__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, help="npz frames (default 4000, --quick 400)")
    ap.add_argument("--pad-kib", type=int, help="KiB added to every frame (default 128, "
                    "--quick 32)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each way (median)")
    args = ap.parse_args()
    frames = args.frames or (400 if args.quick else 4000)
    pad = args.pad_kib if args.pad_kib is not None else (32 if args.quick else 128)
    log = _common.Clock()
    with _common.workspace(args, "bench_dask_", log) as work:
        data = work / "data"
        make_frames(data, max(1, frames // 100), min(frames, 100), pad)
        nbytes = sum(p.stat().st_size for p in data.rglob("*.npz"))
        log(f"{frames} frames, {nbytes / 2**20:.0f} MiB written")
        with local_cluster(work / "cluster", workers=WORKERS) as cluster:
            log(f"cluster up: {cluster.address}, {WORKERS} worker processes")
            times, hashed = time_ways(data, work, cluster.address, args.repeat, log)
    rows = dask_rows(times, hashed, args.repeat, frames, nbytes)
    cmd = "python -m benchmarks.bench_dask " + " ".join(sys.argv[1:])
    notes = [f"command: .venv/bin/python {cmd.strip()} ({os.cpu_count()} cores, shared)",
             f"{frames} npz frames, {nbytes / 2**20:.0f} MiB, every byte hashed in every run; "
             "ratio = local median / Dask median (> 1: Dask faster); universe.csv "
             "byte-identical in every run."]
    return _common.finish(rows, args, total=log.elapsed, notes=notes)

if __name__ == "__main__":
    sys.exit(main())
