"""Existing samples that a bake moves, relative to the committed split it replaces, and why.

The ``hash`` strategy keeps every existing sample in its stage as data is added, with one
exception: a stage the ratios would leave empty borrows a group (``lent_groups`` in the split
metrics), and that group goes back once the stage has groups of its own.  Other strategies
place every group anew when the universe changes.  Either way a user must hear of it: a
sample that moves from test to train is trained on after it was tested on.

"The committed split" is ``splits.json`` at git ``HEAD`` (with ``HEAD``'s universe.csv and
split metrics): under ``dvc repro`` the working-tree file is gone before bake runs.  Moves
are found with the per-sample comparison of :func:`dvc_cuvis.model.compare.diff_versions`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dvc_cuvis.baking.baked import Baked
from dvc_cuvis.baking.groups import Together, group_rows
from dvc_cuvis.baking.options import BakeOptions
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.limits import loads_json
from dvc_cuvis.model.compare import (
    ALL_NAMES,
    NEW,
    REMOVED,
    Version,
    diff_versions,
    recording_of,
)
from dvc_cuvis.model.universe import Universe

#: the most groups named one by one (a changed seed moves them all; the rest are counted)
NAMED = 10


@dataclass(frozen=True)
class Committed:
    """The split at ``HEAD`` that a bake replaces: resolved, and the groups it had lent."""

    version: Version
    lent: frozenset[str]
    splits: bytes


def committed(out: Path | str, universe: Path | str, metrics: Path | str | None
              ) -> Committed | None:
    """The committed split at ``out`` (with ``universe`` and ``metrics`` at ``HEAD``), or None
    when there is none to compare with (no git, no commit, no such file, unreadable)."""
    from dvc_cuvis.model.resolution import resolve
    from dvc_cuvis.model.splits import parse_splits
    from dvc_cuvis.model.universe_io import parse_universe_bytes
    from dvc_cuvis.repo.git import Git

    try:
        with Git(Path(os.path.abspath(out)).parent) as git:
            paths = [_in_repo(git.top, p) for p in (out, universe, metrics)]
            if paths[0] is None or paths[1] is None:
                return None
            files = {p: git.read("HEAD", p) if p else None for p in paths}
    except Exception:  # no git, no HEAD yet, GitPython's own errors: nothing committed
        return None
    splits, uni_bytes = files[paths[0]], files[paths[1]]
    if splits is None or uni_bytes is None:
        return None
    try:
        cfg = parse_splits(splits.decode("utf-8-sig"), path=f"HEAD:{paths[0]}")
        uni = parse_universe_bytes(uni_bytes, path=Path(f"HEAD:{paths[1]}"))
        res = resolve(cfg, uni, where=f"HEAD:{paths[0]}")
    except (DvcCuvisError, UnicodeDecodeError):
        return None  # a committed split that does not resolve: nothing to keep
    return Committed(Version("HEAD", uni, res.stages, cfg.universe_hash, []),
                     _lent(files.get(paths[2]) if paths[2] else None), splits)


def _in_repo(top: Path, path: Path | str | None) -> str | None:
    """``path`` relative to the repository's top (posix), or None outside it."""
    if path is None:
        return None
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(top))
    return None if rel == ".." or rel.startswith("../") else Path(rel).as_posix()


def _lent(metrics: bytes | None) -> frozenset[str]:
    """The ``lent_groups`` of a split metrics file (none when unreadable)."""
    try:
        found = loads_json(metrics, "split metrics at HEAD") if metrics else {}
    except ValueError:  # a NestingError too
        return frozenset()
    names = found.get("lent_groups") if isinstance(found, dict) else None
    return frozenset(str(n) for n in names) if isinstance(names, list) else frozenset()


def moved(old: Committed, uni: Universe, baked: Baked, opts: BakeOptions,
          by_sample: bool = False, together: Together = ()) -> list[str]:
    """One line per recording whose existing samples the bake moved (per group with
    ``by_sample``): count, stages and why, so a reseed over npz frames stays readable;
    ``together``: the rows whose groups the bake merged (``keep_duplicates_together``)."""
    new = Version("bake", uni, baked.stages, None, [])
    diff = diff_versions(old.version, new)
    keep = (diff.frm != NEW) & (diff.to != REMOVED)
    if not keep.any():
        return []
    names, of_row = group_rows(uni, opts.group_by, together)
    joined = _joined(uni, opts, names, of_row) if together else np.zeros(len(uni), dtype=bool)
    row = _rows(uni)
    counts: dict[tuple[str, int, int, bool], int] = {}
    for s, i, f, t in zip(diff.src[keep].tolist(), diff.index[keep].tolist(),
                          diff.frm[keep].tolist(), diff.to[keep].tolist(), strict=True):
        r = row[(diff.sources[s], i)]
        at = (names[int(of_row[r])], f, t, bool(joined[r]))
        counts[at] = counts.get(at, 0) + 1
    lent_now = frozenset(baked.metrics.get("lent_groups") or ())
    own = {stage: bool({names[g] for g in np.unique(of_row[pos]).tolist()} - lent_now)
           for stage, pos in baked.stages.items()}  # a group of its own, not a loan
    summed: dict[tuple[str, int, int, str], int] = {}
    for (group, f, t, merged), n in counts.items():
        frm, to = ALL_NAMES[f], ALL_NAMES[t]
        why = (_why(group, frm, to, (old.lent, lent_now), own.get(frm, False), baked, opts)
               if not merged or to == "unassigned" else
               f"moved from {frm} to {to}: kept in one group with its duplicates, {group} "
               f"(--keep-duplicates-together {opts.keep_duplicates_together})")
        key = (group if by_sample else recording_of(group), f, t, why)
        summed[key] = summed.get(key, 0) + n
    lines = []
    for (label, _, _, why), n in sorted(summed.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"{n} sample{'s' if n != 1 else ''} of {label} {why}")
    if len(lines) > NAMED:
        rest = sum(sorted(summed.values(), reverse=True)[NAMED:])
        lines = [*lines[:NAMED], f"... and {rest} more samples moved ({len(lines) - NAMED} "
                 "more groups or transitions)"]
    return lines


def _joined(uni: Universe, opts: BakeOptions, names: list[str], of_row: np.ndarray
            ) -> np.ndarray:
    """Per row: did merging put it in another group's stage (its own group's name is not the
    merged group's)?"""
    own_names, own_of_row = group_rows(uni, opts.group_by)
    own = np.array(own_names, dtype=object)[own_of_row]
    return own != np.array(names, dtype=object)[of_row]


def _rows(uni: Universe) -> dict[tuple[str, int], int]:
    """(source, read index; -1 for a whole-file sample) -> row, as the comparison keys them."""
    idx = uni.indices.astype(np.int64, copy=True)
    if uni.indexless is not None:
        idx[uni.indexless] = -1
    names = uni.source_names
    return {(names[c], i): r for r, (c, i) in enumerate(zip(uni.codes.tolist(), idx.tolist(),
                                                            strict=True))}


def _why(group: str, frm: str, to: str, lent: tuple[frozenset[str], frozenset[str]],
         own: bool, baked: Baked, opts: BakeOptions) -> str:
    """The moved-from-to phrase and its reason (the lending rule of the hash strategy).

    ``lent``: the groups lent before and now; ``own``: whether ``frm`` now holds a group
    that is no loan."""
    lent_before, lent_now = lent
    if to == "unassigned" and opts.buffer:
        return (f"left {frm} for no stage: within {opts.buffer} frame(s) of a stage boundary "
                "in its recording (--buffer; listed in the split metrics)")
    if baked.source != "hash" or opts.strategy != "hash":
        if baked.source in ("csv", "rule", "base"):
            return f"moved from {frm} to {to}: the {baked.source} places them so now"
        return (f"moved from {frm} to {to}: the {baked.source} strategy places every group "
                "anew when the universe changes (the hash strategy keeps them)")
    if group in lent_before and group not in lent_now:
        return (f"returned from {frm} to {to}: {frm} now has groups of its own" if own else
                f"returned from {frm} to {to}: {frm} borrows another group now")
    if group in lent_now and group not in lent_before:
        return f"lent from {frm} to {to}: {to} has no group of its own"
    if group in lent_now:
        return f"lent to {to} instead of {frm}: {to} has no group of its own"
    return (f"moved from {frm} to {to}: its hash stage changed (the seed, the ratios or the "
            "grouping differ from the committed split's)")


def moves_of(baked: Baked, uni: Universe, opts: BakeOptions, text: bytes,
             together: Together = ()) -> list[str]:
    """:func:`moved` against the split committed at ``opts.out`` (none when there is none, or
    when ``text``, the splits.json this bake writes, has the same bytes)."""
    old = committed(opts.out, opts.universe, opts.metrics)
    if old is None or text == old.splits:
        return []  # nothing committed, or the same split: nothing moved
    return moved(old, uni, baked, opts, opts.by_sample, together)
