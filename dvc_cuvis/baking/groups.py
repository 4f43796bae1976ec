"""The units a bake assigns: groups of rows (a recording, a ``group`` cell, a sample).

A strategy never splits a group: the frames of one recording land in one stage.  The stage
codes every splitter returns are here too (``TRAIN``, ``VAL``, ``TEST``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.leakage.recordings import block_size, blocks
from dvc_cuvis.model.anomalous import ANOMALOUS
from dvc_cuvis.model.universe import Universe

TRAIN, VAL, TEST, UNASSIGNED = 0, 1, 2, -1
#: A notion of "anomalous" over a sample's category ids (see :mod:`dvc_cuvis.model.universe`).
AnomalyRule = Callable[[Sequence[int]], bool]
StageCodes = npt.NDArray[np.int8]
#: Sets of rows (universe positions) whose groups a bake merges into one group.
Together = tuple[tuple[int, ...], ...]


def group_rows(uni: Universe, group_by: str, together: Together = ()
               ) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Group ids in canonical first-appearance order and a per-row group number; the groups
    of each set of rows in ``together`` are merged into one (:func:`merge_groups`)."""
    names, of_row = _group_rows(uni, group_by)
    return merge_groups(names, of_row, together) if together else (names, of_row)


def merge_groups(names: list[str], of_row: npt.NDArray[np.int64], together: Together
                 ) -> tuple[list[str], npt.NDArray[np.int64]]:
    """The groups after merging, for each set of rows in ``together``, the groups those rows
    belong to (a group stays whole): a merged group is named by the smallest of its members'
    names, so adding rows that join no set never renames a group (stable under growth)."""
    root = np.arange(len(names), dtype=np.int64)

    def find(g: int) -> int:
        while root[g] != g:
            root[g] = root[root[g]]
            g = int(root[g])
        return g

    for rows in together:
        gs = sorted({find(int(g)) for g in of_row[np.asarray(rows, dtype=np.int64)].tolist()})
        for g in gs[1:]:
            root[g] = gs[0]
    top = np.array([find(g) for g in range(len(names))], dtype=np.int64)
    smallest: dict[int, str] = {}
    for g, t in enumerate(top.tolist()):
        if t not in smallest or names[g] < smallest[t]:
            smallest[t] = names[g]
    merged = top[of_row]
    _, first = np.unique(merged, return_index=True)
    order = np.argsort(first, kind="stable")  # merged groups by first appearance
    rank = np.empty(int(merged.max()) + 1 if len(merged) else 0, dtype=np.int64)
    kept = np.unique(merged)[order]
    rank[kept] = np.arange(len(kept))
    return [smallest[int(t)] for t in kept.tolist()], rank[merged]


def _group_rows(uni: Universe, group_by: str) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Group ids in canonical first-appearance order and a per-row group number."""
    n = block_size(group_by)
    if n is not None:
        return blocks(uni, n)
    if group_by == "sample":
        return uni.uids(), np.arange(len(uni), dtype=np.int64)
    if group_by == "source":
        return list(uni.source_names), uni.codes.astype(np.int64)
    # auto and group: the group cell, else the recording; recording: the recording alone
    names, codes = uni.recordings() if group_by == "recording" else uni.groups()
    _, first = np.unique(codes, return_index=True)
    order = np.argsort(first, kind="stable")  # groups by first appearance in canonical order
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return [names[g] for g in order.tolist()], rank[codes]


@dataclass
class Groups:
    """The units a strategy assigns: group ids, the group of every row, group features.

    A view (:meth:`take`) holds some of the groups, in the order given; ``names``,
    ``len()``, :meth:`anomalous` and :meth:`labels` are per group *of the view*, while
    ``of_row`` always maps every row to its group number among all groups.
    """

    uni: Universe
    all_names: list[str]
    of_row: npt.NDArray[np.int64]
    ids: npt.NDArray[np.int64] | None = None  # the view's group numbers (None: all, in order)

    @classmethod
    def of(cls, uni: Universe, group_by: str, together: Together = ()) -> Groups:
        """Group the universe's rows by ``group_by`` (auto/source/group/sample/recording/
        block:N), the groups of each set of rows in ``together`` merged into one."""
        names, of_row = group_rows(uni, group_by, together)
        return cls(uni, names, of_row)

    def __len__(self) -> int:
        return len(self.all_names) if self.ids is None else len(self.ids)

    @property
    def names(self) -> list[str]:
        """The ids of the view's groups, in view order."""
        if self.ids is None:
            return self.all_names
        return [self.all_names[g] for g in self.ids.tolist()]

    def take(self, members: npt.ArrayLike) -> Groups:
        """The view of ``members`` (positions in this view)."""
        m = np.asarray(members, dtype=np.int64)
        return replace(self, ids=m if self.ids is None else self.ids[m])

    def anomalous(self, rule: AnomalyRule = ANOMALOUS) -> npt.NDArray[np.bool_]:
        """Per group: is any of its samples anomalous by ``rule`` (see :func:`anomaly_rule`)?"""
        out = np.zeros(len(self.all_names), dtype=bool)
        out[self.of_row[self.uni.anomalous(rule)]] = True
        return out if self.ids is None else out[self.ids]

    def labels(self) -> tuple[list[dict[int, int]], list[int]]:
        """Per group ``{category id: samples}`` (background 0 excluded) and sample counts."""
        if not self.uni.has_column("category_ids"):
            raise DvcCuvisError(
                "multilabel stratification needs a category_ids column in the universe "
                "(enumerate with labels, or choose another strategy)"
            )
        labels: list[dict[int, int]] = [{} for _ in self.all_names]
        weights = np.bincount(self.of_row, minlength=len(self.all_names)).tolist()
        for row, ids in enumerate(self.uni.category_ids):
            lab = labels[int(self.of_row[row])]
            for cid in set(ids):
                if cid != 0:
                    lab[cid] = lab.get(cid, 0) + 1
        if self.ids is None:
            return labels, weights
        view = self.ids.tolist()
        return [labels[g] for g in view], [weights[g] for g in view]
