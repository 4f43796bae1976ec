"""Benchmark: ``dvc-cuvis fetch --stage test`` against a full ``dvc pull``, over a real SSH remote.

Run: ``.venv/bin/python -m benchmarks.bench_fetch [--quick] [--frames N] [--shape HxWxB]
[--rounds R] [--json out.json] [--strict]``

Default data: 50 frames of 256x256x61 float32 (a realistic cube, 16 MB each; 800 MB raw),
a test stage of 10 % of them (5 frames).  ``--quick`` is a smoke run (40 tiny frames, one
round, nothing enforced).

A dataset repository (npz frames, tracked by DVC, pipeline run) is pushed to an SSH remote
served by Debian's ``sshd`` on 127.0.0.1 (as in the tests).  Each round makes two fresh
clones with empty caches and times, as whole CLI processes:

* ours: ``dvc-cuvis fetch --stage test`` — the test stage's raw frames (about 10 % of them)
  through DVC's granular pull, then md5-verified;
* baseline: ``dvc pull data/npz.dvc`` — every raw frame, the same kind of data (the
  materialized copies are left out of both).

Target: the stage costs <= 15 % of the full pull (baseline / ours >= 6.7).  The fixed cost
both pay (Python and DVC start-up, DVC's index, the SSH handshake) is shown as its own row:
``dvc-cuvis fetch`` of a stage whose files are all present (DVC not asked) and ``dvc pull``
of a clone that already holds everything.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import ENV, Row, finish, median, sh, standard_args, workspace
from testbeds.sshd import clone, find_sshd, start_sshd, use_remote


def build(root: Path, server: object, store: Path, sessions: int, frames: int,
          size: tuple[int, int], bands: int) -> Path:
    """A dataset repo whose bake puts ~10 % of the frames in test (hashed per sample);
    pushed to ``store``."""
    from examples.generate import generate

    root.mkdir(parents=True)
    sh("git", "init", "-q", "-b", "main", cwd=root)
    sh("dvc", "init", "-q", cwd=root)
    generate(root / "data", sessions=sessions, frames=frames, size=size, bands=bands, seed=5)
    shutil.rmtree(root / "data" / "tiff")
    sh("dvc-cuvis", "init", "--format", "npz", "--root", "data/npz", cwd=root)
    params = (root / "params.yaml").read_text()
    (root / "params.yaml").write_text(params.replace("test_ratio: 0.2", "test_ratio: 0.1")
                                      .replace("val_ratio: 0.2", "val_ratio: 0.1")
                                      .replace("group_by: auto", "group_by: sample")
                                      .replace("check:\n", "check:\n  group_leakage: \"off\"\n"))
    sh("dvc", "repro", cwd=root)
    use_remote(root, server, store)  # type: ignore[arg-type]
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", "dataset", cwd=root)
    sh("dvc", "push", cwd=root)
    return root


def timed(cmd: list[str], cwd: Path) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, check=False)
    took = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{cmd}: {proc.stdout}\n{proc.stderr}")
    return took


def npz_files(root: Path, folder: str) -> int:
    base = root / folder
    return sum(1 for _ in base.rglob("*.npz")) if base.is_dir() else 0


def shape(text: str) -> tuple[int, int, int]:
    """``HxWxB`` as three positive ints."""
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise SystemExit(f"--shape {text}: expected HxWxB, e.g. 256x256x61")
    return int(parts[0]), int(parts[1]), int(parts[2])


def fetch_rounds(repo: Path, work: Path, server: Any, rounds: int,
                 total: int) -> tuple[dict[str, list[float]], int]:
    """Fresh clones each round: ``fetch --stage test`` against ``dvc pull``, then each again
    with nothing left to move (the fixed cost); the frames the stage fetched."""
    runs: dict[str, list[float]] = {"ours": [], "base": [], "ours_idle": [], "base_idle": []}
    got = 0
    for k in range(rounds):
        a = clone(repo, work / f"stage{k}", server)
        runs["ours"].append(timed(["dvc-cuvis", "fetch", "--stage", "test"], a))
        got = npz_files(a, "data/npz")
        b = clone(repo, work / f"pull{k}", server)
        runs["base"].append(timed(["dvc", "pull", "data/npz.dvc"], b))
        assert npz_files(b, "data/npz") == total
        runs["ours_idle"].append(timed(["dvc-cuvis", "fetch", "--stage", "test"], b))
        runs["base_idle"].append(timed(["dvc", "pull", "data/npz.dvc"], b))
        shutil.rmtree(a)
        shutil.rmtree(b)
    return runs, got


def fetch_rows(runs: dict[str, list[float]], got: int, total: int, size: tuple[int, int],
               bands: int, *, enforce: bool) -> list[Row]:
    """The stage fetch against the whole pull, and the fixed cost of each."""
    share = got / total
    frame_bytes = size[0] * size[1] * bands * 4
    mib = total * frame_bytes / 2**20
    return [
        Row("fetch_stage", f"fetch --stage test ({got} of {total} frames, {share:.0%}) vs "
            f"dvc pull data/npz.dvc (all {total}, {mib:.0f} MiB), SSH", median(runs["ours"]),
            baseline=median(runs["base"]),
            goal_kind="min_ratio", goal_value=1 / 0.15, enforce=enforce,
            details={"ours": runs["ours"], "baseline": runs["base"], "frames": total,
                     "stage_frames": got, "frame_bytes": frame_bytes}),
        Row("fixed_cost", "fixed cost: fetch --stage test with its files present vs dvc pull "
            "data/npz.dvc with nothing to pull (start-up, index, handshake)",
            median(runs["ours_idle"]), baseline=median(runs["base_idle"]),
            details={"ours": runs["ours_idle"], "baseline": runs["base_idle"]}),
    ]


def main() -> int:
    """Start a local SSH server, build the dataset, time fetch and pull, report."""
    ap = standard_args(__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, help="frames in the dataset (default 50; quick 40)")
    ap.add_argument("--shape", help="frame shape HxWxB, float32 (default 256x256x61; "
                    "quick 16x16x8)")
    ap.add_argument("--rounds", type=int, help="fresh-clone rounds (default 2; quick 1)")
    args = ap.parse_args()
    binary = find_sshd()
    if binary is None:
        raise SystemExit("sshd not found: apt-get install openssh-server")
    count = args.frames or (40 if args.quick else 50)
    h, w, bands = shape(args.shape or ("16x16x8" if args.quick else "256x256x61"))
    size = (h, w)
    rounds = args.rounds or (1 if args.quick else 2)
    frames = 5 if count % 5 == 0 else 1
    sessions = count // frames
    with workspace(args, "dvc_cuvis_bench_fetch_") as work:
        server = start_sshd(work / "sshd", binary)
        try:
            repo = build(work / "repo", server, work / "store", sessions, frames, size, bands)
            total = npz_files(repo, "data/npz")
            runs, got = fetch_rounds(repo, work, server, rounds, total)
        finally:
            server.stop()
    rows = fetch_rows(runs, got, total, size, bands, enforce=not args.quick)
    frame_bytes = size[0] * size[1] * bands * 4
    notes = [f"{rounds} rounds, each on fresh clones with empty caches; medians. Frames of "
             f"{size[0]}x{size[1]}x{bands} float32 ({frame_bytes / 2**20:.1f} MiB)."]
    return finish(rows, args, notes=notes)


if __name__ == "__main__":
    sys.exit(main())
