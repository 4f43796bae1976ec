"""Per-stage universe positions: from a strategy (one split or K folds), from the universe's
``split`` column, from a previous baked split (``base``) or from a rule-form split."""

from __future__ import annotations

import logging
from typing import TypedDict

import numpy as np
from cuvis_ai_schemas.training.data import DataSplitConfig, Selector

from dvc_cuvis.baking.groups import UNASSIGNED, Groups, StageCodes, Together
from dvc_cuvis.baking.options import BakeOptions
from dvc_cuvis.baking.splitters import Folds, HashSplitter, Splitter, anomaly_rule, splitter
from dvc_cuvis.errors import DvcCuvisError, OptionError, and_more
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.selectors import Positions, Resolver
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES, STAGES
from dvc_cuvis.model.universe import Universe, uid

logger = logging.getLogger(__name__)


def _lent(split: Splitter | Folds) -> list[str]:
    """The groups a hash splitter lent to otherwise empty stages (none for the others)."""
    inner = split.holdout if isinstance(split, Folds) else split
    return list(inner.lent_) if isinstance(inner, HashSplitter) else []


def _stages_from_rows(row_stage: StageCodes) -> dict[str, Positions]:
    return {s: np.flatnonzero(row_stage == code) for code, s in enumerate(EXCLUSIVE_STAGES)}


def _apply_ad_aware(uni: Universe, stages: dict[str, Positions], opts: BakeOptions) -> None:
    if not opts.ad_aware:
        return
    anomalous = uni.anomalous(anomaly_rule(opts))
    stages["train"] = stages["train"][~anomalous[stages["train"]]]
    if anomalous.any() and not anomalous[np.concatenate([stages["val"], stages["test"]])].any():
        logger.warning("ad-aware split: val/test received no anomalous samples (dataset too "
                       "small to stratify); evaluation has no anomaly coverage")


def split_universe(
    uni: Universe, opts: BakeOptions, lent: list[str] | None = None, together: Together = ()
) -> dict[str, Positions]:
    """Per-stage positions for ``uni`` by strategy and grouping (the groups of each set of
    rows in ``together`` merged)."""
    groups = Groups.of(uni, opts.group_by, together)
    split = splitter(opts)
    per_group = split.assign(groups)
    if lent is not None:
        lent.extend(_lent(split))
    stages = _stages_from_rows(per_group[groups.of_row])
    _apply_ad_aware(uni, stages, opts)
    return stages


def fold_splits(
    uni: Universe, opts: BakeOptions, lent: list[str] | None = None, together: Together = ()
) -> list[dict[str, Positions]]:
    """K folds: a test holdout by strategy, then K validation folds over the remaining groups
    (the groups of each set of rows in ``together`` merged)."""
    groups = Groups.of(uni, opts.group_by, together)
    folds = Folds(splitter(opts, val_ratio=0.0), opts.folds)
    out = []
    for per_group in folds.split(groups):
        stages = _stages_from_rows(per_group[groups.of_row])
        _apply_ad_aware(uni, stages, opts)
        out.append(stages)
    if lent is not None:
        lent.extend(_lent(folds))
    return out


def stages_from_csv(uni: Universe) -> dict[str, Positions]:
    """Stages from the universe's ``split`` column (train/val/test/predict; empty = none)."""
    if not uni.has_column("split"):
        raise OptionError(
            f"{uni.path or 'universe'}: no 'split' column to import; add one "
            "(train/val/test) or choose a {strategy!f}", "strategy")
    col = uni.column("split")
    allowed = {"train", "val", "test", "predict"}
    for pos, value in enumerate(col):
        if value and value not in allowed:
            line = uni.line_of(pos)
            where = f"{uni.path}:{line}: " if uni.path and line else ""
            raise DvcCuvisError(
                f"{where}split value {value!r} of {uni.uid(pos)} is not one of "
                "train, val, test, predict (or empty)"
            )
    arr = np.asarray(col, dtype=object)
    stages = {s: np.flatnonzero(arr == s) for s in STAGES}
    if not any(len(v) for v in stages.values()):
        raise DvcCuvisError(f"{uni.path or 'universe'}: the 'split' column is empty")
    return stages


class BaseKept(TypedDict):
    """What a bake on a base split kept, placed and dropped (its metrics' ``base``)."""

    kept: int
    added: int
    removed: int
    removed_samples: list[str]  # the first 100


def stages_from_base(
    uni: Universe, base: DataSplitConfig, opts: BakeOptions, *, where: str
) -> tuple[dict[str, Positions], BaseKept]:
    """Keep every assignment of ``base``; place only samples new to the universe."""
    resolver = Resolver(uni)
    row_stage = np.full(len(uni), UNASSIGNED, dtype=np.int8)
    removed: list[str] = []
    for code, stage in enumerate(EXCLUSIVE_STAGES):
        for i, sel in enumerate(getattr(base, stage)):
            if sel.kind.value not in ("file_indices", "files"):
                raise OptionError(
                    f"{where}: {stage}[{i}] is a live '{sel.kind.value}' selector; {{base!f}} "
                    "needs a baked split (file_indices/files only)", "base")
            before = len(resolver.warnings)
            got = resolver.select(sel, f"{stage}[{i}]")
            if len(got) == 0:
                removed.extend(_named(sel))
            for w in resolver.warnings[before:]:
                removed.extend(uid(sel.source, m) if sel.source else str(m) for m in w.missing)
            row_stage[got] = code
    if removed and not opts.allow_removed:
        more = and_more(len(removed), 5)
        shown = ", ".join(removed[:5]) + more
        raise OptionError(
            f"{where}: {len(removed)} sample(s) of the base split left the universe: {shown}; "
            "re-enumerate if this is unexpected, or pass {allow_removed!f} to drop them",
            "allow_removed")
    groups = Groups.of(uni, opts.group_by)
    per_group = np.full(len(groups), UNASSIGNED, dtype=np.int8)
    known = row_stage != UNASSIGNED
    per_group[groups.of_row[known]] = row_stage[known]  # a group keeps its previous stage
    new_groups = np.flatnonzero(per_group == UNASSIGNED)
    if len(new_groups):
        per_group[new_groups] = splitter(opts).assign(groups.take(new_groups))
    fresh = ~known
    row_stage[fresh] = per_group[groups.of_row[fresh]]
    info: BaseKept = {"kept": int(known.sum()), "added": int(fresh.sum()), "removed": len(removed),
            "removed_samples": removed[:100]}
    return _stages_from_rows(row_stage), info


def _named(sel: Selector) -> list[str]:
    if sel.kind.value == "files":
        return list(sel.paths)
    from dvc_cuvis.model.selectors import expand_ids

    source = sel.source or ""  # the schema gives every file_indices selector a source
    return [uid(source, i) for i in expand_ids(sel.ids).tolist()]


def stages_from_rule(
    uni: Universe, rule: DataSplitConfig, name_to_id: dict[str, int] | None, where: str
) -> dict[str, Positions]:
    """Resolve a rule-form splits.json (live selectors) against the universe."""
    res = resolve(rule, uni, name_to_id=name_to_id, where=where)
    stages = dict(res.stages)
    if res.predict_is_all:
        stages["predict"] = np.zeros(0, dtype=np.int64)
    return stages
