"""YAML read within a budget of alias expansions and nesting.

Every verb reads params.yaml, and ``diff`` and ``log`` read it (and dvc.lock) at revisions a
pull request chose.  A
"billion laughs" file of a kilobyte (anchors whose aliases repeat earlier aliases) loads into
a small graph of shared objects, but every walk or print of it is exponential: ``diff --md``
printed megabytes for one.  The YAML's events are counted before anything is built: each alias
costs one expansion plus the expansions inside what it names, and the depth an alias
reaches counts what it names.  Over :func:`dvc_cuvis.limits.current`'s ``max_yaml_aliases``
or ``max_nesting`` the file is refused, in one line naming the revision and the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dvc_cuvis._io import parse_yaml
from dvc_cuvis.limits import LimitError, Limits, current

__all__ = ["check_yaml_budget", "load_bounded_yaml"]


@dataclass
class _Open:
    """A mapping or sequence being read: its anchor, the expansions counted before it, its
    depth and the deepest level reached inside it."""

    anchor: str | None
    before: int
    depth: int
    deepest: int


def _refuse(where: str, what: str, ceiling: int, field: str) -> LimitError:
    return LimitError(f"{where}: {what}, over the ceiling of {ceiling:,}; refused (a YAML "
                      f"alias bomb?); if the file is genuine, raise it with "
                      f"{Limits.env_name(field)}=<n> (docs/robustness.md)")


def check_yaml_budget(data: str | bytes, where: str) -> None:
    """Refuse YAML whose aliases would expand, or whose nesting would reach, past the
    ceilings, before it is built (a syntax error is left to the parser's own message)."""
    import yaml

    limits = current()
    named: dict[str, tuple[int, int]] = {}  # anchor -> (expansions inside, levels inside)
    stack: list[_Open] = [_Open(None, 0, 0, 0)]
    total = 0
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        for ev in yaml.parse(data, Loader=loader):
            top = stack[-1]
            if isinstance(ev, yaml.AliasEvent):
                inside, levels = named.get(ev.anchor or "", (0, 0))
                total += 1 + inside
                top.deepest = max(top.deepest, top.depth + levels)
            elif isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                stack.append(_Open(ev.anchor, total, top.depth + 1, top.depth + 1))
                top = stack[-1]
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                done = stack.pop()
                if done.anchor is not None:
                    named[done.anchor] = (total - done.before, done.deepest - done.depth + 1)
                top = stack[-1]
                top.deepest = max(top.deepest, done.deepest)
            elif isinstance(ev, yaml.ScalarEvent) and ev.anchor is not None:
                named[ev.anchor] = (0, 0)
            if total > limits.max_yaml_aliases:
                raise _refuse(where, f"YAML aliases expand at least {total:,} times",
                              limits.max_yaml_aliases, "max_yaml_aliases")
            if top.deepest > limits.max_nesting:
                raise _refuse(where, f"YAML nests {top.deepest:,} levels deep",
                              limits.max_nesting, "max_nesting")
    except yaml.YAMLError:
        return  # not YAML: the parser says where, in its own words


def load_bounded_yaml(data: str | bytes, where: str) -> Any:
    """The YAML document ``data`` (empty: ``{}``) if within the budget; else
    :class:`~dvc_cuvis.limits.LimitError` naming ``where`` (``REV:path``)."""
    check_yaml_budget(data, where)
    return parse_yaml(data, where)
