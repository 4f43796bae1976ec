"""``keep_duplicates_together``: the clusters of duplicate (and near-duplicate) frames that a
bake merges into one group each, with the groups their frames already belong to.

The clusters come from the signatures materialize stored
(:func:`~dvc_cuvis.leakage.clusters.duplicate_clusters`); the merge is
:func:`~dvc_cuvis.baking.groups.merge_groups` (a merged group is named by its smallest
member's name, so frames that join no cluster never change a group's name or stage).  What was
merged is said in the split metrics and in one warning, and the moves it causes are
announced with the bake's other moves (:mod:`dvc_cuvis.baking.moves`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dvc_cuvis.baking.groups import Together, group_rows
from dvc_cuvis.baking.options import BakeOptions
from dvc_cuvis.errors import DvcCuvisError, and_more
from dvc_cuvis.leakage.clusters import SignatureSet, duplicate_clusters
from dvc_cuvis.model.universe import Universe

__all__ = ["Kept", "keep_together"]


@dataclass(frozen=True)
class Kept:
    """The rows merged per cluster, the split metrics' ``keep_duplicates_together`` record
    and the lines a user must hear."""

    together: Together = ()
    metrics: dict[str, int | str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def keep_together(uni: Universe, opts: BakeOptions, signatures: SignatureSet) -> Kept:
    """The clusters of ``opts.keep_duplicates_together`` among ``uni``'s samples, as row
    sets to merge, with what merging them does; no signature at all is an error (exit 2)."""
    mode = opts.keep_duplicates_together
    by_uid = {u: signatures.by_uid.get(u) for u in uni.uids()}
    unsigned = sorted(u for u, s in by_uid.items() if s is None)
    if len(uni) and len(unsigned) == len(uni):
        raise DvcCuvisError(
            f"{signatures.where}: no frame of {uni.path or 'the universe'} has a signature, so "
            f"--keep-duplicates-together {mode} has nothing to compare; materialize the frames "
            f"(the signatures are stored in its summaries/) or sign them: {signatures.sign}")
    row_of = {u: r for r, u in enumerate(uni.uids())}
    clusters = duplicate_clusters(by_uid, mode)
    together: Together = tuple(tuple(row_of[u] for u in c) for c in clusters)
    own_names, own_of_row = group_rows(uni, opts.group_by)
    names, of_row = group_rows(uni, opts.group_by, together)
    own = np.array(own_names, dtype=object)[own_of_row]
    now = np.array(names, dtype=object)[of_row]
    moved = int((own != now).sum())
    merged = len(own_names) - len(names)
    metrics: dict[str, int | str] = {"mode": mode, "clusters": len(clusters),
                               "frames_in_clusters": sum(len(c) for c in clusters),
                               "groups_merged": merged, "frames_moved": moved,
                               "unsigned": len(unsigned)}
    lines = [f"--keep-duplicates-together {mode}: {len(clusters)} cluster(s) of "
             f"{'duplicate' if mode == 'exact' else 'duplicate or near-duplicate'} frames "
             f"kept in one stage each; {merged} group(s) merged into others, {moved} frame(s) "
             "placed with their cluster's group (the split metrics count them under "
             "'keep_duplicates_together')"] if clusters else []
    if unsigned:
        lines.append(f"{len(unsigned)} frame(s) without a signature were not compared "
                     f"(--keep-duplicates-together): {', '.join(unsigned[:3])}"
                     f"{and_more(len(unsigned), 3)}; sign them: {signatures.sign}")
    return Kept(together, metrics, tuple(lines))
