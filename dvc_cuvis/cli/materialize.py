"""``dvc-cuvis materialize``: one deterministic npz per selected frame, incrementally."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._inputs import require_file
from dvc_cuvis.cli._settings import EXIT_OK, Key, Settings, register, verb_parser


def add_parser(sub: Any) -> None:
    """The ``materialize`` verb's flags."""
    p = verb_parser(sub, "materialize", "write one deterministic npz per selected frame",
                    paths=("universe", "splits", "out_dir", "stat_cache", "white_ref",
                           "dark_ref"),
                    extra={"crop": Key((str, list))})
    p.add_argument("--universe", metavar="PATH",
                   help="universe.csv of the raw data (default: universe.csv)")
    p.add_argument("--splits", metavar="PATH",
                   help="splits.json selecting the frames (default: none, every frame)")
    p.add_argument("--out-dir", dest="out_dir", metavar="DIR",
                   help="output folder: frames/, universe.csv, splits.json, manifest.json "
                   "(required)")
    p.add_argument("--select", choices=["splits", "all"],
                   help="frames of every stage of the split, or the whole universe "
                   "(default: splits)")
    p.add_argument("--crop", help="TOP,BOTTOM,LEFT,RIGHT pixels removed from cube and masks "
                   "(default: none)")
    p.add_argument("--processing-mode", dest="processing_mode",
                   help="cu3s: cuvis.ProcessingMode name, or none (default: Reflectance)")
    p.add_argument("--white-ref", dest="white_ref", metavar="CU3S[:FRAME]",
                   help="cu3s: white reference measurement (default: none)")
    p.add_argument("--dark-ref", dest="dark_ref", metavar="CU3S[:FRAME]",
                   help="cu3s: dark reference measurement (default: none)")
    p.add_argument("--compress", help="none | deflate[:level] | masks[:level] (default: none)")
    p.add_argument("--jobs", type=int, help="worker processes (default: 1)")
    p.add_argument("--executor", choices=["local", "dask"],
                   help="local process pool or a Dask cluster (default: local)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="Dask scheduler address, with --executor dask (default: none, an "
                   "in-process cluster)")
    p.add_argument("--lock-wait", dest="lock_wait", type=float,
                   help="seconds to wait for another run on the same folder (default: 0)")
    p.add_argument("--stat-cache", dest="stat_cache", metavar="PATH",
                   help="stat cache file, or 'none' (default: .dvc/tmp/dvc-cuvis/)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    p.set_defaults(func=run)
    register("materialize", p)


def run(args: argparse.Namespace) -> int:
    """Write one deterministic npz per selected frame, incrementally."""
    from dvc_cuvis.digests import hashing_line, open_stat_cache
    from dvc_cuvis.frames import Compression
    from dvc_cuvis.materialize import ReaderParams, materialize, parse_crop
    from dvc_cuvis.splits import load_splits
    from dvc_cuvis.universe import read_universe

    s = Settings(args)
    universe_path = s.path("universe", "universe.csv")
    assert universe_path is not None
    splits_path = s.get("splits")
    out_dir = s.required("out_dir", "--out-dir DIR")
    mode = s.get("processing_mode", "Reflectance")
    params = ReaderParams(
        crop=parse_crop(s.get("crop")),
        processing_mode=None if str(mode).lower() == "none" else str(mode),
        white_ref=s.get("white_ref"),
        dark_ref=s.get("dark_ref"),
        compress=Compression.parse(s.get("compress", "none")),
    )
    cache = open_stat_cache(s.get("stat_cache") or "auto")
    require_file(universe_path, "universe", s)
    uni = read_universe(universe_path)
    if splits_path:
        require_file(Path(splits_path), "splits", s)
    cfg = load_splits(splits_path) if splits_path else None
    progress = s.get("progress")
    result = materialize(
        uni, cfg, Path(out_dir), params,
        select=s.get("select", "splits"),
        jobs=max(1, s.get("jobs", 1)),
        executor=s.get("executor", "local"),
        scheduler=s.get("scheduler"),
        cache=cache,
        lock_wait=float(s.get("lock_wait", 0.0)),
        show_progress=progress if progress is not None else sys.stderr.isatty(),
    )
    migrated = result.migrated
    moved = f", {migrated} migrated to the current layout" if migrated else ""
    print(f"materialized {len(result.universe)} frames into {out_dir}: {result.written} written, "
          f"{result.kept} unchanged, {result.deleted} deleted{moved}")
    print(f"dvc-cuvis: {hashing_line(cache)}", file=sys.stderr)
    return EXIT_OK
