"""End-to-end ``dvc repro`` of a materialize stage: DVC re-hashing our outputs, or not.

How to run (from the repository root)::

    .venv/bin/python -m benchmarks.bench_dvc_commit           # 40 frames 256x256x61, ~640 MB
    .venv/bin/python -m benchmarks.bench_dvc_commit --quick   # 8 frames 64x64x61, seconds
    .venv/bin/python -m benchmarks.bench_dvc_commit --frames 80 --workdir /scratch --keep

Setup (untimed): a git + DVC repository with ``data/npz`` = N frames from
``examples/generate.py`` (float32 cubes, every frame's bytes distinct), ``dvc-cuvis init``,
``dvc repro`` of everything up to the split.  Then, for each variant, ``materialized/`` and
the DVC cache objects of its frames are removed and ``dvc repro -f -s materialize`` is
timed (cache cold: DVC must copy every frame into its cache), then once more with the
frames left in place and in DVC's cache, ``materialized/`` removed (cache warm: DVC's work
is its hashing and bookkeeping).  The stage command is wrapped by this script, which
records how long ``dvc-cuvis materialize`` itself ran, so DVC's share of the stage is
``(repro - materialize) / repro``.

Also timed, once per round: ``dvc repro -f -s floor``, a stage whose command only echoes
into a small cached output -- what DVC itself costs for any stage (start-up, reading
dvc.yaml, dvc.lock and params, writing dvc.lock), the floor of DVC's share.

Variants: "hand-over" (ours: the md5s go into DVC's state) and "re-hash"
(``DVC_CUVIS_HAND_OVER=off``: DVC reads every output byte again), each with the repository's
``cache.type`` left at DVC's default (``reflink,copy``: a copy on a file system without
reflinks, such as ext4) and set to ``hardlink`` (``dvc config cache.type hardlink``, DVC's own
option: it links each new object instead of copying it, and makes the outputs read-only).
Each is run once per round, alternating, ``--rounds`` rounds (default 1); the report prints
the median of each figure over the rounds and the speed-up of the stage end to end.  The
page cache is warm for all (everything fits in RAM here), so the rows compare work, not the
disk.  Exit code 0 unless the script crashes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import _common
from benchmarks._common import REPO, Row


def env(**extra: str) -> dict[str, str]:
    """The environment of every child (``_common.ENV``), the repository importable (the
    stage command is this module, run as ``python -m benchmarks.bench_dvc_commit``)."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**_common.ENV, "PYTHONPATH": path, **extra}


def setup(work: Path, frames: int, size: int, bands: int) -> Path:
    repo = work / "repo"
    sessions = max(4, frames // 10)
    _common.sh(sys.executable, str(REPO / "examples/generate.py"), "--out", str(work / "gen"),
               "--sessions", str(sessions), "--frames", str(frames // sessions),
               "--size", str(size), str(size), "--bands", str(bands), "--seed", "1", cwd=work)
    _common.sh("git", "init", "-q", str(repo), cwd=work)
    _common.sh("dvc", "init", "-q", cwd=repo)
    shutil.move(str(work / "gen/npz"), repo / "data/npz")
    _common.sh("dvc-cuvis", "init", "--format", "npz", "--root", "data/npz", cwd=repo)
    text = (repo / "dvc.yaml").read_text()
    wrapped = (f"{sys.executable} -m benchmarks.bench_dvc_commit --time-cmd ../stage.json -- "
               "dvc-cuvis materialize --params params.yaml")
    text = text.replace("cmd: dvc-cuvis materialize --params params.yaml", f"cmd: {wrapped}")
    # DVC's floor: a stage whose command does next to nothing, one small cached output
    text += "  floor:\n    cmd: echo floor > floor.txt\n    outs:\n      - floor.txt\n"
    (repo / "dvc.yaml").write_text(text)
    _common.sh("dvc", "repro", "-q", "bake", cwd=repo)
    return repo


def cache_objects(repo: Path, md5s: list[str]) -> list[str]:
    """The paths of the cache objects of ``md5s`` in the repository's DVC cache (DVC's API)."""
    from dvc.repo import Repo

    with Repo(os.fspath(repo)) as r:
        return [r.cache.local.oid_to_path(md5) for md5 in md5s]


def floor_once(repo: Path) -> float:
    """Seconds of ``dvc repro -f -s floor``: DVC's own cost of reproducing any stage."""
    t0 = time.perf_counter()
    _common.sh("dvc", "repro", "-q", "-f", "-s", "floor", cwd=repo)
    return time.perf_counter() - t0


def run_once(repo: Path, hand_over: bool, cold: bool, cache_type: str) -> dict[str, float]:
    out = repo / "materialized"
    _common.sh("dvc", "config", "--local", "cache.type", cache_type, cwd=repo)
    if cold and (out / "manifest.json").is_file():
        frames = json.loads((out / "manifest.json").read_text())["frames"]
        for path in cache_objects(repo, [entry["md5"] for entry in frames.values()]):
            Path(path).unlink(missing_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    e = env() if hand_over else env(DVC_CUVIS_HAND_OVER="off")
    t0 = time.perf_counter()
    _common.sh("dvc", "repro", "-q", "-f", "-s", "materialize", cwd=repo, env=e)
    total = time.perf_counter() - t0
    stage = json.loads((repo.parent / "stage.json").read_text())["seconds"]
    return {"repro_s": total, "materialize_s": stage, "dvc_s": total - stage,
            "dvc_share": (total - stage) / total}


VARIANTS = [(False, "reflink,copy"), (True, "reflink,copy"), (False, "hardlink"),
            (True, "hardlink")]


def time_stage(cmd: list[str], out: Path) -> int:
    """Run the stage command and record its wall time in ``out`` (read back by run_once)."""
    t0 = time.perf_counter()
    rc = subprocess.call(cmd)
    _common.write_json(out, {"seconds": time.perf_counter() - t0})
    return rc


def measure_rounds(repo: Path, rounds: int) -> tuple[dict[str, list[dict[str, float]]],
                                                     list[float]]:
    """Every variant, cache cold and warm, ``rounds`` times; and DVC's floor per round."""
    results: dict[str, list[dict[str, float]]] = {}
    floors: list[float] = []
    for _ in range(rounds):
        floors.append(floor_once(repo))
        for cold in (True, False):
            for hand_over, cache_type in VARIANTS:
                key = f"{'hand-over' if hand_over else 're-hash'}, {cache_type}, " \
                      f"cache {'cold' if cold else 'warm'}"
                results.setdefault(key, []).append(run_once(repo, hand_over, cold, cache_type))
    return results, floors


def report(results: dict[str, list[dict[str, float]]], floors: list[float]) -> list[Row]:
    """Print the per-variant medians and the comparisons; the rows for the table."""
    print(f"{'variant':36} {'repro s':>8} {'materialize s':>14} {'DVC s':>7} "
          f"{'DVC share':>9}")
    # per variant the median of each figure over the rounds (materialize's own time
    # varies more between runs than DVC's part does on a shared machine)
    best = {k: {f: statistics.median(r[f] for r in v) for f in v[0]}
            for k, v in results.items()}
    for k, r in best.items():
        print(f"{k:36} {r['repro_s']:8.2f} {r['materialize_s']:14.2f} {r['dvc_s']:7.2f} "
              f"{r['dvc_share']:9.1%}")
    for cache_type in ("reflink,copy", "hardlink"):
        for cache in ("cold", "warm"):
            a = best[f"re-hash, {cache_type}, cache {cache}"]
            b = best[f"hand-over, {cache_type}, cache {cache}"]
            print(f"hand-over vs re-hash, {cache_type}, cache {cache}: "
                  f"{a['repro_s'] / b['repro_s']:.2f}x end to end (DVC's own part "
                  f"{a['dvc_s'] / max(b['dvc_s'], 1e-9):.1f}x less)")
    a = best["re-hash, reflink,copy, cache cold"]
    b = best["hand-over, hardlink, cache cold"]
    print(f"hand-over + hardlink vs re-hash + copy, cache cold: "
          f"{a['repro_s'] / b['repro_s']:.2f}x end to end")
    floor = statistics.median(floors)
    print(f"DVC's floor (dvc repro -f -s of a stage that only echoes): {floor:.2f} s; "
          f"a 5 % share needs a stage command of >= {19 * floor:.1f} s")
    rows = [Row(f"repro {k}", f"dvc repro -f -s materialize, {k}", r["repro_s"],
                details=r) for k, r in best.items()]
    rows.append(Row("floor", "DVC's floor: dvc repro -f -s of a stage that only echoes",
                    floor, details={"runs_s": floors}))
    return rows


def main() -> int:
    """Parse the options, build the repository, measure every variant, report."""
    ap = _common.standard_args(__doc__.split("\n")[0])  # --quick: 8 frames of 64x64x61
    ap.add_argument("--frames", type=int, default=40)
    ap.add_argument("--size", type=int, default=256, help="frame height = width")
    ap.add_argument("--bands", type=int, default=61)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--time-cmd", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("cmd", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.time_cmd is not None:  # the stage command, timed
        return time_stage(args.cmd, args.time_cmd)
    if args.quick:
        args.frames, args.size = 8, 64
    log = _common.Clock()
    with _common.workspace(args, "bench-dvc-commit-") as work:
        t0 = time.perf_counter()
        repo = setup(work, args.frames, args.size, args.bands)
        data = sum(f.stat().st_size for f in (repo / "data/npz").rglob("*.npz"))
        print(f"setup {time.perf_counter() - t0:.1f} s: {args.frames} frames "
              f"{args.size}x{args.size}x{args.bands}, {data / 1e6:.0f} MB of npz")
        run_once(repo, True, cold=False, cache_type="reflink,copy")  # warm-up: page cache
        results, floors = measure_rounds(repo, args.rounds)
        rows = report(results, floors)
    return _common.finish(rows, args, total=log.elapsed,
                          extra_json={"rounds": results})

if __name__ == "__main__":
    sys.exit(main())
