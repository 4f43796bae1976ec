"""Core benchmarks for dvc_cuvis: baked-split resolution and universe.csv reading.

How to run (from the repository root)::

    .venv/bin/python -m benchmarks.bench_core                 # full run (~2 min, 2 cores)
    .venv/bin/python -m benchmarks.bench_core --quick         # CI smoke test (sizes / 20)
    .venv/bin/python -m benchmarks.bench_core --json out.json # also write the figures
    .venv/bin/python -m benchmarks.bench_core --strict        # exit 1 if any target fails

Options: ``--workdir DIR`` (generated data goes to a fresh temp dir inside DIR; removed at
the end unless ``--keep``), ``--seed N``, ``--upstream-subset N`` (selectors per stage timed
on the upstream resolver before extrapolating), ``--profile`` (cProfile our hot paths
even when every target passes).

It is a report, not a test: the exit code is 0 unless the script crashes, or ``--strict``
is given and a target fails.  ``--quick`` divides every size by ~20 and enforces no
target (results read ``n/a``); it only checks that everything runs and agrees.

Targets (every baseline is measured in the same run):

1. Baked split over 50k samples (500 sources x 100 frames, per-frame ~60/20/20 stage
   draw, one ``file_indices`` selector per (source, stage)): ``dvc_cuvis.model.resolution.resolve``
   >= 500x faster than ``cuvis_ai_core.data.selectors.resolve_selectors``.  Upstream is
   O(selectors x universe), so it is timed on the first ``--upstream-subset`` selectors of
   each stage and scaled linearly per stage to the full selector count (marked ``*``);
   on that subset both resolvers must return the same uids in the same order.
2. 1M samples / 10k sources, baked as in 1: all four stages resolve in <= 3 s (absolute),
   with an empty predict (= whole universe) and with predict mirroring test.
3. universe.csv with 1M rows (source,index,materialized_path): ``read_universe`` >= 20x
   faster than cuvis-ai-dataloader's ``parse_universe`` and <= 1/3 of its peak RSS, each
   measured in a fresh subprocess (``ru_maxrss``).  Also reported: a bare
   ``import numpy`` process, ours on a row-shuffled copy, ``Universe.hash`` at 1M rows, and
   (context, docs/performance.md) ``pandas.read_csv(dtype=str)`` and ``pyarrow.csv`` on the
   same file, all cells as text and no checks.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from cuvis_ai_core.data.selectors import resolve_selectors as upstream_resolve_selectors
from cuvis_ai_core.data.splits_io import universe_hash as upstream_universe_hash
from cuvis_ai_schemas.training.data import DataSplitConfig, SampleRef, Selector

from benchmarks import _common
from benchmarks._common import Row, median, profile_top, timed
from dvc_cuvis.model.resolution import Resolution, resolve
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe

EXCLUSIVE = ("train", "val", "test")


def count(n: int) -> str:
    """50000 -> '50k', 1000000 -> '1M'."""
    if n >= 1_000_000:
        return f"{n / 1e6:g}M"
    return f"{n / 1e3:g}k" if n >= 1000 else str(n)
STAGE_P = (0.6, 0.2, 0.2)


# -- data generation -----------------------------------------------------------------------


def source_names(n_sources: int) -> list[str]:
    """Sorted, realistic-looking recording paths (50 sessions per day folder)."""
    return [f"recordings/day_{s // 50:03d}/session_{s:05d}.cu3s" for s in range(n_sources)]


def session_of(name: str) -> str:
    return name.rsplit("/", 1)[1].removesuffix(".cu3s")


def assign_stages(rng: np.random.Generator, n_sources: int, frames: int) -> np.ndarray:
    """Per-frame stage code 0/1/2 (train/val/test), drawn ~60/20/20; shape (sources, frames)."""
    return rng.choice(3, size=(n_sources, frames), p=STAGE_P).astype(np.int8)


def compress_ids(ids: np.ndarray) -> list[int | str]:
    """Sorted ints -> ints and inclusive ``"a-b"`` range strings (as a baked file might)."""
    if len(ids) == 0:
        return []
    breaks = np.flatnonzero(np.diff(ids) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [len(ids)])) - 1
    return [a if a == b else f"{a}-{b}"
            for a, b in zip(ids[starts].tolist(), ids[ends].tolist(), strict=True)]


def baked_config(
    names: list[str], assign: np.ndarray, *, ranges: bool, predict_mirrors_test: bool,
    universe_hash: str,
) -> DataSplitConfig:
    """One ``file_indices`` selector per (source, stage), sources in canonical order."""
    stages: dict[str, list[Selector]] = {s: [] for s in EXCLUSIVE}
    for s, name in enumerate(names):
        row = assign[s]
        for k, stage in enumerate(EXCLUSIVE):
            ids = np.flatnonzero(row == k)
            if len(ids) == 0:
                continue
            stages[stage].append(Selector(
                kind="file_indices", source=name,
                ids=compress_ids(ids) if ranges else ids.tolist(),
            ))
    return DataSplitConfig(
        universe_hash=universe_hash,
        train=stages["train"], val=stages["val"], test=stages["test"],
        predict=list(stages["test"]) if predict_mirrors_test else [],
    )


def expected_positions(assign: np.ndarray) -> dict[str, np.ndarray]:
    """Positions each stage must resolve to (universe row = source * frames + frame)."""
    flat = assign.ravel()
    return {stage: np.flatnonzero(flat == k) for k, stage in enumerate(EXCLUSIVE)}


def write_universe_csv(path: Path, names: list[str], frames: int) -> int:
    """universe.csv in canonical order; materialized_path ``frames/<session>/<index>.npz``."""
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write("source,index,materialized_path\n")
        for name in names:
            sess = session_of(name)
            fh.write("".join(f"{name},{i},frames/{sess}/{i:05d}.npz\n" for i in range(frames)))
    return path.stat().st_size


def write_shuffled_copy(src: Path, dst: Path, rng: np.random.Generator) -> None:
    lines = src.read_bytes().split(b"\n")
    header, body = lines[0], [ln for ln in lines[1:] if ln]
    perm = rng.permutation(len(body))
    dst.write_bytes(header + b"\n" + b"\n".join(body[i] for i in perm.tolist()) + b"\n")


def fresh(uni: Universe) -> Universe:
    """A new Universe object over the same arrays (cold per-object caches, e.g. offsets)."""
    cols = {c: uni.raw_column(c) for c in uni.columns[2:]}
    return Universe(uni.source_names, uni.codes, uni.indices,
                    {k: v for k, v in cols.items() if v is not None}, path=uni.path)


def time_ours(cfg: DataSplitConfig, uni: Universe, repeat: int) -> tuple[list[float], Resolution]:
    times: list[float] = []
    res: Resolution | None = None
    for _ in range(repeat):
        u = fresh(uni)
        dt, res = timed(resolve, cfg, u)
        times.append(dt)
    assert res is not None
    return times, res


def check_positions(res: Resolution, want: dict[str, np.ndarray], what: str) -> None:
    for stage, pos in want.items():
        got = res.stages[stage]
        if not np.array_equal(got, pos):
            raise AssertionError(f"{what}: stage {stage!r} resolved to {len(got)} positions, "
                                 f"expected {len(pos)} (or a different order)")


def n_selectors(cfg: DataSplitConfig) -> int:
    return sum(len(getattr(cfg, s)) for s in ("train", "val", "test", "predict"))


# -- target 1: 50k baked vs cuvis_ai_core --------------------------------------------------


def time_upstream_50k(cfg: DataSplitConfig, uni: Universe, refs: list[SampleRef], sub_n: int,
                      form: str) -> tuple[float, int, dict[str, dict[str, float]], float]:
    """Upstream's resolve on the first sub_n selectors per stage, extrapolated to all of them."""
    up_total = 0.0
    timed_sel = 0
    per_stage: dict[str, dict[str, float]] = {}
    sub_cfg = DataSplitConfig(**{s: getattr(cfg, s)[:sub_n] for s in EXCLUSIVE})
    sub_res = resolve(sub_cfg, fresh(uni))
    for stage in EXCLUSIVE:
        full = getattr(cfg, stage)
        part = full[:sub_n]
        dt, got = timed(upstream_resolve_selectors, part, refs)
        up_uids = [r.uid for r in got]
        if up_uids != sub_res.uids(stage):
            raise AssertionError(f"50k {form} {stage}: ours and upstream uids differ on "
                                 f"the first {len(part)} selectors")
        scaled = dt * len(full) / len(part)
        per_stage[stage] = {"timed_s": dt, "timed_selectors": len(part),
                            "selectors": len(full), "extrapolated_s": scaled}
        up_total += scaled
        timed_sel += len(part)
    dt_pred, _ = timed(list, refs)  # upstream: empty predict = every ref
    up_total += dt_pred
    return up_total, timed_sel, per_stage, dt_pred


def bench_resolve_50k(args: argparse.Namespace, rng: np.random.Generator, enforce: bool,
                      log: Callable[[str], None], notes: list[str],
                      profiles: dict[str, str]) -> list[Row]:
    n_sources, frames = (25, 100) if args.quick else (500, 100)
    subset = args.upstream_subset
    repeat = 5 if args.quick else 15
    names = source_names(n_sources)
    assign = assign_stages(rng, n_sources, frames)
    uni = Universe.from_records({"source": n, "index": i} for n in names for i in range(frames))
    assert uni.source_names == names
    refs = [SampleRef(source=n, index=i) for n in uni.source_names for i in range(frames)]
    if uni.hash != upstream_universe_hash(refs):
        raise AssertionError("universe_hash differs from cuvis_ai_core.data.splits_io's")
    want = expected_positions(assign)
    want["predict"] = np.arange(len(uni), dtype=np.int64)

    rows: list[Row] = []
    for form in ("ints", "ranges"):
        cfg = baked_config(names, assign, ranges=form == "ranges", predict_mirrors_test=False,
                           universe_hash=uni.hash)
        n_sel = {s: len(getattr(cfg, s)) for s in EXCLUSIVE}
        n_ids = sum(len(sel.ids) for s in EXCLUSIVE for sel in getattr(cfg, s))
        log(f"[1] {len(uni)} samples, {sum(n_sel.values())} file_indices selectors "
            f"({n_sel}), ids as {form} ({n_ids} id items)")

        # ours: all four stages, fresh Universe object each time
        times, res = time_ours(cfg, uni, repeat)
        check_positions(res, want, f"ours 50k ({form})")
        ours = median(times)
        log(f"    ours: median {ours * 1e3:.2f} ms, min {min(times) * 1e3:.2f} ms "
            f"over {repeat} runs")

        # upstream: the first `sub` selectors of each stage, extrapolated per stage
        sub_n = subset if form == "ints" else max(1, subset // 2)
        up_total, timed_sel, per_stage, dt_pred = time_upstream_50k(cfg, uni, refs, sub_n, form)
        extrapolated = timed_sel < sum(n_sel.values())
        log(f"    upstream: timed {timed_sel} selectors in "
            f"{sum(v['timed_s'] for v in per_stage.values()):.2f} s -> "
            f"{'extrapolated' if extrapolated else 'measured'} {up_total:.2f} s for all "
            f"{sum(n_sel.values())}; uids identical on the timed subset")
        if extrapolated and form == "ints":
            notes.append(
                f"* upstream extrapolated: resolve_selectors timed on the first {sub_n} "
                f"selectors of each of train/val/test (ints form; {max(1, subset // 2)} "
                f"for the ranges form), then each stage's time scaled by (its selector count / "
                "selectors timed); upstream scans the whole universe once per selector, so "
                "cost is linear in selectors. Empty predict (= all refs) timed directly."
            )
        row = Row(
            key=f"resolve_50k_{form}",
            label=f"resolve {count(len(uni))} baked, {form} (vs cuvis_ai_core)",
            ours=ours, baseline=up_total, baseline_note="*" if extrapolated else "",
            goal_kind="min_ratio", goal_value=500, enforce=enforce,
            details={"samples": len(uni), "sources": n_sources, "selectors": n_sel,
                     "id_items": n_ids, "ours_times_s": times, "upstream": per_stage,
                     "upstream_predict_s": dt_pred, "upstream_extrapolated": extrapolated},
        )
        rows.append(row)
        if args.profile or row.passed is False:
            profiles[row.key] = profile_top(lambda c=cfg: resolve(c, fresh(uni)))
    return rows


# -- target 2: 1M baked, absolute -----------------------------------------------------------


def bench_resolve_1m(args: argparse.Namespace, uni: Universe, names: list[str], frames: int,
                     rng: np.random.Generator, enforce: bool, log: Callable[[str], None],
                     profiles: dict[str, str]) -> list[Row]:
    repeat = 2 if args.quick else 3
    assign = assign_stages(rng, len(names), frames)
    want = expected_positions(assign)
    all_pos = np.arange(len(uni), dtype=np.int64)
    rows: list[Row] = []
    variants = (("ints", False), ("ints", True), ("ranges", True))
    for form, mirror in variants:
        t0 = time.perf_counter()
        cfg = baked_config(names, assign, ranges=form == "ranges",
                           predict_mirrors_test=mirror, universe_hash="0" * 64)
        build_s = time.perf_counter() - t0
        times, res = time_ours(cfg, uni, repeat)
        check_positions(res, {**want, "predict": want["test"] if mirror else all_pos},
                        f"ours 1M ({form}, predict={'test' if mirror else 'all'})")
        ours = median(times)
        pred = "predict=test" if mirror else "predict empty"
        log(f"[2] {len(uni)} samples, {n_selectors(cfg)} selectors ({form}, {pred}): "
            f"median {ours:.3f} s, min {min(times):.3f} s over {repeat} runs "
            f"(building the config, untimed: {build_s:.1f} s)")
        row = Row(
            key=f"resolve_1m_{form}_{'predict_test' if mirror else 'predict_all'}",
            label=f"resolve {count(len(uni))} baked, {form}, {pred}",
            ours=ours, goal_kind="max_abs", goal_value=3.0, enforce=enforce,
            details={"samples": len(uni), "sources": len(names), "selectors": n_selectors(cfg),
                     "ours_times_s": times},
        )
        rows.append(row)
        if args.profile or row.passed is False:
            profiles[row.key] = profile_top(lambda c=cfg: resolve(c, fresh(uni)))
    return rows


# -- target 3: universe.csv reading ---------------------------------------------------------


def read_general(csv_path: Path, n_rows: int, log: Callable[[str], None]) -> dict[str, Any]:
    """pandas and pyarrow reading the same file (text cells, no checks), for context."""
    general: dict[str, Any] = {}
    for reader in ("pandas", "pyarrow"):  # general-purpose readers: text cells, no checks
        runs = [_common.run_read_child(reader, csv_path) for _ in range(3)]
        for r in runs:
            if r["rows"] != n_rows:
                raise AssertionError(f"{reader} read {r['rows']} rows, expected {n_rows}")
        general[reader] = {"runs": runs, "seconds": median([r["seconds"] for r in runs]),
                           "peak_rss_mib": max(r["peak_rss_mib"] for r in runs)}
        log(f"    {reader}: median {general[reader]['seconds']:.2f} s, peak RSS "
            f"{general[reader]['peak_rss_mib']:.0f} MiB")
    return general


def bench_read(args: argparse.Namespace, csv_path: Path, shuffled: Path, n_rows: int,
               enforce: bool, log: Callable[[str], None],
               profiles: dict[str, str]) -> list[Row]:
    run = _common.run_read_child
    bare_py = run("python")
    bare_np = run("numpy")
    log(f"[3] bare interpreter peak RSS {bare_py['peak_rss_mib']:.0f} MiB; "
        f"with `import numpy` {bare_np['peak_rss_mib']:.0f} MiB")
    ours_runs = [run("ours", csv_path) for _ in range(3)]
    for r in ours_runs:
        if r["rows"] != n_rows:
            raise AssertionError(f"ours read {r['rows']} rows, expected {n_rows}")
    ours_s = median([r["seconds"] for r in ours_runs])
    ours_rss = max(r["peak_rss_mib"] for r in ours_runs)
    each = ", ".join(f"{r['seconds']:.2f}" for r in ours_runs)
    log(f"    ours: {each} s (median {ours_s:.2f} s), peak RSS {ours_rss:.0f} MiB")
    log("    upstream parse_universe (one run)...")
    up = run("upstream", csv_path, timeout=1200)
    if up["rows"] != n_rows:
        raise AssertionError(f"upstream read {up['rows']} rows, expected {n_rows}")
    log(f"    upstream: {up['seconds']:.2f} s, peak RSS {up['peak_rss_mib']:.0f} MiB")
    up_text = run("upstream-text", csv_path, timeout=1200)
    log(f"    upstream, Path.resolve replaced by text normalization: {up_text['seconds']:.2f} s")
    general = read_general(csv_path, n_rows, log)
    shuf_runs = [run("ours", shuffled) for _ in range(2)]
    shuf_s = median([r["seconds"] for r in shuf_runs])
    shuf_rss = max(r["peak_rss_mib"] for r in shuf_runs)
    log(f"    ours on the row-shuffled copy: median {shuf_s:.2f} s, peak RSS {shuf_rss:.0f} MiB")

    size = count(n_rows)
    details = {"rows": n_rows, "csv_bytes": csv_path.stat().st_size, "ours_runs": ours_runs,
               "upstream_run": up, "bare_python": bare_py, "bare_numpy": bare_np,
               "shuffled_runs": shuf_runs}
    rows = [
        Row(key="read_universe_time", label=f"read universe.csv {size} rows (vs parse_universe)",
            ours=ours_s, baseline=up["seconds"], goal_kind="min_ratio", goal_value=20,
            enforce=enforce, details=details),
        Row(key="read_universe_text", label="  (context) vs upstream's loop without "
            "Path.resolve (text-only paths, as ours)", ours=ours_s,
            baseline=up_text["seconds"], details={"upstream_text_run": up_text}),
        Row(key="read_universe_vs_pandas", label="  (context) vs pandas.read_csv(dtype=str), "
            "no checks", ours=ours_s, baseline=general["pandas"]["seconds"],
            details=general["pandas"]),
        Row(key="read_universe_vs_pyarrow", label="  (context) vs pyarrow.csv.read_csv "
            "(string columns, threads), no checks", ours=ours_s,
            baseline=general["pyarrow"]["seconds"], details=general["pyarrow"]),
        Row(key="read_universe_rss", label=f"read universe.csv {size}: peak RSS",
            ours=ours_rss, baseline=up["peak_rss_mib"], unit="MiB", goal_kind="min_ratio",
            goal_value=3, enforce=enforce),
        Row(key="bare_numpy_rss", label="  (context) bare `import numpy` peak RSS",
            ours=bare_np["peak_rss_mib"], unit="MiB"),
        Row(key="read_universe_shuffled", label=f"read universe.csv {size}, shuffled rows",
            ours=shuf_s, details={"peak_rss_mib": shuf_rss}),
        Row(key="read_universe_shuffled_rss", label=f"read universe.csv {size}, shuffled: RSS",
            ours=shuf_rss, unit="MiB"),
    ]
    if args.profile or any(r.passed is False for r in rows[:2]):
        profiles["read_universe"] = profile_top(lambda: read_universe(csv_path))
    return rows


def bench_hash(uni: Universe, log: Callable[[str], None]) -> Row:
    times = []
    for _ in range(2):
        u = fresh(uni)
        dt, _h = timed(lambda u=u: u.hash)
        times.append(dt)
    t = median(times)
    log(f"[3] Universe.hash over {len(uni)} rows: {t:.3f} s")
    return Row(key="universe_hash", label=f"universe_hash ({count(len(uni))} rows)", ours=t,
               details={"times_s": times})


# -- main -----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = _common.standard_args(__doc__.split("\n\n")[0], seed=True, profile=True)
    ap.add_argument("--upstream-subset", type=int, default=60, metavar="N",
                    help="selectors per stage timed on the upstream resolver (default 60)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    enforce = not args.quick
    rng = np.random.default_rng(args.seed)
    log = _common.Clock()
    rows: list[Row] = []
    notes: list[str] = []
    profiles: dict[str, str] = {}
    with _common.workspace(args, "dvc_cuvis_bench_") as work:
        log(f"mode={'quick' if args.quick else 'full'} seed={args.seed} workdir={work}")
        rows += bench_resolve_50k(args, rng, enforce, log, notes, profiles)

        n_sources, frames = (500, 100) if args.quick else (10_000, 100)
        names = source_names(n_sources)
        csv_path = work / "universe.csv"
        shuffled = work / "universe_shuffled.csv"
        size = write_universe_csv(csv_path, names, frames)
        write_shuffled_copy(csv_path, shuffled, rng)
        n_rows = n_sources * frames
        log(f"wrote {csv_path.name}: {n_rows} rows, {size / 2**20:.1f} MiB (+ shuffled copy)")

        dt, uni = timed(read_universe, csv_path)
        log(f"read it in-process for target 2: {dt:.2f} s ({uni})")
        if uni.source_names != names or len(uni) != n_rows:
            raise AssertionError("universe read back does not match what was written")
        rows += bench_resolve_1m(args, uni, names, frames, rng, enforce, log, profiles)
        rows += bench_read(args, csv_path, shuffled, n_rows, enforce, log, profiles)
        rows.append(bench_hash(uni, log))
    print()
    return _common.finish(rows, args, total=log.elapsed, notes=notes, profiles=profiles,
                          quick_note="(--quick: sizes / ~20, targets not enforced)")


if __name__ == "__main__":
    sys.exit(main())
