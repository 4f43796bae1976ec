"""Duplicate-frame benchmarks for dvc_cuvis.leakage: planted recall / false pairs, audit scale.

How to run (from the repository root)::

    .venv/bin/python -m benchmarks.bench_leakage            # planted table + 100k + 1M audit
    .venv/bin/python -m benchmarks.bench_leakage --quick    # smoke test (small sizes)

It is a report, not a test.  Targets: the near-duplicate threshold is chosen from the planted
table (recall on noisy σ = 2 % / shifted ±3 px / gain ±5 % copies, false pairs among distinct
scenes); the cross-stage audit from stored signatures over 100k frames <= 2 s and <= 1 GiB,
over 1M synthetic signatures <= 15 s and <= 4 GiB.  Each audit runs in a child process
(peak RSS from ``resource``), with 1,000 planted near pairs among random 64-bit hashes.
``--materialize`` adds the cost of signing frames at materialize, end to end: ``materialize()``
(1 job, in this process) over generated 256 x 256 x 61 float32 frames (bench_materialize's
data), signatures on and off (the signature function stubbed out; everything else, summaries
included, the same), an untimed warm-up pair, then interleaved rounds whose order alternates;
target: the median of the rounds' on / off wall ratios <= 1.03.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import time

import numpy as np

from benchmarks import _common
from dvc_cuvis.leakage.duplicates import COSINE, HAMMING, audit
from dvc_cuvis.leakage.signatures import Signature, signature


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


def _audit_child(n: int, seed: int, hamming: int, with_crops: bool,
                 out: mp.Queue) -> None:  # type: ignore[type-arg]
    rng = np.random.default_rng(seed)
    high = rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63)
    hashes = rng.integers(0, 2**63, n, dtype=np.uint64) | high
    planted_n = min(1000, n // 2)
    for k in range(planted_n):  # copies within 3 bits of frame k, at the end, other stage
        flips = sum(1 << int(b) for b in rng.choice(64, 3, replace=False))
        hashes[n - 1 - k] = hashes[k] ^ np.uint64(flips)
    shape = tuple(float(v) for v in np.full(16, 0.25))
    crops = rng.integers(0, 2**63, (n, 8), dtype=np.uint64) if with_crops else None
    sigs: dict[str, Signature | None] = {
        f"f{i:07d}": Signature(f"{i:032x}", int(h), shape,
                               () if crops is None else tuple(crops[i].tolist()))
        for i, h in enumerate(hashes.tolist())}
    stage = {u: ("train" if i < n // 2 else "test") for i, u in enumerate(sigs)}
    t0 = time.perf_counter()
    res = audit(stage, sigs, hamming=hamming, cosine=COSINE)
    took = time.perf_counter() - t0
    out.put((took, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, len(res.near),
             planted_n))


def scale(n: int, seed: int, hamming: int, limit_s: float, with_crops: bool = True) -> None:
    """Audit time and peak memory over n synthetic signatures (each with 8 crop hashes, as
    materialize stores them, unless ``with_crops`` is False), in a child process."""
    q: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    p = mp.get_context("fork").Process(target=_audit_child, args=(n, seed, hamming, with_crops, q))
    p.start()
    p.join(limit_s)
    if p.is_alive():
        p.kill()
        p.join()
        print(f"audit {n:,} signatures{'' if with_crops else ' (no crops)'}, hamming ≤ "
              f"{hamming}: over {limit_s:.0f} s (stopped)")
        return
    took, rss, found, planted_n = q.get()
    print(f"audit {n:,} signatures{'' if with_crops else ' (no crops)'}, hamming ≤ {hamming}: "
          f"{took:.2f} s, peak RSS {rss:.2f} GiB,"
          f" {found} near pairs ({planted_n} planted)")


def materialize_cost(folders: int, frames: int, rounds: int, seed: int) -> None:
    """End-to-end materialize with and without signatures (see the module's notes)."""
    import shutil
    import statistics
    import tempfile
    from pathlib import Path

    from benchmarks.bench_materialize import build_dataset
    from dvc_cuvis.materialize import ReaderParams, summaries
    from dvc_cuvis.materialize import materialize_universe as materialize

    work = Path(tempfile.mkdtemp(prefix="bench-signatures-"))
    real = summaries.signature
    try:
        ds = build_dataset(work, folders, frames, (256, 256, 61), seed)
        out = work / "out"

        inside: list[float] = []  # CPU seconds of each signature taken inside materialize

        def timed_real(cube: np.ndarray) -> Signature:
            t = time.thread_time()
            sig = real(cube)
            inside.append(time.thread_time() - t)
            return sig

        def one(on: bool) -> tuple[float, float]:
            shutil.rmtree(out, ignore_errors=True)
            setattr(summaries, "signature", timed_real if on else (lambda cube: None))  # noqa: B010
            before, t0 = os.times(), time.perf_counter()
            res = materialize(ds.uni, None, out, ReaderParams(), select="all", jobs=1)
            took, after = time.perf_counter() - t0, os.times()
            if res.written != len(ds.uni):
                raise AssertionError(f"wrote {res.written} of {len(ds.uni)} frames")
            return took, sum(after[:4]) - sum(before[:4])

        one(True), one(False)  # warm-up pair, untimed
        ratios, cpu_ratios, shares = [], [], []
        walls: dict[bool, list[float]] = {True: [], False: []}
        for r in range(rounds * 2):
            pair = {}
            for on in ((True, False) if r % 2 == 0 else (False, True)):
                pair[on] = one(on)
                walls[on].append(pair[on][0])
            ratios.append(pair[True][0] / pair[False][0])
            cpu_ratios.append(pair[True][1] / pair[False][1])
            shares.append(sum(inside[-len(ds.uni):]) / pair[True][1])
        print(f"materialize {len(ds.uni)} frames of 256 x 256 x 61, 1 job: signatures on "
              f"{statistics.median(walls[True]):.2f} s, off {statistics.median(walls[False]):.2f}"
              f" s (medians); the median of the rounds' on / off ratios: wall "
              f"{100 * (statistics.median(ratios) - 1):+.1f} %, CPU "
              f"{100 * (statistics.median(cpu_ratios) - 1):+.1f} % (target <= +3 %); wall "
              f"ratios {[round(x, 3) for x in ratios]}, CPU {[round(x, 3) for x in cpu_ratios]}")
        print(f"  the signatures' own CPU inside materialize / the run's CPU (median of the "
              f"rounds): {100 * statistics.median(shares):.1f} %; per frame "
              f"{1000 * statistics.median(inside):.2f} ms")
    finally:
        summaries.signature = real
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    """Run the planted table and the audit scale figures."""
    ap = _common.bare_args(__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--materialize", action="store_true",
                    help="also measure materialize with and without signatures")
    args = ap.parse_args()
    if args.materialize:
        materialize_cost(2 if args.quick else 6, 4 if args.quick else 8,
                         1 if args.quick else 3, args.seed)
    planted(40 if args.quick else 200, args.seed)
    for n in ((2000,) if args.quick else (100_000, 1_000_000)):
        for t in sorted({4, HAMMING}):
            scale(n, args.seed, t, 60.0)


if __name__ == "__main__":
    main()
