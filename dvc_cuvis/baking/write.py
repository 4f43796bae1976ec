"""Writing a baked split: stage positions as concrete selectors, the ``universe_hash`` pinned.

A baked split is produced by generation, never by editing: :func:`to_config` writes each
stage's positions as ``file_indices`` selectors (sources in canonical order, ids sorted and
run-length compacted to ``"a-b"``; single-sample files in one ``files`` selector), and
:func:`baked_resolution` gives back what that config resolves to, from the positions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from cuvis_ai_schemas.training.data import (
    Constraint,
    DataSplitConfig,
    Selector,
    default_constraints,
)

from dvc_cuvis.baking.options import BakeOptions
from dvc_cuvis.model.resolution import Resolution, resolve
from dvc_cuvis.model.selectors import Positions, norm_sources
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES
from dvc_cuvis.model.universe import Universe


def compact_ids(indices: Sequence[int], *, ranges: bool = True) -> list[int | str]:
    """Sorted unique ids with runs of 3 or more written as inclusive ``"a-b"`` ranges."""
    ids = sorted(set(int(i) for i in indices))
    if not ranges:
        return list(ids)
    out: list[int | str] = []
    start = prev = None
    for i in [*ids, None]:
        if start is not None and i is not None and prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None and prev is not None:
            if prev - start >= 2:
                out.append(f"{start}-{prev}")
            else:
                out.extend(range(start, prev + 1))
        start = prev = i
    return out


#: Formats whose file is one sample (so a whole-file ``files`` selector is exact).
SINGLE_SAMPLE_FORMATS = (b"npz", b"tiff")


def whole_file_rows(uni: Universe, positions: Positions) -> npt.NDArray[np.bool_]:
    """Which of ``positions`` a baked stage names by their file (one ``files`` selector).

    A whole-file sample (no index), or the one row of a source whose format is a single
    sample per file (npz frames, TIFF cubes); every other row is named by ``file_indices``.
    """
    fmt = uni.raw_column("format")
    if fmt is None:
        whole = np.zeros(len(positions), dtype=bool)
    else:
        sizes = np.diff(uni.offsets)[uni.codes[positions]]
        whole = (sizes == 1) & np.isin(fmt[positions], SINGLE_SAMPLE_FORMATS)
    if uni.indexless is not None:
        whole |= uni.indexless[positions]
    return whole


def stage_selectors(uni: Universe, positions: Positions, *, ranges: bool = True) -> list[Selector]:
    """Concrete selectors for a set of positions: sources canonical, ids sorted.

    Sources whose file is a single sample (npz frames, TIFF cubes) are named together in
    one ``files`` selector — for 100k frames that is one selector instead of 100k, which
    keeps splits.json small and fast to validate; every other source gets ``file_indices``.
    """
    pos = np.unique(positions)
    out: list[Selector] = []
    if len(pos) == 0:
        return out
    whole = whole_file_rows(uni, pos)
    names = uni.source_names
    if whole.any():
        out.append(Selector(kind="files",
                            paths=[names[c] for c in uni.codes[pos[whole]].tolist()]))
    rest = pos[~whole]
    if len(rest):
        bounds = np.flatnonzero(np.diff(uni.codes[rest])) + 1
        for chunk in np.split(rest, bounds):
            ids = compact_ids(uni.indices[chunk].tolist(), ranges=ranges)
            out.append(Selector(kind="file_indices", source=names[int(uni.codes[chunk[0]])],
                                ids=ids))
    return out


def _predict(stages: dict[str, Positions], opts: BakeOptions) -> Positions:
    """The predict stage a bake writes: its own, else test's with ``predict: test``."""
    predict = stages.get("predict", np.zeros(0, dtype=np.int64))
    if opts.predict == "test" and len(predict) == 0:
        predict = stages["test"]
    return predict


def to_config(
    uni: Universe,
    stages: dict[str, Positions],
    opts: BakeOptions,
    constraints: list[Constraint] | None = None,
) -> DataSplitConfig:
    """The baked ``DataSplitConfig`` for ``stages`` (hash pinned, constraints seeded)."""
    if constraints is None:
        constraints = opts.constraints if opts.constraints is not None else default_constraints()
    return DataSplitConfig(
        universe_hash=uni.hash,
        train=stage_selectors(uni, stages["train"], ranges=opts.ranges),
        val=stage_selectors(uni, stages["val"], ranges=opts.ranges),
        test=stage_selectors(uni, stages["test"], ranges=opts.ranges),
        predict=stage_selectors(uni, _predict(stages, opts), ranges=opts.ranges),
        constraints=constraints,
    )


def baked_resolution(
    uni: Universe, stages: dict[str, Positions], opts: BakeOptions, cfg: DataSplitConfig
) -> Resolution:
    """What ``cfg``, baked from ``stages``, resolves to -- taken from the positions.

    Each stage in the order its selectors list it (the whole files first, then each
    source's ids, sources canonical), an empty predict as the whole universe: what
    :func:`~dvc_cuvis.model.resolution.resolve` gives back, without resolving a selector.  Only when
    two sources of the universe are one path once normalized (a ``files`` selector naming
    one then matches both) is ``cfg`` resolved, since the file means what resolving it
    gives.
    """
    names = uni.source_names
    if len(set(norm_sources(names))) < len(names):
        return resolve(cfg, uni)
    out: dict[str, Positions] = {}
    for stage in EXCLUSIVE_STAGES:
        out[stage] = _listed(uni, stages[stage])
    predict = _predict(stages, opts)
    out["predict"] = (_listed(uni, predict) if len(predict)
                      else np.arange(len(uni), dtype=np.int64))
    return Resolution(uni, out, predict_is_all=not len(predict))


def _listed(uni: Universe, positions: Positions) -> Positions:
    """``positions`` in the order :func:`stage_selectors` lists them."""
    pos = np.unique(positions)
    whole = whole_file_rows(uni, pos)
    return np.concatenate([pos[whole], pos[~whole]]) if whole.any() else pos
