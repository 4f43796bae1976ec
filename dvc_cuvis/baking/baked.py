"""One baked split with its config, metrics and typed verdicts (:class:`Baked`).

The metrics are computed from the positions (:func:`~dvc_cuvis.baking.write.baked_resolution`),
not by resolving the written config again; a strategy bake also gets our own
``non_empty_stages`` check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from cuvis_ai_schemas.training.data import Constraint, DataSplitConfig

from dvc_cuvis.baking.options import BakeOptions
from dvc_cuvis.baking.write import baked_resolution, to_config
from dvc_cuvis.errors import EmptyStageError
from dvc_cuvis.leakage.adjacent import buffer_rows
from dvc_cuvis.model.constraints import ConstraintResult, evaluate_constraints
from dvc_cuvis.model.selectors import Positions
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES
from dvc_cuvis.model.stats import StageStats, stage_stats
from dvc_cuvis.model.universe import Universe


@dataclass
class Baked:
    """One baked split: per-stage positions, the config to write, its metrics and verdicts.

    Everything a caller acts on is typed: ``results`` (the constraint outcomes, our
    ``non_empty_stages`` check included), ``empty_stages`` (left empty under
    ``allow_empty``), ``warnings`` (what a user should hear: failed constraints, base
    samples dropped), ``fold`` and ``source``; ``metrics`` is the JSON that DVC shows.
    """

    stages: dict[str, Positions]
    config: DataSplitConfig
    metrics: dict[str, Any] = field(default_factory=dict)
    results: list[ConstraintResult] = field(default_factory=list)
    stats: dict[str, StageStats] = field(default_factory=dict)
    empty_stages: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)
    fold: int | None = None
    source: str = ""

    @property
    def counts(self) -> dict[str, int]:
        """Samples per exclusive stage (train, val, test), as the metrics count them."""
        return {s: int(self.stats[s]["samples"]) for s in EXCLUSIVE_STAGES}

    def counts_text(self) -> str:
        """``train=N val=N test=N``."""
        return " ".join(f"{s}={n}" for s, n in self.counts.items())

    @property
    def prefix(self) -> str:
        """``"fold k: "`` for one fold of several, else ``""`` (for messages)."""
        return f"fold {self.fold}: " if self.fold is not None else ""

    def empty_warning(self) -> str | None:
        """The warning for stages left empty under ``allow_empty`` (None when there are none)."""
        if not self.empty_stages:
            return None
        return (f"{self.prefix}stage(s) {', '.join(self.empty_stages)} received no sample "
                f"({self.counts_text()})")


def baked_split(
    uni: Universe, stages: dict[str, Positions], opts: BakeOptions, *, source: str,
    constraints: list[Constraint] | None = None, extra: dict[str, object] | None = None,
    fold: int | None = None, strategy: bool = False, removed: int = 0,
) -> Baked:
    """Config, metrics and verdicts of one split, all from its positions.

    ``strategy``: a strategy bake, which also gets our ``non_empty_stages`` check (an
    :class:`~dvc_cuvis.errors.EmptyStageError` unless ``allow_empty``).
    """
    buffered = _buffer(uni, stages, opts)
    cfg = to_config(uni, stages, opts, constraints)
    res = baked_resolution(uni, stages, opts, cfg)
    results = evaluate_constraints(res, cfg.constraints)
    stats = stage_stats(res)
    assigned = int(np.unique(np.concatenate([res.stages[s] for s in EXCLUSIVE_STAGES])).size)
    ok = not any(r.failed for r in results)
    metrics: dict[str, Any] = {
        "universe_hash": uni.hash,
        "strategy": opts.strategy,
        "seed": opts.seed,
        "stages": stats,
        "assigned": assigned,
        "unassigned": len(uni) - assigned,
        "constraints": [r.to_dict() for r in results],
        "constraints_ok": ok,
    }
    if extra:
        metrics.update(extra)
    if opts.buffer:
        metrics["buffer"] = opts.buffer
        metrics["buffered"] = uni.uids(buffered)
    baked = Baked(stages, cfg, metrics, results, stats, fold=fold, source=source)
    if len(buffered):
        baked.warnings.append(
            f"{baked.prefix}{len(buffered)} frame(s) within {opts.buffer} of a stage boundary "
            "inside a recording are left out of every stage (--buffer); the split metrics "
            "list them under 'buffered'")
    if strategy:
        checked = _non_empty(baked, opts)
        results.append(checked)
        metrics["constraints"].append(checked.to_dict())
        if checked.status == "violated":
            baked.empty_stages = checked.offending
    if removed:
        baked.warnings.append(f"{removed} sample(s) of the base split left the universe and "
                              "were dropped")
    if not ok:
        bad = [r.kind for r in results if r.severity == "error" and r.status != "satisfied"]
        baked.warnings.append(f"{baked.prefix}the baked split fails constraint(s) "
                              f"{', '.join(bad)}; see the split metrics")
    return baked


def _buffer(uni: Universe, stages: dict[str, Positions], opts: BakeOptions) -> Positions:
    """Take the ``--buffer`` frames out of train/val/test (in place) and return them: the
    first K frames after each stage boundary inside a recording, so no neighbours of
    different stages remain."""
    if not opts.buffer:
        return np.zeros(0, dtype=np.int64)
    drop = buffer_rows(uni, stages, opts.buffer)
    if len(drop):
        for s in EXCLUSIVE_STAGES:
            stages[s] = stages[s][~np.isin(stages[s], drop)]  # resolution order kept
    return drop


def plot_data(
    baked: Baked, uni: Universe, categories: dict[str, int] | None = None, top_groups: int = 50,
) -> dict[str, list[dict[str, object]]]:
    """Rows for DVC plots: per-stage sizes, per-category-and-stage counts, largest groups."""
    st = baked.stats
    out: dict[str, list[dict[str, object]]] = {
        "stages.json": [{"stage": s, "samples": st[s]["samples"], "sources": st[s]["sources"],
                         "groups": st[s]["groups"]} for s in EXCLUSIVE_STAGES],
    }
    id_to_name = {v: k for k, v in (categories or {}).items()}
    cats = sorted({int(c) for s in EXCLUSIVE_STAGES for c in st[s].get("categories", {})})
    out["categories.json"] = [
        {"category_stage": f"{id_to_name.get(c, str(c))} / {s}", "category":
         id_to_name.get(c, str(c)), "stage": s, "samples": st[s]["categories"].get(str(c), 0)}
        for c in cats for s in EXCLUSIVE_STAGES]
    names, codes = uni.groups()
    assigned = np.zeros(len(uni), dtype=bool)
    for s in EXCLUSIVE_STAGES:
        assigned[baked.stages[s]] = True
    sizes = np.bincount(codes[assigned], minlength=len(names))
    order = np.argsort(-sizes, kind="stable")[:top_groups]
    out["groups.json"] = [{"group": names[g], "samples": int(sizes[g])}
                          for g in order.tolist() if sizes[g]]
    return out


def bake_imported(
    uni: Universe, splits: list[dict[str, Positions]], opts: BakeOptions, source: str
) -> list[Baked]:
    """Baked splits (one per fold) from stage positions produced elsewhere (an import)."""
    out = []
    for j, stages in enumerate(splits):
        extra: dict[str, object] = {"source": source}
        several = len(splits) > 1
        if several:
            extra.update({"fold": j, "folds": len(splits)})
        out.append(baked_split(uni, stages, opts, source=source, extra=extra,
                               fold=j if several else None))
    return out


#: Our own check of a strategy bake (never written into splits.json, which the schema owns).
NON_EMPTY_STAGES = "non_empty_stages"


def _non_empty(baked: Baked, opts: BakeOptions) -> ConstraintResult:
    """The ``non_empty_stages`` result: a stage with a non-zero share got no sample.

    An :class:`~dvc_cuvis.errors.EmptyStageError` by default (``allow_empty`` records it as a
    warning instead): a split whose test stage is silently empty would train and report
    nothing on it.
    """
    wanted = ["train"]
    if opts.val_ratio > 0 or opts.folds:
        wanted.append("val")
    if opts.test_ratio > 0:
        wanted.append("test")
    counts = baked.counts
    empty = [s for s in wanted if counts[s] == 0]
    severity = "warn" if opts.allow_empty else "error"
    reason = ("a stage with a non-zero ratio received no sample: add data, lower the number "
              "of groups needed (group-by), change the ratios or seed, or allow it with "
              "--allow-empty") if empty else ""
    result = ConstraintResult(NON_EMPTY_STAGES, severity,
                              "violated" if empty else "satisfied", len(empty), tuple(empty),
                              reason)
    if result.failed:
        raise EmptyStageError(f"{baked.prefix}stage(s) {', '.join(empty)} received no sample "
                              f"({baked.counts_text()}); {reason}")
    return result
