"""``dvc-cuvis bake``: a baked splits.json (or one per fold) from a universe, with metrics."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._inputs import category_map, require_file
from dvc_cuvis.cli._settings import EXIT_OK, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import BAKE
from dvc_cuvis.errors import DvcCuvisError, terminal


def add_parser(sub: Any) -> None:
    """The ``bake`` verb's flags (from the one spec, ``specs.BAKE``)."""
    p = verb_parser(sub, "bake", "generate a baked splits.json from a universe")
    register_options(p, BAKE)
    p.set_defaults(func=run)


def _imported(s: Settings, v: dict[str, Any], uni: Any) -> tuple[str, Any] | None:
    """Folds read from --from-glovita / --from-soma / --from-indices (None when not asked)."""
    from dvc_cuvis.interop import FORMATS, read_folds

    s.exclusive(tuple(f"from_{k}" for k in FORMATS))
    chosen = [(k, v[f"from_{k}"]) for k in FORMATS]
    chosen = [(k, v) for k, v in chosen if v]
    if not chosen:
        return None
    kind, path = chosen[0]
    return kind, read_folds(kind, Path(path), uni, id_column=v["id_column"])


def _refuse_conflicts(s: Settings, v: dict[str, Any], folds: int) -> None:
    """Settings that cannot go together: an error names where each came from."""
    if folds and not v["out_dir"]:
        raise DvcCuvisError(f"{s.origin('folds')} writes one splits file per fold: give "
                            f"--out-dir DIR{s.aside('folds')}")
    s.exclusive(("from_csv", "rule", "base"))
    ruled = [n for n in ("from_csv", "rule", "base") if v[n]]
    if folds and ruled:
        raise DvcCuvisError(f"{s.origin('folds')} combines with a strategy, not with "
                            f"{s.origin(ruled[0])}{s.aside('folds') or s.aside(ruled[0])}")


def run(args: argparse.Namespace) -> int:
    """Generate a baked splits.json (or one per fold) with split metrics."""
    from dvc_cuvis._io import write_json
    from dvc_cuvis.baking import BakeOptions, bake, bake_imported, plot_data
    from dvc_cuvis.baking.options import check_folds
    from dvc_cuvis.model.splits import load_splits, save_folds, save_splits
    from dvc_cuvis.model.universe_io import read_universe

    s = Settings(args)
    v = BAKE.values(s.get)
    universe_path = Path(v["universe"])
    out, out_dir, metrics = v["out"], v["out_dir"], v["metrics"]
    check_folds(v["folds"], s.origin("folds"))  # named as given, before anything is built
    opts = BakeOptions.from_values(v, where=s.where)
    _refuse_conflicts(s, v, opts.folds)
    rule_path, base_path = v["rule"], v["base"]
    require_file(universe_path, "universe", s)
    uni = read_universe(universe_path)
    imported = _imported(s, v, uni)
    if imported is not None:
        kind, folds = imported
        baked = bake_imported(uni, folds.splits, opts, kind)
        if len(baked) > 1 and not out_dir:
            raise DvcCuvisError(f"the {kind} file has {len(baked)} folds: give --out-dir DIR")
        opts.folds = len(baked) if len(baked) > 1 else 0
    else:
        baked = bake(
            uni, opts,
            from_csv=bool(v["from_csv"]),
            rule=load_splits(rule_path) if rule_path else None,
            base=load_splits(base_path) if base_path else None,
            name_to_id=category_map(s),
            where=str(rule_path or base_path or ""),
        )
    for b in baked:  # stages left empty under --allow-empty (without it, bake raised)
        empty = b.empty_warning()
        if empty:
            print(terminal(f"dvc-cuvis: warning: {empty}"), file=sys.stderr)
    if opts.folds:
        save_folds([b.config for b in baked], out_dir)
        if metrics:
            write_json(metrics, {"folds": [b.metrics for b in baked]})
        print(f"baked {len(baked)} folds ({opts.strategy}) -> {out_dir}/fold-*.json")
        return _verdict(baked)
    (result,) = baked
    save_splits(result.config, out)
    from dvc_cuvis.baking.moves import moves_of  # existing samples moved since HEAD, and why

    for line in moves_of(result, uni, opts, out, universe_path, metrics,
                         by_sample=bool(v["by_sample"])):
        print(terminal(f"dvc-cuvis: warning: {line}"), file=sys.stderr)
    if metrics:
        write_json(metrics, result.metrics)
    plots = v["plots"]
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
            print(terminal(f"dvc-cuvis: warning: {warning}"), file=sys.stderr)
    return EXIT_OK
