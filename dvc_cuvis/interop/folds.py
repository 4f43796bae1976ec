"""Other projects' split conventions: GloViTa, soma, and plain index arrays.

Exports turn a baked split (or its K folds) into the other convention; imports turn such
files back into per-stage universe positions, which :mod:`dvc_cuvis.baking` writes as a
baked splits.json with the universe hash pinned.  Ids are always mapped through the
universe, and every id that does not map, or maps twice, is an error naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dvc_cuvis.errors import DvcCuvisError, and_more
from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES
from dvc_cuvis.model.universe import Universe

Positions = npt.NDArray[np.int64]


@dataclass
class Folds:
    """One split (``folds`` empty) or K folds over one universe, as stage -> positions."""

    universe: Universe
    splits: list[dict[str, Positions]]

    @property
    def k(self) -> int:
        """Number of folds (1 for a plain split)."""
        return len(self.splits)


def column_ids(uni: Universe, column: str) -> list[str]:
    """Per-row id from ``column`` (``uid``, ``source``, ``materialized_path`` or any column)."""
    if column == "uid":
        return uni.uids()
    if not uni.has_column(column):
        raise DvcCuvisError(
            f"id column {column!r} is not in the universe (columns: {', '.join(uni.columns)}); "
            "use uid, source, materialized_path or a provenance column"
        )
    return uni.column(column)


def id_index(uni: Universe, column: str) -> dict[str, int]:
    """id -> universe position; ids must be unique and non-empty for a round trip."""
    ids = column_ids(uni, column)
    out: dict[str, int] = {}
    for pos, value in enumerate(ids):
        if not value:
            raise DvcCuvisError(f"{uni.uid(pos)} has an empty {column!r}; choose another "
                                "--id-column (uid is always unique)")
        if value in out:
            raise DvcCuvisError(
                f"id column {column!r} is not unique: {value!r} names {uni.uid(out[value])} and "
                f"{uni.uid(pos)}; choose --id-column uid"
            )
        out[value] = pos
    return out


def map_ids(ids: Sequence[object], index: dict[str, int], *, where: str) -> Positions:
    """Positions of ``ids``; unknown or repeated ids are errors naming them."""
    out: list[int] = []
    unknown: list[str] = []
    seen: set[str] = set()
    for raw in ids:
        if not isinstance(raw, str | int) or isinstance(raw, bool):
            raise DvcCuvisError(f"{where}: id {raw!r} is not a string")
        value = str(raw)
        if value in seen:
            raise DvcCuvisError(f"{where}: duplicate id {value!r}")
        seen.add(value)
        pos = index.get(value)
        if pos is None:
            unknown.append(value)
        else:
            out.append(pos)
    if unknown:
        more = and_more(len(unknown), 5)
        raise DvcCuvisError(
            f"{where}: {len(unknown)} id(s) not in the universe: "
            f"{', '.join(repr(u) for u in unknown[:5])}{more}; check --id-column and the universe"
        )
    return np.asarray(sorted(out), dtype=np.int64)


def check_disjoint(stages: dict[str, Positions], where: str, uni: Universe) -> None:
    """Refuse an import that puts one sample into two of train/val/test."""
    owner: dict[int, str] = {}
    for stage in EXCLUSIVE_STAGES:
        for p in stages.get(stage, np.zeros(0, dtype=np.int64)).tolist():
            if p in owner:
                raise DvcCuvisError(f"{where}: {uni.uid(p)} is in both {owner[p]} and {stage}")
            owner[p] = stage


def from_resolutions(resolutions: Sequence[Resolution]) -> Folds:
    """Folds from resolved baked splits (all over one universe)."""
    if not resolutions:
        raise DvcCuvisError("no split to export")
    uni = resolutions[0].universe
    splits = []
    for r in resolutions:
        stages = {s: np.unique(r.stages[s]) for s in EXCLUSIVE_STAGES}
        # an empty predict means "everything" in the schema; keep it empty, not expanded
        stages["predict"] = (np.zeros(0, dtype=np.int64) if r.predict_is_all
                             else np.unique(r.stages["predict"]))
        splits.append(stages)
    return Folds(uni, splits)
