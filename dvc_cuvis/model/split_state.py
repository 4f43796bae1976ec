"""A split's form: a rule (live selectors, resolved against the universe of the day) or
baked (concrete selectors and a pinned ``universe_hash``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuvis_ai_schemas.training.data import (
    DataSplitConfig,
)

from dvc_cuvis.model.selectors import (
    CONCRETE_KINDS,
    LIVE_KINDS,
    walk,
)
from dvc_cuvis.model.splits import STAGES

if TYPE_CHECKING:
    pass

def selector_kinds(cfg: DataSplitConfig) -> frozenset[str]:
    """Every selector kind used anywhere in ``cfg`` (nested operands included)."""
    return frozenset(s.kind.value for s in walk(cfg))


def live_kinds(cfg: DataSplitConfig) -> frozenset[str]:
    """Live (universe-dependent) selector kinds used in ``cfg``."""
    return selector_kinds(cfg) & LIVE_KINDS


def has_dir_indices(cfg: DataSplitConfig) -> bool:
    """True if any stage still uses positional ``dir_indices`` (nested included)."""
    return "dir_indices" in selector_kinds(cfg)


def is_baked(cfg: DataSplitConfig) -> bool:
    """Baked = only ``file_indices``/``files`` selectors at top level, and a pinned hash."""
    top = {s.kind.value for stage in STAGES for s in getattr(cfg, stage)}
    return bool(cfg.universe_hash) and top <= CONCRETE_KINDS


def state(cfg: DataSplitConfig) -> str:
    """``"baked"`` or ``"rule"`` (see :func:`is_baked`)."""
    return "baked" if is_baked(cfg) else "rule"
