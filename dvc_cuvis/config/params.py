"""params.yaml sections: the defaults of every verb, so DVC tracks them as ``params``.

Each verb reads its own top-level section (``resolve:``, ``bake:``, ...).  A flag given on
the command line wins over the file; the file wins over the built-in default.  Which file is
read, and how its keys are checked, is the settings rule (:mod:`dvc_cuvis.config.settings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dvc_cuvis.config.options import did_you_mean
from dvc_cuvis.errors import ParamsError


def load_params(path: Path | str | None) -> dict[str, Any]:
    """The whole params file as a dict ({} when no file is given)."""
    if path is None:
        return {}
    p = Path(path)
    if p.is_dir():
        raise ParamsError(f"{p}: is a folder, not a params file; give the params file")
    if not p.is_file():
        raise ParamsError(f"{p}: params file not found")
    from dvc_cuvis._io import read_yaml
    from dvc_cuvis.config.bounded_yaml import check_yaml_budget
    from dvc_cuvis.errors import RepoError

    try:
        check_yaml_budget(p.read_bytes(), str(p))  # an alias bomb is refused, not expanded
        data = read_yaml(p)
    except RepoError as exc:
        raise ParamsError(str(exc)) from None
    if not isinstance(data, dict):
        raise ParamsError(f"{p}: expected a mapping of sections at the top level")
    return data


def section(
    params: Mapping[str, object], name: str, *, path: Path | str = "params.yaml"
) -> dict[str, Any]:
    """One verb's section ({} when absent); a non-mapping section is an error."""
    value = params.get(name)
    if value is None:
        near = misspelled_section(params, name) if name not in params else None
        if near is not None:  # a typo must not bake with the built-in defaults
            raise ParamsError(f"{path}: unknown section '{near}'{did_you_mean(name)} "
                              f"(without a '{name}' section, {name} would run on its "
                              "built-in defaults)")
        return {}
    if not isinstance(value, dict):
        raise ParamsError(f"{path}: section '{name}' must be a mapping, got {type(value).__name__}")
    return value


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and swaps of
    two neighbours (``bkae`` is one edit from ``bake``), each counting one."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[-1]


#: the most edits a section may lie from a verb's name to be taken for its misspelling
MAX_EDITS = 2


def misspelled_section(params: Mapping[str, object], verb: str) -> str | None:
    """The section of ``params`` that looks like a misspelled ``verb`` section, or None.

    Only a mapping (or empty) section that is no verb's name and no other tool's known
    section (:data:`~dvc_cuvis.config.specs.OTHER_SECTIONS`) counts, and only within
    :data:`MAX_EDITS` edits: other verbs' sections (``export`` and ``report`` lie two apart)
    and a ``train:`` section are left alone.  The nearest wins; ties go by name.
    """
    from dvc_cuvis.config.specs import OTHER_SECTIONS, VERBS

    if verb not in VERBS or verb in params:
        return None
    known = set(VERBS) | set(OTHER_SECTIONS)
    near = sorted((edit_distance(k, verb), k) for k, v in params.items()
                  if isinstance(k, str) and k not in known and (v is None or isinstance(v, dict)))
    return near[0][1] if near and near[0][0] <= MAX_EDITS else None


def diff_params(prefix: str, old: object, new: object) -> list[tuple[str, object, object]]:
    """``(dotted key, old, new)`` for every leaf that differs between two params trees."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[tuple[str, object, object]] = []
        for k in sorted(set(old) | set(new), key=str):
            out.extend(diff_params(f"{prefix}.{k}", old.get(k), new.get(k)))
        return out
    return [] if old == new else [(prefix, old, new)]
