"""params.yaml sections: the defaults of every verb, so DVC tracks them as ``params``.

Each verb reads its own top-level section (``resolve:``, ``bake:``, ...).  A flag given on
the command line wins over the file; the file wins over the built-in default.  Which file is
read, and how its keys are checked, is the CLI's rule (:mod:`dvc_cuvis.cli._settings`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dvc_cuvis.errors import ParamsError


def load_params(path: Path | str | None) -> dict[str, Any]:
    """The whole params file as a dict ({} when no file is given)."""
    if path is None:
        return {}
    p = Path(path)
    if not p.is_file():
        raise ParamsError(f"{p}: params file not found")
    from dvc_cuvis._io import read_yaml
    from dvc_cuvis.errors import RepoError

    try:
        data = read_yaml(p)
    except RepoError as exc:
        raise ParamsError(str(exc)) from None
    if not isinstance(data, dict):
        raise ParamsError(f"{p}: expected a mapping of sections at the top level")
    return data


def section(
    params: dict[str, Any], name: str, *, path: Path | str = "params.yaml"
) -> dict[str, Any]:
    """One verb's section ({} when absent); a non-mapping section is an error."""
    value = params.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParamsError(f"{path}: section '{name}' must be a mapping, got {type(value).__name__}")
    return value


def diff_params(prefix: str, old: Any, new: Any) -> list[tuple[str, Any, Any]]:
    """``(dotted key, old, new)`` for every leaf that differs between two params trees."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[tuple[str, Any, Any]] = []
        for k in sorted(set(old) | set(new), key=str):
            out.extend(diff_params(f"{prefix}.{k}", old.get(k), new.get(k)))
        return out
    return [] if old == new else [(prefix, old, new)]
