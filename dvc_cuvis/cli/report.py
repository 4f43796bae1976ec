"""``dvc-cuvis report``: a self-contained HTML picture of a split (and of a change to it)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._inputs import load_inputs
from dvc_cuvis.cli._settings import EXIT_OK, Settings, register, verb_parser
from dvc_cuvis.cli.check import add_allowances, rescan_options


def add_parser(sub: Any) -> None:
    """The ``report`` verb's flags."""
    p = verb_parser(sub, "report", "write a self-contained HTML report of a split",
                    paths=("out", "universe", "splits", "categories"))
    p.add_argument("--out", metavar="PATH", help="HTML file to write (default: split-report.html; "
                   "a pipeline's report stage names its own output on its command line)")
    p.add_argument("--universe", metavar="PATH", help="universe.csv (default: universe.csv)")
    p.add_argument("--splits", metavar="PATH", help="splits.json (default: splits.json)")
    p.add_argument("--base", metavar="REV",
                   help="git revision to compare against: adds the transition heat map "
                   "(default: none)")
    p.add_argument("--repo", metavar="URL|PATH",
                   help="with --base: read REV from this repository (a path or git URL), git "
                   "alone, at the split's and universe's paths (default: this repository)")
    p.add_argument("--categories", metavar="PATH",
                   help="category name->id map: COCO json or enumerate metrics (default: none)")
    p.add_argument("--title", help="page title (default: 'Split report: <splits>')")
    p.add_argument("--no-check", dest="no_check", action="store_true", default=None,
                   help="leave the drift check out of the report (default: include it)")
    add_allowances(p)  # as check takes them, for the report's embedded check
    p.set_defaults(func=run)
    register("report", p)


def run(args: argparse.Namespace) -> int:
    """Write a self-contained HTML report of a split (and of a change to it with --base)."""
    from dvc_cuvis.drift import verify
    from dvc_cuvis.report import ReportInput, render, write
    from dvc_cuvis.splits import evaluate_constraints, resolve

    s = Settings(args)
    out = Path(s.get("out", "split-report.html"))
    inp = load_inputs(s)
    res = resolve(inp.cfg, inp.uni, name_to_id=inp.name_to_id, where=str(inp.splits_path))
    constraints = [r.to_dict() for r in evaluate_constraints(res, inp.cfg.constraints)]
    drift = None
    if not s.flag("no_check"):  # the same check `dvc-cuvis check` runs (re-scan included)
        from dvc_cuvis.digests import open_stat_cache

        cache = open_stat_cache("auto")
        current, _ = rescan_options(s, inp.universe_path, cache)
        drift = verify(inp.cfg, inp.uni, name_to_id=inp.name_to_id, lock="auto", cache=cache,
                       current=current, allow_partial=s.flag("allow_partial"),
                       allow_unpinned=s.flag("allow_unpinned"))
    diff = None
    base = s.get("base")
    repo = s.get("repo")
    if repo and not base:
        from dvc_cuvis.errors import DvcCuvisError

        raise DvcCuvisError("--repo names where --base REV is read: give --base too")
    if base:
        from dvc_cuvis.history import GitTree, diff_versions, load_pair, load_version, open_tree

        if not repo:
            tree = GitTree(".")
            diff = diff_versions(*load_pair(tree, base, None, str(tree.rel(inp.splits_path)),
                                            str(tree.rel(inp.universe_path))))
        else:  # the base from another repository, the split as it is here
            here = GitTree(".")
            splits_rel, uni_rel = str(here.rel(inp.splits_path)), str(here.rel(inp.universe_path))
            old = load_version(open_tree(repo), base, splits_rel, uni_rel, None)
            diff = diff_versions(old, load_version(here, None, splits_rel, uni_rel, None))
    title = s.get("title") or f"Split report: {inp.splits_path}"
    text = render(ReportInput(title, res, constraints, drift, inp.name_to_id, diff,
                              inp.cfg.universe_hash))
    write(out, text)
    print(f"wrote {out} ({len(text.encode()) // 1024} KiB)")
    return EXIT_OK
