"""``dvc-cuvis fetch``: pull only the files some stages of the split need (DVC granular pull)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._inputs import category_map, require_file, split_paths
from dvc_cuvis.cli._settings import EXIT_OK, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import FETCH


def add_parser(sub: Any) -> None:
    """The ``fetch`` verb's flags (from the one spec, ``specs.FETCH``)."""
    p = verb_parser(sub, "fetch", "pull only the files some stages of the split need")
    register_options(p, FETCH)
    p.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    p.set_defaults(func=run)


def _materialized_universe(s: Settings, plan_root: Path, remote: str | None) -> Path:
    """materialized/universe.csv, pulled on its own first when the folder is not pulled."""
    from dvc_cuvis.repo.dvc_client import pull_paths
    from dvc_cuvis.repo.pull import FetchFile

    folder = s.get("materialized_dir")
    if folder is None:
        value = s.of("materialize").get("out_dir")
        folder = s.from_file("out_dir", value, "materialize") if value else "materialized"
    path = Path(folder) / "universe.csv"
    if not path.is_file():
        rel = FetchFile(Path(path).resolve().relative_to(plan_root).as_posix(), "", 0)
        pull_paths(plan_root, [rel.path], remote, f"dvc pull {rel.path}")
    return path


def _companions(mat: Path, root: Path) -> list[Any]:
    """materialized/splits.json and manifest.json beside the materialized universe.csv (a
    DataModule reads the split there), unless git tracks them and they are here already."""
    from dvc_cuvis.repo.pull import FetchFile

    folder = mat.resolve().parent
    return [FetchFile((folder / name).relative_to(root).as_posix(), "", 0)
            for name in ("splits.json", "manifest.json") if not (folder / name).is_file()]


def run(args: argparse.Namespace) -> int:
    """Pull exactly the files the named stages need, then verify their md5."""
    from dvc_cuvis.paths import require_dvc_root
    from dvc_cuvis.repo.pull import fetch, plan_fetch, remote_sizes

    s = Settings(args)
    stages = s.get("stage")
    if not stages:
        s.required("stage", "--stage STAGE")
    stages = [stages] if isinstance(stages, str) else list(stages)
    universe_path, splits_path = split_paths(s)
    require_file(splits_path, "splits", s)
    require_file(universe_path, "universe", s)
    remote = s.get("remote")
    root = require_dvc_root(universe_path.resolve().parent).resolve()
    mat = _materialized_universe(s, root, remote) if s.flag("materialized") else None
    plan = plan_fetch(splits_path, universe_path, stages, materialized=mat,
                      name_to_id=category_map(s), root=root)
    extra = _companions(mat, root) if mat is not None else []
    plan.files = [*extra, *plan.files]  # what a module over the folder reads besides frames
    progress = s.get("progress")
    show = progress if progress is not None else sys.stderr.isatty()
    what = "materialized frames" if mat is not None else "files"
    counts = ", ".join(f"{k}={v}" for k, v in plan.samples.items())
    if args.dry_run:
        plan.sizes = remote_sizes(root, plan.files, remote)
        if args.json:
            doc = {"stages": plan.samples, "files": [
                {"path": f.path, "md5": f.md5, "bytes": plan.sizes.get(f.path)}
                for f in plan.files], "bytes": plan.total_bytes}
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
            return EXIT_OK
        for f in plan.files:
            size = plan.sizes.get(f.path)
            print(f"{size if size is not None else '?':>12}  {f.path}")
        total = plan.total_bytes
        print(f"would fetch {len(plan.files)} {what} ({total if total is not None else '?'} "
              f"bytes) for {counts}")
        return EXIT_OK
    result = fetch(plan, jobs=s.get("jobs"), remote=remote, progress=show)
    if args.json:
        sys.stdout.write(json.dumps({"stages": plan.samples, "files": len(plan.files),
                                     "downloaded": result.downloaded,
                                     "bytes": result.bytes, "verified": result.verified},
                                    indent=2) + "\n")
    else:
        print(f"fetched {len(plan.files) - len(extra)} {what} for {counts}: {result.downloaded} "
              f"downloaded, {result.verified} verified against {plan.universe} "
              f"({result.bytes} bytes)")
    return EXIT_OK
