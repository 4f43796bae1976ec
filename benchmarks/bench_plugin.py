"""The plugin's guard: the time ``dvc_npz_multi``'s ``setup()`` adds to npz_multi's.

How to run (from the repository root)::

    .venv/bin/python -m benchmarks.bench_plugin           # full run (~2 min, 2 cores)
    .venv/bin/python -m benchmarks.bench_plugin --quick   # CI smoke test (~20 s)
    .venv/bin/python -m benchmarks.bench_plugin --json out.json --strict

What is measured, all in the same run on the same frames:

* ``setup("fit")`` of cuvis-ai-dataloader's ``MultiNpzDataModule`` (the baseline) and of
  the plugin's ``DvcNpzMultiDataModule`` (the guarded one: module rules, pin, content md5
  of every frame, selection, constraints; no dvc.lock here), each a fresh instance built as
  ``create_data_module`` builds it (construction untimed), interleaved, median of 9 after a
  warm-up; the stat cache is warm (a training run's second and later starts).  The guard's
  added time is the difference of the medians.
* one epoch's read of the same frames: every batch of the baseline module's train and val
  loaders (batch 8, num_workers=0, page cache warm), median of 3 after a warm-up.

Goal: added time <= 1 % of the epoch's read, at a realistic frame size ([128, 128, 61]
float32, 4 MiB per cube, 120 frames; --quick: 20 frames of [32, 32, 16], not enforced).
The first guarded setup on a cold stat cache (it hashes every frame once) is reported as
information.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import _common
from benchmarks._common import Row, median, timed
from benchmarks.bench_check import epoch_read_of, write_sources
from benchmarks.bench_pipeline import SlowdownRow
from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.materialize import ReaderParams
from dvc_cuvis.materialize import materialize_universe as materialize
from dvc_cuvis.model.universe_io import read_universe, write_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe

BATCH = 8


def build(work: Path, quick: bool, rng: np.random.Generator, log: Any) -> Path:
    """Materialized frames and their splits.json (the example pipeline's output shape)."""
    folders, per, shape = (4, 5, (32, 32, 16)) if quick else (10, 12, (128, 128, 61))
    t = time.perf_counter()
    n = write_sources(work / "src", folders, per, shape, rng)
    uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=work / "src", out_dir=work,
                                                 progress=False))
    write_universe(uni, work / "universe.csv")
    uni = read_universe(work / "universe.csv")
    (baked,) = bake(uni, BakeOptions())
    materialize(uni, baked.config, work / "mat", ReaderParams(), jobs=2)
    log(f"{n} frames {list(shape)} float32 materialized in {time.perf_counter() - t:.1f} s "
        "(setup)")
    return work / "mat"


def modules(mat: Path, cache: Path) -> tuple[Any, Any]:
    """Factories of the baseline and the guarded module, as the registry builds them."""
    from cuvis_ai_dataloader.data.datamodule_npz_multi import MultiNpzDataModule
    from cuvis_ai_schemas.training.data import DataSplitConfig

    from dvc_cuvis.plugin.datamodules import DvcNpzMultiDataModule

    def splits() -> DataSplitConfig:
        return DataSplitConfig(splits_path=str(mat / "splits.json"))

    def plain() -> Any:
        return MultiNpzDataModule(universe_csv=str(mat / "universe.csv"), splits=splits(),
                                  batch_size=BATCH)

    def guarded() -> Any:
        return DvcNpzMultiDataModule(universe_csv=str(mat / "universe.csv"), splits=splits(),
                                     batch_size=BATCH, lock=None, stat_cache=str(cache))

    return plain, guarded


def lineage_rows(work: Path, guarded: Any, guard_setup: float, enforce: bool) -> list[Row]:
    """The dataset record's share of a guarded ``setup()``, in a git repository.

    The record is taken by ``_take_record`` right after the check in every ``setup()``: that
    call is timed alone (100 calls in a row, median of 7 such runs: the stat cache warm, the
    commit read from git's files), against the median guarded ``setup("fit")``.  The dirty
    flag (one ``git status``) is paid once per record, when it is first kept (a checkpoint,
    the logger, the trainrun's record file): reported as information.
    """
    from dvc_cuvis.train.lineage import finish

    _common.sh("git", "init", "-q", cwd=work)
    _common.sh("git", "add", "mat", "universe.csv", cwd=work)
    _common.sh("git", "commit", "-qm", "dataset", cwd=work)
    m = guarded()
    m.setup("fit")
    if not m.dataset_record or not m.dataset_record["repo"]["commit"]:
        raise AssertionError("setup() took no dataset record with a commit")
    def per_call() -> float:
        t0 = time.perf_counter()
        for _ in range(100):
            m._take_record(m.drift_report)
        return (time.perf_counter() - t0) / 100

    record_t = [per_call() for _ in range(7)]
    dirty_t = []
    for _ in range(5):
        m._take_record(m.drift_report)
        dirty_t.append(timed(finish, m.dataset_record)[0])
    return [
        SlowdownRow(key="plugin_lineage_record",
                    label="dataset record at setup(): added time vs the guarded setup()",
                    ours=median(record_t), baseline=guard_setup, goal_kind="max_ratio",
                    goal_value=0.01, enforce=enforce,
                    details={"record_s": median(record_t), "guarded_setup_s": guard_setup}),
        Row(key="plugin_lineage_dirty", label="dataset record's dirty flag (one git status), "
            "once per record kept", ours=median(dirty_t), goal_kind="info"),
    ]


def time_setups(plain: Callable[[], Any], guarded: Callable[[], Any],
                n: int) -> tuple[list[float], list[float]]:
    """``setup('fit')`` of a fresh plain and a fresh guarded module, ``n`` rounds, which goes
    first alternating; each round's seconds."""
    plain_t: list[float] = []
    guard_t: list[float] = []
    for i in range(n):
        for which in ((plain, plain_t), (guarded, guard_t))[:: 1 if i % 2 == 0 else -1]:
            factory, times = which
            m = factory()
            times.append(timed(m.setup, "fit")[0])
            if m.train_ds is None or not len(m.train_ds):
                raise AssertionError("setup('fit') built no train dataset")
    return plain_t, guard_t


def main(argv: list[str] | None = None) -> int:
    """Build the dataset, time plain and guarded setup and an epoch's read, report."""
    ap = _common.standard_args((__doc__ or "").split("\n\n")[0], seed=True)
    args = ap.parse_args(argv)
    enforce = not args.quick
    log = _common.Clock()
    rows: list[Row] = []
    # upstream logs "split constraint ... unavailable" on every setup: keep the report clean
    logging.getLogger("cuvis_ai_core.data.selectors").setLevel(logging.ERROR)
    with _common.workspace(args, "dvc_cuvis_bench_plugin_", log) as work:
        mat = build(work, args.quick, np.random.default_rng(args.seed), log)
        plain, guarded = modules(mat, work / "stat-cache")
        cold, dm = timed(lambda: (lambda m: (m.setup("fit"), m)[1])(guarded()))
        if not dm.drift_report.ok:
            raise AssertionError(dm.drift_report.render())
        plain().setup("fit")  # warm-up of both paths
        guarded().setup("fit")
        plain_t, guard_t = time_setups(plain, guarded, 3 if args.quick else 9)
        epoch = epoch_read_of(plain, 1 if args.quick else 3)
        added = max(median(guard_t) - median(plain_t), 0.0)
        frames = len(read_universe(mat / "universe.csv"))
        log(f"setup('fit') medians: npz_multi {median(plain_t) * 1e3:.2f} ms, dvc_npz_multi "
            f"{median(guard_t) * 1e3:.2f} ms; epoch read {epoch:.3f} s over {frames} frames")
        rows += [
            SlowdownRow(key="plugin_guard_epoch",
                        label="dvc_npz_multi setup(): added time vs one epoch's read",
                        ours=added, baseline=epoch, goal_kind="max_ratio", goal_value=0.01,
                        enforce=enforce, details={"plain_setup_s": median(plain_t),
                                                  "guarded_setup_s": median(guard_t),
                                                  "epoch_read_s": epoch, "frames": frames}),
            Row(key="plugin_guard_cold", label="dvc_npz_multi setup(), cold stat cache "
                "(hashes every frame once)", ours=cold, goal_kind="info"),
            *lineage_rows(work, guarded, median(guard_t), enforce),
        ]
    print()
    return _common.finish(rows, args, total=log.elapsed)


if __name__ == "__main__":
    sys.exit(main())
