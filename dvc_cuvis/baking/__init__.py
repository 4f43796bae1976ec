"""Bake: the split strategies behind one protocol, and a universe baked into splits.json.
"""

from __future__ import annotations

from dvc_cuvis.baking.core import (
    SPLITTERS,
    STRATEGIES,
    Baked,
    BakeOptions,
    Splitter,
    bake,
    split_universe,
    splitter,
)

__all__ = [
    "SPLITTERS",
    "STRATEGIES",
    "BakeOptions",
    "Baked",
    "Splitter",
    "bake",
    "split_universe",
    "splitter",
]
