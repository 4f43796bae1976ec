"""Pipeline benchmarks for dvc_cuvis: enumerate, bake and a no-op ``dvc repro``, end to end.

How to run (from the repository root)::

    .venv/bin/python -m benchmarks.bench_pipeline                 # full run (~2.5 min, 2 cores)
    .venv/bin/python -m benchmarks.bench_pipeline --quick         # CI smoke test (~20 s)
    .venv/bin/python -m benchmarks.bench_pipeline --json out.json # also write the figures
    .venv/bin/python -m benchmarks.bench_pipeline --strict        # exit 1 if any target fails

Options: ``--workdir DIR`` (generated data goes to a fresh temp dir inside DIR; removed at
the end unless ``--keep``), ``--seed N``, ``--profile`` (cProfile our in-process side of
every target even when it passes; a failing target is always profiled).

It is a report, not a test: the exit code is 0 unless the script crashes, or ``--strict``
is given and a target fails.  ``--quick`` shrinks every size and enforces no target
(results read ``n/a``); it only checks that everything runs and agrees.

Every command-line measurement runs the installed console script (``dvc-cuvis`` / ``dvc``
from the virtual environment's ``bin``, put first on PATH) in a fresh process, so
interpreter start-up and imports are included.  A tiny launcher forks and execs it and
reads its wall time and peak RSS (``wait4``), as ``_common.run_read_child`` explains.
``DVC_NO_ANALYTICS=1`` is set for every child so DVC's analytics daemon adds no noise.

Targets:

1. Enumerate 100k ``.npz`` frames (1000 session folders x 100 frames of a few bytes each;
   ~20% carry a ``class_mask`` id 1-3) with ``dvc-cuvis enumerate --format npz``: with a
   warm stat cache (same cache file, nothing changed) <= 5 s.  The cold run (no cache file:
   every frame opened and md5-hashed) and files/s are reported too.  The frames were just
   written, so "cold" means a cold *stat cache*, not a cold OS page cache.  --quick: 5k.
2. Bake 1M samples (10k sources x 100 frames, ``category_ids`` on ~20% of rows): in-process
   ``bake(uni, BakeOptions())`` + ``dumps_splits`` <= 5 s (universe already read).  Also
   reported: the whole ``dvc-cuvis bake`` command (reads the CSV, writes splits.json and
   metrics) and the ``random`` / ``stratified`` strategies, in-process and as commands.
   The command's splits.json must equal the in-process text byte for byte.  --quick: 50k.
3. Second ``dvc repro`` (nothing changed) of the ``dvc-cuvis init`` pipeline on the example
   dataset (``examples/generate.py``, 12 sessions x 6 frames, npz root) within 2x of DVC's
   own no-op overhead.  Baseline, measured in the same run: a second git+DVC repository
   with the same data folder and a pipeline of the same shape (stage 1: a directory dep, a
   params section, a ``cp`` command writing one ``cache: false`` out and one ``cache: false``
   metric; stage 2 depending on stage 1's out, likewise).  Both repro'd once untimed, then
   ``dvc repro`` timed 3x, interleaved (median; also in --quick).  This row's ratio is
   ours / baseline (lower is better), unlike the other rows.  DVC start-up dominates both;
   that is the point.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import _common
from benchmarks._common import REPO, Row, median, profile_top, timed
from dvc_cuvis._io import atomic_write_text
from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.model.splits import dumps_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import format_universe, read_universe, write_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe, list_files, scan
from dvc_cuvis.sources import universe_metrics as enum_metrics

Log = Callable[[str], None]


def count(n: int) -> str:
    """100000 -> '100k', 1000000 -> '1M'."""
    if n >= 1_000_000:
        return f"{n / 1e6:g}M"
    return f"{n / 1e3:g}k" if n >= 1000 else str(n)


@dataclass
class SlowdownRow(Row):
    """A row whose ratio is ours / baseline and whose goal is an upper bound on it."""

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.ours is None or not self.baseline:
            return None
        return self.ours / self.baseline

    @property
    def goal(self) -> str:
        return f"<={self.goal_value:g}x" if self.goal_value is not None else "info"

    @property
    def passed(self) -> bool | None:
        if not self.enforce or self.goal_value is None:
            return None
        r = self.ratio
        return r is not None and r <= self.goal_value


# -- child processes: wall time and peak RSS of a console script ---------------------------


# Forks and execs the measured command, then reports its wall time and rusage (``wait4``)
# to the file named in argv[1].  ru_maxrss of the child starts from this tiny interpreter's
# RSS, never from ours (see _common._LAUNCHER).
_TIMER = (
    "import json, os, sys, time\n"
    "t = time.perf_counter()\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    try:\n"
    "        os.execvp(sys.argv[2], sys.argv[2:])\n"
    "    finally:\n"
    "        os._exit(127)\n"
    "_, status, ru = os.wait4(pid, 0)\n"
    "dt = time.perf_counter() - t\n"
    "with open(sys.argv[1], 'w') as fh:\n"
    "    json.dump({'seconds': dt, 'maxrss_kib': ru.ru_maxrss, 'user': ru.ru_utime,\n"
    "               'sys': ru.ru_stime}, fh)\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def child_env() -> dict[str, str]:
    """Our environment with the venv's bin first on PATH and DVC analytics off."""
    venv_bin = REPO / ".venv" / "bin"
    if not venv_bin.is_dir():
        venv_bin = Path(sys.executable).parent
    env = dict(os.environ)
    env["PATH"] = f"{venv_bin}{os.pathsep}{env.get('PATH', '')}"
    env["DVC_NO_ANALYTICS"] = "1"
    env.pop("DVC_CUVIS_DEBUG", None)
    for tool in ("dvc", "dvc-cuvis", "git"):
        if shutil.which(tool, path=env["PATH"]) is None:
            raise SystemExit(f"bench_pipeline: {tool!r} not found on PATH ({venv_bin} first)")
    return env


def run_cmd(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> dict:
    """Run ``cmd`` in a fresh process; wall seconds, peak RSS (MiB), cpu and its output."""
    fd, report = tempfile.mkstemp(prefix="bench_timer_", suffix=".json")
    os.close(fd)
    try:
        proc = subprocess.run(
            [sys.executable, "-S", "-c", _TIMER, report, *cmd],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}) in {cwd}:\n"
                               f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        data = json.loads(Path(report).read_text())
    finally:
        os.unlink(report)
    return {
        "seconds": data["seconds"],
        "peak_rss_mib": data["maxrss_kib"] / 1024,
        "cpu_s": data["user"] + data["sys"],
        "stdout": proc.stdout,
        "stderr": proc.stderr,
    }


def brief(r: dict) -> dict:
    """A child result without its output (for the JSON details)."""
    return {k: v for k, v in r.items() if k not in ("stdout", "stderr")}


# -- target 1: enumerate 100k npz frames --------------------------------------------------


def _npz_bytes(session: str, s: int, cat: int) -> bytes:
    """One tiny frame: cube [2,2,2] f32, wavelengths [2] i32, class_mask [2,2] u8, source."""
    cube = (np.arange(8, dtype=np.float32).reshape(2, 2, 2) + s % 97) / 128
    mask = np.zeros((2, 2), np.uint8)
    if cat:
        mask[cat % 2, cat // 2 % 2] = cat
    buf = io.BytesIO()
    np.savez(buf, cube=cube, wavelengths=np.array([450, 900], np.int32), class_mask=mask,
             source=np.array(f"recordings/{session}.cu3s"))
    return buf.getvalue()


def frame_category(s: int, k: int) -> int:
    """Deterministic ~20% anomalous frames with category 1-3 (0 = normal)."""
    v = (s * 31 + k * 17) % 15
    return v + 1 if v < 3 else 0


def _write_sessions(job: tuple[str, int, int, int]) -> int:
    """Worker: write sessions ``lo..hi-1`` (``frames`` each) under ``root``."""
    root, lo, hi, frames = job
    n = 0
    for s in range(lo, hi):
        session = f"session_{s:04d}"
        folder = os.path.join(root, session)
        os.mkdir(folder)
        templates = [_npz_bytes(session, s, c) for c in range(4)]
        for k in range(frames):
            with open(os.path.join(folder, f"frame_{k:04d}.npz"), "wb") as fh:
                fh.write(templates[frame_category(s, k)])
            n += 1
    return n


def make_frames(root: Path, sessions: int, frames: int) -> int:
    """Write ``sessions x frames`` npz frames with a few processes (setup, untimed)."""
    root.mkdir(parents=True)
    procs = min(8, (os.cpu_count() or 2) + 1)
    parts = procs * 4
    jobs = [(str(root), i * sessions // parts, (i + 1) * sessions // parts, frames)
            for i in range(parts)]
    with ProcessPoolExecutor(procs) as pool:
        return sum(pool.map(_write_sessions, jobs))


def enumerate_phases(root: Path, out: Path, cache_path: Path) -> dict[str, float]:
    """Warm in-process enumerate, phase by phase (no profiler), as the CLI runs it."""
    ph: dict[str, float] = {}
    t = time.perf_counter()
    cache = StatCache(cache_path)
    ph["load stat cache"] = time.perf_counter() - t
    opts = EnumerateOptions(format="npz", root=root, out_dir=out.parent, cache=cache)
    t = time.perf_counter()
    files = list_files(root, "**/*.npz")
    ph["list_files (glob + sort), run separately"] = time.perf_counter() - t
    t = time.perf_counter()
    result = scan(opts)
    ph["scan_npz (list_files + stat + cache lookups), jobs=4"] = time.perf_counter() - t
    t = time.perf_counter()
    scan(EnumerateOptions(format="npz", root=root, out_dir=out.parent, jobs=1,
                          cache=StatCache(cache_path)))
    ph["scan_npz with jobs=1 (+ its cache load), run separately"] = time.perf_counter() - t
    t = time.perf_counter()
    uni = Universe.from_records(result.records, path=out)
    ph["Universe.from_records"] = time.perf_counter() - t
    t = time.perf_counter()
    cache.save()
    enum_metrics(uni, "npz", result.categories)
    ph["universe_metrics (hash, fingerprint, counts)"] = time.perf_counter() - t
    t = time.perf_counter()
    text = format_universe(uni)
    ph["format_universe"] = time.perf_counter() - t
    t = time.perf_counter()
    atomic_write_text(out, text)
    ph["write universe.csv"] = time.perf_counter() - t
    if cache.misses or len(files) != len(uni):
        raise AssertionError(f"in-process warm enumerate: {cache.misses} cache misses, "
                             f"{len(files)} files vs {len(uni)} rows")
    return ph


def profile_enumerate(root: Path, base: Path, cache: Path, cold_csv: bytes, warm: float,
                      row: Row, log: Log) -> str:
    """The in-process phases and a cProfile of a warm enumerate (jobs=1), for --profile or a
    failed row; the in-process output must equal the command's."""
    prof_out = base / "U_inprocess.csv"
    phases = enumerate_phases(root.absolute(), prof_out, cache.absolute())
    if prof_out.read_bytes() != cold_csv:
        raise AssertionError("in-process enumerate wrote a different universe.csv")
    total = sum(v for k, v in phases.items() if "run separately" not in k)
    lines = [f"{v:8.2f} s  {k}" for k, v in phases.items()]
    lines.append(f"{total:8.2f} s  in-process total (list_files counted once)")
    lines.append(f"{warm - total:8.2f} s  rest of the CLI run: interpreter start-up, "
                 "imports, argument parsing")
    row.details["inprocess_phases_s"] = phases
    log("    warm enumerate, in-process phases (no profiler):\n      "
        + "\n      ".join(lines))

    def warm_inprocess() -> None:
        c = StatCache(cache.absolute())
        opts = EnumerateOptions(format="npz", root=root.absolute(), out_dir=base.absolute(),
                                cache=c, jobs=1)
        uni, _info = enumerate_universe(opts)
        atomic_write_text(prof_out, format_universe(uni))

    return (
        "phases (wall, no profiler):\n" + "\n".join(lines) + "\n\n"
        "cProfile of the warm in-process enumerate with jobs=1: cProfile only sees the "
        "main thread, and with\nthe default jobs=4 the per-file work runs in pool threads "
        "(the main thread shows only submit/lock waits).\n"
        + profile_top(warm_inprocess, limit=20))


def bench_enumerate(args: argparse.Namespace, work: Path, env: dict[str, str], enforce: bool,
                    log: Log, notes: list[str], profiles: dict[str, str]) -> list[Row]:
    sessions, frames = (50, 100) if args.quick else (1000, 100)
    base = work / "enum"
    root = base / "npz"
    dt, n = timed(make_frames, root, sessions, frames)
    log(f"[1] wrote {n} npz frames ({sessions} sessions x {frames}) in {dt:.1f} s (setup)")
    cache = base / "stat-cache.bin"
    cmd = ["dvc-cuvis", "enumerate", "--format", "npz", "--root", "npz", "--out", "U.csv",
           "--stat-cache", cache.name, "--no-progress"]

    cold = run_cmd(cmd, base, env)
    cold_csv = (base / "U.csv").read_bytes()
    rows_out = cold_csv.count(b"\n") - 1
    if rows_out != n:
        raise AssertionError(f"cold enumerate wrote {rows_out} rows, expected {n}")
    log(f"    cold (no stat cache): {cold['seconds']:.2f} s, {n / cold['seconds']:.0f} files/s, "
        f"peak RSS {cold['peak_rss_mib']:.0f} MiB, cache file "
        f"{cache.stat().st_size / 2**20:.1f} MiB")
    stamp = cache.stat().st_mtime_ns
    warm_runs = []
    for _ in range(1 if args.quick else 2):
        r = run_cmd(cmd, base, env)
        if (base / "U.csv").read_bytes() != cold_csv:
            raise AssertionError("warm enumerate wrote a different universe.csv than cold")
        warm_runs.append(r)
    warm = median([r["seconds"] for r in warm_runs])
    each = ", ".join(f"{r['seconds']:.2f}" for r in warm_runs)
    log(f"    warm (same cache): {each} s (median {warm:.2f} s), {n / warm:.0f} files/s, "
        f"peak RSS {max(r['peak_rss_mib'] for r in warm_runs):.0f} MiB")
    serial = run_cmd([*cmd, "--jobs", "1"], base, env)
    if (base / "U.csv").read_bytes() != cold_csv:
        raise AssertionError("warm enumerate --jobs 1 wrote a different universe.csv")
    log(f"    warm, --jobs 1 (one hashing thread): {serial['seconds']:.2f} s, "
        f"{n / serial['seconds']:.0f} files/s")
    rewritten = cache.stat().st_mtime_ns != stamp
    if rewritten:
        notes.append("! a warm enumerate rewrote the stat cache: it missed entries, so it "
                     "was not fully warm")
    log(f"    stat cache file after the warm runs: "
        f"{'REWRITTEN (misses)' if rewritten else 'untouched (all hits)'}")

    size = count(n)
    rows = [
        Row(key="enumerate_cold", label=f"enumerate {size} npz, cold stat cache (CLI)",
            ours=cold["seconds"], details={"files": n, "run": brief(cold)}),
        Row(key="enumerate_cold_rate", label="  cold: files/s", ours=round(n / cold["seconds"]),
            unit="files/s"),
        Row(key="enumerate_warm", label=f"enumerate {size} npz, warm stat cache (CLI)",
            ours=warm, goal_kind="max_abs", goal_value=5.0, enforce=enforce,
            details={"files": n, "runs": [brief(r) for r in warm_runs],
                     "cache_rewritten": rewritten}),
        Row(key="enumerate_warm_rate", label="  warm: files/s", ours=round(n / warm),
            unit="files/s"),
        Row(key="enumerate_warm_jobs1", label=f"  enumerate {size}, warm, --jobs 1 (CLI)",
            ours=serial["seconds"], details={"run": brief(serial)}),
    ]
    if args.profile or rows[2].passed is False:
        profiles["enumerate_warm"] = profile_enumerate(root, base, cache, cold_csv, warm,
                                                       rows[2], log)
    return rows


# -- target 2: bake 1M samples -------------------------------------------------------------


def bake_universe(n_sources: int, frames: int, rng: np.random.Generator) -> Universe:
    """``n_sources x frames`` rows; ~20% of rows carry one category id 1-3."""
    names = [f"recordings/day_{s // 50:03d}/session_{s:05d}.cu3s" for s in range(n_sources)]
    n = n_sources * frames
    cats = np.full(n, b"", dtype="S1")
    anomalous = rng.random(n) < 0.2
    cats[anomalous] = np.array([b"1", b"2", b"3"])[rng.integers(0, 3, int(anomalous.sum()))]
    codes = np.repeat(np.arange(n_sources, dtype=np.int32), frames)
    indices = np.tile(np.arange(frames, dtype=np.int64), n_sources)
    return Universe(names, codes, indices, {"category_ids": cats})


def fresh(uni: Universe) -> Universe:
    """A new Universe object over the same arrays (cold per-object caches: hash, offsets)."""
    cols = {c: uni.raw_column(c) for c in uni.columns[2:]}
    return Universe(uni.source_names, uni.codes, uni.indices,
                    {k: v for k, v in cols.items() if v is not None}, path=uni.path)


def bake_inprocess(uni: Universe, strategy: str) -> tuple[float, float, str, dict]:
    """(bake seconds, dumps seconds, splits.json text, metrics) on a fresh Universe object."""
    u = fresh(uni)
    dt_bake, baked = timed(bake, u, BakeOptions(strategy=strategy))
    (result,) = baked
    dt_dump, text = timed(dumps_splits, result.config)
    return dt_bake, dt_dump, text, result.metrics


def bake_cli_row(strategy: str, base: Path, csv_path: Path, env: dict[str, str], repeats: int,
                 text: str, counts: dict[str, int], size: str, log: Log) -> Row:
    """The whole ``dvc-cuvis bake`` in a fresh process; its output must equal the in-process
    text and metrics."""
    # the whole command in a fresh process: read csv, bake, write splits + metrics
    cmd = ["dvc-cuvis", "bake", "--universe", csv_path.name, "--out", "S.json",
           "--metrics", "M.json"]
    if strategy != "hash":
        cmd += ["--strategy", strategy]
    cli_runs = [run_cmd(cmd, base, env) for _ in range(repeats)]
    if (base / "S.json").read_text(encoding="utf-8") != text:
        raise AssertionError(f"{strategy}: the command's splits.json differs from the "
                             "in-process dumps_splits text")
    cli_counts = {s: json.loads((base / "M.json").read_text())["stages"][s]["samples"]
                  for s in ("train", "val", "test")}
    if cli_counts != counts:
        raise AssertionError(f"{strategy}: command metrics {cli_counts} != {counts}")
    cli = median([r["seconds"] for r in cli_runs])
    log(f"    {strategy}, command: " + ", ".join(f"{r['seconds']:.2f}" for r in cli_runs)
        + f" s (median {cli:.2f} s), peak RSS "
        f"{max(r['peak_rss_mib'] for r in cli_runs):.0f} MiB; splits.json identical")
    return Row(
        key=f"bake_{strategy}_cli",
        label=f"  dvc-cuvis bake {size}, {strategy} (read csv + write)",
        ours=cli, details={"runs": [brief(r) for r in cli_runs]},
    )


def bench_bake(args: argparse.Namespace, work: Path, env: dict[str, str],
               rng: np.random.Generator, enforce: bool, log: Log,
               profiles: dict[str, str]) -> list[Row]:
    n_sources, frames = (500, 100) if args.quick else (10_000, 100)
    base = work / "bake"
    base.mkdir()
    csv_path = base / "U.csv"
    uni0 = bake_universe(n_sources, frames, rng)
    dt, _ = timed(write_universe, uni0, csv_path)
    n = len(uni0)
    log(f"[2] wrote {csv_path.name}: {n} rows, {n_sources} sources, "
        f"{csv_path.stat().st_size / 2**20:.1f} MiB in {dt:.1f} s (setup)")
    dt, uni = timed(read_universe, csv_path)
    if len(uni) != n or uni.hash != uni0.hash:
        raise AssertionError("universe read back does not match what was written")
    log(f"    read it in-process (untimed for the target): {dt:.2f} s")

    size = count(n)
    rows: list[Row] = []
    repeat = 1 if args.quick else 3
    cli_repeat = 1 if args.quick else 2
    for strategy in ("hash", "random", "stratified"):
        # in-process: bake() + dumps_splits() on the universe already read
        runs = [bake_inprocess(uni, strategy) for _ in range(repeat if strategy == "hash" else 1)]
        totals = [b + d for b, d, _t, _m in runs]
        ours = median(totals)
        text, metrics = runs[-1][2], runs[-1][3]
        counts = {s: metrics["stages"][s]["samples"] for s in ("train", "val", "test")}
        log(f"    {strategy}, in-process: " + ", ".join(f"{t:.2f}" for t in totals)
            + f" s (median {ours:.2f} s; bake {runs[-1][0]:.2f} + dumps_splits "
            f"{runs[-1][1]:.2f}); {counts}, splits.json {len(text) / 2**20:.1f} MiB")
        is_target = strategy == "hash"
        row = Row(
            key=f"bake_{strategy}_inprocess",
            label=f"bake {size}, {strategy}, in-process (bake + dumps_splits)",
            ours=ours, goal_kind="max_abs" if is_target else "info",
            goal_value=5.0 if is_target else None, enforce=enforce,
            details={"samples": n, "sources": n_sources, "totals_s": totals,
                     "bake_s": [r[0] for r in runs], "dumps_s": [r[1] for r in runs],
                     "stage_samples": counts},
        )
        rows.append(row)
        if args.profile or row.passed is False:
            profiles[row.key] = profile_top(
                lambda s=strategy: dumps_splits(bake(fresh(uni), BakeOptions(strategy=s))[0]
                                                .config), limit=20)

        rows.append(bake_cli_row(strategy, base, csv_path, env,
                                 cli_repeat if is_target else 1, text, counts, size, log))
    return rows


# -- target 3: no-op dvc repro vs bare DVC -------------------------------------------------


BASELINE_DVC_YAML = """\
stages:
  first:
    cmd:
      - mkdir -p metrics
      - cp data/npz/categories.json first.json
      - cp first.json metrics/first.json
    deps:
      - data/npz
    params:
      - first
    outs:
      - first.json:
          cache: false
    metrics:
      - metrics/first.json:
          cache: false
  second:
    cmd:
      - cp first.json second.json
      - cp second.json metrics/second.json
    deps:
      - first.json
    params:
      - second
    outs:
      - second.json:
          cache: false
    metrics:
      - metrics/second.json:
          cache: false
"""

BASELINE_PARAMS_YAML = """\
first:
  value: 1
second:
  value: 2
"""


def load_generate() -> Callable[..., dict[str, Any]]:
    """``examples/generate.py``'s ``generate`` (loaded by file; examples/ is no package)."""
    spec = importlib.util.spec_from_file_location("_example_generate",
                                                  REPO / "examples" / "generate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    gen: Callable[..., dict[str, Any]] = mod.generate
    return gen


def check_noop(r: dict, stages: tuple[str, ...], what: str) -> None:
    out = r["stdout"] + r["stderr"]
    if "Running stage" in out or not all(f"'{s}' didn't change" in out for s in stages):
        raise AssertionError(f"{what}: the second `dvc repro` was not a no-op:\n{out}")


def bench_repro(args: argparse.Namespace, work: Path, env: dict[str, str], enforce: bool,
                log: Log, notes: list[str], profiles: dict[str, str]) -> list[Row]:
    ours_repo, base_repo = work / "repro_ours", work / "repro_bare"
    t0 = time.perf_counter()
    for repo in (ours_repo, base_repo):
        repo.mkdir()
        run_cmd(["git", "init", "-q"], repo, env)
        run_cmd(["dvc", "init", "-q"], repo, env)
    run_cmd(["dvc-cuvis", "init", "--format", "npz", "--root", "data/npz"], ours_repo, env)
    summary = load_generate()(ours_repo / "data", sessions=12, frames=6)
    shutil.copytree(ours_repo / "data", base_repo / "data")
    (base_repo / "dvc.yaml").write_text(BASELINE_DVC_YAML, encoding="utf-8")
    (base_repo / "params.yaml").write_text(BASELINE_PARAMS_YAML, encoding="utf-8")
    n_dep = sum(1 for p in (ours_repo / "data" / "npz").rglob("*") if p.is_file())
    log(f"[3] two git+DVC repos, example data ({summary['frames']} frames; data/npz dep: "
        f"{n_dep} files) in {time.perf_counter() - t0:.1f} s (setup)")

    first_ours = run_cmd(["dvc", "repro"], ours_repo, env)
    first_base = run_cmd(["dvc", "repro"], base_repo, env)
    log(f"    first repro (untimed for the target): ours {first_ours['seconds']:.2f} s, "
        f"bare {first_base['seconds']:.2f} s")
    locks = {r: (r / "dvc.lock").read_bytes() for r in (ours_repo, base_repo)}

    repeat = 3
    ours_runs, base_runs = [], []
    for _ in range(repeat):  # interleaved so drift hits both alike
        ours_runs.append(run_cmd(["dvc", "repro"], ours_repo, env))
        base_runs.append(run_cmd(["dvc", "repro"], base_repo, env))
    for r in ours_runs:
        check_noop(r, ("enumerate", "bake"), "ours")
    for r in base_runs:
        check_noop(r, ("first", "second"), "baseline")
    for repo, lock in locks.items():
        if (repo / "dvc.lock").read_bytes() != lock:
            raise AssertionError(f"{repo.name}: dvc.lock changed on a no-op repro")
    ours = median([r["seconds"] for r in ours_runs])
    bare = median([r["seconds"] for r in base_runs])
    log("    no-op repro: ours " + ", ".join(f"{r['seconds']:.2f}" for r in ours_runs)
        + f" s (median {ours:.2f}); bare DVC "
        + ", ".join(f"{r['seconds']:.2f}" for r in base_runs) + f" s (median {bare:.2f}); "
        f"ratio {ours / bare:.2f}")
    notes.append("repro row: ratio = ours / baseline (lower is better); baseline = a same-shape "
                 "two-stage `cp` pipeline over the same data folder in a second git+DVC repo.")
    row = SlowdownRow(
        key="repro_noop", label="2nd dvc repro, no change (vs bare DVC pipeline)",
        ours=ours, baseline=bare, goal_kind="max_ratio", goal_value=2.0, enforce=enforce,
        details={"ours_runs": [brief(r) for r in ours_runs],
                 "baseline_runs": [brief(r) for r in base_runs],
                 "first_repro": {"ours": brief(first_ours), "baseline": brief(first_base)},
                 "dep_files": n_dep},
    )
    rows: list[Row] = [row]
    if args.profile or row.passed is False:
        profiles[row.key] = profile_dvc_repro(ours_repo)
    return rows


def profile_dvc_repro(repo: Path) -> str:
    """cProfile of ``dvc repro`` run in this process: DVC's lazy imports of its own modules
    and its status check of the pipeline, without interpreter start-up (no dvc_cuvis code
    runs on a no-op repro)."""
    from dvc.cli import main as dvc_main

    old_cwd = Path.cwd()
    old_env = os.environ.get("DVC_NO_ANALYTICS")
    os.environ["DVC_NO_ANALYTICS"] = "1"
    os.chdir(repo)
    try:
        return profile_top(lambda: dvc_main(["repro", "-q"]), limit=20)
    finally:
        os.chdir(old_cwd)
        if old_env is None:
            os.environ.pop("DVC_NO_ANALYTICS", None)
        else:
            os.environ["DVC_NO_ANALYTICS"] = old_env


# -- main -----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = _common.standard_args((__doc__ or "").split("\n\n")[0], seed=True, profile=True)
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
    with _common.workspace(args, "dvc_cuvis_bench_pipeline_", log) as work:
        log(f"mode={'quick' if args.quick else 'full'} seed={args.seed} workdir={work}")
        rows += bench_enumerate(args, work, env, enforce, log, notes, profiles)
        rows += bench_bake(args, work, env, rng, enforce, log, profiles)
        rows += bench_repro(args, work, env, enforce, log, notes, profiles)
    print()
    return _common.finish(rows, args, total=log.elapsed, notes=notes, profiles=profiles,
                          quick_note="(--quick: 5k frames, 50k samples; targets not enforced)")


if __name__ == "__main__":
    sys.exit(main())
