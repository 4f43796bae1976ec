"""``dvc-cuvis export``: a baked split (or its folds) as GloViTa, soma or index arrays, or a
materialized split as a cuvis-ai data group (the ``data:`` section of a trainrun)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._inputs import require_file, split_paths
from dvc_cuvis.cli._settings import EXIT_OK, register_options, verb_parser
from dvc_cuvis.config.options import did_you_mean
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import CUVIS_AI, EXPORT
from dvc_cuvis.errors import DvcCuvisError


def add_parser(sub: Any) -> None:
    """The ``export`` verb's flags (from the one spec, ``specs.EXPORT``)."""
    p = verb_parser(sub, "export", "write a split as GloViTa, soma, index arrays or a cuvis-ai "
                    "data group")
    register_options(p, EXPORT)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write a baked split (or its folds) in GloViTa, soma or index-array form."""
    from dvc_cuvis.interop import export, from_resolutions
    from dvc_cuvis.model.resolution import resolve
    from dvc_cuvis.model.splits import fold_files, load_splits
    from dvc_cuvis.model.universe_io import read_universe

    s = Settings(args)
    fmt = s.required("to", "--to glovita, soma, indices or cuvis-ai")
    universe_path, splits_path = split_paths(s)
    if fmt == CUVIS_AI:
        return _cuvis_ai(s, universe_path, splits_path)
    for name in ("out", "batch_size"):
        if s.get(name) is not None:  # the data group's settings: never silently ignored
            hint = did_you_mean("--out-dir" if name == "out" and s.typed(name) else None)
            raise DvcCuvisError(f"{s.origin(name)} is for --to {CUVIS_AI} (one data-group "
                                f"file); {s.shown('to')} writes a folder{hint}{s.aside(name)}")
    folds_dir = s.get("folds_dir")
    files = fold_files(folds_dir) if folds_dir else [splits_path]
    for f in files:
        require_file(f, "splits", s)
    require_file(universe_path, "universe", s)
    uni = read_universe(universe_path)
    folds = from_resolutions([resolve(load_splits(f), uni, where=str(f)) for f in files])
    metrics = s.get("metrics")
    written = export(folds, fmt, Path(s.get("out_dir")),
                     id_column=s.get("id_column"), labels=s.get("labels"),
                     metrics=Path(metrics) if metrics else None)
    print("wrote " + ", ".join(str(p) for p in written))
    return EXIT_OK


def _cuvis_ai(s: Settings, universe_path: Path, splits_path: Path) -> int:
    """Write the cuvis-ai data group of a materialized split."""
    from dvc_cuvis.interop.cuvis_ai import data_group

    require_file(splits_path, "splits", s)
    require_file(universe_path, "universe", s)
    out = s.path("out") or Path(s.get("out_dir")) / "data.yaml"
    written = data_group(universe_path, splits_path, out, batch_size=s.get("batch_size", 1))
    print(f"wrote {written}")
    return EXIT_OK
