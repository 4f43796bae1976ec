"""The prologue most verbs share: which universe and split, loaded, with the category map;
the module rules and the re-scan options that several verbs apply (no verb imports another)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dvc_cuvis.config.settings import Settings
from dvc_cuvis.errors import DvcCuvisError


@dataclass
class Inputs:
    """A split and the universe it is resolved against, as named by the settings."""

    universe_path: Path
    splits_path: Path
    cfg: Any  # DataSplitConfig
    uni: Any  # Universe
    name_to_id: dict[str, int] | None


def split_paths(s: Settings) -> tuple[Path, Path]:
    """universe.csv and splits.json: flag > the verb's section > resolve > bake > default.

    diff, log, report and check name the same files as the pipeline's bake stage unless told
    otherwise, so a repository's params.yaml is enough for every verb.
    """
    resolve_s, bake_s = s.of("resolve"), s.of("bake")

    def pick(name: str, bake_key: str, default: str) -> Path:
        own = s.given(name)
        if own is not None:
            return Path(own)
        for verb, sect, key in (("resolve", resolve_s, name), ("bake", bake_s, bake_key)):
            value = sect.get(key)
            if isinstance(value, str) and value:
                return Path(s.from_file(key, value, verb))
        return Path(default)

    return pick("universe", "universe", "universe.csv"), pick("splits", "out", "splits.json")


def _params_origin(path: Path, what: str, s: Settings) -> str | None:
    """The params key that named ``path`` (``params.yaml: bake.universe``), else None: an
    error about a file names where its path came from, never a flag the user did not type."""
    if s.typed(what):
        return None
    own = s.given(what)
    if own is not None:
        return s.origin(what) if Path(own) == path else None
    for verb, key in (("resolve", what), ("bake", "out" if what == "splits" else what)):
        value = s.of(verb).get(key)
        if isinstance(value, str) and value and Path(s.from_file(key, value, verb)) == path:
            return f"{s.where}: {verb}.{key}"
    return None


def require_file(path: Path, what: str, s: Settings) -> None:
    """One line for a missing input; inside a DVC pipeline it suggests ``dvc repro``."""
    if path.exists():
        return
    from dvc_cuvis.paths import repo_root

    pipeline = (s.base / "dvc.yaml").is_file() or Path("dvc.yaml").is_file()
    if pipeline:
        from dvc_cuvis.check.failed_run import explain_missing

        removed = explain_missing(path)  # a failed `dvc repro` removed it: repro fails again
        if removed is not None:
            raise DvcCuvisError(removed)
        hint = "; run `dvc repro` to create it (or `dvc pull` to fetch it)"
    elif s.file is None and not s.typed(what) and repo_root(Path.cwd()) is None:
        hint = (f"; {Path.cwd()} is not inside a dataset repository (no git or DVC folder "
                f"here or above, no params.yaml): run it in your dataset repository, or give "
                f"--{what} PATH")
    else:
        hint = f"; give --{what} PATH"
    origin = _params_origin(path, what, s)
    named = f" ({path} is named by {origin})" if origin else ""
    raise DvcCuvisError(f"{path}: {what} file not found{hint}{named}")


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


def module_rules(s: Settings, universe_path: Path, uni: Any = None) -> None:
    """Apply the module's rules to the universe (flag > params > what the file states);
    print the module's notes; a refused row raises (exit 2)."""
    from dvc_cuvis.interop.modules import check_module_rules, module_for

    given = s.get("module")
    if uni is None:
        module, uni = module_for(universe_path, given)
    else:
        from dvc_cuvis.interop.modules import stated_module

        module = given or stated_module(uni)
    if module is None:
        return
    for note in check_module_rules(uni, module):
        print(f"dvc-cuvis: note: {universe_path}: {note}", file=sys.stderr)


def rescan_options(s: Settings, universe_path: Path, cache: Any) -> tuple[Any, str]:
    """How to re-enumerate the data (EnumerateOptions), or None and why not.

    Known when the params file says how universe.csv was made; the check enumerates only if
    dvc.lock cannot vouch for the data, and under ``--deep`` through its own fresh cache.
    """
    from dvc_cuvis.sources import EnumerateOptions

    if s.flag("no_enumerate"):
        return None, "--no-enumerate"
    return EnumerateOptions.for_rescan(s.of("enumerate"), s.base, universe_path, cache, s.where)
