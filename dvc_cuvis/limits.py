"""Resource ceilings: the one home of every bound a reader checks before it allocates.

Inputs arrive from branches anyone can push (the PR job runs ``dvc repro`` and ``diff --md``
on them), so a small file must never make us allocate, fork or print without bound.  Each
reader compares what a file *declares* (an array header, a TIFF page, PNG dimensions, an RLE
``size``, an id range, a fold or job count) with the file's own size and with the ceiling
here, and refuses before it allocates.  A ceiling is generous for real hyperspectral data; a
user whose data needs more raises it with the environment variable named beside it (see
docs/robustness.md), which changes what is refused, never what is written.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, fields
from typing import Any

from dvc_cuvis.errors import DvcCuvisError

GIB = 1 << 30
#: the words every refusal over a ceiling carries (a memo never keeps such a refusal)
OVER_CEILING = "over the ceiling of"


class LimitError(DvcCuvisError):
    """A file or setting declares more than a ceiling (or than the file can hold)."""


class NestingError(LimitError):
    """A JSON document or record nests deeper than ``max_nesting``: damaged, or hostile."""


@dataclass(frozen=True)
class Limits:
    """The ceilings in force; :func:`current` reads the environment's overrides."""

    #: decoded bytes of one array of a frame (npz member, TIFF cube, PNG label, RLE mask)
    max_array_bytes: int = 4 * GIB
    #: samples one universe.csv (or one id-range file) may describe, ranges expanded
    max_samples: int = 20_000_000
    #: folds ``bake --folds`` may build
    max_folds: int = 1_000
    #: YAML alias expansions a params file read from a revision may make
    max_yaml_aliases: int = 100
    #: nesting depth of JSON/YAML that we read (our own records and user files)
    max_nesting: int = 100
    #: bytes one name (a frame file's last component) may take on disk
    max_name_bytes: int = 240
    #: band wavelengths one ``--wavelengths`` option may name (a cube's band count)
    max_bands: int = 100_000

    @staticmethod
    def env_name(field: str) -> str:
        """The environment variable that overrides ``field``."""
        return "DVC_CUVIS_" + field.upper()


def current() -> Limits:
    """The ceilings, with ``DVC_CUVIS_MAX_*`` environment overrides applied."""
    values: dict[str, int] = {}
    for f in fields(Limits):
        raw = os.environ.get(Limits.env_name(f.name))
        if raw is None or raw == "":
            continue
        try:
            value = int(raw)
        except ValueError:
            value = -1
        if value <= 0:
            raise LimitError(f"{Limits.env_name(f.name)}={raw!r}: not a positive whole number; "
                             f"unset it or give a number like {getattr(Limits, f.name)}")
        values[f.name] = value
    return Limits(**values)


def cpus() -> int:
    """The CPUs this process may run on (its affinity mask, where the OS keeps one): the
    most worker processes that can run at once, so a pool never needs more."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def pool_size(jobs: int, tasks: int) -> int:
    """Worker processes for ``tasks`` units of work asked to run on ``jobs`` workers: never
    more than the tasks (an idle worker is a fork for nothing) nor the CPUs (``jobs`` may
    come from a params file anyone can push), never fewer than one."""
    return max(1, min(jobs, tasks, cpus()))


def check_declared(what: str, declared: int, ceiling: int, env: str) -> None:
    """Refuse ``declared`` bytes/items of ``what`` beyond ``ceiling`` (named with ``env``)."""
    if declared > ceiling:
        raise LimitError(f"{what}: declares {declared:,}, {OVER_CEILING} {ceiling:,}; "
                         f"if the data is genuine, raise it with {env}=<n> "
                         "(docs/robustness.md)")


# -- nesting: JSON we read, and records unpickled from checkpoints ------------------------

#: An escape inside a JSON string (a backslash and the byte after it, if any).
_ESCAPE = re.compile(rb"\\(?:.|\Z)", re.DOTALL)
#: Every byte but the four brackets and the quote, deleted before the brackets are counted.
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')


def _json_depth_over(data: bytes, ceiling: int) -> bool:
    """True when the JSON ``data`` nests containers deeper than ``ceiling``; linear, no
    recursion: escapes, then every byte but brackets and quotes are dropped, and the rest is
    walked (a string never closed takes the rest: the parser stops there)."""
    if data.count(b"[") + data.count(b"{") <= ceiling:
        return False  # the common case: too few brackets to nest that deep
    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)
    return _walk_over(data.translate(None, _NOT_STRUCTURE), ceiling)


def _walk_over(structure: bytes, ceiling: int, chunk: int = 1 << 20) -> bool:
    """True when the brackets outside strings of ``structure`` (brackets and quotes only)
    rise above ``ceiling`` (the depth a parser reaches before the first error), walked in
    bounded slices: a bracket after an odd number of quotes is text."""
    import numpy as np  # (only documents with many brackets get here)

    step = np.zeros(256, dtype=np.int64)
    step[list(b"[{")], step[list(b"]}")] = 1, -1
    codes = np.frombuffer(structure, dtype=np.uint8)
    depth = quotes = 0
    for lo in range(0, len(codes), chunk):
        part = codes[lo:lo + chunk]
        seen = np.cumsum(part == ord('"')) + quotes
        walk = np.cumsum(np.where(seen % 2 == 0, step[part], 0)) + depth
        if int(walk.max()) > ceiling:
            return True
        depth, quotes = int(walk[-1]), int(seen[-1])
    return False


def loads_json(data: str | bytes, where: object) -> Any:
    """``json.loads(data)``, refusing (:class:`NestingError` naming ``where``) nesting beyond
    ``max_nesting`` before the parser recurses, so damage is an error, never a crash."""
    ceiling = current().max_nesting
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if _json_depth_over(raw, ceiling):
        raise NestingError(_too_deep(where, "JSON", ceiling))
    try:
        return json.loads(data)
    except RecursionError:  # a ceiling raised past what the interpreter's stack allows
        raise NestingError(_too_deep(where, "JSON", ceiling)) from None


def check_nesting(obj: Any, where: object) -> None:
    """Refuse (:class:`NestingError` naming ``where``) a decoded value — dicts, lists and tuples —
    nested beyond ``max_nesting``, walked without recursion; a container met again (an
    unpickled value may share them, or hold itself) is walked again only from deeper."""
    ceiling = current().max_nesting
    deepest: dict[int, int] = {}
    stack: list[tuple[Any, int]] = [(obj, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        if depth + 1 > ceiling:
            raise NestingError(_too_deep(where, "a record", ceiling))
        if deepest.get(id(value), -1) >= depth:
            continue
        deepest[id(value)] = depth
        stack.extend((child, depth + 1) for child in children)


def _too_deep(where: object, what: str, ceiling: int) -> str:
    env = Limits.env_name("max_nesting")
    return (f"{where}: {what} nested deeper than {ceiling} levels: damaged, or raise the "
            f"ceiling with {env}=<n> (docs/robustness.md)")
