"""``dvc-cuvis bake``: a baked splits.json (or one per fold) from a universe, with metrics."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._inputs import category_map, require_file
from dvc_cuvis.cli._settings import EXIT_OK, Key, Settings, register, verb_parser
from dvc_cuvis.errors import DvcCuvisError

IMPORTS = ("glovita", "soma", "indices")


def add_parser(sub: Any) -> None:
    """The ``bake`` verb's flags."""
    p = verb_parser(
        sub, "bake", "generate a baked splits.json from a universe",
        paths=("universe", "out", "out_dir", "metrics", "plots", "rule", "base", "categories",
               "from_glovita", "from_soma", "from_indices"),
        extra={"constraints": Key((list,))})
    p.add_argument("--universe", metavar="PATH", help="universe.csv (default: universe.csv)")
    p.add_argument("--out", metavar="PATH", help="splits.json to write (default: splits.json)")
    p.add_argument("--out-dir", dest="out_dir", metavar="DIR",
                   help="folder for fold-<k>.json with --folds (default: none)")
    p.add_argument("--metrics", metavar="PATH", help="split metrics json to write "
                   "(default: none)")
    p.add_argument("--plots", metavar="DIR", help="folder for DVC plot data: stages, "
                   "categories, groups (default: none)")
    p.add_argument("--strategy", choices=["hash", "random", "stratified", "multilabel"],
                   help="hash: stable under growth; random/stratified: as cuvis-ai-dataloader "
                   "resolve-splits; multilabel: balances category ids (default: hash)")
    p.add_argument("--seed", type=int, help="seed of the assignment (default: 0)")
    p.add_argument("--val-ratio", dest="val_ratio", type=float,
                   help="share of groups in val (default: 0.2)")
    p.add_argument("--test-ratio", dest="test_ratio", type=float,
                   help="share of groups in test (default: 0.2)")
    p.add_argument("--group-by", dest="group_by", choices=["auto", "source", "group", "sample"],
                   help="unit kept together; auto = the group column if present, else the "
                   "source (default: auto)")
    p.add_argument("--ad-aware", dest="ad_aware", action="store_true", default=None,
                   help="train on normal samples only: anomalous ones stay out of train "
                   "(default: off)")
    p.add_argument("--folds", type=int, help="K-fold: a test holdout + K validation folds "
                   "(default: 0, no folds)")
    p.add_argument("--predict", choices=["all", "test"],
                   help="predict stage: all (empty = whole universe) or a copy of test "
                   "(default: all)")
    p.add_argument("--no-ranges", dest="no_ranges", action="store_true", default=None,
                   help="write ids as plain integers instead of 'a-b' ranges (default: ranges)")
    p.add_argument("--from-csv", dest="from_csv", action="store_true", default=None,
                   help="take the universe's 'split' column (default: off)")
    p.add_argument("--rule", metavar="PATH", help="rule-form splits.json to resolve and bake "
                   "(default: none)")
    p.add_argument("--base", metavar="PATH", help="previous baked splits.json: keep it and "
                   "place new samples (default: none)")
    p.add_argument("--allow-removed", dest="allow_removed", action="store_true", default=None,
                   help="with --base: drop samples that left the universe instead of failing "
                   "(default: fail)")
    p.add_argument("--allow-empty", dest="allow_empty", action="store_true", default=None,
                   help="accept a stage with a non-zero ratio that receives no sample "
                   "(default: an error)")
    p.add_argument("--categories", metavar="PATH",
                   help="category name->id map for 'categories' selectors (default: none)")
    p.add_argument("--from-glovita", dest="from_glovita", metavar="PATH",
                   help="import a GloViTa splits.json (default: none)")
    p.add_argument("--from-soma", dest="from_soma", metavar="PATH",
                   help="import a soma splits.csv (default: none)")
    p.add_argument("--from-indices", dest="from_indices", metavar="PATH",
                   help="import an indices.npz (default: none)")
    p.add_argument("--id-column", dest="id_column",
                   help="universe column the imported ids name (default: uid)")
    p.set_defaults(func=run)
    register("bake", p)


def _options(s: Settings) -> Any:
    """BakeOptions from the settings."""
    from dvc_cuvis.bake import BakeOptions
    from dvc_cuvis.splits import parse_constraints

    raw = s.section.get("constraints")
    constraints = (None if raw is None
                   else parse_constraints(raw, where=f"{s.where}: bake.constraints"))
    opts = BakeOptions(
        strategy=s.get("strategy", "hash"),
        seed=s.get("seed", 0),
        val_ratio=s.get("val_ratio", 0.2),
        test_ratio=s.get("test_ratio", 0.2),
        group_by=s.get("group_by", "auto"),
        ad_aware=s.flag("ad_aware"),
        folds=s.get("folds", 0),
        predict=s.get("predict", "all"),
        ranges=not s.flag("no_ranges"),
        constraints=constraints,
        allow_removed=s.flag("allow_removed"),
        allow_empty=s.flag("allow_empty"),
    )
    opts.check()
    return opts


def _imported(s: Settings, uni: Any) -> tuple[str, Any] | None:
    """Folds read from --from-glovita / --from-soma / --from-indices (None when not asked)."""
    from dvc_cuvis.interop import read_folds

    chosen = [(k, s.get(f"from_{k}")) for k in IMPORTS]
    chosen = [(k, v) for k, v in chosen if v]
    if not chosen:
        return None
    if len(chosen) > 1:
        raise DvcCuvisError("choose one of --from-glovita, --from-soma and --from-indices")
    kind, path = chosen[0]
    return kind, read_folds(kind, Path(path), uni, id_column=s.get("id_column", "uid"))


def run(args: argparse.Namespace) -> int:
    """Generate a baked splits.json (or one per fold) with split metrics."""
    from dvc_cuvis._io import write_json
    from dvc_cuvis.bake import bake, bake_imported, plot_data
    from dvc_cuvis.splits import load_splits, save_folds, save_splits
    from dvc_cuvis.universe import read_universe

    s = Settings(args)
    universe_path = s.path("universe", "universe.csv")
    assert universe_path is not None
    out, out_dir, metrics = s.get("out"), s.get("out_dir"), s.get("metrics")
    opts = _options(s)
    if opts.folds and not out_dir:
        raise DvcCuvisError("--folds writes one splits file per fold: give --out-dir DIR")
    out = out or "splits.json"
    rule_path, base_path = s.get("rule"), s.get("base")
    require_file(universe_path, "universe", s)
    uni = read_universe(universe_path)
    imported = _imported(s, uni)
    if imported is not None:
        kind, folds = imported
        baked = bake_imported(uni, folds.splits, opts, kind)
        if len(baked) > 1 and not out_dir:
            raise DvcCuvisError(f"the {kind} file has {len(baked)} folds: give --out-dir DIR")
        opts.folds = len(baked) if len(baked) > 1 else 0
    else:
        baked = bake(
            uni, opts,
            from_csv=s.flag("from_csv"),
            rule=load_splits(rule_path) if rule_path else None,
            base=load_splits(base_path) if base_path else None,
            name_to_id=category_map(s),
            where=str(rule_path or base_path or ""),
        )
    for b in baked:  # stages left empty under --allow-empty (without it, bake raised)
        empty = b.empty_warning()
        if empty:
            print(f"dvc-cuvis: warning: {empty}", file=sys.stderr)
    if opts.folds:
        save_folds([b.config for b in baked], out_dir)
        if metrics:
            write_json(metrics, {"folds": [b.metrics for b in baked]})
        print(f"baked {len(baked)} folds ({opts.strategy}) -> {out_dir}/fold-*.json")
        return _verdict(baked)
    (result,) = baked
    save_splits(result.config, out)
    if metrics:
        write_json(metrics, result.metrics)
    plots = s.get("plots")
    if plots:
        names = category_map(s)
        for name, rows in plot_data(result, uni, names).items():
            write_json(Path(plots) / name, rows)
    counts = " ".join(f"{x}={n}" for x, n in result.counts.items())
    print(f"baked {counts} ({result.source}) -> {out}; universe_hash {uni.hash[:12]}")
    return _verdict(baked)


def _verdict(baked: list[Any]) -> int:
    """Print every warning of the baked split(s): failed constraints, dropped base samples."""
    for b in baked:
        for warning in b.warnings:
            print(f"dvc-cuvis: warning: {warning}", file=sys.stderr)
    return EXIT_OK
