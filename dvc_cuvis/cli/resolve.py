"""``dvc-cuvis resolve``: every stage of a splits.json resolved against a universe.csv."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dvc_cuvis.cli._inputs import load_inputs, module_rules
from dvc_cuvis.cli._settings import (
    EXIT_CHECK_FAILED,
    EXIT_OK,
    register_options,
    verb_parser,
)
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import RESOLVE
from dvc_cuvis.errors import and_more, terminal


def add_parser(sub: Any) -> None:
    """The ``resolve`` verb's flags (from the one spec, ``specs.RESOLVE``)."""
    p = verb_parser(sub, "resolve", "resolve every stage of a splits.json against a universe")
    register_options(p, RESOLVE)
    p.add_argument("--json", action="store_true",
                   help='print {"train": [uid...], "val": ..., "test": ..., "predict": ...}')
    p.set_defaults(func=run)


def partial_failed(res: Any, where: object, allow: bool) -> bool:
    """Print each partly matching selector once; True when that fails the command."""
    kind = "warning" if allow else "error"
    for w in res.warnings:
        print(terminal(f"dvc-cuvis: {kind}: {where}: {w.message()}"), file=sys.stderr)
    return bool(res.warnings) and not allow


def run(args: argparse.Namespace) -> int:
    """Resolve every stage of a splits.json against a universe.csv."""
    from dvc_cuvis.model.constraints import evaluate_constraints, failed_constraints
    from dvc_cuvis.model.resolution import resolve
    from dvc_cuvis.model.split_state import state
    from dvc_cuvis.model.stats import stage_stats

    s = Settings(args)
    inp = load_inputs(s)
    cfg, uni, splits_path = inp.cfg, inp.uni, inp.splits_path
    module_rules(s, inp.universe_path, uni)
    res = resolve(cfg, uni, name_to_id=inp.name_to_id, where=str(splits_path))
    results = evaluate_constraints(res, cfg.constraints,
                                   group_leakage=s.get("group_leakage", "auto"))
    failed = failed_constraints(results)
    partial = partial_failed(res, splits_path, s.flag("allow_partial"))
    if args.json:
        sys.stdout.write(json.dumps(res.as_uid_lists(), ensure_ascii=False) + "\n")
    else:
        stats = stage_stats(res)
        pinned = cfg.universe_hash
        hash_line = "not pinned"
        if pinned:
            hash_line = "matches" if pinned == uni.hash else f"DIFFERS (pinned {pinned[:12]})"
        print(terminal(f"splits:   {splits_path} ({state(cfg)})"))
        print(terminal(f"universe: {inp.universe_path} — {len(uni)} samples, "
                       f"{len(uni.source_names)} sources, hash {uni.hash[:12]} ({hash_line})"))
        print(f"{'stage':<8} {'samples':>9} {'sources':>8} {'groups':>7}")
        for name, st in stats.items():
            note = "  (empty: whole universe)" if name == "predict" and res.predict_is_all else ""
            print(f"{name:<8} {st['samples']:>9} {st['sources']:>8} {st['groups']:>7}{note}")
        for r in results:
            extra = f" — {r.reason}" if r.reason and r.status != "satisfied" else ""
            shown = ", ".join(r.offending[:5])
            more = and_more(r.count, 5)
            offend = f": {shown}{more}" if r.offending else ""
            print(terminal(f"constraint {r.kind} [{r.severity}]: {r.status}{extra}{offend}"))
    if failed or partial:
        names = [f"{r.kind} {r.status}" for r in failed]
        if partial:
            names.append(f"{len(res.warnings)} selector(s) match only partly "
                         "(--allow-partial to accept)")
        print(terminal(f"dvc-cuvis: check failed: {splits_path}: {', '.join(names)}"),
              file=sys.stderr)
        return EXIT_CHECK_FAILED
    return EXIT_OK
