"""``dvc-cuvis export``: a baked split (or its folds) as GloViTa, soma or index arrays."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._inputs import require_file, split_paths
from dvc_cuvis.cli._settings import EXIT_OK, Settings, register, verb_parser


def add_parser(sub: Any) -> None:
    """The ``export`` verb's flags."""
    from dvc_cuvis.interop import FORMATS

    p = verb_parser(sub, "export", "write a split as GloViTa, soma or index arrays",
                    paths=("universe", "splits", "folds_dir", "out_dir", "metrics"))
    p.add_argument("--to", choices=list(FORMATS),
                   help="the convention to write (required)")
    p.add_argument("--universe", metavar="PATH", help="universe.csv (default: universe.csv)")
    p.add_argument("--splits", metavar="PATH", help="baked splits.json (default: splits.json)")
    p.add_argument("--folds-dir", dest="folds_dir", metavar="DIR",
                   help="folder of fold-<k>.json files: export all K folds (default: none)")
    p.add_argument("--out-dir", dest="out_dir", metavar="DIR",
                   help="output folder (default: export)")
    p.add_argument("--id-column", dest="id_column",
                   help="universe column used as the sample id (default: uid)")
    p.add_argument("--labels", choices=["anomaly", "categories", "none"],
                   help="glovita: labels.json from category ids (default: anomaly, 0/1)")
    p.add_argument("--metrics", metavar="PATH",
                   help="soma: where to write the identity checksums "
                   "(default: <out-dir>/identity.json)")
    p.set_defaults(func=run)
    register("export", p)


def run(args: argparse.Namespace) -> int:
    """Write a baked split (or its folds) in GloViTa, soma or index-array form."""
    from dvc_cuvis.interop import export, from_resolutions
    from dvc_cuvis.splits import fold_files, load_splits, resolve
    from dvc_cuvis.universe import read_universe

    s = Settings(args)
    fmt = s.required("to", "--to glovita, soma or indices")
    universe_path, splits_path = split_paths(s)
    folds_dir = s.get("folds_dir")
    files = fold_files(folds_dir) if folds_dir else [splits_path]
    for f in files:
        require_file(f, "splits", s)
    require_file(universe_path, "universe", s)
    uni = read_universe(universe_path)
    folds = from_resolutions([resolve(load_splits(f), uni, where=str(f)) for f in files])
    metrics = s.get("metrics")
    written = export(folds, fmt, Path(s.get("out_dir", "export")),
                     id_column=s.get("id_column", "uid"), labels=s.get("labels", "anomaly"),
                     metrics=Path(metrics) if metrics else None)
    print("wrote " + ", ".join(str(p) for p in written))
    return EXIT_OK
