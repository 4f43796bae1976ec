"""``dvc-cuvis check``: the drift check of a split against its universe, data and dvc.lock."""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dvc_cuvis.cli._inputs import module_rules, require_file, split_paths
from dvc_cuvis.cli._settings import named_by, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import CHECK

if TYPE_CHECKING:
    from dvc_cuvis.check.options import CheckOptions
    from dvc_cuvis.check.staged import Staged
    from dvc_cuvis.model.universe import Universe


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
    from dvc_cuvis.check.drift import verify

    with _no_cyclic_gc():
        s = Settings(args)
        universe_path, splits_path = split_paths(s)
        with _staged(s, splits_path) as staged:
            uni = _inputs(s, universe_path, splits_path, staged)
            report = verify(splits_path, uni or universe_path, _options(s, universe_path, staged))
            sys.stdout.write(report.to_json() if args.json else report.render())
            report.write(s.get("metrics"), s.get("plots"))
        return report.exit_code


@contextlib.contextmanager
def _staged(s: Settings, splits_path: Path) -> Iterator[Staged | None]:
    """``--staged``: git's index as the commit records it (None: the working tree)."""
    if not s.args.staged:
        yield None
        return
    from dvc_cuvis.check.staged import staged_view

    folder = splits_path.parent
    with staged_view(folder if folder.is_dir() else Path.cwd(),
                     [s.file] if s.file else []) as staged:
        yield staged


def _inputs(s: Settings, universe_path: Path, splits_path: Path,
            staged: Staged | None) -> Universe | None:
    """Refuse a missing input in one line; apply the module's rules; the staged universe
    (the commit's rows, their files on disk), else None (read from ``universe_path``)."""
    uni = None
    if staged is None or not staged.holds(splits_path):
        require_file(splits_path, "splits", s)
    if staged is not None and staged.holds(universe_path):
        uni = staged.universe(universe_path)
    else:
        require_file(universe_path, "universe", s)
    module_rules(s, universe_path, uni)
    return uni


#: The setting a parameter of CheckOptions is read from, where the names differ.
_SETTING = {"stages": "stage"}


def _options(s: Settings, universe_path: Path, staged: Staged | None) -> CheckOptions:
    """The check's options; an impossible one is named by its flag or params key."""
    from dvc_cuvis.check.options import CheckOptions

    with named_by(s, _SETTING):
        return CheckOptions.from_settings(s, universe_path, staged=staged)
