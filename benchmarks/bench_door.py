"""The door's cost: enumerate reads every npz frame once for its verdict, then never again.

How to run (from the repository root)::

    .venv/bin/python -m benchmarks.bench_door                # example/ + 1,000 frames (~1 min)
    .venv/bin/python -m benchmarks.bench_door --frames 5000 --shape 64,64,32

Each row is an in-process ``enumerate_universe`` of an npz folder (what ``dvc-cuvis enumerate``
does, without interpreter start-up and the universe.csv write), median of ``--repeats``:

* *first run*: no stat cache (a new dataset, or a fresh clone whose md5s DVC knows: the
  verdict is the one read the door adds there), with the door and without it
  (``EnumerateOptions(verify=False)``, as before the door);
* *second run*: the stat cache the first run wrote, nothing changed: no frame is read.

The page cache is warm for all of them (one untimed run first), so the rows compare work,
not the disk.  It is a report: the exit code is 0 unless the script crashes.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import REPO, bare_args


def make_frames(root: Path, n: int, shape: tuple[int, int, int]) -> int:
    """``n`` frames of ``shape`` (cube, wavelengths, class_mask, source) in 10 recordings;
    returns their total size in bytes."""
    rng = np.random.default_rng(0)
    h, w, c = shape
    total = 0
    for k in range(n):
        folder = root / f"rec{k % 10:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"f{k:05d}.npz"
        np.savez(path, cube=rng.random(shape, dtype=np.float32),
                 wavelengths=np.arange(400, 400 + c, dtype=np.int32),
                 class_mask=(rng.random((h, w)) > 0.99).astype(np.uint8),
                 source=np.array(folder.name))
        total += path.stat().st_size
    return total


def one_run(root: Path, cache_file: Path | None, verify: bool) -> tuple[float, dict[str, int]]:
    """Seconds of one enumerate of ``root``, and its stat cache's counts."""
    from dvc_cuvis.digests.stat_cache import StatCache
    from dvc_cuvis.sources import EnumerateOptions, enumerate_universe

    cache = StatCache(cache_file)
    t0 = time.perf_counter()
    enumerate_universe(EnumerateOptions(format="npz", root=root, out_dir=root.parent,
                                        cache=cache, verify=verify, jobs=2))
    cache.save()
    dt = time.perf_counter() - t0
    return dt, {**cache.stats(), "checked_computed": cache.checked_computed,
                "checked_from_memo": cache.checked_from_memo}


def measure(name: str, root: Path, work: Path, repeats: int) -> list[str]:
    """The three rows of one dataset, as markdown table lines."""
    one_run(root, None, True)  # untimed: the page cache is warm from here on
    rows: dict[str, list[float]] = {"on": [], "off": [], "second": [], "known": [],
                                    "known_off": []}
    counts: dict[str, dict[str, int]] = {}
    for r in range(repeats):
        for mode in ("off", "on"):
            cache = work / f"{name}-{mode}-{r}.bin"
            dt, counts[mode] = one_run(root, cache, mode == "on")
            rows[mode].append(dt)
        dt, counts["second"] = one_run(root, work / f"{name}-on-{r}.bin", True)
        rows["second"].append(dt)
        # md5s and values known, no verdict yet (a fresh clone DVC vouches for)
        known = work / f"{name}-off-{r}.bin"
        shutil.copy(known, work / "known.bin")
        dt, counts["known_off"] = one_run(root, work / "known.bin", False)
        rows["known_off"].append(dt)
        dt, counts["known"] = one_run(root, known, True)
        rows["known"].append(dt)
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"{name}: {counts}")
    return [
        f"| {name}: first run, with the door | {med['on']:.3f} s | {med['off']:.3f} s without "
        f"| {med['on'] / med['off']:.2f}x | {counts['on']['checked_computed']} frames read "
        "for a verdict |",
        f"| {name}: md5s and values known, no verdict yet (as on a fresh clone) | "
        f"{med['known']:.3f} s | {med['known_off']:.3f} s without | "
        f"{med['known'] / med['known_off']:.2f}x | {counts['known']['checked_computed']} "
        f"frames read for a verdict, {counts['known']['bytes_hashed']} bytes hashed |",
        f"| {name}: second run, unchanged | {med['second']:.3f} s | | | "
        f"{counts['second']['checked_computed']} frames read, "
        f"{counts['second']['bytes_hashed']} bytes hashed |",
    ]


def main(argv: list[str] | None = None) -> int:
    """Measure and print the rows of docs/performance.md's door table."""
    ap = bare_args(__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--shape", default="64,64,32", help="H,W,C of the synthetic frames")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    shape = tuple(int(x) for x in args.shape.split(","))
    assert len(shape) == 3
    work = Path(tempfile.mkdtemp(prefix="bench-door-"))
    try:
        example = work / "example" / "npz"
        shutil.copytree(REPO / "example" / "data" / "npz", example)
        synth = work / "synth" / "npz"
        size = make_frames(synth, args.frames, shape)  # type: ignore[arg-type]
        n_example = len(list(example.rglob("*.npz")))
        lines = ["| what | ours | baseline | ratio | note |", "| --- | --- | --- | --- | --- |"]
        lines += measure(f"example/ ({n_example} frames)", example, work, args.repeats)
        lines += measure(f"{args.frames} frames of {'x'.join(map(str, shape))} float32 "
                         f"({size / 2**20:.0f} MiB)", synth, work, args.repeats)
        print("\n".join(lines))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
