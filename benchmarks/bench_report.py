"""Benchmark: ``dvc-cuvis report`` over a 1M-sample universe (10k sources x 100 frames).

Run: ``.venv/bin/python -m benchmarks.bench_report [--quick] [--json out.json] [--strict]``

Targets: renders in <= 10 s (whole CLI process, drift check included) and the file stays
<= 5 MB (the report aggregates; it never lists every sample).
"""

from __future__ import annotations

import subprocess
import sys
import time

from benchmarks._common import ENV, Row, finish, standard_args, workspace
from benchmarks.bench_history import universe
from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.model.splits import dumps_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import write_universe


def with_categories(uni: Universe) -> Universe:
    import numpy as np

    rng = np.random.default_rng(0)
    cats = np.where(rng.random(len(uni)) < 0.2, rng.integers(1, 6, len(uni)), 0)
    col = np.array([str(c).encode() if c else b"" for c in cats.tolist()], dtype=np.bytes_)
    return Universe(uni.source_names, uni.codes, uni.indices, {"category_ids": col})


def main() -> int:
    args = standard_args(__doc__.splitlines()[0]).parse_args()
    sources = 200 if args.quick else 10_000
    with workspace(args, "dvc_cuvis_bench_report_") as work:
        uni = with_categories(universe(sources, 100))
        write_universe(uni, work / "universe.csv")
        (b,) = bake(uni, BakeOptions(strategy="multilabel", group_by="source"))
        (work / "splits.json").write_text(dumps_splits(b.config))
        t0 = time.perf_counter()
        proc = subprocess.run(["dvc-cuvis", "report", "--universe", "universe.csv", "--splits",
                               "splits.json", "--out", "report.html"], cwd=work, env=ENV,
                              capture_output=True, text=True)
        elapsed = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
        size = (work / "report.html").stat().st_size / 1e6
    n = len(uni)
    rows = [Row("report-time", f"report over {n // 1000}k samples (CLI, check included)", elapsed,
                goal_kind="max_abs", goal_value=10.0, enforce=not args.quick),
            Row("report-size", "report file size", size, unit="MB", goal_kind="max_abs",
                goal_value=5.0, enforce=not args.quick)]
    return finish(rows, args)


if __name__ == "__main__":
    sys.exit(main())
