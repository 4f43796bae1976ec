"""No byte hashed twice: enumerate on a fresh ``git clone`` + ``dvc pull`` takes DVC's md5s.

How to run (from the repository root)::

    .venv/bin/python -m benchmarks.bench_dvc_hashes            # 20k frames (~3 min, 2 cores)
    .venv/bin/python -m benchmarks.bench_dvc_hashes --quick    # 500 frames, < 30 s
    .venv/bin/python -m benchmarks.bench_dvc_hashes --frames 100000 --json out.json

Options: ``--workdir DIR``, ``--keep``, ``--json PATH``, ``--strict`` (see ``_common``),
``--frames N`` (100 per session folder), ``--pad-kib K`` (K KiB more bytes in every frame,
in a member enumerate never reads: only hashing grows with it).

It is a report, not a test: the exit code is 0 unless the script crashes, or ``--strict``
is given and a target fails.  ``--quick`` enforces no target.

Setup (untimed): a dataset repository (git + DVC, a local folder as DVC remote) holding
``data/`` = N tiny npz frames (as ``bench_pipeline.make_frames``, but every frame's bytes
unique, so no frame's values can be reused from another's) and a DVC pipeline of one
stage, ``dvc-cuvis enumerate`` (universe.csv and universe.json as ``cache: false`` outputs,
committed), reproduced and committed as revision v1; revision v2 rewrites every 10th frame
with another frame's bytes and adds one session folder, reproduced and committed; both
are pushed.  Then ``git clone`` + ``dvc pull`` into a new folder (timed, info) and
``dvc fetch -T`` (so an older revision can be checked out without the network).

Every measurement is one fresh process doing what ``dvc-cuvis enumerate --format npz
--root data`` does (open the default stat cache, take the seed DVC vouches for -- HEAD's
universe.csv, see ``dvc_cuvis.sources.seed`` --, enumerate, write universe.csv and the metrics), so
interpreter start-up, imports and opening DVC's repository are included; it
reports the stat cache's :meth:`~dvc_cuvis.digests.stat_cache.StatCache.stats` (files and bytes
hashed, md5s taken from DVC, frames parsed vs taken from the content memo).  "cold" = no
stat cache file of ours (as on a fresh clone); "warm" = the cache the previous run wrote,
nothing changed.  The page cache is warm for
all of them (one untimed hashing run first), so the rows compare work, not the disk.

Targets, measured on the fresh clone and again after ``git checkout v1 && dvc checkout``
(cold: our cache removed; and "carried over": the cache written on v2):

1. ours cold <= 1.2x ours warm (row ratio = warm / cold, goal >= 0.83).
2. ours cold hashes 0 bytes.
3. ours cold parses 0 frames (their values come from the vouched seed).
4. ours cold reads 0 frames for the door's verdict (the seed vouches for those too).
Information: the baseline, plain hashing (``DVC_CUVIS_DVC_HASHES=off``, cold, no seed), as
a ratio to ours cold; ours cold without the seed (md5s from DVC, every frame parsed: what
the seed saves); every run's universe.csv must be byte-identical to the baseline's.

Content memo (the stat cache keeps each frame's parsed values under its md5 too):
"carried over" = v2's cache on v1's files (v1's changed frames were never parsed: they
are); "checkout back" = ``git checkout v2 && dvc checkout`` with the cache that saw both
revisions (every frame rewritten by DVC, new stamps, md5s from DVC's state, values from
the memo: no frame parsed), against warm on v2 (target: <= 1.2x, as for cold).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import _common
from benchmarks._common import Row, median
from benchmarks.bench_pipeline import child_env, frame_category

CHILD = """\
import json, sys, time
t0 = time.perf_counter()
from pathlib import Path
from dvc_cuvis._io import atomic_write_text, write_json
from dvc_cuvis.digests.stat_cache import open_stat_cache
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from dvc_cuvis.model.universe_io import format_universe
cache = open_stat_cache("auto")
if sys.argv[1] == "seed":
    from dvc_cuvis.sources.seed import attach
    attach(cache, "npz", Path("universe.csv"), Path("universe.json"))
opts = EnumerateOptions(format="npz", root=Path("data"), out_dir=Path("."), cache=cache)
uni, metrics = enumerate_universe(opts)
atomic_write_text(Path("universe.csv"), format_universe(uni))
write_json(Path("universe.json"), metrics)
print(json.dumps({"seconds": time.perf_counter() - t0, "rows": len(uni), **cache.stats(),
                  "checked_computed": cache.checked_computed}))
"""


STATS = ("bytes_hashed", "derived_computed", "derived_from_memo", "md5_cached", "md5_from_dvc",
         "md5_hashed")


def sh(env: dict[str, str], *args: str, cwd: Path) -> float:
    """Run a command (setup or an info timing); its wall seconds."""
    t = time.perf_counter()
    proc = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed in {cwd}:\n{proc.stdout}\n{proc.stderr}")
    return time.perf_counter() - t


STAGE = ("dvc-cuvis enumerate --no-params --format npz --root data --out universe.csv "
         "--metrics universe.json")
DVC_YAML = f"""\
stages:
  enumerate:
    cmd: {STAGE}
    deps: [data]
    outs:
      - universe.csv:
          cache: false
    metrics:
      - universe.json:
          cache: false
"""


def enumerate_run(clone: Path, env: dict[str, str], *, dvc: bool, cold: bool,
                  seed: bool = True) -> dict[str, Any]:
    """One enumerate in a fresh process; its in-process seconds and hashing statistics."""
    if cold:
        shutil.rmtree(clone / ".dvc" / "tmp" / "dvc-cuvis", ignore_errors=True)
    child_env_ = {**env, "DVC_CUVIS_DVC_HASHES": "on" if dvc else "off"}
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, "seed" if seed else "plain"],
                          cwd=clone, env=child_env_,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"enumerate failed in {clone}:\n{proc.stderr[-4000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    out["csv"] = (clone / "universe.csv").read_bytes()
    return out


def frame_bytes(session: str, s: int, cat: int, pad_kib: int, k: int = 0) -> bytes:
    """A tiny npz frame as ``bench_pipeline`` writes them (``k`` makes its cube unique),
    plus ``pad_kib`` KiB of bytes in a member enumerate does not read (so only hashing
    grows with it)."""
    cube = (np.arange(8, dtype=np.float32).reshape(2, 2, 2) + s % 97 + k / 4096) / 128
    mask = np.zeros((2, 2), np.uint8)
    if cat:
        mask[cat % 2, cat // 2 % 2] = cat
    members: dict[str, Any] = {"cube": cube, "wavelengths": np.array([450, 900], np.int32),
                               "class_mask": mask,
                               "source": np.array(f"recordings/{session}.cu3s")}
    if pad_kib:
        members["pad"] = np.random.default_rng(s * 4 + cat).integers(
            0, 256, pad_kib * 1024, dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **members)
    return buf.getvalue()


def make_frames(root: Path, sessions: int, frames: int, pad_kib: int) -> None:
    """``sessions`` folders of ``frames`` frames (every frame's bytes unique)."""
    for s in range(sessions):
        session = f"session_{s:04d}"
        folder = root / session
        folder.mkdir(parents=True)
        for k in range(frames):
            with open(os.path.join(folder, f"frame_{k:04d}.npz"), "wb") as fh:
                fh.write(frame_bytes(session, s, frame_category(s, k), pad_kib, k))


def make_origin(work: Path, env: dict[str, str], frames: int, pad_kib: int) -> Path:
    """The dataset repository: v1, then v2 (every 10th frame rewritten, one more session)."""
    origin, remote = work / "origin", work / "remote"
    origin.mkdir()
    remote.mkdir()
    sh(env, "git", "init", "-q", cwd=origin)
    sh(env, "dvc", "init", "-q", cwd=origin)
    sh(env, "dvc", "remote", "add", "-d", "store", str(remote), cwd=origin)
    (origin / "dvc.yaml").write_text(DVC_YAML, encoding="utf-8")
    sessions = max(1, frames // 100)
    make_frames(origin / "data", sessions, 100, pad_kib)
    sh(env, "dvc", "add", "-q", "data", cwd=origin)
    sh(env, "dvc", "repro", "-q", cwd=origin)
    sh(env, "git", "add", "-A", cwd=origin)
    sh(env, "git", "commit", "-qm", "v1", cwd=origin)
    sh(env, "git", "tag", "v1", cwd=origin)
    files = sorted((origin / "data").rglob("*.npz"))
    for i, f in enumerate(files[::10]):
        f.chmod(0o644)
        f.write_bytes(frame_bytes(f"changed_{i}", i, i % 4, pad_kib, i))
    extra = origin / "data" / "session_extra"
    extra.mkdir()
    for k in range(100):
        (extra / f"frame_{k:04d}.npz").write_bytes(frame_bytes("session_extra", 7, k % 4,
                                                               pad_kib, k))
    sh(env, "dvc", "add", "-q", "data", cwd=origin)
    sh(env, "dvc", "repro", "-q", cwd=origin)
    sh(env, "git", "commit", "-qam", "v2", cwd=origin)
    sh(env, "git", "tag", "v2", cwd=origin)
    sh(env, "dvc", "push", "-q", "-a", "-T", cwd=origin)
    return origin


def measure(clone: Path, env: dict[str, str], where: str, reps: int, enforce: bool,
            log: Any) -> list[Row]:
    """Baseline, ours cold, ours warm (interleaved ``reps`` times) on the checked-out data."""
    enumerate_run(clone, env, dvc=False, cold=True, seed=False)  # untimed: page cache warm
    base, noseed, cold, warm = [], [], [], []
    for _ in range(reps):
        base.append(enumerate_run(clone, env, dvc=False, cold=True, seed=False))
        noseed.append(enumerate_run(clone, env, dvc=True, cold=True, seed=False))
        cold.append(enumerate_run(clone, env, dvc=True, cold=True))
        warm.append(enumerate_run(clone, env, dvc=True, cold=False))
    for r in (*noseed, *cold, *warm):
        if r["csv"] != base[0]["csv"]:
            raise AssertionError(f"{where}: universe.csv differs from the hashing run's")
    b, u, c, w = (median([r["seconds"] for r in rs]) for rs in (base, noseed, cold, warm))
    n = cold[0]["rows"]
    log(f"  {where}: {n} frames; baseline (hashing) {b:.2f} s, ours cold {c:.2f} s "
        f"({cold[0]['md5_from_dvc']} md5 from DVC, {cold[0]['bytes_hashed']} bytes hashed, "
        f"{cold[0]['derived_computed']} frames parsed, {cold[0]['derived_from_memo']} from "
        f"the seed, {cold[0]['checked_computed']} read for a verdict), "
        f"without the seed {u:.2f} s ({noseed[0]['derived_computed']} parsed), "
        f"warm {w:.2f} s ({warm[0]['md5_cached']} from our cache)")
    stats = {k: cold[0][k] for k in STATS}
    return [
        Row(key=f"cold_vs_warm_{where}", label=f"{where}: ours cold vs warm (ratio warm/cold)",
            ours=c, baseline=w, goal_kind="min_ratio", goal_value=round(1 / 1.2, 3),
            enforce=enforce, details={"frames": n, "cold": stats}),
        Row(key=f"bytes_hashed_{where}", label=f"{where}: bytes hashed, ours cold",
            ours=max(r["bytes_hashed"] for r in cold), unit="B", goal_kind="max_abs",
            goal_value=0, enforce=enforce),
        Row(key=f"parsed_{where}", label=f"{where}: frames parsed, ours cold",
            ours=max(r["derived_computed"] for r in cold), unit="files", goal_kind="max_abs",
            goal_value=0, enforce=enforce),
        Row(key=f"verdicts_{where}", label=f"{where}: frames read for a verdict, ours cold",
            ours=max(r["checked_computed"] for r in cold), unit="files", goal_kind="max_abs",
            goal_value=0, enforce=enforce),
        Row(key=f"noseed_{where}", label=f"{where}: ours cold without the seed vs warm",
            ours=u, baseline=w, details={k: noseed[0][k] for k in STATS}),
        Row(key=f"vs_hashing_{where}", label=f"{where}: ours cold vs plain hashing (cold)",
            ours=c, baseline=b, details={"hashing": {k: base[0][k] for k in stats}}),
    ]


def checkout_back_rows(clone: Path, env: dict[str, str], cache_file: Path, both: Path,
                       warm_v2: float, reps: int, enforce: bool,
                       log: Callable[[str], None]) -> list[Row]:
    """Back to v2 with a stat cache that has seen both revisions: the memo, not parsing,
    must answer (against a warm run on v2)."""
    sh(env, "git", "checkout", "-q", "v2", cwd=clone)
    sh(env, "dvc", "checkout", "-q", cwd=clone)
    back = []
    for _ in range(reps):
        shutil.copyfile(both, cache_file)
        back.append(enumerate_run(clone, env, dvc=True, cold=False))
    b = median([r["seconds"] for r in back])
    log(f"  checkout back to v2: {b:.2f} s ({back[0]['derived_computed']} frames parsed, "
        f"{back[0]['derived_from_memo']} from the memo, {back[0]['bytes_hashed']} bytes "
        f"hashed), warm on v2 {warm_v2:.2f} s")
    return [Row(key="checkout_back", label="checkout back to v2, memo (ratio warm/ours)",
                ours=b, baseline=warm_v2, goal_kind="min_ratio",
                goal_value=round(1 / 1.2, 3), enforce=enforce,
                details={k: back[0][k] for k in STATS}),
            Row(key="checkout_back_parsed", label="checkout back to v2: frames parsed",
                ours=max(r["derived_computed"] for r in back), unit="files",
                goal_kind="max_abs", goal_value=0, enforce=enforce)]


def main() -> int:
    """Build origin, clone and pull, time enumerate in each state, report."""
    ap = _common.standard_args(__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, help="frames in v1 (default 20000; --quick: 500)")
    ap.add_argument("--pad-kib", type=int, default=0,
                    help="KiB of extra bytes per frame, in a member enumerate does not read")
    args = ap.parse_args()
    log = _common.Clock()
    env = child_env()
    frames = args.frames or (500 if args.quick else 20_000)
    reps = 1 if args.quick else 3
    rows: list[Row] = []
    with _common.workspace(args, "bench_dvc_hashes_", log) as work:
        env["DVC_SITE_CACHE_DIR"] = str(work / "dvc-site-cache")  # DVC's state, ours alone
        log(f"setup: dataset repository with {frames} frames, two revisions, pushed")
        make_origin(work, env, frames, args.pad_kib)
        clone = work / "clone"
        t_clone = sh(env, "git", "clone", "-q", str(work / "origin"), str(clone), cwd=work)
        t_pull = sh(env, "dvc", "pull", "-q", cwd=clone)
        log(f"git clone {t_clone:.2f} s, dvc pull {t_pull:.2f} s")
        sh(env, "dvc", "fetch", "-q", "-T", cwd=clone)
        rows += measure(clone, env, "fresh clone + pull", reps, not args.quick, log)
        warm_v2 = median([enumerate_run(clone, env, dvc=True, cold=False)["seconds"]
                          for _ in range(reps)])
        sh(env, "git", "checkout", "-q", "v1", cwd=clone)
        t_co = sh(env, "dvc", "checkout", "-q", cwd=clone)
        log(f"git checkout v1 + dvc checkout ({t_co:.2f} s)")
        carried = enumerate_run(clone, env, dvc=True, cold=False)  # v2's cache, v1's files
        log(f"  carried over: {carried['seconds']:.2f} s, {carried['derived_computed']} frames "
            f"parsed, {carried['derived_from_memo']} from the memo")
        cache_file = clone / ".dvc" / "tmp" / "dvc-cuvis" / "stat-cache.bin"
        both = work / "stat-cache-both-revisions.bin"
        shutil.copyfile(cache_file, both)  # it has seen v2 and v1 now
        rows += measure(clone, env, "after dvc checkout", reps, not args.quick, log)
        rows.append(Row(key="carried_over", label="after dvc checkout: our v2 cache carried over",
                        ours=carried["seconds"], details={k: carried[k] for k in STATS}))
        rows += checkout_back_rows(clone, env, cache_file, both, warm_v2, reps,
                                   not args.quick, log)
        total = log.elapsed
    notes = [f"{frames} frames (+100 in v2), {args.pad_kib} KiB padding each; seconds are "
             "in-process (imports, opening DVC, enumerate, writing universe.csv), median of "
             f"{reps}; every universe.csv equals the hashing run's byte for byte."]
    return _common.finish(rows, args, total=total, notes=notes)


if __name__ == "__main__":
    sys.exit(main())
