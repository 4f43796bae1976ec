"""``dvc-cuvis check``: the drift check of a split against its universe, data and dvc.lock."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dvc_cuvis.cli._inputs import (
    category_map,
    module_rules,
    require_file,
    rescan_options,
    split_paths,
)
from dvc_cuvis.cli._settings import register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import CHECK

if TYPE_CHECKING:
    from dvc_cuvis.check.staged import Staged


def add_parser(sub: Any) -> None:
    """The ``check`` verb's flags (from the one spec, ``specs.CHECK``)."""
    p = verb_parser(sub, "check", "drift check: split vs universe vs data vs dvc.lock")
    register_options(p, CHECK)
    p.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    p.add_argument("--staged", action="store_true",
                   help="check what `git commit` records: the split, universe and dvc.lock as "
                        "git's index holds them (the pre-commit hook's mode; default: the "
                        "working tree)")
    p.set_defaults(func=run)


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
        s = Settings(args)
        if not args.staged:
            return _check(s, None)
        from dvc_cuvis.check.staged import staged_view

        folder = split_paths(s)[1].parent
        with staged_view(folder if folder.is_dir() else Path.cwd(),
                         [s.file] if s.file else []) as staged:
            return _check(s, staged)


def _stages(s: Settings) -> tuple[str, ...] | None:
    """The ``--stage`` values (None: every stage is checked)."""
    value = s.get("stage")
    if not value:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


def _lock(s: Settings) -> str | Path | None:
    """The dvc.lock to compare with: ``--lock``, none under ``--no-lock``, else found."""
    if s.flag("no_lock"):
        return None
    return Path(s.get("lock")) if s.get("lock") else "auto"


def _check(s: Settings, staged: Staged | None) -> int:
    from dvc_cuvis.check.drift import CHECKS, verify
    from dvc_cuvis.digests.stat_cache import open_stat_cache

    universe_path, splits_path = split_paths(s)
    uni = None
    if staged is None or not staged.holds(splits_path):
        require_file(splits_path, "splits", s)
    if staged is not None and staged.holds(universe_path):
        uni = staged.universe(universe_path)  # the commit's rows; their files on disk
    else:
        require_file(universe_path, "universe", s)
    module_rules(s, universe_path, uni)
    cache = open_stat_cache(s.get("stat_cache") or "auto")
    spec = s.get("checks")
    checks = CHECKS if not spec else (spec.split(",") if isinstance(spec, str) else spec)
    current, why_not = (rescan_options(s, universe_path, cache) if "universe" in checks
                        else (None, ""))
    report = verify(
        splits_path, uni or universe_path,
        current=current,
        deep=s.flag("deep"),
        name_to_id=category_map(s),
        group_leakage=s.get("group_leakage"),
        adjacent_frames=s.get("adjacent_frames"),
        adjacent_k=s.get("adjacent_k"),
        content_duplicate=s.get("content_duplicate"),
        near_duplicate=s.get("near_duplicate"),
        summaries=s.get("summaries"),
        lock=_lock(s),
        data_dir=s.get("data_dir"),
        cache=cache,
        checks=checks,
        allow_partial=s.flag("allow_partial"),
        allow_unpinned=s.flag("allow_unpinned"),
        staged=staged,
        stages=_stages(s),
    )
    if current is None and why_not:  # say what the universe check could not see
        universe = report.finding("universe")
        if "dvc.lock vouches" not in universe.summary:
            universe.details["data_on_disk"] = f"not re-scanned: {why_not}"
    if s.args.json:
        doc = {**report.to_dict(), "hashing": report.hashing}
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(report.render())
    metrics, plots = s.get("metrics"), s.get("plots")
    if metrics or plots:
        from dvc_cuvis._io import write_json

        if metrics:
            write_json(metrics, {"ok": report.ok,
                                 **{f.check: f.status for f in report.findings},
                                 **_duplicate_counts(report)})
        if plots:  # one bar per check: 1 = drift or violation, for `dvc plots diff`
            write_json(Path(plots) / "check.json",
                       [{"check": f.check, "status": f.status, "failed": int(f.failed)}
                        for f in report.findings])
    return report.exit_code


def _duplicate_counts(report: Any) -> dict[str, int]:
    """The duplicate checks' counts for the metrics file (none when they did not run)."""
    found = next((f for f in report.findings if f.check == "constraints"), None)
    counts = found.details.get("duplicates") if found is not None else None
    if not isinstance(counts, dict):
        return {}
    return {"content_duplicates": int(counts["exact"]), "near_duplicates": int(counts["near"]),
            "unsigned_frames": int(counts["unsigned"])}
