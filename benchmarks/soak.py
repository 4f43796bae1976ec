"""Soak: the whole pipeline over a synthetic 1M-sample universe (10k sessions x 100 frames).

Run: ``.venv/bin/python -m benchmarks.soak [--quick] [--json out.json] [--strict]``

The sessions are cu3s "files" read through the SDK double in ``tests/sdk_double`` (the
real SDK cannot be installed here), so the sample count is real while the files stay
tiny.  Each step runs as its own process (so peak RSS is that step's): ``enumerate``
(counts, md5, COCO-free), ``bake`` (hash), ``check`` (re-enumeration with a warm stat
cache, content, selection, constraints, dvc.lock-free), a second bake after 1% more
sessions, and ``diff`` between the two committed versions.  Goal: every step within
2 GiB peak RSS; the times are reported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks._common import Row, finish, standard_args, workspace
from benchmarks.bench_pipeline import child_env, run_cmd

REPO = Path(__file__).resolve().parent.parent
SDK_DOUBLE = REPO / "tests" / "sdk_double"
GIB = 2048.0


def make_sessions(root: Path, sessions: int, frames: int, start: int = 0) -> None:
    for s in range(start, start + sessions):
        day = root / f"day{s % 50:02d}"
        day.mkdir(parents=True, exist_ok=True)
        (day / f"session_{s:05d}.cu3s").write_text(json.dumps(
            {"measurements": frames, "height": 2, "width": 2, "bands": 2, "seed": s,
             "references": ["White", "Dark"]}))


def soak_runs(work: Path, env: dict[str, str], sessions: int,
              frames: int) -> dict[str, dict[str, Any]]:
    """enumerate, bake and check on v1; then 1 % more sessions: enumerate, bake and diff
    v1 v2; every command's run (seconds, CPU, peak RSS, stdout)."""
    make_sessions(work / "sessions", sessions, frames)
    (work / "params.yaml").write_text(
        "enumerate:\n  format: cu3s\n  root: sessions\n  out: universe.csv\n"
        "  stat_cache: .stat-cache.bin\n"
        "check:\n  universe: universe.csv\n  splits: splits.json\n"
        "  stat_cache: .stat-cache.bin\n")
    subprocess.run(["git", "init", "-q"], cwd=work, check=True, env=env)
    (work / ".gitignore").write_text("sessions/\n.stat-cache.bin\n")
    steps = [
        ("enumerate", ["dvc-cuvis", "enumerate", "--params", "params.yaml", "--no-progress"]),
        ("bake", ["dvc-cuvis", "bake", "--universe", "universe.csv", "--out", "splits.json",
                  "--metrics", "metrics.json"]),
        ("check", ["dvc-cuvis", "check", "--params", "params.yaml", "--no-lock"]),
    ]
    results: dict[str, dict[str, Any]] = {}
    for name, cmd in steps:
        results[name] = run_cmd(cmd, work, env)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "v1"], cwd=work, check=True, env=env)
    make_sessions(work / "sessions", max(1, sessions // 100), frames, start=sessions)
    results["enumerate (+1% sessions)"] = run_cmd(steps[0][1], work, env)
    results["bake (+1%)"] = run_cmd(steps[1][1], work, env)
    subprocess.run(["git", "commit", "-qam", "v2"], cwd=work, check=True, env=env)
    results["diff v1 v2"] = run_cmd(["dvc-cuvis", "diff", "HEAD~1", "HEAD", "--json"],
                                    work, env)
    return results


def main() -> int:
    """Generate the sessions, run the pipeline twice, report time and peak RSS."""
    args = standard_args(__doc__.splitlines()[0]).parse_args()
    sessions, frames = (200, 100) if args.quick else (10_000, 100)
    env = child_env()
    env["PYTHONPATH"] = f"{SDK_DOUBLE}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env.update({"GIT_AUTHOR_NAME": "soak", "GIT_AUTHOR_EMAIL": "s@example.com",
                "GIT_COMMITTER_NAME": "soak", "GIT_COMMITTER_EMAIL": "s@example.com"})
    rows: list[Row] = []
    with workspace(args, "dvc_cuvis_soak_") as work:
        results = soak_runs(work, env, sessions, frames)
        diff = json.loads(results["diff v1 v2"]["stdout"])
        samples = sessions * frames
        for name, r in results.items():
            rows.append(Row(f"{name}-time", f"{name} ({samples // 1000}k samples): time",
                            r["seconds"], details={"cpu_s": r["cpu_s"]}))
            rows.append(Row(f"{name}-rss", f"{name}: peak RSS", r["peak_rss_mib"], unit="MiB",
                            goal_kind="max_abs", goal_value=GIB, enforce=not args.quick))
        print(f"diff after +1% sessions: moved={diff['moved']} (hash strategy: expect 0), "
              f"added={diff['universe']['added']}")
        if diff["moved"] != 0:
            raise SystemExit("soak: growth moved existing samples")
    return finish(rows, args)


if __name__ == "__main__":
    sys.exit(main())
