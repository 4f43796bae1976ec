"""``dvc-cuvis diff`` and ``dvc-cuvis log``: a split's history between git revisions."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._inputs import split_paths
from dvc_cuvis.cli._settings import EXIT_OK, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import DIFF, LOG
from dvc_cuvis.errors import DvcCuvisError, terminal


def add_parser(sub: Any) -> None:
    """The ``diff`` and ``log`` verbs' flags (their options from ``specs.DIFF``/``LOG``)."""
    p = verb_parser(sub, "diff", "per-sample split changes between two git revisions")
    p.add_argument("revs", nargs="*", metavar="REV",
                   help="REV_A [REV_B] (default: HEAD against the workspace)")
    register_options(p, DIFF)
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--md", action="store_true", help="markdown, for a pull-request comment")
    fmt.add_argument("--json", action="store_true", help="machine-readable")
    p.set_defaults(func=run_diff)

    p = verb_parser(sub, "log", "commits that changed the split, with stage counts")
    p.add_argument("rev", nargs="?", default="HEAD", help="revision to start from "
                   "(default: HEAD)")
    register_options(p, LOG)
    p.add_argument("--json", action="store_true", help="machine-readable")
    p.set_defaults(func=run_log)


def repo_paths(s: Settings, tree: Any) -> tuple[str, str, str | None]:
    """Repository-relative splits, universe and params paths of a split's history."""
    if getattr(s.args, "repo", None):  # another repository: paths inside it, as given
        universe = Path(s.args.universe or "universe.csv")
        splits = Path(s.args.splits or "splits.json")
        if s.args.fold is not None:
            splits = Path(s.args.folds_dir or "splits") / f"fold-{s.args.fold}.json"
        return splits.as_posix(), universe.as_posix(), "params.yaml"
    universe, splits = split_paths(s)
    fold = s.get("fold")
    if fold is not None:
        folds_dir = s.get("folds_dir") or s.from_file(
            "out_dir", s.of("bake").get("out_dir") or "splits", "bake")
        splits = Path(folds_dir) / f"fold-{fold}.json"
    params = str(tree.rel(s.file)) if s.file is not None else None
    return str(tree.rel(splits)), str(tree.rel(universe)), params


def run_diff(args: argparse.Namespace) -> int:
    """Per-sample difference of a split between two revisions (default HEAD vs workspace)."""
    from dvc_cuvis.model.compare import diff_versions
    from dvc_cuvis.review.history import load_pair, open_tree
    from dvc_cuvis.review.render import render_markdown, render_text

    s = Settings(args)
    tree = open_tree(args.repo)
    splits, universe, params = repo_paths(s, tree)
    revs = list(args.revs)
    if len(revs) > 2:
        raise DvcCuvisError("diff takes at most two revisions: [REV_A [REV_B]]")
    if args.repo and not revs:
        raise DvcCuvisError(f"diff --repo {args.repo} needs REV_A [REV_B] (REV_B defaults to "
                            "HEAD; another repository has no workspace to compare with)")
    rev_a = revs[0] if revs else "HEAD"
    rev_b = revs[1] if len(revs) == 2 else ("HEAD" if args.repo else None)
    d = diff_versions(*load_pair(tree, rev_a, rev_b, splits, universe, params))
    every = s.flag("all")
    if args.json:
        sys.stdout.write(json.dumps(d.to_dict(limit=None if every else 200),
                                    ensure_ascii=False, default=str) + "\n")
    elif args.md:
        sys.stdout.write(render_markdown(d, limit=None if every else 20,
                                         by_sample=s.flag("by_sample")))
    else:
        sys.stdout.write(render_text(d, limit=None if every else 20,
                                     by_sample=s.flag("by_sample")))
    return EXIT_OK


def run_log(args: argparse.Namespace) -> int:
    """Commits that changed the split, with per-stage counts and samples moved."""
    from dvc_cuvis.review.history import open_tree
    from dvc_cuvis.review.log import split_log

    s = Settings(args)
    tree = open_tree(args.repo)
    splits, universe, _ = repo_paths(s, tree)
    entries = list(split_log(tree, splits, universe, rev=args.rev,
                             max_count=s.get("max_count")))
    if args.json:
        sys.stdout.write(json.dumps([e.__dict__ for e in entries], ensure_ascii=False) + "\n")
        return EXIT_OK
    print(f"{'commit':<9} {'date':<10} {'train':>7} {'val':>6} {'test':>6} {'moved':>6} "
          f"{'+new':>5} {'-gone':>5} {'~bytes':>6}  {'universe':<12}  author: subject")

    def num(v: int | None) -> str:
        return "-" if v is None else str(v)

    for e in entries:
        print(f"{e.sha:<9} {e.date:<10} {e.counts['train']:>7} {e.counts['val']:>6} "
              f"{e.counts['test']:>6} {num(e.moved):>6} {num(e.added):>5} {num(e.removed):>5} "
              f"{num(e.content):>6}  "
              f"{e.universe_hash:<12}  {terminal(e.author)}: {terminal(e.subject)}")
    return EXIT_OK
