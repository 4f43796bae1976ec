"""Bake: the split strategies behind one protocol, and a universe baked into splits.json.

One module per concept: :mod:`~dvc_cuvis.baking.options` (:class:`BakeOptions`),
:mod:`~dvc_cuvis.baking.groups`, :mod:`~dvc_cuvis.baking.splitters`,
:mod:`~dvc_cuvis.baking.assign`, :mod:`~dvc_cuvis.baking.write`,
:mod:`~dvc_cuvis.baking.baked` (:class:`Baked`), :mod:`~dvc_cuvis.baking.core`
(:func:`bake`) and :mod:`~dvc_cuvis.baking.entry` (:func:`bake_run`, :func:`write_bake`: a
whole run, as ``dvc-cuvis bake`` does it).
"""

from __future__ import annotations

from dvc_cuvis.baking.assign import fold_splits, split_universe
from dvc_cuvis.baking.baked import NON_EMPTY_STAGES, Baked, bake_imported, plot_data
from dvc_cuvis.baking.core import bake
from dvc_cuvis.baking.entry import BakeResult, bake_run, write_bake
from dvc_cuvis.baking.groups import Groups
from dvc_cuvis.baking.options import BakeOptions
from dvc_cuvis.baking.splitters import (
    SPLITTERS,
    Folds,
    HashSplitter,
    MultilabelSplitter,
    RandomSplitter,
    Splitter,
    StratifiedSplitter,
    iterative_stratify,
    splitter,
)
from dvc_cuvis.baking.write import compact_ids, stage_selectors, to_config
from dvc_cuvis.config.specs import STRATEGIES

__all__ = [
    "NON_EMPTY_STAGES",
    "SPLITTERS",
    "STRATEGIES",
    "BakeOptions",
    "BakeResult",
    "Baked",
    "Folds",
    "Groups",
    "HashSplitter",
    "MultilabelSplitter",
    "RandomSplitter",
    "Splitter",
    "StratifiedSplitter",
    "bake",
    "bake_imported",
    "bake_run",
    "compact_ids",
    "fold_splits",
    "iterative_stratify",
    "plot_data",
    "split_universe",
    "splitter",
    "stage_selectors",
    "to_config",
    "write_bake",
]
