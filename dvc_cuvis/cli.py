"""``dvc-cuvis`` command line: a thin layer over the library.

Exit codes (scripts and CI rely on them): 0 ok, 1 a check failed, 2 bad input or usage.
Every error is one line on stderr naming the file, row or selector; no tracebacks
(set ``DVC_CUVIS_DEBUG=1`` to see one).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dvc_cuvis import __version__
from dvc_cuvis.errors import DvcCuvisError, ParamsError

EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, exit 2 (argparse's own convention)
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"dvc-cuvis: error: {message}\n")


def _setting(
    args: argparse.Namespace, sect: dict[str, Any], name: str, default: Any, kind: type = str
) -> Any:
    """Flag value if given, else the params.yaml section's value, else ``default``."""
    value = getattr(args, name, None)
    if value is not None:
        return value
    if name in sect:
        value = sect[name]
        if kind is not Any and value is not None and not isinstance(value, kind):
            raise ParamsError(
                f"params.yaml: {args.command}.{name} must be {kind.__name__}, got {value!r}"
            )
        return value
    return default


def _params(args: argparse.Namespace, verb: str) -> dict[str, Any]:
    from dvc_cuvis.params import load_params, section

    path = getattr(args, "params", None)
    return section(load_params(path), verb, path=path or "params.yaml")


# -- resolve ------------------------------------------------------------------------------


def cmd_resolve(args: argparse.Namespace) -> int:
    """Resolve every stage of a splits.json against a universe.csv."""
    from dvc_cuvis.categories import load_category_map
    from dvc_cuvis.splits import (
        evaluate_constraints,
        failed_constraints,
        load_splits,
        resolve,
        stage_stats,
        state,
    )
    from dvc_cuvis.universe import read_universe

    sect = _params(args, "resolve")
    universe_path = Path(_setting(args, sect, "universe", "universe.csv"))
    splits_path = Path(_setting(args, sect, "splits", "splits.json"))
    categories = _setting(args, sect, "categories", None)
    leakage = _setting(args, sect, "group_leakage", "auto")

    cfg = load_splits(splits_path)
    uni = read_universe(universe_path)
    name_to_id = load_category_map(categories) if categories else None
    res = resolve(cfg, uni, name_to_id=name_to_id, where=str(splits_path))
    results = evaluate_constraints(res, cfg.constraints, group_leakage=leakage)
    failed = failed_constraints(results)

    for w in res.warnings:
        print(f"dvc-cuvis: warning: {splits_path}: {w.message()}", file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps(res.as_uid_lists(), ensure_ascii=False) + "\n")
    else:
        stats = stage_stats(res)
        pinned = cfg.universe_hash
        hash_line = "not pinned"
        if pinned:
            hash_line = "matches" if pinned == uni.hash else f"DIFFERS (pinned {pinned[:12]})"
        print(f"splits:   {splits_path} ({state(cfg)})")
        print(f"universe: {universe_path} — {len(uni)} samples, {len(uni.source_names)} "
              f"sources, hash {uni.hash[:12]} ({hash_line})")
        print(f"{'stage':<8} {'samples':>9} {'sources':>8} {'groups':>7}")
        for name, st in stats.items():
            note = "  (empty: whole universe)" if name == "predict" and res.predict_is_all else ""
            print(f"{name:<8} {st['samples']:>9} {st['sources']:>8} {st['groups']:>7}{note}")
        for r in results:
            extra = f" — {r.reason}" if r.reason and r.status != "satisfied" else ""
            shown = ", ".join(r.offending[:5])
            more = f" (+{r.count - 5} more)" if r.count > 5 else ""
            offend = f": {shown}{more}" if r.offending else ""
            print(f"constraint {r.kind} [{r.severity}]: {r.status}{extra}{offend}")
    if failed:
        names = ", ".join(f"{r.kind} {r.status}" for r in failed)
        print(f"dvc-cuvis: check failed: {splits_path}: {names}", file=sys.stderr)
        return EXIT_CHECK_FAILED
    return EXIT_OK


# -- parser -------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every verb."""
    parser = _Parser(
        prog="dvc-cuvis",
        description="Reproducible, reviewable Cuvis.AI data splits as a DVC pipeline.",
    )
    parser.add_argument("--version", action="version", version=f"dvc-cuvis {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("resolve", help="resolve every stage of a splits.json against a universe")
    p.add_argument("--universe", help="universe.csv (default: params 'resolve.universe' or "
                   "./universe.csv)")
    p.add_argument("--splits", help="splits.json (default: params 'resolve.splits' or "
                   "./splits.json)")
    p.add_argument("--categories", help="category name->id map for 'categories' selectors "
                   "(COCO json, enumerate metrics, or {name: id} json)")
    p.add_argument("--group-leakage", dest="group_leakage",
                   choices=["auto", "error", "warn", "off"],
                   help="group leakage check (auto: error when the universe has a group column)")
    p.add_argument("--params", help="params.yaml to read the 'resolve' section from")
    p.add_argument("--json", action="store_true",
                   help='print {"train": [uid...], "val": ..., "test": ..., "predict": ...}')
    p.set_defaults(func=cmd_resolve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dvc-cuvis`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except DvcCuvisError as exc:
        print(f"dvc-cuvis: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("dvc-cuvis: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except MemoryError:
        print("dvc-cuvis: error: out of memory", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # never a traceback for users; opt in with DVC_CUVIS_DEBUG=1
        if os.environ.get("DVC_CUVIS_DEBUG"):
            raise
        print(f"dvc-cuvis: internal error: {type(exc).__name__}: {exc} "
              "(please report it; set DVC_CUVIS_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
