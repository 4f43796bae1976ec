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

import os
from dataclasses import dataclass, fields

from dvc_cuvis.errors import DvcCuvisError

GIB = 1 << 30
#: the words every refusal over a ceiling carries (a memo never keeps such a refusal)
OVER_CEILING = "over the ceiling of"


class LimitError(DvcCuvisError):
    """A file or setting declares more than a ceiling (or than the file can hold)."""


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
