"""``dvc-cuvis lineage``: which dataset version trained each model, and whether it changed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._settings import (
    EXIT_CHECK_FAILED,
    EXIT_OK,
    register_options,
    verb_parser,
)
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import LINEAGE
from dvc_cuvis.errors import DvcCuvisError


def add_parser(sub: Any) -> None:
    """The ``lineage`` verb's flags (its options from ``specs.LINEAGE``)."""
    p = verb_parser(sub, "lineage", "which dataset version trained each model, and whether "
                    "its split and data have changed since")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="a Lightning .ckpt, a trainrun output folder, or a saved "
                        "dataset_lineage.json")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"),
                   help="whether models A and B were tested on the same test set, and "
                        "whether either trained on the other's test samples (default: each "
                        "PATH's version against --rev)")
    register_options(p, LINEAGE)
    p.add_argument("--json", action="store_true", help="machine-readable")
    p.set_defaults(func=run)


def _model(file: str, record: dict[str, Any], s: Settings) -> dict[str, Any]:
    from dvc_cuvis.train.lineage_compare import dataset_of, open_repository, status

    try:
        tree = open_repository(record, str(s.get("repo")) if s.get("repo") else None)
        now = status(record, tree, s.get("rev"))
    except DvcCuvisError as exc:
        raise DvcCuvisError(f"{file}: {exc}") from None
    return {"path": file, "dataset": dataset_of(record), "rev": now["rev"],
            "current": now["current"], "changes": now["changes"]}


def _short(value: Any, n: int = 12) -> str:
    return str(value)[:n] if value else "-"


def _render_model(m: dict[str, Any]) -> list[str]:
    ds, ch = m["dataset"], m["changes"]
    state = {True: "dirty", False: "clean"}.get(ds.get("dirty"), "dirty state unknown")
    stages = ", ".join(f"{k} {'all' if v is None else v}" for k, v in
                       (ds.get("stages") or {}).items())
    data = "; ".join(f"{d['path']} {d['md5']} ({d['source']})" for d in ds.get("data") or [])
    check = ds.get("check") or {}
    lines = [m["path"],
             f"  trained on: commit {_short(ds.get('commit'), 8)} ({state}), {ds.get('splits')} "
             f"sha256 {_short(ds.get('splits_sha256'))}, universe_hash "
             f"{_short(ds.get('universe_hash'))}",
             f"  samples: {stages}" + (f"; data: {data}" if data else ""),
             f"  check: {check.get('mode')}, {check.get('verdict')}; dvc_cuvis "
             f"{ds.get('dvc_cuvis')} ({ds.get('module')})"]
    if m["current"]:
        lines.append(f"  {m['rev']}: current (the same split, universe.csv and data)")
        return lines
    from dvc_cuvis.train.lineage_compare import describe_text

    lines.append(f"  {m['rev']}: STALE: {describe_text(ch)}")
    return lines


def _compare(paths: list[str], s: Settings, as_json: bool) -> int:
    from dvc_cuvis.train.lineage_compare import compare_records, one_record, open_repository

    (fa, ra), (fb, rb) = (one_record(Path(p)) for p in paths)
    repo = str(s.get("repo")) if s.get("repo") else None
    trees = tuple(_tree_or_none(open_repository, r, repo) for r in (ra, rb))
    out = {"a": fa, "b": fb, **compare_records(ra, rb, (trees[0], trees[1]))}
    if as_json:
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        return EXIT_OK
    t = out["test_samples"]
    print(f"A: {fa}\nB: {fb}")
    print(f"test sets: {'identical' if out['test_sets_identical'] else 'different'} "
          f"({t['a']} and {t['b']} samples, {t['shared']} shared)")
    for key, text in (("b_fit_in_a_test", "B's train/val samples in A's test set"),
                      ("a_fit_in_b_test", "A's train/val samples in B's test set")):
        o = out[key]
        first = f" ({', '.join(o['first'])}{', ...' if o['count'] > len(o['first']) else ''})"
        print(f"{text}: {o['count']}" + (first if o["count"] else ""))
    print(out["verdict"])
    return EXIT_OK


def _tree_or_none(opener: Any, record: dict[str, Any], repo: str | None) -> Any:
    try:
        return opener(record, repo)
    except DvcCuvisError:  # no repository: the split's own ids are enough
        return None


def run(args: argparse.Namespace) -> int:
    """Each model's dataset version, and whether the split and data at ``--rev`` are still it."""
    from dvc_cuvis.train.lineage_compare import read_records

    s = Settings(args)
    if args.compare:
        if args.paths:
            raise DvcCuvisError("lineage --compare A B takes no other PATH")
        return _compare(list(args.compare), s, args.json)
    if not args.paths:
        raise DvcCuvisError("lineage needs a PATH (a .ckpt, a trainrun output folder or a "
                            "dataset_lineage.json), or --compare A B")
    models = [_model(f, r, s) for p in args.paths for f, r in read_records(Path(p))]
    if args.json:
        sys.stdout.write(json.dumps({"models": models}, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write("\n".join(line for m in models for line in _render_model(m)) + "\n")
    stale = any(not m["current"] for m in models)
    return EXIT_CHECK_FAILED if stale and s.flag("fail_on_stale") else EXIT_OK
