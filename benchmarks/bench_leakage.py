"""Duplicate-frame benchmarks for dvc_cuvis.leakage: planted recall / false pairs, audit scale.

How to run (from the repository root)::

    .venv/bin/python -m benchmarks.bench_leakage                 # planted table, 100k + 1M audit
    .venv/bin/python -m benchmarks.bench_leakage --materialize   # ... and signing at materialize
    .venv/bin/python -m benchmarks.bench_leakage --quick         # smoke test (small sizes)
    .venv/bin/python -m benchmarks.bench_leakage --shards        # ... and the check's shard read

Targets (2 cores): the cross-stage audit from stored signatures over 100k frames
<= 2 s and <= 1 GiB, over 1M synthetic signatures <= 15 s and <= 4 GiB; the signatures add
<= 3 % to materialize.  The near-duplicate threshold is chosen from the planted table (recall
on noisy sigma = 2 % / shifted +-3 px / gain +-5 % copies, false pairs among distinct scenes).

Each audit runs in a child process (peak RSS from ``resource.getrusage``), with 1,000 planted
near pairs (within 3 bits) among random 64-bit hashes, 8 random crop hashes per frame as
materialize stores them.  At 100k the child starts from the stored records (the shard
entries' ``signature`` dicts) and times reading them as columns plus the audit; at 1M it
starts from the columns (a million record dicts alone would hold gigabytes).  The baseline,
context rather than the same work, is a plain numpy multi-index self-join of the central
hashes alone (4 exact 16-bit chunks, distance <= 3: no crops, no radius, no stages, no
spectral test), timed in the same child.  ``--materialize``: ``materialize()`` (1 job, in
this process) over generated 256 x 256 x 61 float32 frames (bench_materialize's data),
signatures on and off (the signature function stubbed out; everything else, summaries
included, the same), an untimed warm-up pair, then interleaved rounds whose order alternates.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import _common
from dvc_cuvis.check.duplicates import check_duplicates
from dvc_cuvis.check.summaries import read_split_summaries
from dvc_cuvis.leakage.duplicates import COSINE, HAMMING, audit, audit_columns
from dvc_cuvis.leakage.index import popcount
from dvc_cuvis.leakage.signatures import (
    SIGNATURE_VERSION,
    Signature,
    SignatureColumns,
    columns_from_records,
    signature,
)
from dvc_cuvis.materialize.summary_store import dumps_shard, shard_files, shard_of
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe_io import read_universe


def _scene(rng: np.random.Generator, h: int = 72, w: int = 72, c: int = 32) -> np.ndarray:
    """A smooth synthetic scene (Gaussian blobs with their own spectra), 8 px of margin."""
    y, x = np.mgrid[0:h, 0:w]
    img = np.zeros((h, w, c))
    for _ in range(6):
        cy, cx, s = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(4, 16)
        img += np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / (2 * s * s))[..., None] \
            * rng.uniform(0.2, 1, c)
    return img


def planted(n: int, seed: int) -> None:
    """Recall and false pairs per (hamming, cosine) on n planted near copies."""
    rng = np.random.default_rng(seed)
    stage: dict[str, str] = {}
    sigs: dict[str, Signature | None] = {}
    for i in range(n):
        big = _scene(rng)
        base = big[4:68, 4:68]
        span = float(base.max() - base.min())
        dy, dx = (int(v) for v in rng.integers(-3, 4, 2))
        copy = (big[4 + dy:68 + dy, 4 + dx:68 + dx] * rng.uniform(0.95, 1.05)
                + rng.normal(0, 0.02 * span, base.shape))
        stage[f"a{i:05d}"], sigs[f"a{i:05d}"] = "train", signature(base.astype(np.float32))
        stage[f"b{i:05d}"], sigs[f"b{i:05d}"] = "test", signature(copy.astype(np.float32))
    print(f"planted: {n} near copies, {n * n - n} distinct cross-stage pairs")
    print("| hamming ≤ | cosine ≥ | recall | false pairs |")
    print("| ---: | ---: | ---: | ---: |")
    for t in (3, 4, 5, 6, 8):
        for c in (0.99, COSINE):
            res = audit(stage, sigs, hamming=t, cosine=c)
            good = sum(p.first[1:] == p.second[1:] for p in res.near)
            print(f"| {t} | {c} | {good / n:.1%} | {len(res.near) - good} |")


def _synthetic(n: int, seed: int) -> tuple[SignatureColumns, int]:
    """n synthetic signatures as columns (planted pairs at the end, in the other stage)."""
    rng = np.random.default_rng(seed)
    high = rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63)
    hashes = rng.integers(0, 2**63, n, dtype=np.uint64) | high
    planted_n = min(1000, n // 2)
    for k in range(planted_n):  # copies within 3 bits of frame k, at the end, other stage
        flips = sum(1 << int(b) for b in rng.choice(64, 3, replace=False))
        hashes[n - 1 - k] = hashes[k] ^ np.uint64(flips)
    content = np.frombuffer(np.arange(2 * n, dtype=">u8").tobytes(), dtype="S16")
    return SignatureColumns(content, hashes, np.full((n, 16), 0.25),
                            rng.integers(0, 2**63, (n, 8), dtype=np.uint64),
                            np.ones(n, dtype=bool)), planted_n


def _records(cols: SignatureColumns) -> list[dict]:
    """The columns as the shard entries' ``signature`` records (what the check reads)."""
    shape = [0.25] * 16
    return [{"v": SIGNATURE_VERSION, "content": c.hex(), "phash": f"{h:016x}", "shape": shape,
             "crops": [f"{x:016x}" for x in row]}
            for c, h, row in zip(cols.content.tolist(), cols.phash.tolist(),
                                 cols.crops.tolist(), strict=True)]


def _plain_pairs(hashes: np.ndarray) -> int:
    """The baseline: pairs within 3 bits by 4 exact 16-bit chunks, a plain self-join."""
    found = []
    for offset in (0, 16, 32, 48):
        keys = (hashes >> np.uint64(offset)) & np.uint64(0xFFFF)
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        sizes = np.diff(np.r_[starts, len(keys)])
        ends = np.repeat(starts + sizes, sizes)
        for gap in range(1, int(sizes.max()) if len(sizes) else 0):
            pos = np.flatnonzero(np.arange(len(keys)) + gap < ends)  # same bucket, gap apart
            i, j = order[pos], order[pos + gap]
            near = popcount(hashes[i] ^ hashes[j]) <= 3
            found.append(np.minimum(i, j)[near] * len(hashes) + np.maximum(i, j)[near])
    return len(np.unique(np.concatenate(found))) if found else 0


def _audit_child(n: int, seed: int, hamming: int, from_records: bool,
                 out: mp.Queue) -> None:  # type: ignore[type-arg]
    cols, planted_n = _synthetic(n, seed)
    uids = [f"f{i:07d}" for i in range(n)]
    stages = ["train" if i < n // 2 else "test" for i in range(n)]
    records = _records(cols) if from_records else None
    t0, c0 = time.perf_counter(), time.process_time()
    if records is not None:
        cols = columns_from_records(records, ["shard"] * n)[1]
    res = audit_columns(uids, stages, cols, hamming=hamming, cosine=COSINE)
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    t1 = time.perf_counter()
    plain = _plain_pairs(cols.phash)
    out.put({"wall": took, "cpu": cpu, "near": len(res.near), "planted": planted_n,
             "plain_wall": time.perf_counter() - t1, "plain_pairs": plain,
             "rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20})


def scale(n: int, seed: int, hamming: int, limit_s: float, from_records: bool) -> dict | None:
    """Audit time, CPU and peak memory over n synthetic signatures in a child process (see
    the module's notes); None when it ran past ``limit_s``."""
    q: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    p = mp.get_context("fork").Process(target=_audit_child,
                                       args=(n, seed, hamming, from_records, q))
    p.start()
    p.join(limit_s)
    if p.is_alive():
        p.kill()
        p.join()
        print(f"audit {n:,} signatures, hamming <= {hamming}: over {limit_s:.0f} s (stopped)")
        return None
    got: dict = q.get()
    print(f"audit {n:,} signatures{' from records' if from_records else ''}, hamming <= "
          f"{hamming}: {got['wall']:.2f} s (CPU {got['cpu']:.2f} s), peak RSS "
          f"{got['rss_gib']:.2f} GiB, {got['near']} near pairs ({got['planted']} planted); "
          f"plain multi-index {got['plain_wall']:.2f} s, {got['plain_pairs']} pairs")
    return got


def _shard_folder(root: Path, recordings: int, frames: int, bands: int, seed: int
                  ) -> Path:
    """A materialized folder's universe.csv, splits.json and summary shards (no frames) for
    ``recordings`` x ``frames`` frames, each entry as materialize writes it: mean and std over
    ``bands`` bands, two categories' means, the signature; recordings alternate stages."""
    rng = np.random.default_rng(seed)
    wl = [float(400 + 10 * b) for b in range(bands)]
    sources: dict[str, list[str]] = {"train": [], "val": [], "test": []}
    for r in range(recordings):
        entries = {}
        for k in range(frames):
            source = f"rec{r:05d}/f{k:04d}.npz"
            mean = [round(float(v), 9) for v in rng.random(bands)]
            sources[("train", "train", "val", "test")[r % 4]].append(source)
            entries[frame_name(source, 0)] = {
                "categories": {"0": {"mean": mean, "pixels": 60000},
                               "1": {"mean": mean, "pixels": 5536}},
                "index": "0", "invalid": 0, "md5": f"{r:016x}{k:016x}", "mean": mean,
                "sampled": 4096, "saturated": None, "shape": [256, 256, bands], "std": mean,
                "signature": {"v": SIGNATURE_VERSION, "content": f"{r:016x}{k:016x}",
                              "phash": f"{int(rng.integers(2**62)):016x}",
                              "shape": [round(float(v), 6) for v in rng.random(16) / 4],
                              "crops": [f"{int(h):016x}" for h in rng.integers(2**62, size=8)]},
                "source": source, "wavelengths": wl}
        shard = root / shard_of(next(iter(entries)))
        shard.parent.mkdir(parents=True, exist_ok=True)
        shard.write_text(dumps_shard(entries), encoding="utf-8")
    rows = "".join(f"{s},0\n" for stage in sources.values() for s in stage)
    (root / "universe.csv").write_text("source,index\n" + rows, encoding="utf-8")
    uni = read_universe(root / "universe.csv")
    split = {"universe_hash": uni.hash, "predict": [], **{
        stage: [{"kind": "files", "paths": paths}] for stage, paths in sources.items()}}
    (root / "splits.json").write_text(json.dumps(split), encoding="utf-8")
    return root


def _shards_child(root: Path, out: mp.Queue) -> None:  # type: ignore[type-arg]
    res = resolve(load_splits(root / "splits.json"), read_universe(root / "universe.csv"))
    t0, c0 = time.perf_counter(), time.process_time()
    read = read_split_summaries(res, root)
    found = check_duplicates(read, "error", "warn")
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    t1 = time.perf_counter()
    for shard in shard_files(root):
        json.loads(shard.read_bytes())
    out.put({"wall": took, "cpu": cpu, "rss_gib": rss, "frames": len(read.entries),
             "near": found.counts.get("near_duplicates", 0),
             "parse_wall": time.perf_counter() - t1})


def shards_cost(n: int, seed: int, workdir: Path | None) -> dict:
    """The check's read of ``n`` frames' summary shards plus the duplicate audit, end to end,
    in a child (peak RSS); the baseline: ``json.loads`` of the same shards alone."""
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        root = _shard_folder(Path(tmp), max(1, n // 100), min(n, 100), 61, seed)
        q: mp.Queue = mp.Queue()  # type: ignore[type-arg]
        p = mp.get_context("fork").Process(target=_shards_child, args=(root, q))
        p.start()
        try:
            got: dict = q.get(timeout=600)  # a child that died says nothing: not a hang
        finally:
            p.join(5)
            if p.is_alive():
                p.kill()
    print(f"check's summaries read + duplicate audit, {got['frames']:,} frames: "
          f"{got['wall']:.2f} s (CPU {got['cpu']:.2f} s), peak RSS {got['rss_gib']:.2f} GiB; "
          f"json.loads of the shards alone {got['parse_wall']:.2f} s")
    return got


def materialize_cost(folders: int, frames: int, rounds: int, seed: int) -> dict:
    """End-to-end materialize with and without signatures (see the module's notes): the
    medians of the rounds' on / off wall and CPU ratios, and the signatures' own CPU share."""
    import shutil
    import tempfile
    from pathlib import Path

    from benchmarks.bench_materialize import build_dataset
    from dvc_cuvis.materialize import ReaderParams, summaries
    from dvc_cuvis.materialize import materialize_universe as materialize

    work = Path(tempfile.mkdtemp(prefix="bench-signatures-"))
    real = summaries.signature
    inside: list[float] = []  # CPU seconds of each signature taken inside materialize

    def timed_real(cube: np.ndarray, data_crc: int | None = None) -> Signature:
        t = time.thread_time()
        sig = real(cube, data_crc)
        inside.append(time.thread_time() - t)
        return sig

    try:
        ds = build_dataset(work, folders, frames, (256, 256, 61), seed)
        out = work / "out"

        def one(on: bool) -> tuple[float, float]:
            shutil.rmtree(out, ignore_errors=True)
            setattr(summaries, "signature", timed_real if on else (lambda cube, crc=None: None))  # noqa: B010
            before, t0 = os.times(), time.perf_counter()
            res = materialize(ds.uni, None, out, ReaderParams(), select="all", jobs=1)
            took, after = time.perf_counter() - t0, os.times()
            if res.written != len(ds.uni):
                raise AssertionError(f"wrote {res.written} of {len(ds.uni)} frames")
            return took, sum(after[:4]) - sum(before[:4])

        one(True), one(False)  # warm-up pair, untimed
        wall, cpu, share = [], [], []
        for r in range(rounds * 2):
            pair = {on: one(on) for on in ((True, False) if r % 2 == 0 else (False, True))}
            wall.append(pair[True][0] / pair[False][0])
            cpu.append(pair[True][1] / pair[False][1])
            share.append(sum(inside[-len(ds.uni):]) / pair[True][1])
    finally:
        summaries.signature = real
        shutil.rmtree(work, ignore_errors=True)
    got: dict[str, Any] = {
        "frames": len(ds.uni), "wall": statistics.median(wall), "cpu": statistics.median(cpu),
        "share": statistics.median(share), "per_frame_ms": 1000 * statistics.median(inside),
        "wall_ratios": [round(x, 3) for x in wall], "cpu_ratios": [round(x, 3) for x in cpu]}
    print(f"materialize {got['frames']} frames of 256 x 256 x 61, 1 job, {rounds * 2} rounds: "
          f"on / off wall {got['wall']:.3f}, CPU {got['cpu']:.3f} (medians; wall "
          f"{got['wall_ratios']}, CPU {got['cpu_ratios']}); the signatures' own CPU "
          f"{100 * got['share']:.1f} % of the run's, {got['per_frame_ms']:.2f} ms a frame")
    return got


def _audit_rows(n: int, got: dict | None, limit: tuple[float, float], enforce: bool
                ) -> list[_common.Row]:
    """The rows of one audit size: time against its target (the plain multi-index as the
    baseline, context), peak RSS against its target, CPU for the record."""
    tag = f"{n // 1000}k" if n < 1_000_000 else f"{n // 1_000_000}M"
    if got is None:
        return [_common.Row(f"audit_{tag}_s", f"audit {n:,} (stopped)", None, "s",
                            goal_kind="max_abs", goal_value=limit[0], enforce=enforce)]
    return [
        _common.Row(f"audit_{tag}_s", f"audit {n:,}, hamming <= {HAMMING} (vs plain index)",
                    got["wall"], "s", baseline=got["plain_wall"], goal_kind="max_abs",
                    goal_value=limit[0], enforce=enforce, details=got),
        _common.Row(f"audit_{tag}_cpu", f"audit {n:,}, CPU", got["cpu"], "s"),
        _common.Row(f"audit_{tag}_rss", f"audit {n:,}, peak RSS", got["rss_gib"], "GiB",
                    goal_kind="max_abs", goal_value=limit[1], enforce=enforce),
    ]


def main() -> int:
    """Run the planted table, the audit scale figures and (``--materialize``) the cost of
    signing at materialize, each against its target."""
    ap = _common.standard_args(__doc__.splitlines()[0], seed=True)
    ap.add_argument("--materialize", action="store_true",
                    help="also measure materialize with and without signatures")
    ap.add_argument("--rounds", type=int, default=3, help="audit rounds per size (median)")
    ap.add_argument("--shards", action="store_true",
                    help="also measure the check's read of 100k frames' summary shards")
    ap.set_defaults(seed=0)  # the seed docs/leakage.md's planted table was measured with
    args = ap.parse_args()
    enforce = not args.quick
    rows: list[_common.Row] = []
    if args.materialize:
        got = materialize_cost(2 if args.quick else 6, 4 if args.quick else 8,
                               1 if args.quick else 3, args.seed)
        rows += [_common.Row("signatures_cpu", "materialize CPU, signatures on / off - 1",
                             100 * (got["cpu"] - 1), "%", goal_kind="max_abs", goal_value=3,
                             enforce=enforce, details=got),
                 _common.Row("signatures_wall", "materialize wall, signatures on / off - 1",
                             100 * (got["wall"] - 1), "%"),
                 _common.Row("signatures_share", "signatures' own CPU / materialize CPU",
                             100 * got["share"], "%", goal_kind="max_abs", goal_value=3,
                             enforce=enforce)]
    if args.shards:
        got = shards_cost(2000 if args.quick else 100_000, args.seed, args.workdir)
        rows += [_common.Row("shards_100k_s", "summaries read + audit, 100k frames (vs parse)",
                             got["wall"], "s", baseline=got["parse_wall"], details=got),
                 _common.Row("shards_100k_rss", "summaries read + audit, peak RSS",
                             got["rss_gib"], "GiB")]
    planted(40 if args.quick else 200, args.seed)
    sizes = ((2000, 2.0, 1.0, True),) if args.quick else (
        (100_000, 2.0, 1.0, True), (1_000_000, 15.0, 4.0, False))
    for n, limit_s, limit_gib, from_records in sizes:
        runs = [scale(n, args.seed, HAMMING, 10 * limit_s + 60, from_records)
                for _ in range(1 if args.quick or n >= 1_000_000 else args.rounds)]
        done = [r for r in runs if r is not None]
        best = None if not done else {k: statistics.median(r[k] for r in done)
                                      for k in ("wall", "cpu", "rss_gib", "plain_wall")}
        if best is not None:
            best.update(near=done[0]["near"], planted=done[0]["planted"])
        rows += _audit_rows(n, best, (limit_s, limit_gib), enforce)
    return _common.finish(rows, args, notes=[
        f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"])


if __name__ == "__main__":
    raise SystemExit(main())
