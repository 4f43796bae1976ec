"""``dvc-cuvis materialize``: one deterministic npz per selected frame, incrementally."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._inputs import require_file
from dvc_cuvis.cli._settings import EXIT_OK, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import MATERIALIZE
from dvc_cuvis.errors import terminal


def add_parser(sub: Any) -> None:
    """The ``materialize`` verb's flags (from the one spec, ``specs.MATERIALIZE``)."""
    p = verb_parser(sub, "materialize", "write one deterministic npz per selected frame")
    register_options(p, MATERIALIZE)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write one deterministic npz per selected frame, incrementally."""
    from dvc_cuvis.digests.stat_cache import hashing_line, open_stat_cache
    from dvc_cuvis.materialize.core import materialize, reader_params
    from dvc_cuvis.model.splits import load_splits
    from dvc_cuvis.model.universe_io import read_universe

    s = Settings(args)
    v = MATERIALIZE.values(s.get)
    if v["sign_only"]:
        return _sign_only(Path(s.required("out_dir", "--out-dir DIR")))
    universe_path = Path(v["universe"])
    splits_path = v["splits"]
    out_dir = s.required("out_dir", "--out-dir DIR")
    params = reader_params(v)
    cache = open_stat_cache(v["stat_cache"] or "auto")
    require_file(universe_path, "universe", s)
    uni = read_universe(universe_path)
    if splits_path:
        require_file(Path(splits_path), "splits", s)
    cfg = load_splits(splits_path) if splits_path else None
    progress = v["progress"]
    jobs = max(1, v["jobs"])
    _note_jobs(s, jobs, v["executor"])
    result = materialize(
        uni, cfg, Path(out_dir), params,
        select=v["select"],
        jobs=jobs,
        executor=v["executor"],
        scheduler=v["scheduler"],
        cache=cache,
        lock_wait=float(v["lock_wait"]),
        show_progress=progress if progress is not None else sys.stderr.isatty(),
        summaries=not v["no_summaries"],
    )
    for note in result.notes:
        print(terminal(f"dvc-cuvis: {note}"), file=sys.stderr)
    migrated = result.migrated
    moved = f", {migrated} migrated to the current layout" if migrated else ""
    print(f"materialized {len(result.universe)} frames into {out_dir}: {result.written} written, "
          f"{result.kept} unchanged, {result.deleted} deleted{moved}")
    print(f"dvc-cuvis: {hashing_line(cache)}", file=sys.stderr)
    return EXIT_OK


def _note_jobs(s: Settings, jobs: int, executor: str) -> None:
    """One line when ``jobs`` asks for more worker processes than there are CPUs: the pool
    is capped (``limits.pool_size``), so the user learns why fewer run than asked."""
    from dvc_cuvis import limits

    cpus = limits.cpus()
    if executor == "local" and jobs > cpus:
        print(f"dvc-cuvis: warning: {s.origin('jobs')} {jobs:,} is more than the {cpus} "
              f"CPUs this process may use: at most {cpus} worker processes run "
              "(never more than the frames to write)", file=sys.stderr)


def _sign_only(out_dir: Path) -> int:
    """Sign the frames of a materialized folder from their npz (``--sign-only``)."""
    from dvc_cuvis.materialize.summary_store import sign_frames
    from dvc_cuvis.model.universe_io import read_universe

    path = out_dir / "universe.csv"
    if not path.is_file():
        print(f"dvc-cuvis: error: {path}: not found; --sign-only signs a folder materialize "
              "wrote (its universe.csv, frames/ and summaries/)", file=sys.stderr)
        return 2
    from dvc_cuvis.model.frames import frame_name

    mat = read_universe(path)
    md5s = mat.column("md5") if mat.has_column("md5") else [""] * len(mat)
    frames = {}
    for pos in range(len(mat)):  # the names materialize gives, never a path from the file
        index = 0 if mat.indexless is not None and bool(mat.indexless[pos]) else int(
            mat.indices[pos])
        frames[frame_name(mat.source(pos), index)] = (mat.source(pos), index, md5s[pos])
    signed, shards = sign_frames(out_dir, frames)
    print(f"signed {signed} frame(s) of {out_dir} ({shards} summaries shard(s) written)")
    return EXIT_OK
