"""The prologue most verbs share: which universe and split, loaded, with the category map;
the module rules and the re-scan options that several verbs apply (no verb imports another)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dvc_cuvis.config.inputs import require_file as config_require_file
from dvc_cuvis.config.inputs import split_paths
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.errors import DvcCuvisError

if TYPE_CHECKING:
    from cuvis_ai_schemas.training.data import DataSplitConfig

    from dvc_cuvis.digests.stat_cache import StatCache
    from dvc_cuvis.model.universe import Universe
    from dvc_cuvis.sources import EnumerateOptions

__all__ = [
    "Inputs",
    "category_map",
    "load_inputs",
    "module_rules",
    "require_file",
    "rescan_options",
    "split_paths",
]


@dataclass(frozen=True)
class Inputs:
    """A split and the universe it is resolved against, as named by the settings."""

    universe_path: Path
    splits_path: Path
    cfg: DataSplitConfig
    uni: Universe
    name_to_id: dict[str, int] | None


def require_file(path: Path, what: str, s: Settings) -> None:
    """One line for a missing input (:func:`dvc_cuvis.config.inputs.require_file`); an
    output a failed `dvc repro` removed is said to be that, with the command that brings it
    back (`dvc repro` would fail again)."""
    if not path.exists() and ((s.base / "dvc.yaml").is_file() or Path("dvc.yaml").is_file()):
        from dvc_cuvis.check.failed_run import explain_missing

        removed = explain_missing(path)
        if removed is not None:
            raise DvcCuvisError(removed)
    config_require_file(path, what, s)


def category_map(s: Settings) -> dict[str, int] | None:
    """The category name -> id map named by ``categories`` (None when not set)."""
    from dvc_cuvis.model.categories import load_category_map

    categories = s.get("categories")
    return load_category_map(categories) if categories else None


def load_inputs(s: Settings) -> Inputs:
    """Read the split, its universe and the category map named by the settings."""
    from dvc_cuvis.model.splits import load_splits
    from dvc_cuvis.model.universe_io import read_universe

    universe_path, splits_path = split_paths(s)
    require_file(splits_path, "splits", s)
    require_file(universe_path, "universe", s)
    cfg = load_splits(splits_path)
    uni = read_universe(universe_path)
    return Inputs(universe_path, splits_path, cfg, uni, category_map(s))


def module_rules(s: Settings, universe_path: Path, uni: Universe | None = None) -> None:
    """Apply the module's rules to the universe (flag > params > what the file states);
    print the module's notes; a refused row raises (exit 2)."""
    from dvc_cuvis.interop.modules import module_notes

    for note in module_notes(universe_path, s.get("module"), uni):
        print(f"dvc-cuvis: note: {universe_path}: {note}", file=sys.stderr)


def rescan_options(s: Settings, universe_path: Path, cache: StatCache,
                   ) -> tuple[EnumerateOptions | None, str]:
    """How to re-enumerate the data (EnumerateOptions), or None and why not.

    Known when the params file says how universe.csv was made; the check enumerates only if
    dvc.lock cannot vouch for the data, and under ``--deep`` through its own fresh cache.
    """
    from dvc_cuvis.sources import EnumerateOptions

    if s.flag("no_enumerate"):
        return None, "--no-enumerate"
    return EnumerateOptions.for_rescan(s.of("enumerate"), s.base, universe_path, cache, s.where)
