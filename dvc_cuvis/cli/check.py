"""``dvc-cuvis check``: the drift check of a split against its universe, data and dvc.lock."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._inputs import category_map, require_file, split_paths
from dvc_cuvis.cli._settings import Key, Settings, register, verb_parser
from dvc_cuvis.cli.resolve import LEAKAGE, add_module, module_rules


def add_allowances(p: argparse.ArgumentParser) -> None:
    """The check's two allowances, for every verb that runs the check (check, report)."""
    p.add_argument("--allow-partial", dest="allow_partial", action="store_true", default=None,
                   help="in the check, a selector matching only some of its ids is a warning, "
                   "not a failure (default: failure)")
    p.add_argument("--allow-unpinned", dest="allow_unpinned", action="store_true",
                   default=None, help="the check accepts a split that pins no universe_hash "
                   "(default: a failure: nothing ties it to its universe)")


def add_parser(sub: Any) -> None:
    """The ``check`` verb's flags."""
    p = verb_parser(sub, "check", "drift check: split vs universe vs data vs dvc.lock",
                    paths=("universe", "splits", "lock", "data_dir", "categories", "stat_cache",
                           "metrics", "plots"),
                    extra={"checks": Key((str, list))})
    p.add_argument("--universe", metavar="PATH", help="universe.csv (default: universe.csv)")
    p.add_argument("--splits", metavar="PATH", help="splits.json (default: splits.json)")
    p.add_argument("--deep", action="store_true", default=None,
                   help="re-hash every file, trusting no cache and not dvc.lock (default: off)")
    p.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    p.add_argument("--lock", metavar="PATH",
                   help="dvc.lock to compare against (default: the repository's)")
    p.add_argument("--no-lock", dest="no_lock", action="store_true", default=None,
                   help="skip the staleness check against dvc.lock (default: run it)")
    p.add_argument("--no-enumerate", dest="no_enumerate", action="store_true", default=None,
                   help="do not re-scan the data named in the params file's enumerate section "
                   "(default: re-scan, to see added, removed and renamed samples)")
    p.add_argument("--data-dir", dest="data_dir", metavar="DIR",
                   help="folder that {DATA_DIR} stands for in GUI-authored splits "
                   "(default: inferred from the universe)")
    p.add_argument("--categories", metavar="PATH",
                   help="category name->id map for 'categories' selectors (default: none)")
    p.add_argument("--group-leakage", dest="group_leakage", choices=LEAKAGE,
                   help="group leakage check (default: auto)")
    add_allowances(p)
    add_module(p)
    p.add_argument("--checks", help="comma list of universe,content,selection,constraints,"
                   "staleness (default: all)")
    p.add_argument("--stat-cache", dest="stat_cache", metavar="PATH",
                   help="stat cache file, or 'none' (default: .dvc/tmp/dvc-cuvis/)")
    p.add_argument("--metrics", metavar="PATH",
                   help="metrics json: ok and each check's status (default: none)")
    p.add_argument("--plots", metavar="DIR",
                   help="folder for DVC plot data, check.json (default: none)")
    p.set_defaults(func=run)
    register("check", p)


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector for one short command.

    A check builds a few hundred thousand small objects (listings, index entries) that
    live until it ends; each collection would walk all of them again, for nothing.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def run(args: argparse.Namespace) -> int:
    """Drift check of a split against its universe, the data, and dvc.lock."""
    with _no_cyclic_gc():
        return _check(Settings(args))


def rescan_options(s: Settings, universe_path: Path, cache: Any) -> tuple[Any, str]:
    """How to re-enumerate the data (EnumerateOptions), or None and why not.

    Known when the params file says how universe.csv was made; the check enumerates only if
    dvc.lock cannot vouch for the data, and under ``--deep`` through its own fresh cache.
    """
    from dvc_cuvis.sources import EnumerateOptions

    if s.flag("no_enumerate"):
        return None, "--no-enumerate"
    return EnumerateOptions.for_rescan(s.of("enumerate"), s.base, universe_path, cache, s.where)


def _check(s: Settings) -> int:
    from dvc_cuvis.drift import CHECKS, verify
    from dvc_cuvis.stat_cache import open_stat_cache

    universe_path, splits_path = split_paths(s)
    require_file(splits_path, "splits", s)
    require_file(universe_path, "universe", s)
    module_rules(s, universe_path)
    cache = open_stat_cache(s.get("stat_cache") or "auto")
    spec = s.get("checks")
    checks = CHECKS if not spec else (spec.split(",") if isinstance(spec, str) else spec)
    current, why_not = (rescan_options(s, universe_path, cache) if "universe" in checks
                        else (None, ""))
    lock: str | Path | None = "auto"
    if s.flag("no_lock"):
        lock = None
    elif s.get("lock"):
        lock = Path(s.get("lock"))
    report = verify(
        splits_path, universe_path,
        current=current,
        deep=s.flag("deep"),
        name_to_id=category_map(s),
        group_leakage=s.get("group_leakage", "auto"),
        lock=lock,
        data_dir=s.get("data_dir"),
        cache=cache,
        checks=checks,
        allow_partial=s.flag("allow_partial"),
        allow_unpinned=s.flag("allow_unpinned"),
    )
    if current is None and why_not:  # say what the universe check could not see
        universe = report.finding("universe")
        if "dvc.lock vouches" not in universe.summary:
            universe.details["data_on_disk"] = f"not re-scanned: {why_not}"
    if s.args.json:
        doc = {**report.to_dict(), "hashing": cache.stats()}
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(report.render())
    metrics, plots = s.get("metrics"), s.get("plots")
    if metrics or plots:
        from dvc_cuvis._io import write_json

        if metrics:
            write_json(metrics, {"ok": report.ok,
                                 **{f.check: f.status for f in report.findings}})
        if plots:  # one bar per check: 1 = drift or violation, for `dvc plots diff`
            write_json(Path(plots) / "check.json",
                       [{"check": f.check, "status": f.status, "failed": int(f.failed)}
                        for f in report.findings])
    return report.exit_code
