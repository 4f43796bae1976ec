"""Which universe.csv and splits.json a verb reads, and one line when either is missing.

Every verb that reads a split names its files by the same rule (flag > the verb's section >
``resolve`` > ``bake`` > default), so a repository's params.yaml is enough for each; the
verbs' options values (``FetchOptions``, ``ExportOptions``, ``ResolveOptions``) take their
paths from here, and an error about a missing file names where its path came from.
"""

from __future__ import annotations

from pathlib import Path

from dvc_cuvis.config.settings import Settings
from dvc_cuvis.errors import DvcCuvisError

__all__ = ["require_file", "split_paths"]


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
    from dvc_cuvis.paths.roots import repo_root

    pipeline = (s.base / "dvc.yaml").is_file() or Path("dvc.yaml").is_file()
    if pipeline:
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
