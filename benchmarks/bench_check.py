"""Drift-check benchmarks for dvc_cuvis: ``dvc-cuvis check``, SplitDataModule and ``guard()``.

How to run (from the repository root)::

    .venv/bin/python -m benchmarks.bench_check                 # full run (~4 min, 2 cores)
    .venv/bin/python -m benchmarks.bench_check --quick         # CI smoke test (~20 s)
    .venv/bin/python -m benchmarks.bench_check --json out.json # also write the figures
    .venv/bin/python -m benchmarks.bench_check --strict        # exit 1 if any target fails

Options: ``--workdir DIR`` (generated data goes to a fresh temp dir inside DIR; removed at
the end unless ``--keep``), ``--seed N``, ``--profile`` (cProfile our in-process side of
every target even when it passes; a failing target is always profiled), ``--only TARGET``
(repeatable: ``check``, ``loader``, ``guard``, ``device``; e.g. ``--only guard`` runs target
3 alone, on the same materialized frames).

It is a report, not a test: the exit code is 0 unless the script crashes, or ``--strict``
is given and a target fails.  ``--quick`` shrinks every size and enforces no target
(results read ``n/a``); it only checks that everything runs and agrees.

Command-line measurements run the installed console scripts (``dvc-cuvis`` / ``dvc`` from
the virtual environment's ``bin``, put first on PATH) in fresh processes through
``bench_pipeline``'s fork/exec timer, so interpreter start-up and imports are included;
``DVC_NO_ANALYTICS=1`` is set for every child.

Targets (every baseline is measured in the same run):

1. ``dvc-cuvis check`` with nothing changed on a 100k-frame npz universe (1000 folders x
   100 tiny frames, written by ``bench_pipeline.make_frames``), in a temp git+DVC repo set
   up with ``dvc-cuvis init --format npz --root data/npz`` with every stage but enumerate
   and bake removed from dvc.yaml (materialize, check, ...) and one untimed ``dvc repro``
   (the enumerate stage fills the stat cache in .dvc/tmp).  One untimed check and one
   untimed ``dvc status`` follow (the first check caches the digests of universe.csv,
   splits.json and the metrics that dvc.lock records).  Then, interleaved, 3x each (median):
   ``dvc-cuvis check --params params.yaml`` (re-enumerates the data, checks content and
   dvc.lock staleness) <= 2 s, and <= 0.5x ``dvc status`` in the same repository (ratio =
   check / status, lower is better).  ``check --no-enumerate`` is reported too.  --quick:
   200 frames, one timed run each.
2. DataLoader throughput: ~400 frames of [64, 64, 61] float32 + masks, materialized with
   ``materialize()``; one pass over ``SplitDataModule(...).train_dataloader()``
   (batch_size=8, num_workers=0, shuffled; setup excluded) >= 1.0x a plain loop doing
   npz_multi's ``__getitem__`` work (``np.load`` + all 4 arrays) and ``np.stack`` into
   batches of 8 over the same frames in a shuffled order.  Ratio = baseline / ours;
   median of 3 interleaved passes after one warm-up pass each.  num_workers=2 is reported
   (info).  --quick: 32 frames, one round.
3. ``guard()`` on cuvis-ai-dataloader's ``MultiNpzDataModule`` over the same materialized
   set, warm stat cache: the guard's added time (median guarded ``setup("fit")`` minus
   median unguarded, fresh module instances each time, construction untimed, 9 interleaved
   after one warm-up each) is <= 1 % of one epoch's read of the same frames (every batch of
   the unguarded module's train and val loaders, num_workers=0, page cache warm) and
   <= 2x the floor of any per-file content check (one bare ``os.stat`` per frame, timed on
   caches as cold as the setups').  The guarded/unguarded setup ratio and the check's
   phases are logged (info); the full run repeats the rows on 10k tiny enumerated frames.
   A later setup reuses the last clean verdict: one ``lstat`` per content file, by name in
   its folder.  An interleaved A/B of the reused verdict alone against the floor is logged
   for both sizes.

4. (info, where an accelerator is present) cubes/s delivered onto it: the train stage
   through ``SplitDataModule`` (``pin_memory=True``, 2 persistent workers, non-blocking
   copies of cube/mask/class_mask) vs the plain loop with blocking ``.to(device)``, median of
   3 after a warm-up.  ``--device auto`` (default) measures on CUDA when torch sees it and
   says so when not; ``--device cpu`` runs the same code on the CPU (the CI smoke run does).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from benchmarks import _common
from benchmarks._common import Row, median, profile_top, rounds, timed, warm_median
from benchmarks.bench_pipeline import SlowdownRow, brief, child_env, count, make_frames, run_cmd
from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.check.drift import CHECKS, verify
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.materialize import ReaderParams
from dvc_cuvis.materialize import materialize_universe as materialize
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe_io import read_universe, write_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe

Log = Callable[[str], None]
BATCH = 8


@contextlib.contextmanager
def chdir(path: Path) -> Any:
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def load() -> str:
    """The 1/5/15-minute load averages (other processes skew every timing here)."""
    return "/".join(f"{x:.1f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs"


# -- target 1: dvc-cuvis check vs dvc status on a 100k-frame universe ----------------------


def keep_stages(dvc_yaml: Path, names: tuple[str, ...]) -> list[str]:
    """Remove every stage but ``names`` from dvc.yaml; returns the stages removed."""
    spec = yaml.safe_load(dvc_yaml.read_text(encoding="utf-8"))
    stages = spec["stages"]
    missing = [n for n in names if n not in stages]
    if missing:
        raise AssertionError(f"dvc-cuvis init wrote no {missing} stage(s)")
    dropped = [n for n in stages if n not in names]
    spec["stages"] = {n: stages[n] for n in names}
    dvc_yaml.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return dropped


def check_ok(r: dict, what: str) -> None:
    lines = r["stdout"].splitlines()
    if not lines or not lines[0].rstrip().endswith(": OK"):
        raise AssertionError(f"{what}: the check did not pass on unchanged data:\n"
                             f"{r['stdout']}\n{r['stderr']}")


def status_ok(r: dict) -> None:
    out = r["stdout"] + r["stderr"]
    if "up to date" not in out:
        raise AssertionError(f"`dvc status` reports changes on an unchanged repo:\n{out}")


def check_inprocess(repo: Path, argv: list[str]) -> float:
    """Wall time of ``dvc_cuvis.cli.main(argv)`` in this process (output swallowed)."""
    from dvc_cuvis.cli import main as cli_main

    with chdir(repo), contextlib.redirect_stdout(io.StringIO()):
        t = time.perf_counter()
        rc = cli_main(argv)
        dt = time.perf_counter() - t
    if rc != 0:
        raise AssertionError(f"in-process check {argv} exited {rc}")
    return dt


def check_phases(repo: Path) -> dict[str, float]:
    """The warm check in-process, phase by phase (no profiler), as ``cmd_check`` runs it:
    one StatCache for all phases (all hits), a fresh Universe object per phase."""
    from dvc_cuvis.digests.stat_cache import default_cache_path

    ph: dict[str, float] = {}
    with chdir(repo):
        ph["StatCache load"], cache = timed(StatCache, default_cache_path())
        opts = EnumerateOptions(format="npz", root=Path("data/npz"), out_dir=Path("."),
                                cache=cache, progress=False)
        ph["enumerate_universe (re-scan data/npz)"], (current, _) = timed(
            enumerate_universe, opts)
        ph["read_universe(universe.csv)"] = timed(read_universe, "universe.csv")[0]
        ph["load_splits(splits.json)"], cfg = timed(load_splits, "splits.json")

        def part(checks: tuple[str, ...], **kw: Any) -> float:
            uni = read_universe("universe.csv")
            uni.file_stamp = None  # no remembered verdict: time the checks themselves
            return timed(verify, cfg, uni, cache=cache, checks=checks, **kw)[0]

        sel = part(("selection",), lock=None)
        ph["selection (resolve)"] = sel
        ph["content (stat + cache lookups)"] = part(("selection", "content"), lock=None) - sel
        ph["constraints"] = part(("selection", "constraints"), lock=None) - sel
        ph["universe (hash + compare with the re-scan)"] = part(("universe",), lock=None,
                                                                current=current)
        ph["staleness (dvc.lock: dir md5 of data/npz + files)"] = part(
            ("staleness",), lock=Path("dvc.lock"))
    return ph


def profile_check(repo: Path, cli_seconds: float) -> str:
    from dvc_cuvis.cli import main as cli_main

    argv = ["check", "--params", "params.yaml"]
    wall = check_inprocess(repo, argv)  # modules already imported by check_phases
    rest = cli_seconds - wall
    head = (f"in-process main(['check', '--params', 'params.yaml']), no profiler: {wall:.2f} s "
            f"(one run); the CLI run took {cli_seconds:.2f} s (median), so interpreter start-up "
            + (f"+ imports ~{rest:.2f} s\n" if rest > 0 else
               "+ imports are lost in the run-to-run noise\n"))
    with chdir(repo), contextlib.redirect_stdout(io.StringIO()):
        prof = profile_top(lambda: cli_main(argv), limit=25)
    return head + prof


def setup_check_repo(args: argparse.Namespace, work: Path, env: dict[str, str],
                     log: Log) -> tuple[Path, int, dict, Path]:
    """A git + DVC repository of npz frames after one ``dvc repro`` of enumerate and bake:
    (repository, frames, the repro's run, the stat cache it left)."""
    sessions, frames = (8, 25) if args.quick else (1000, 100)
    repo = work / "check_repo"
    repo.mkdir()
    run_cmd(["git", "init", "-q"], repo, env)
    run_cmd(["dvc", "init", "-q"], repo, env)
    dt, n = timed(make_frames, repo / "data" / "npz", sessions, frames)
    log(f"[1] wrote {n} npz frames ({sessions} folders x {frames}) in {dt:.1f} s (setup)")
    run_cmd(["dvc-cuvis", "init", "--format", "npz", "--root", "data/npz"], repo, env)
    dropped = keep_stages(repo / "dvc.yaml", ("enumerate", "bake"))
    first = run_cmd(["dvc", "repro"], repo, env, timeout=1800)
    cache = repo / ".dvc" / "tmp" / "dvc-cuvis" / "stat-cache.bin"
    if not cache.is_file():
        raise AssertionError(f"dvc repro left no stat cache at {cache}")
    log(f"    kept stages enumerate, bake (removed {', '.join(dropped)}); first dvc repro "
        f"(untimed): {first['seconds']:.1f} s; stat cache {cache.stat().st_size / 2**20:.1f} MiB")

    return repo, n, first, cache


def warm_check_runs(repo: Path, env: dict[str, str], cache: Path, repeat: int,
                    log: Log) -> tuple[dict, list[dict], list[dict], list[dict], bool]:
    """The first check and status (untimed), then ``repeat`` interleaved rounds of check,
    dvc status and check --no-enumerate; whether a timed check rewrote the stat cache."""
    check_cmd = ["dvc-cuvis", "check", "--params", "params.yaml"]
    noenum_cmd = [*check_cmd, "--no-enumerate"]
    status_cmd = ["dvc", "status"]
    first_check = run_cmd(check_cmd, repo, env)
    check_ok(first_check, "first check")
    first_status = run_cmd(status_cmd, repo, env)
    status_ok(first_status)
    log(f"    first check after repro (untimed): {first_check['seconds']:.2f} s; first dvc "
        f"status: {first_status['seconds']:.2f} s")
    stamp = cache.stat().st_mtime_ns

    checks, statuses, noenums = [], [], []
    for _ in range(repeat):  # interleaved so drift hits all alike
        checks.append(run_cmd(check_cmd, repo, env))
        statuses.append(run_cmd(status_cmd, repo, env))
        noenums.append(run_cmd(noenum_cmd, repo, env))
    for r in checks:
        check_ok(r, "check")
    for r in noenums:
        check_ok(r, "check --no-enumerate")
    for r in statuses:
        status_ok(r)
    rewritten = cache.stat().st_mtime_ns != stamp
    return first_check, checks, statuses, noenums, rewritten


def profile_warm_check(repo: Path, ours: float, row_abs: Row, log: Log,
                       profiles: dict[str, str]) -> None:
    """The in-process phases and a cProfile of a warm check, for --profile or a failed row."""
    phases = check_phases(repo)
    lines = [f"{v:8.2f} s  {k}" for k, v in phases.items()]
    lines.append(f"{sum(phases.values()):8.2f} s  sum")
    row_abs.details["inprocess_phases_s"] = phases
    log("    warm check, in-process phases (no profiler):\n      " + "\n      ".join(lines))
    try:
        prof = profile_check(repo, ours)
    except Exception as exc:  # a profile is a diagnostic: never lose the report over it
        prof = f"in-process profile failed: {type(exc).__name__}: {exc}\n"
        log(f"    ! {prof.rstrip()}")
    profiles["check_warm"] = ("phases (wall, no profiler):\n" + "\n".join(lines) + "\n\n"
                              + prof)


def bench_check(args: argparse.Namespace, work: Path, env: dict[str, str], enforce: bool,
                log: Log, notes: list[str], profiles: dict[str, str]) -> list[Row]:
    """A warm ``dvc-cuvis check`` with nothing changed, against ``dvc status``."""
    repo, n, first, cache = setup_check_repo(args, work, env, log)
    first_check, checks, statuses, noenums, rewritten = warm_check_runs(
        repo, env, cache, 1 if args.quick else 3, log)
    if rewritten:
        notes.append("! a timed check rewrote the stat cache (it missed entries), so it was "
                     "not fully warm")
    ours = median([r["seconds"] for r in checks])
    status = median([r["seconds"] for r in statuses])
    noenum = median([r["seconds"] for r in noenums])

    def each(rs: list[dict]) -> str:
        return ", ".join(f"{r['seconds']:.2f}" for r in rs)

    log(f"    check: {each(checks)} s (median {ours:.2f}, peak RSS "
        f"{max(r['peak_rss_mib'] for r in checks):.0f} MiB); dvc status: {each(statuses)} s "
        f"(median {status:.2f}); check --no-enumerate: {each(noenums)} s (median "
        f"{noenum:.2f}); ratio check/status {ours / status:.2f}; stat cache "
        f"{'REWRITTEN' if rewritten else 'untouched'}; load average {load()}")
    report = checks[-1]["stdout"].rstrip().replace("\n", "\n      ")
    log(f"    check output:\n      {report}")
    notes.append("check / dvc status row: ratio = ours / baseline (lower is better), both in "
                 "the same repository, nothing changed.")

    size = count(n)
    row_abs = Row(key="check_warm", label=f"dvc-cuvis check, no change, {size} npz (warm)",
                  ours=ours, goal_kind="max_abs", goal_value=2.0, enforce=enforce,
                  details={"frames": n, "runs": [brief(r) for r in checks],
                           "cache_rewritten": rewritten})
    row_ratio = SlowdownRow(key="check_vs_status", label="  check vs dvc status (same repo)",
                            ours=ours, baseline=status, goal_kind="max_ratio", goal_value=0.5,
                            enforce=enforce,
                            details={"status_runs": [brief(r) for r in statuses]})
    rows: list[Row] = [
        row_abs, row_ratio,
        Row(key="check_no_enumerate", label="  check --no-enumerate", ours=noenum,
            details={"runs": [brief(r) for r in noenums]}),
        Row(key="check_first", label="  first check after dvc repro", ours=first_check["seconds"],
            details={"run": brief(first_check)}),
        Row(key="dvc_repro_first", label=f"  first dvc repro, {size} frames (setup)",
            ours=first["seconds"], details={"run": brief(first)}),
    ]
    if args.profile or row_abs.passed is False or row_ratio.passed is False:
        profile_warm_check(repo, ours, row_abs, log, profiles)
    return rows


# -- target 2: DataLoader throughput vs a plain np.load loop -------------------------------


def write_sources(root: Path, folders: int, per_folder: int, shape: tuple[int, int, int],
                  rng: np.random.Generator) -> int:
    """``folders x per_folder`` source frames (cube, wavelengths, class_mask, source)."""
    h, w, c = shape
    wl = np.linspace(450, 900, c).astype(np.int32)
    n = 0
    for f in range(folders):
        folder = root / f"session_{f:03d}"
        folder.mkdir(parents=True)
        for k in range(per_folder):
            cube = rng.random(shape, dtype=np.float32)
            cls = np.zeros((h, w), np.uint8)
            if (f + k) % 3 == 0:
                y, x = rng.integers(0, h // 2), rng.integers(0, w // 2)
                cls[y:y + h // 4, x:x + w // 4] = 1 + (f + k) % 3
            np.savez(folder / f"frame_{k:04d}.npz", cube=cube, wavelengths=wl, class_mask=cls,
                     source=np.array(f"recordings/session_{f:03d}.cu3s"))
            n += 1
    return n


def build_materialized(args: argparse.Namespace, work: Path, rng: np.random.Generator,
                       log: Log) -> Path:
    folders, per = (4, 8) if args.quick else (20, 20)
    base = work / "dm"
    t0 = time.perf_counter()
    n = write_sources(base / "src", folders, per, (64, 64, 61), rng)
    uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=base / "src", out_dir=base,
                                                 progress=False))
    write_universe(uni, base / "universe.csv")
    uni = read_universe(base / "universe.csv")
    (baked,) = bake(uni, BakeOptions())
    res = materialize(uni, baked.config, base / "mat", ReaderParams(), jobs=2)
    log(f"[2] {n} source frames [64, 64, 61] float32 + class_mask, materialized {res.written} "
        f"frames (mask, class_mask, cube, wavelengths) in {time.perf_counter() - t0:.1f} s "
        "(setup)")
    return base / "mat"


def upstream_item(path: str, index: int, frame_id: int) -> dict[str, Any]:
    """npz_multi's ``_MultiNpzDataset.__getitem__``, verbatim in substance."""
    with np.load(path) as z:
        cube = np.asarray(z["cube"], dtype=np.float32)
        wavelengths = np.asarray(z["wavelengths"]).ravel().astype(np.int32, copy=False)
        mask = (np.asarray(z["mask"], dtype=np.int32) if "mask" in z.files
                else np.zeros((cube.shape[0], cube.shape[1]), dtype=np.int32))
        class_mask = (np.asarray(z["class_mask"], dtype=np.uint8) if "class_mask" in z.files
                      else np.zeros((cube.shape[0], cube.shape[1]), dtype=np.uint8))
    return {"cube": cube, "mask": mask, "class_mask": class_mask, "wavelengths": wavelengths,
            "mesu_index": int(index), "frame_id": int(frame_id)}


def baseline_pass(paths: list[str], indices: list[int], rng: np.random.Generator,
                  checksum: bool = False) -> tuple[int, float]:
    """Shuffled order, batches of 8 stacked with np.stack: the work without a DataLoader."""
    order = rng.permutation(len(paths)).tolist()
    n, total = 0, 0.0
    for lo in range(0, len(order), BATCH):
        items = [upstream_item(paths[i], indices[i], i) for i in order[lo:lo + BATCH]]
        batch = {k: np.stack([it[k] for it in items]) for k in ("cube", "mask", "class_mask",
                                                               "wavelengths")}
        batch["mesu_index"] = np.array([it["mesu_index"] for it in items])
        batch["frame_id"] = np.array([it["frame_id"] for it in items])
        n += len(items)
        if checksum:
            total += float(batch["cube"].sum(dtype=np.float64)) + float(batch["mask"].sum())
    return n, total


def loader_pass(dm: Any, checksum: bool = False) -> tuple[int, float]:
    """One pass over ``dm.train_dataloader()`` (the loader is built inside the pass)."""
    n, total = 0, 0.0
    for batch in dm.train_dataloader():
        n += len(batch["frame_id"])
        if checksum:
            total += float(batch["cube"].double().sum()) + float(batch["mask"].sum())
    return n, total


def profile_loader(dm: Any, paths: list[str], indices: list[int],
                   rng: np.random.Generator) -> str:
    """cProfile of one DataLoader pass and one baseline pass, for --profile or a failed row."""
    return (
        "cProfile of one DataLoader pass (num_workers=0):\n"
        + profile_top(lambda: loader_pass(dm), limit=20)
        + "\ncProfile of one baseline pass:\n"
        + profile_top(lambda: baseline_pass(paths, indices, rng), limit=12))


def bench_loader(args: argparse.Namespace, mat: Path, work: Path, rng: np.random.Generator,
                 enforce: bool, log: Log, profiles: dict[str, str]) -> list[Row]:
    from dvc_cuvis.train.datamodule import SplitDataModule

    def module(workers: int) -> Any:
        dm = SplitDataModule(mat / "universe.csv", mat / "splits.json", batch_size=BATCH,
                             num_workers=workers, lock=None, stat_cache=work / "dm-cache.bin")
        dm.setup("fit")
        return dm

    dm = module(0)
    ds = dm.datasets["train"]
    paths, indices = ds.paths, ds.indices
    n = len(paths)
    mib = sum(os.path.getsize(p) for p in paths) / 2**20
    # warm-up passes (page cache, torch import, collate path) that also check agreement
    want = baseline_pass(paths, indices, rng, checksum=True)
    got = loader_pass(dm, checksum=True)
    if got[0] != n or want[0] != n or not np.isclose(got[1], want[1], rtol=1e-9):
        raise AssertionError(f"loader pass {got} and baseline pass {want} disagree ({n} frames)")
    import torch

    threads = torch.get_num_threads()

    def one_thread_pass() -> tuple[int, float]:
        torch.set_num_threads(1)
        try:
            return loader_pass(dm)
        finally:
            torch.set_num_threads(threads)

    one_thread_pass()  # warm-up
    repeat = 1 if args.quick else 3
    ours_t, base_t, t1_t = [], [], []
    for _ in range(repeat):  # interleaved
        base_t.append(timed(baseline_pass, paths, indices, rng)[0])
        ours_t.append(timed(loader_pass, dm)[0])
        t1_t.append(timed(one_thread_pass)[0])
    ours, base, ours_t1 = median(ours_t), median(base_t), median(t1_t)
    dm2 = module(2)
    loader_pass(dm2)  # warm-up
    w2 = rounds(loader_pass, 1 if args.quick else 3, dm2)
    ours2 = median(w2)
    log(f"    train stage: {n} frames, {mib:.0f} MiB on disk; baseline loop "
        + ", ".join(f"{t:.3f}" for t in base_t) + f" s (median {base:.3f}); DataLoader "
        + ", ".join(f"{t:.3f}" for t in ours_t) + f" s (median {ours:.3f}); ratio "
        f"{base / ours:.2f}x; with torch.set_num_threads(1) (default {threads}): "
        + ", ".join(f"{t:.3f}" for t in t1_t) + f" s (median {ours_t1:.3f}, "
        f"{base / ours_t1:.2f}x); num_workers=2: " + ", ".join(f"{t:.3f}" for t in w2)
        + f" s (median {ours2:.3f}, {base / ours2:.2f}x); load average {load()}")
    row = Row(key="loader_w0", label=f"train_dataloader pass, {n} frames, bs 8, workers 0",
              ours=ours, baseline=base, goal_kind="min_ratio", goal_value=1.0, enforce=enforce,
              details={"frames": n, "mib": mib, "ours_s": ours_t, "baseline_s": base_t})
    rows: list[Row] = [
        row,
        Row(key="loader_w0_rate", label="  workers 0: frames/s", ours=round(n / ours),
            unit="frames/s"),
        Row(key="loader_w0_1thread", label="  workers 0, torch.set_num_threads(1) (diagnostic)",
            ours=ours_t1, baseline=base, details={"ours_s": t1_t, "default_threads": threads}),
        Row(key="loader_w2", label="  train_dataloader pass, workers 2 (incl. worker start)",
            ours=ours2, baseline=base, details={"ours_s": w2}),
    ]
    if args.profile or row.passed is False:
        profiles[row.key] = profile_loader(dm, paths, indices, rng)
    return rows


# -- target 3: guard() overhead on MultiNpzDataModule.setup -------------------------------


def content_files(csv: Path) -> list[str]:
    """Absolute paths of the files universe.csv's md5 column covers (what the check stats)."""
    uni = read_universe(csv)
    col = "materialized_path" if uni.has_column("materialized_path") else "source"
    return sorted({str(csv.parent / uni.value(col, p)) for p in range(len(uni))})


def stat_floor(paths: list[str], repeat: int = 5) -> float:
    """Median time of one bare ``os.stat`` per file: the least any content check can cost.

    Each pass follows a ``gc.collect()``, like every timed ``setup()``: the collection walks
    the whole heap, so the stats run on caches as cold as the guard's own.
    """
    def one() -> float:
        gc.collect()
        t = time.perf_counter()
        for p in paths:
            os.stat(p)
        return time.perf_counter() - t
    return warm_median(one, repeat)


def guard_phases(csv: Path, cache_path: Path, repeat: int = 5) -> dict[str, float]:
    """Where the guard's time goes (median, no profiler, fresh objects built untimed).

    The first setup of a module has no verdict to reuse and runs every check; later
    setups on unchanged files reuse it (one stat per file).  A Universe object without
    its file stamp forces the full check, which is how its parts are timed here.
    """
    sp = csv.parent / "splits.json"
    cfg = load_splits(sp)

    def med(fn: Callable[[], float]) -> float:
        return median([fn() for _ in range(repeat)])

    def part(checks: tuple[str, ...], *, by_path: bool = False) -> float:
        def one() -> float:
            uni: Any = csv
            if not by_path:
                uni = read_universe(csv)
                uni.file_stamp = None  # unstamped: no remembered verdict applies
            cache = StatCache(cache_path)
            return timed(verify, cfg, uni, lock=None, cache=cache, checks=checks)[0]
        return med(one)

    ph: dict[str, float] = {}
    ph["StatCache load (guard() does it, before setup)"] = med(
        lambda: timed(StatCache, cache_path)[0])
    ph["first setup: read_universe(universe.csv)"] = med(lambda: timed(read_universe, csv)[0])
    sel = part(("selection",))
    ph["first setup: selection (resolve)"] = sel
    ph["first setup: content (stat + cache lookups)"] = part(("selection", "content")) - sel
    ph["first setup: constraints (group leakage)"] = part(("selection", "constraints")) - sel
    ph["first setup: universe (hash)"] = part(("universe",))
    ph["first setup: all checks, universe already read"] = part(tuple(CHECKS))
    ph["later setups: reused verdict (what guard runs)"] = part(tuple(CHECKS), by_path=True)
    ph["  floor: one bare os.stat per content file"] = stat_floor(content_files(csv), repeat)
    return ph


def reused_ab(csv: Path, cache_path: Path, repeat: int = 9) -> dict[str, float]:
    """The reused verdict as guard runs it, and the one-stat floor: interleaved, each after
    a ``gc.collect()``, medians."""
    cfg = load_splits(csv.parent / "splits.json")
    paths = content_files(csv)

    def reused() -> float:
        cache = StatCache(cache_path)
        gc.collect()
        t, report = timed(verify, cfg, csv, lock=None, cache=cache)
        if not report.reused_verdict:
            raise AssertionError("the warm guard found no verdict to reuse")
        return t

    def floor() -> float:
        gc.collect()
        t = time.perf_counter()
        for p in paths:
            os.stat(p)
        return time.perf_counter() - t

    runs: dict[str, Callable[[], float]] = {
        "reused verdict (what guard runs)": reused,
        "floor: one bare os.stat per content file": floor,
    }
    times: dict[str, list[float]] = {k: [] for k in runs}
    for fn in runs.values():
        fn()  # warm-up
    for i in range(repeat):
        for k in (list(runs) if i % 2 == 0 else list(runs)[::-1]):
            times[k].append(runs[k]())
    return {k: median(v) for k, v in times.items()}


def log_ab(csv: Path, cache_path: Path, log: Log, repeat: int = 9) -> None:
    ab = reused_ab(csv, cache_path, repeat)
    log("    reused verdict, interleaved A/B (each after gc.collect): "
        + "; ".join(f"{k} {v * 1e3:.2f} ms" for k, v in ab.items()) + f"; load {load()}")


def setup_ratio(csv: Path, cache_path: Path, repeat: int) -> tuple[list[float], list[float], int]:
    """Interleaved ``MultiNpzDataModule.setup('fit')`` timings: unguarded, guarded; misses."""
    from cuvis_ai_dataloader.data.datamodule_npz_multi import MultiNpzDataModule

    from dvc_cuvis.train.datamodule import guard

    sp = csv.parent / "splits.json"

    def build() -> Any:
        return MultiNpzDataModule(universe_csv=str(csv), splits=load_splits(sp),
                                  batch_size=BATCH)

    # upstream logs "split constraint ... unavailable" on every setup: keep the report clean
    logging.getLogger("cuvis_ai_core.data.selectors").setLevel(logging.ERROR)
    build().setup("fit")  # warm-up: first-call imports on both paths
    guard(build(), lock=None, cache=StatCache(cache_path)).setup("fit")
    plain_t: list[float] = []
    guard_t: list[float] = []
    fresh = 0
    for i in range(repeat):
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            if which == 0:
                dm = build()
                gc.collect()
                plain_t.append(timed(dm.setup, "fit")[0])
            else:
                dm = guard(build(), lock=None, cache=StatCache(cache_path))
                gc.collect()
                guard_t.append(timed(dm.setup, "fit")[0])
                if not dm.drift_report.ok:
                    raise AssertionError(dm.drift_report.render())
                fresh += not dm.drift_report.reused_verdict
            if dm.train_ds is None or len(dm.train_ds) == 0:
                raise AssertionError("setup('fit') built no train dataset")
    return plain_t, guard_t, fresh


def epoch_read_of(make: Callable[[], Any], repeat: int = 3) -> float:
    """One epoch's read of the frames ``setup('fit')`` serves (median, page cache warm).

    Every batch of the train and val loaders of the module ``make()`` builds
    (num_workers=0): the work the guard's added time is measured against.
    """

    def one() -> float:
        dm = make()
        dm.setup("fit")
        gc.collect()
        t = time.perf_counter()
        for loader in (dm.train_dataloader(), dm.val_dataloader()):
            for _ in loader:
                pass
        return time.perf_counter() - t

    return warm_median(one, repeat)


def epoch_read(csv: Path, repeat: int = 3) -> float:
    """One epoch's read through an unguarded ``MultiNpzDataModule`` over ``csv``."""
    from cuvis_ai_dataloader.data.datamodule_npz_multi import MultiNpzDataModule

    return epoch_read_of(lambda: MultiNpzDataModule(
        universe_csv=str(csv), splits=load_splits(csv.parent / "splits.json"),
        batch_size=BATCH), repeat)


def guard_goal_rows(key: str, label: str, added: float, epoch: float, floor: float,
                    enforce: bool) -> list[Row]:
    """The guard's goal: added time <= 1 % of an epoch's read, <= 2x the one-stat floor."""
    return [
        SlowdownRow(key=f"{key}_epoch", label=f"{label}: added time vs one epoch's read",
                    ours=added, baseline=epoch, goal_kind="max_ratio", goal_value=0.01,
                    enforce=enforce, details={"epoch_read_s": epoch}),
        SlowdownRow(key=f"{key}_floor", label=f"{label}: added time vs one os.stat per frame",
                    ours=added, baseline=floor, goal_kind="max_ratio", goal_value=2.0,
                    enforce=enforce, details={"floor_s": floor}),
    ]


def tiny_universe(work: Path, folders: int, per: int) -> Path:
    """``folders x per`` tiny npz frames, enumerated (md5) and baked: a larger guard case."""
    base = work / f"guard_{folders * per}"
    make_frames(base / "npz", folders, per)
    uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=base / "npz", out_dir=base,
                                                 progress=False))
    write_universe(uni, base / "universe.csv")
    (baked,) = bake(read_universe(base / "universe.csv"), BakeOptions())
    (base / "splits.json").write_text(baked.config.model_dump_json(indent=2) + "\n")
    return base / "universe.csv"


def profile_guard(mat: Path, csv: Path, cache_path: Path, lines: list[str]) -> str:
    """The phases and a cProfile of the guard's check on a later setup, for --profile."""
    cache = StatCache(cache_path)
    cfg = load_splits(mat / "splits.json")
    return (
        "phases (wall, no profiler):\n" + "\n".join(lines)
        + "\n\ncProfile of the guard's check on a later setup (verify(dm.splits, "
        "universe.csv, lock=None, cache=<warm>), the verdict reused):\n"
        + profile_top(lambda: verify(cfg, csv, lock=None, cache=cache), limit=25))


def guard_10k_rows(work: Path, enforce: bool, log: Log) -> list[Row]:
    """The guard on 10k tiny frames (full runs only): where per-file costs dominate."""
    t0 = time.perf_counter()
    big = tiny_universe(work, 100, 100)
    big_cache = work / "guard-big-cache.bin"
    verify(load_splits(big.parent / "splits.json"), big, lock=None,
           cache=StatCache(big_cache))
    setup_s = time.perf_counter() - t0
    p_t, g_t, big_fresh = setup_ratio(big, big_cache, 9)
    p, g = median(p_t), median(g_t)
    big_floor = stat_floor(content_files(big))
    big_epoch = epoch_read(big)
    log_ab(big, big_cache, log)
    log(f"    10k tiny frames (setup {setup_s:.1f} s): unguarded "
        + ", ".join(f"{t * 1e3:.0f}" for t in p_t) + f" ms (median {p * 1e3:.0f}); guarded "
        + ", ".join(f"{t * 1e3:.0f}" for t in g_t) + f" ms (median {g * 1e3:.0f}); ratio "
        f"{g / p:.3f}; floor {big_floor * 1e3:.1f} ms = {big_floor / p:.1%} of setup; "
        f"fresh verdicts {big_fresh}")
    return [
        *guard_goal_rows("guard_10k", "guard(), 10k tiny frames", g - p, big_epoch,
                         big_floor, enforce),
        SlowdownRow(key="guard_setup_10k", label="  guard(): setup('fit'), 10k tiny frames",
                    ours=g, baseline=p, details={"guarded_s": g_t, "unguarded_s": p_t}),
    ]


def bench_guard(args: argparse.Namespace, mat: Path, work: Path, enforce: bool, log: Log,
                notes: list[str], profiles: dict[str, str]) -> list[Row]:
    csv = mat / "universe.csv"
    cache_path = work / "guard-cache.bin"
    warm = verify(load_splits(mat / "splits.json"), csv, lock=None, cache=StatCache(cache_path))
    if not warm.ok or not cache_path.is_file():
        raise AssertionError(f"warming the guard's stat cache failed:\n{warm.render()}")
    repeat = 2 if args.quick else 9
    plain_t, guard_t, fresh = setup_ratio(csv, cache_path, repeat)
    plain, guarded_s = median(plain_t), median(guard_t)
    if fresh:
        notes.append(f"! {fresh} guarded setup(s) found no reusable verdict")
    phases = guard_phases(csv, cache_path, 2 if args.quick else 5)
    floor = phases["  floor: one bare os.stat per content file"]
    n = len(read_universe(csv))
    log(f"[3] MultiNpzDataModule.setup('fit'), {n} frames: unguarded "
        + ", ".join(f"{t * 1e3:.1f}" for t in plain_t) + f" ms (median {plain * 1e3:.1f}); "
        "guarded " + ", ".join(f"{t * 1e3:.1f}" for t in guard_t)
        + f" ms (median {guarded_s * 1e3:.1f}); ratio {guarded_s / plain:.3f}; floor (one "
        f"os.stat per frame) {floor * 1e3:.2f} ms = {floor / plain:.1%} of setup; load "
        f"average {load()}")
    lines = [f"{v * 1e3:8.2f} ms  {k}" for k, v in phases.items()]
    log("    the guard's check, phase by phase (fresh objects, no profiler):\n      "
        + "\n      ".join(lines))
    log_ab(csv, cache_path, log, 2 if args.quick else 9)
    notes.append("guard rows: the guard's added time = median guarded minus median unguarded "
                 "setup('fit'); against one epoch's read of the same frames (train + val "
                 "loaders, goal <= 1 %) and against one bare os.stat per content file (the "
                 "least a per-file content check can cost, goal <= 2x). Later setups on "
                 "unchanged files reuse the last clean verdict (one os.stat per content file); "
                 "the guarded/unguarded setup ratio is information.")
    epoch = epoch_read(csv)
    log(f"    one epoch's read of the same frames (train + val loaders): {epoch * 1e3:.0f} ms")
    row = SlowdownRow(key="guard_setup", label=f"guard(): MultiNpzDataModule.setup('fit'), {n}",
                      ours=guarded_s, baseline=plain,
                      details={"guarded_s": guard_t, "unguarded_s": plain_t,
                               "fresh_verdicts": fresh, "phases_s": phases})
    rows: list[Row] = [
        *guard_goal_rows("guard", f"guard(), {n} frames", guarded_s - plain, epoch, floor,
                         enforce),
        row,
        Row(key="guard_cost", label="  guard's added time (median difference)",
            ours=guarded_s - plain),
    ]
    if not args.quick:
        rows += guard_10k_rows(work, enforce, log)
    if args.profile or row.passed is False:
        profiles[row.key] = profile_guard(mat, csv, cache_path, lines)
    return rows


def pick_device(choice: str) -> str | None:
    """``auto``: cuda when torch sees one, else None (not measured); or the named device."""
    import torch

    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else None
    return choice


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def device_loader_pass(dm: Any, device: str) -> tuple[int, float]:
    """One pass of ``train_dataloader()`` with every tensor copied onto ``device``
    (``non_blocking``: from pinned memory the copy overlaps the next batch's loading)."""
    n, total = 0, 0.0
    for batch in dm.train_dataloader():
        on = {k: batch[k].to(device, non_blocking=True) for k in ("cube", "mask", "class_mask")}
        n += len(batch["frame_id"])
        total += float(on["cube"][:, 0, 0, 0].double().sum())  # touches every batch once
    _sync(device)
    return n, total


def device_baseline_pass(paths: list[str], indices: list[int], rng: np.random.Generator,
                         device: str) -> tuple[int, float]:
    """The plain loop (np.load + np.stack per batch of 8), then blocking ``.to(device)``."""
    import torch

    order = rng.permutation(len(paths)).tolist()
    n, total = 0, 0.0
    for lo in range(0, len(order), BATCH):
        items = [upstream_item(paths[i], indices[i], i) for i in order[lo:lo + BATCH]]
        on = {k: torch.from_numpy(np.stack([it[k] for it in items])).to(device)
              for k in ("cube", "mask", "class_mask")}
        n += len(items)
        total += float(on["cube"][:, 0, 0, 0].double().sum())
    _sync(device)
    return n, total


def bench_device(args: argparse.Namespace, mat: Path, work: Path, rng: np.random.Generator,
                 log: Log, notes: list[str]) -> list[Row]:
    """Cubes/s delivered onto an accelerator: SplitDataModule (pin_memory, 2 workers,
    non-blocking copies) vs the plain loop with blocking copies (info rows; the issue asks to
    measure and record it where a GPU is lent).  ``--device cpu`` runs the same code on the
    CPU (pin_memory off) so the path is exercised where no GPU is."""
    from dvc_cuvis.train.datamodule import SplitDataModule

    device = pick_device(args.device)
    if device is None:
        notes.append("GPU delivery measurement (pin_memory, non-blocking host-to-device copies) "
                     "was not run: no accelerator is available here (--device cuda forces it).")
        return []
    import torch

    pin = device.startswith("cuda")
    dm = SplitDataModule(mat / "universe.csv", mat / "splits.json", batch_size=BATCH,
                         num_workers=2, pin_memory=pin, persistent_workers=True, lock=None,
                         stat_cache=work / "dm-cache.bin")
    dm.setup("fit")
    ds = dm.datasets["train"]
    paths, indices = ds.paths, ds.indices
    n = len(paths)
    device_loader_pass(dm, device)  # warm-up: workers, CUDA context, pinned pool
    device_baseline_pass(paths, indices, rng, device)
    repeat = 1 if args.quick else 3
    ours_t, base_t = [], []
    for _ in range(repeat):
        ours_t.append(timed(device_loader_pass, dm, device)[0])
        base_t.append(timed(device_baseline_pass, paths, indices, rng, device)[0])
    ours, base = median(ours_t), median(base_t)
    name = torch.cuda.get_device_name(0) if pin else device
    log(f"[4] delivery onto {name}: {n} frames; DataLoader (pin_memory={pin}, 2 workers, "
        "non_blocking) " + ", ".join(f"{t:.3f}" for t in ours_t) + f" s (median {ours:.3f}, "
        f"{n / ours:.0f} cubes/s); plain loop + blocking .to() "
        + ", ".join(f"{t:.3f}" for t in base_t) + f" s (median {base:.3f}, {n / base:.0f} "
        "cubes/s)")
    return [
        Row(key="device_delivery", label=f"train frames onto {device}, pin_memory={pin}, w2",
            ours=ours, baseline=base, details={"device": name, "frames": n, "ours_s": ours_t,
                                               "baseline_s": base_t}),
        Row(key="device_rate", label="  cubes/s delivered (ours)", ours=round(n / ours),
            unit="cubes/s"),
        Row(key="device_rate_baseline", label="  cubes/s delivered (plain loop)",
            ours=round(n / base), unit="cubes/s"),
    ]


# -- main -----------------------------------------------------------------------------------


TARGETS = ("check", "loader", "guard", "device")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = _common.standard_args((__doc__ or "").split("\n\n")[0], seed=True, profile=True)
    ap.add_argument("--device", default="auto",
                    help="where to measure delivery: auto (cuda if present, else skipped), "
                         "cuda, cuda:N or cpu (exercises the same code without a GPU)")
    ap.add_argument("--only", action="append", choices=TARGETS, metavar="TARGET",
                    help=f"run only this target (repeatable; one of {', '.join(TARGETS)})")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    enforce = not args.quick
    rng = np.random.default_rng(args.seed)
    env = child_env()
    log = _common.Clock()
    rows: list[Row] = []
    notes: list[str] = []
    profiles: dict[str, str] = {}
    with _common.workspace(args, "dvc_cuvis_bench_check_", log) as work:
        commit = _common.environment()["git_commit"]
        log(f"mode={'quick' if args.quick else 'full'} seed={args.seed} workdir={work} "
            f"commit={(commit or '?')[:12]} load average {load()}")
        only = set(args.only or TARGETS)
        if "check" in only:
            rows += bench_check(args, work, env, enforce, log, notes, profiles)
        mat = build_materialized(args, work, rng, log) if only - {"check"} else work
        if "loader" in only:
            rows += bench_loader(args, mat, work, rng, enforce, log, profiles)
        if "guard" in only:
            rows += bench_guard(args, mat, work, enforce, log, notes, profiles)
        if "device" in only:
            rows += bench_device(args, mat, work, rng, log, notes)
    print()
    return _common.finish(
        rows, args, total=log.elapsed, notes=notes, profiles=profiles,
        quick_note="(--quick: 200 frames for check, 32 frames for the loader; targets not "
                   "enforced)")


if __name__ == "__main__":
    sys.exit(main())
