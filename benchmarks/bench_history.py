"""Benchmarks for split history: ``dvc-cuvis diff`` of two 1M-sample versions, ``log`` of 100.

Run: ``.venv/bin/python -m benchmarks.bench_history [--quick] [--json out.json] [--strict]``

Targets (absolute, measured as whole CLI processes so imports and git reads count):

* diff of two 1M-sample split versions (10k sources x 100 frames, re-baked with another
  seed, so most samples move) <= 5 s;
* log over 100 commits that each changed the split (small universe) <= 5 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._common import ENV, Row, finish, median, standard_args, workspace
from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.model.splits import dumps_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import write_universe


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True)


def run_cli(args: list[str], cwd: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(["dvc-cuvis", *args], cwd=cwd, env=ENV, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"dvc-cuvis {' '.join(args)} failed: {proc.stderr}")
    return elapsed, proc.stdout


def universe(n_sources: int, frames: int) -> Universe:
    import numpy as np

    names = [f"day{s % 30:02d}/session_{s:05d}.cu3s" for s in range(n_sources)]
    order = sorted(range(n_sources), key=lambda s: names[s])
    codes = np.repeat(np.arange(n_sources, dtype=np.int32), frames)
    idx = np.tile(np.arange(frames, dtype=np.int64), n_sources)
    return Universe([names[s] for s in order], codes, idx)


def bench_diff(work: Path, n_sources: int, frames: int, quick: bool) -> list[Row]:
    repo = work / "diff"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    uni = universe(n_sources, frames)
    write_universe(uni, repo / "universe.csv")
    for seed in (0, 1):
        (b,) = bake(uni, BakeOptions(seed=seed, group_by="sample"))
        (repo / "splits.json").write_text(dumps_splits(b.config))
        git("add", "-A", cwd=repo)
        git("commit", "-qm", f"seed {seed}", cwd=repo)
    times, out = [], ""
    for _ in range(3):
        t, out = run_cli(["diff", "HEAD~1", "HEAD", "--json"], repo)
        times.append(t)
    moved = json.loads(out)["moved"]
    n = len(uni)
    return [Row("diff", f"diff of two {n // 1000}k-sample versions (CLI, {moved} moved)",
                median(times), goal_kind="max_abs", goal_value=5.0, enforce=not quick,
                details={"samples": n, "moved": moved, "times": times})]


def bench_log(work: Path, commits: int, quick: bool) -> list[Row]:
    repo = work / "log"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    uni = universe(50, 20)
    write_universe(uni, repo / "universe.csv")
    for c in range(commits):
        (b,) = bake(uni, BakeOptions(seed=c, group_by="source"))
        (repo / "splits.json").write_text(dumps_splits(b.config))
        git("add", "-A", cwd=repo)
        git("commit", "-qm", f"re-bake {c}", cwd=repo)
    times, out = [], ""
    for _ in range(3):
        t, out = run_cli(["log", "--json"], repo)
        times.append(t)
    entries = json.loads(out)
    assert len(entries) == commits, len(entries)
    return [Row("log", f"log over {commits} split commits (CLI)", median(times),
                goal_kind="max_abs", goal_value=5.0, enforce=not quick,
                details={"commits": commits, "times": times})]


def main() -> int:
    args = standard_args(__doc__.splitlines()[0]).parse_args()
    with workspace(args, "dvc_cuvis_bench_history_") as work:
        sources, frames, commits = (200, 50, 20) if args.quick else (10_000, 100, 100)
        rows = bench_diff(work, sources, frames, args.quick) + bench_log(work, commits, args.quick)
    return finish(rows, args)


if __name__ == "__main__":
    sys.exit(main())
