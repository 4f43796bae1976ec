"""Split generation: from a universe to a baked splits.json (concrete selectors, hash pinned).

A baked split is produced by generation, never by editing: every strategy here computes
per-stage sets of universe positions, and :func:`to_config` writes them as ``file_indices``
selectors (sources in canonical order, ids sorted and run-length compacted to ``"a-b"``)
with the ``universe_hash`` pinned.

Strategies:

* ``hash`` (default) — each group lands by a seeded sha256 of its id compared with the
  ratio thresholds.  A group's stage depends on nothing else, so adding data never moves
  existing samples.
* ``random`` / ``stratified`` — cuvis-ai-dataloader's ``resolve-splits`` strategies, with
  the same membership for the same universe, seed, ratios and grouping (``random.Random``
  shuffle of groups in canonical first-appearance order, ``round()`` counts, test then val
  then train slices; stratified shuffles normal then anomalous groups, each re-seeded).
* ``multilabel`` — iterative stratification (Sechidis et al., 2011) of groups over their
  COCO category ids, weighted by sample counts.
* ``from_csv`` (the ``split`` column), ``rule`` (resolve a rule-form splits.json) and
  ``base`` (keep a previous split, place only new samples).

``folds`` turns any strategy into K folds: a test holdout first, then K validation folds
over the rest.

"Anomalous" (``--ad-aware``, the stratified strata) is the one rule of
:mod:`dvc_cuvis.universe` (a category id ``!= 0``), except in ``random``/``stratified``
without folds, which keep resolve-splits' "any category id" for parity (:func:`anomaly_rule`).
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from cuvis_ai_schemas.training.data import (
    Constraint,
    DataSplitConfig,
    Selector,
    default_constraints,
)

from dvc_cuvis.errors import DvcCuvisError, EmptyStageError, SelectorError
from dvc_cuvis.selectors import Positions, Resolver
from dvc_cuvis.splits import (
    EXCLUSIVE_STAGES,
    STAGES,
    ConstraintResult,
    evaluate_constraints,
    resolve,
    stage_stats,
)
from dvc_cuvis.universe import ANOMALOUS, ANOMALOUS_FOR_PARITY, Universe

logger = logging.getLogger(__name__)

STRATEGIES: tuple[str, ...] = ("hash", "random", "stratified", "multilabel")
GROUP_BY: tuple[str, ...] = ("auto", "source", "group", "sample")
TRAIN, VAL, TEST, UNASSIGNED = 0, 1, 2, -1
#: A notion of "anomalous" over a sample's category ids (see :mod:`dvc_cuvis.universe`).
AnomalyRule = Callable[[Sequence[int]], bool]


@dataclass
class BakeOptions:
    """Every knob of a bake (also the ``bake:`` section of params.yaml)."""

    strategy: str = "hash"
    seed: int = 0
    val_ratio: float = 0.2
    test_ratio: float = 0.2
    group_by: str = "auto"
    ad_aware: bool = False
    folds: int = 0
    predict: str = "all"
    ranges: bool = True
    constraints: list[Constraint] | None = None
    allow_removed: bool = False
    allow_empty: bool = False

    def check(self) -> None:
        """Refuse impossible combinations with a message naming the option."""
        if self.strategy not in STRATEGIES:
            raise DvcCuvisError(
                f"unknown strategy {self.strategy!r}; choose one of {', '.join(STRATEGIES)}"
            )
        if self.group_by not in GROUP_BY:
            raise DvcCuvisError(
                f"unknown group-by {self.group_by!r}; choose one of {', '.join(GROUP_BY)}"
            )
        for name in ("val_ratio", "test_ratio"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 1:
                flag = name.replace("_", "-")
                raise DvcCuvisError(f"{flag} must be a number in [0, 1), got {v!r}")
        if self.val_ratio + self.test_ratio >= 1:
            raise DvcCuvisError(
                f"val-ratio + test-ratio must be below 1 (got {self.val_ratio} + "
                f"{self.test_ratio}); train would be empty"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise DvcCuvisError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.folds < 0 or self.folds == 1:
            raise DvcCuvisError(f"folds must be 0 (off) or at least 2, got {self.folds}")
        if self.predict not in ("all", "test"):
            raise DvcCuvisError(f"predict must be 'all' (empty = whole universe) or 'test', "
                                f"got {self.predict!r}")


@dataclass
class Baked:
    """One baked split: its per-stage positions, the config to write, and its metrics."""

    stages: dict[str, Positions]
    config: DataSplitConfig
    metrics: dict[str, Any] = field(default_factory=dict)


# -- groups -------------------------------------------------------------------------------


def group_rows(uni: Universe, group_by: str) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Group ids in canonical first-appearance order and a per-row group number."""
    if group_by == "auto":
        group_by = "group" if uni.has_column("group") else "source"
    if group_by == "sample":
        return uni.uids(), np.arange(len(uni), dtype=np.int64)
    if group_by == "source":
        return list(uni.source_names), uni.codes.astype(np.int64)
    names, codes = uni.groups()
    _, first = np.unique(codes, return_index=True)
    order = np.argsort(first, kind="stable")  # groups by first appearance in canonical order
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return [names[g] for g in order.tolist()], rank[codes]


def _hash01(seed: int, key: str, salt: str = "") -> float:
    digest = hashlib.sha256(f"dvc-cuvis/{salt}{seed}/{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


#: The drop-in strategies that reproduce cuvis-ai-dataloader's ``resolve-splits``.
PARITY_STRATEGIES: tuple[str, ...] = ("random", "stratified")


def anomaly_rule(opts: BakeOptions) -> AnomalyRule:
    """The notion of "anomalous" a bake uses (its strata and ``--ad-aware``).

    :data:`~dvc_cuvis.universe.ANOMALOUS` (ids ``!= 0``), except for the resolve-splits
    drop-ins (``random``/``stratified`` without folds), which keep
    :data:`~dvc_cuvis.universe.ANOMALOUS_FOR_PARITY` (any id) so that their membership
    stays resolve-splits' own.  Folds exist only here: they use the rule.
    """
    if opts.strategy in PARITY_STRATEGIES and not opts.folds:
        return ANOMALOUS_FOR_PARITY
    return ANOMALOUS


@dataclass
class Groups:
    """The units a strategy assigns: group ids, the group of every row, group features."""

    uni: Universe
    names: list[str]
    of_row: npt.NDArray[np.int64]

    @classmethod
    def of(cls, uni: Universe, group_by: str) -> Groups:
        """Group the universe's rows by ``group_by`` (auto/source/group/sample)."""
        names, of_row = group_rows(uni, group_by)
        return cls(uni, names, of_row)

    def anomalous(self, rule: AnomalyRule = ANOMALOUS) -> npt.NDArray[np.bool_]:
        """Per group: is any of its samples anomalous by ``rule`` (see :func:`anomaly_rule`)?"""
        out = np.zeros(len(self.names), dtype=bool)
        out[self.of_row[self.uni.anomalous(rule)]] = True
        return out

    def labels(self) -> tuple[list[dict[int, int]], list[int]]:
        """Per group ``{category id: samples}`` (background 0 excluded) and sample counts."""
        if not self.uni.has_column("category_ids"):
            raise DvcCuvisError(
                "multilabel stratification needs a category_ids column in the universe "
                "(enumerate with labels, or choose another strategy)"
            )
        labels: list[dict[int, int]] = [{} for _ in self.names]
        weights = np.bincount(self.of_row, minlength=len(self.names)).tolist()
        for row, ids in enumerate(self.uni.category_ids):
            lab = labels[int(self.of_row[row])]
            for cid in set(ids):
                if cid != 0:
                    lab[cid] = lab.get(cid, 0) + 1
        return labels, weights


def _slice(order: Sequence[int], ratios: tuple[float, float]) -> npt.NDArray[np.int8]:
    """Upstream slicing of a shuffled order: test first, then val, then train."""
    n = len(order)
    n_test, n_val = round(n * ratios[1]), round(n * ratios[0])  # round-half-even, as upstream
    out = np.full(n, TRAIN, dtype=np.int8)
    for k, pos in enumerate(order):
        out[pos] = TEST if k < n_test else VAL if k < n_test + n_val else TRAIN
    return out


def _lend(
    out: npt.NDArray[np.int8], u: npt.NDArray[np.float64], names: list[str], opts: BakeOptions
) -> list[str]:
    """Fill every empty stage that has a non-zero ratio by lending it one group (hash, in place).

    The hash strategy places each group by its own seeded hash ``u`` alone, so adding data
    never moves an existing group — but with few groups a stage can stay empty. Then, for each
    empty stage in the order test, val, train, one group is lent to it: the one whose ``u``
    lies nearest to that stage's interval (ties: the smaller name), taken from train if train
    keeps a group without it, else from val, else from test (held-out groups are lent last).
    When there are at least as many groups as non-zero stages, every such stage ends up
    non-empty.

    When a sample can move as data is added: only a group listed as lent (``lent_groups`` in
    the split metrics) before or after the growth. A split that needed no loan keeps every
    group where it is under growth (its stages can only gain groups, so none is lent after);
    a split that did lend may give a group back to its own stage, or lend another one.
    """
    lo_hi = {TEST: (0.0, opts.test_ratio),
             VAL: (opts.test_ratio, opts.test_ratio + opts.val_ratio),
             TRAIN: (opts.test_ratio + opts.val_ratio, 1.0)}
    lent: list[str] = []
    for stage in (TEST, VAL, TRAIN):
        lo, hi = lo_hi[stage]
        if hi <= lo or (out == stage).any():
            continue
        sizes = np.bincount(out, minlength=3)
        donors = next(([g for g in range(len(names)) if out[g] == src]
                       for src in (TRAIN, VAL, TEST) if src != stage and sizes[src] > 1), [])
        if not donors:
            break
        g = min(donors, key=lambda g: (max(lo - u[g], u[g] - hi, 0.0), names[g]))
        out[g] = stage
        lent.append(names[g])
    return lent


def assign(
    groups: Groups, subset: npt.NDArray[np.int64], opts: BakeOptions,
    rule: AnomalyRule | None = None, lent: list[str] | None = None,
) -> npt.NDArray[np.int8]:
    """Stage code for each group in ``subset`` (group numbers) by ``opts.strategy``.

    ``rule``: the strata's notion of anomalous (default :func:`anomaly_rule` of ``opts``);
    ``lent``: collects the groups the hash strategy lent to otherwise empty stages.
    """
    names = [groups.names[g] for g in subset.tolist()]
    ratios = (opts.val_ratio, opts.test_ratio)
    if opts.strategy == "hash":
        u = np.fromiter((_hash01(opts.seed, n) for n in names), float, len(names))
        out = np.full(len(names), TRAIN, dtype=np.int8)
        out[u < opts.test_ratio + opts.val_ratio] = VAL
        out[u < opts.test_ratio] = TEST
        moved = _lend(out, u, names, opts)
        if lent is not None:
            lent.extend(moved)
        return out
    if opts.strategy == "random":
        order = list(range(len(subset)))
        random.Random(opts.seed).shuffle(order)  # upstream: stdlib shuffle of the group list
        return _slice(order, ratios)
    if opts.strategy == "stratified":
        out = np.full(len(subset), TRAIN, dtype=np.int8)
        flags = groups.anomalous(rule or anomaly_rule(opts))[subset]
        for stratum in (np.flatnonzero(~flags), np.flatnonzero(flags)):
            order = list(range(len(stratum)))
            random.Random(opts.seed).shuffle(order)  # re-seeded per stratum, as upstream
            out[stratum] = _slice(order, ratios)
        return out
    labels, weights = groups.labels()
    fold = iterative_stratify([labels[g] for g in subset.tolist()],
                              [weights[g] for g in subset.tolist()],
                              [1 - opts.val_ratio - opts.test_ratio, *ratios], opts.seed)
    return fold.astype(np.int8)


def iterative_stratify(
    labels: list[dict[int, int]], weights: Sequence[int], ratios: Sequence[float], seed: int
) -> npt.NDArray[np.int64]:
    """Fold per group by iterative stratification (labels: per group {label: samples})."""
    rng = np.random.default_rng(seed)
    n, k = len(labels), len(ratios)
    r = np.asarray(ratios, dtype=float)
    want_total = r * float(sum(weights))
    label_total: dict[int, float] = {}
    for lab in labels:
        for cid, cnt in lab.items():
            label_total[cid] = label_total.get(cid, 0.0) + cnt
    want = {cid: r * t for cid, t in label_total.items()}
    fold = np.full(n, -1, dtype=np.int64)
    tiebreak = rng.permutation(n) if n else np.zeros(0, dtype=np.int64)
    remaining: dict[int, set[int]] = {cid: set() for cid in label_total}
    for g, lab in enumerate(labels):
        for cid in lab:
            remaining[cid].add(g)

    def place(g: int, f: int) -> None:
        fold[g] = f
        want_total[f] -= weights[g]
        for cid, cnt in labels[g].items():
            want[cid][f] -= cnt
            remaining[cid].discard(g)

    def best(scores: list[npt.NDArray[np.float64]]) -> int:
        cand = np.arange(k)
        for sc in scores:
            top = sc[cand].max()
            cand = cand[np.isclose(sc[cand], top)]
            if len(cand) == 1:
                return int(cand[0])
        return int(cand[int(rng.integers(len(cand)))])

    while any(remaining.values()):
        cid = min((c for c in remaining if remaining[c]),
                  key=lambda c: (sum(labels[g][c] for g in remaining[c]), c))
        for g in sorted(remaining[cid], key=lambda g: tiebreak[g]):
            place(g, best([want[cid], want_total]))
    for g in sorted(np.flatnonzero(fold < 0).tolist(), key=lambda g: tiebreak[g]):
        place(g, best([want_total]))
    return fold


def _stages_from_rows(row_stage: npt.NDArray[np.int8]) -> dict[str, Positions]:
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
    uni: Universe, opts: BakeOptions, lent: list[str] | None = None
) -> dict[str, Positions]:
    """Per-stage positions for ``uni`` by strategy and grouping."""
    groups = Groups.of(uni, opts.group_by)
    per_group = assign(groups, np.arange(len(groups.names)), opts, lent=lent)
    stages = _stages_from_rows(per_group[groups.of_row])
    _apply_ad_aware(uni, stages, opts)
    return stages


def fold_splits(
    uni: Universe, opts: BakeOptions, lent: list[str] | None = None
) -> list[dict[str, Positions]]:
    """K folds: a test holdout by strategy, then K validation folds over the remaining groups."""
    groups = Groups.of(uni, opts.group_by)
    everything = np.arange(len(groups.names))
    holdout = BakeOptions(**{**opts.__dict__, "val_ratio": 0.0, "folds": 0})
    per_group = assign(groups, everything, holdout, anomaly_rule(opts), lent)
    rest = np.flatnonzero(per_group != TEST)
    k = opts.folds
    fold_of = np.full(len(groups.names), -1, dtype=np.int64)
    if opts.strategy == "hash":
        # Balanced folds: order the groups by a seeded hash and deal them round-robin.
        u = np.fromiter((_hash01(opts.seed, groups.names[g], "fold/") for g in rest.tolist()),
                        float, len(rest))
        fold_of[rest[np.argsort(u, kind="stable")]] = np.arange(len(rest)) % k
    elif opts.strategy == "multilabel":
        labels, weights = groups.labels()
        fold_of[rest] = iterative_stratify([labels[g] for g in rest.tolist()],
                                           [weights[g] for g in rest.tolist()],
                                           [1.0 / k] * k, opts.seed)
    else:
        strata = [rest]
        if opts.strategy == "stratified":
            flags = groups.anomalous(anomaly_rule(opts))
            strata = [rest[~flags[rest]], rest[flags[rest]]]
        for stratum in strata:
            order = stratum.tolist()
            random.Random(opts.seed).shuffle(order)
            for j, g in enumerate(order):
                fold_of[g] = j % k
    out = []
    for j in range(k):
        per = np.where(per_group == TEST, TEST, np.where(fold_of == j, VAL, TRAIN))
        stages = _stages_from_rows(per.astype(np.int8)[groups.of_row])
        _apply_ad_aware(uni, stages, opts)
        out.append(stages)
    return out


# -- other sources of an assignment -------------------------------------------------------


def stages_from_csv(uni: Universe) -> dict[str, Positions]:
    """Stages from the universe's ``split`` column (train/val/test/predict; empty = none)."""
    if not uni.has_column("split"):
        raise DvcCuvisError(
            f"{uni.path or 'universe'}: no 'split' column to import; add one "
            "(train/val/test) or choose a --strategy"
        )
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


def stages_from_base(
    uni: Universe, base: DataSplitConfig, opts: BakeOptions, *, where: str
) -> tuple[dict[str, Positions], dict[str, Any]]:
    """Keep every assignment of ``base``; place only samples new to the universe."""
    resolver = Resolver(uni)
    row_stage = np.full(len(uni), UNASSIGNED, dtype=np.int8)
    removed: list[str] = []
    for code, stage in enumerate(EXCLUSIVE_STAGES):
        for i, sel in enumerate(getattr(base, stage)):
            if sel.kind.value not in ("file_indices", "files"):
                raise DvcCuvisError(
                    f"{where}: {stage}[{i}] is a live '{sel.kind.value}' selector; --base needs "
                    "a baked split (file_indices/files only)"
                )
            before = len(resolver.warnings)
            got = resolver.select(sel, f"{stage}[{i}]")
            if len(got) == 0:
                removed.extend(_named(sel))
            for w in resolver.warnings[before:]:
                removed.extend(f"{sel.source}#{m}" if sel.source else str(m) for m in w.missing)
            row_stage[got] = code
    if removed and not opts.allow_removed:
        more = f" (+{len(removed) - 5} more)" if len(removed) > 5 else ""
        shown = ", ".join(removed[:5]) + more
        raise DvcCuvisError(
            f"{where}: {len(removed)} sample(s) of the base split left the universe: {shown}; "
            "re-enumerate if this is unexpected, or pass --allow-removed to drop them"
        )
    groups = Groups.of(uni, opts.group_by)
    per_group = np.full(len(groups.names), UNASSIGNED, dtype=np.int8)
    known = row_stage != UNASSIGNED
    per_group[groups.of_row[known]] = row_stage[known]  # a group keeps its previous stage
    new_groups = np.flatnonzero(per_group == UNASSIGNED)
    if len(new_groups):
        per_group[new_groups] = assign(groups, new_groups, opts)
    fresh = ~known
    row_stage[fresh] = per_group[groups.of_row[fresh]]
    info = {"kept": int(known.sum()), "added": int(fresh.sum()), "removed": len(removed),
            "removed_samples": removed[:100]}
    return _stages_from_rows(row_stage), info


def _named(sel: Selector) -> list[str]:
    if sel.kind.value == "files":
        return list(sel.paths)
    from dvc_cuvis.selectors import expand_ids

    return [f"{sel.source}#{i}" for i in expand_ids(sel.ids).tolist()]


def stages_from_rule(
    uni: Universe, rule: DataSplitConfig, name_to_id: dict[str, int] | None, where: str
) -> dict[str, Positions]:
    """Resolve a rule-form splits.json (live selectors) against the universe."""
    res = resolve(rule, uni, name_to_id=name_to_id, where=where)
    stages = dict(res.stages)
    if res.predict_is_all:
        stages["predict"] = np.zeros(0, dtype=np.int64)
    return stages


# -- writing ------------------------------------------------------------------------------


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


def stage_selectors(uni: Universe, positions: Positions, *, ranges: bool = True) -> list[Selector]:
    """Concrete selectors for a set of positions: sources canonical, ids sorted.

    Sources whose file is a single sample (npz frames, TIFF cubes) are named together in
    one ``files`` selector — for 100k frames that is one selector instead of 100k, which
    keeps splits.json small and fast to validate; every other source gets ``file_indices``.
    """
    pos = np.unique(positions)
    fmt = uni.raw_column("format")
    out: list[Selector] = []
    if len(pos) == 0:
        return out
    codes = uni.codes[pos]
    bounds = np.flatnonzero(np.diff(codes)) + 1
    off = uni.offsets
    whole_files: list[str] = []
    for chunk in np.split(pos, bounds):
        code = int(uni.codes[chunk[0]])
        source = uni.source_names[code]
        single = off[code + 1] - off[code] == 1 and len(chunk) == 1
        whole = uni.indexless is not None and bool(uni.indexless[chunk[0]])
        if whole or (single and fmt is not None and fmt[chunk[0]] in SINGLE_SAMPLE_FORMATS):
            whole_files.append(source)
        else:
            ids = compact_ids(uni.indices[chunk].tolist(), ranges=ranges)
            out.append(Selector(kind="file_indices", source=source, ids=ids))
    if whole_files:
        out.insert(0, Selector(kind="files", paths=whole_files))
    return out


def to_config(
    uni: Universe,
    stages: dict[str, Positions],
    opts: BakeOptions,
    constraints: list[Constraint] | None = None,
) -> DataSplitConfig:
    """The baked ``DataSplitConfig`` for ``stages`` (hash pinned, constraints seeded)."""
    predict = stages.get("predict", np.zeros(0, dtype=np.int64))
    if opts.predict == "test" and len(predict) == 0:
        predict = stages["test"]
    if constraints is None:
        constraints = opts.constraints if opts.constraints is not None else default_constraints()
    return DataSplitConfig(
        universe_hash=uni.hash,
        train=stage_selectors(uni, stages["train"], ranges=opts.ranges),
        val=stage_selectors(uni, stages["val"], ranges=opts.ranges),
        test=stage_selectors(uni, stages["test"], ranges=opts.ranges),
        predict=stage_selectors(uni, predict, ranges=opts.ranges),
        constraints=constraints,
    )


def split_metrics(
    uni: Universe, cfg: DataSplitConfig, opts: BakeOptions, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Per-stage counts, constraint status and the parameters of a baked split."""
    res = resolve(cfg, uni)
    results = evaluate_constraints(res, cfg.constraints)
    metrics: dict[str, Any] = {
        "universe_hash": uni.hash,
        "strategy": opts.strategy,
        "seed": opts.seed,
        "stages": stage_stats(res),
        "assigned": int(np.unique(np.concatenate([res.stages[s] for s in EXCLUSIVE_STAGES])).size),
        "unassigned": 0,
        "constraints": [r.to_dict() for r in results],
        "constraints_ok": not any(r.failed for r in results),
    }
    metrics["unassigned"] = len(uni) - metrics["assigned"]
    if extra:
        metrics.update(extra)
    return metrics


def plot_data(
    metrics: dict[str, Any], uni: Universe, stages: dict[str, Positions],
    categories: dict[str, int] | None = None, top_groups: int = 50,
) -> dict[str, list[dict[str, Any]]]:
    """Rows for DVC plots: per-stage sizes, per-category-and-stage counts, largest groups."""
    st = metrics["stages"]
    out: dict[str, list[dict[str, Any]]] = {
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
        assigned[stages[s]] = True
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
        cfg = to_config(uni, stages, opts)
        extra: dict[str, Any] = {"source": source}
        if len(splits) > 1:
            extra.update({"fold": j, "folds": len(splits)})
        out.append(Baked(stages, cfg, split_metrics(uni, cfg, opts, extra)))
    return out


def bake(
    uni: Universe,
    opts: BakeOptions,
    *,
    from_csv: bool = False,
    rule: DataSplitConfig | None = None,
    base: DataSplitConfig | None = None,
    name_to_id: dict[str, int] | None = None,
    where: str = "",
) -> list[Baked]:
    """Bake ``uni`` into one split (or one per fold) by the chosen source of assignment.

    A baked split lists concrete samples (``file_indices``/``files`` selectors) and pins
    the ``universe_hash`` it was made for, so it means the same thing on every machine
    and a later change of the data is detected instead of silently resolved.  Bake
    rather than hand-edit: the assignment comes from a strategy (``opts.strategy``),
    from the universe's ``split`` column (``from_csv``), from a rule-form split
    (``rule``) or from a previous baked split that new samples are added to (``base``).

    Parameters
    ----------
    uni : Universe
        The samples to split (:func:`~dvc_cuvis.universe.read_universe`).
    opts : BakeOptions
        Strategy, seed, ratios, grouping, ``ad_aware``, ``folds``, ``predict``,
        constraints (default: the schema's ``default_constraints()``) and the
        ``allow_removed``/``allow_empty`` escapes; also the ``bake:`` section of
        params.yaml.
    from_csv : bool, default False
        Take each sample's stage from the universe's ``split`` column.
    rule : DataSplitConfig, optional
        Resolve this rule-form split (live selectors) and write its result as baked.
    base : DataSplitConfig, optional
        Keep every assignment of this baked split; place only samples new to ``uni``.
    name_to_id : dict of str to int, optional
        Category name to id, for a ``rule`` with ``categories`` selectors.
    where : str, default ""
        Names ``rule``/``base`` in error messages.

    Returns
    -------
    list of Baked
        One entry, or one per fold with ``opts.folds``.  Each carries ``stages`` (per
        stage universe positions), ``config`` (the ``DataSplitConfig`` to save, hash
        pinned) and ``metrics`` (counts, constraint results, parameters).

    Raises
    ------
    DvcCuvisError
        An impossible option (unknown strategy or group-by, ratios outside ``[0, 1)`` or
        summing to 1 or more, ``folds`` of 1), more than one of ``from_csv``/``rule``/
        ``base``, ``folds`` with one of them, a bad or missing ``split`` column, a rule
        whose selector does not resolve (the :class:`~dvc_cuvis.errors.SelectorError`
        message, re-raised as this base class), or base samples that left the universe
        without ``allow_removed``.
    EmptyStageError
        A strategy bake left a stage with a non-zero ratio (train always; val and test
        when their ratio is above 0) without any sample, unless ``opts.allow_empty``.

    See Also
    --------
    dvc_cuvis.splits.save_splits : write ``Baked.config`` as splits.json.
    dvc_cuvis.splits.resolve : the samples of each stage, by uid.
    dvc_cuvis.drift.verify : check a baked split against the data later.

    Notes
    -----
    Assignment is per group (``group_by``: the ``group`` column when there is one, else
    the source), so the frames of one recording never straddle stages.  The default
    ``hash`` strategy places each group by a seeded sha256 of its id alone: adding data
    never moves an existing group, except a group that was lent to an otherwise empty
    stage (``metrics["lent_groups"]``).  ``random``/``stratified`` reproduce
    cuvis-ai-dataloader's ``resolve-splits`` membership instead, and are not stable
    under growth; use ``base`` to grow them.

    A failed constraint of the split itself does not raise: it is recorded in
    ``metrics["constraints"]`` and ``metrics["constraints_ok"]`` is False.  An empty stage
    is different: it raises :class:`~dvc_cuvis.errors.EmptyStageError` (``allow_empty``
    records it as a ``non_empty_stages`` warning in the metrics instead).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from dvc_cuvis.bake import BakeOptions, bake
    >>> from dvc_cuvis.splits import resolve, state
    >>> from dvc_cuvis.universe import read_universe
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> rows = "".join(f"day{k}.cu3s,0-1\\n" for k in range(6))  # 6 recordings, 2 frames each
    >>> _ = (d / "universe.csv").write_text("source,index\\n" + rows)
    >>> uni = read_universe(d / "universe.csv")
    >>> (baked,) = bake(uni, BakeOptions(seed=0, val_ratio=0.2, test_ratio=0.2))
    >>> state(baked.config), baked.config.universe_hash == uni.hash
    ('baked', True)
    >>> {stage: len(pos) for stage, pos in baked.stages.items()}
    {'train': 6, 'val': 2, 'test': 4}
    >>> baked.metrics["constraints_ok"]
    True

    Six more recordings: every sample baked before keeps its stage.

    >>> more = "".join(f"day{k}.cu3s,0-1\\n" for k in range(6, 12))
    >>> _ = (d / "grown.csv").write_text("source,index\\n" + rows + more)
    >>> grown = read_universe(d / "grown.csv")
    >>> (again,) = bake(grown, BakeOptions(seed=0, val_ratio=0.2, test_ratio=0.2))
    >>> before, after = resolve(baked.config, uni), resolve(again.config, grown)
    >>> all(set(before.uids(s)) <= set(after.uids(s)) for s in ("train", "val", "test"))
    True
    """
    opts.check()
    extra: dict[str, Any] = {}
    constraints: list[Constraint] | None = None
    if sum(x is not None and x is not False for x in (from_csv or None, rule, base)) > 1:
        raise DvcCuvisError("choose at most one of --from-csv, --rule and --base")
    if from_csv or rule is not None or base is not None:
        if opts.folds:
            raise DvcCuvisError(
                "--folds combines with a strategy, not with --from-csv/--rule/--base"
            )
        if from_csv:
            stages = stages_from_csv(uni)
            extra["source"] = "csv"
        elif rule is not None:
            try:
                stages = stages_from_rule(uni, rule, name_to_id, where)
            except SelectorError as exc:
                raise DvcCuvisError(str(exc)) from None
            constraints = list(rule.constraints) if opts.constraints is None else None
            extra["source"] = "rule"
        else:
            assert base is not None
            stages, info = stages_from_base(uni, base, opts, where=where)
            constraints = list(base.constraints) if opts.constraints is None else None
            extra["source"] = "base"
            extra["base"] = info
        cfg = to_config(uni, stages, opts, constraints)
        return [Baked(stages, cfg, split_metrics(uni, cfg, opts, extra))]
    lent: list[str] = []
    if opts.folds:
        out = []
        for j, stages in enumerate(fold_splits(uni, opts, lent)):
            cfg = to_config(uni, stages, opts)
            fold_info: dict[str, Any] = {"fold": j, "folds": opts.folds}
            if lent:
                fold_info["lent_groups"] = lent
            out.append(Baked(stages, cfg, _non_empty(split_metrics(uni, cfg, opts, fold_info),
                                                     opts)))
        return out
    stages = split_universe(uni, opts, lent)
    cfg = to_config(uni, stages, opts)
    return [Baked(stages, cfg, _non_empty(split_metrics(
        uni, cfg, opts, {"lent_groups": lent} if lent else None), opts))]


#: Our own check of a strategy bake (never written into splits.json, which the schema owns).
NON_EMPTY_STAGES = "non_empty_stages"


def _non_empty(metrics: dict[str, Any], opts: BakeOptions) -> dict[str, Any]:
    """Add the ``non_empty_stages`` result: a stage with a non-zero share got no sample.

    An :class:`~dvc_cuvis.errors.EmptyStageError` by default (``allow_empty`` records it as a
    warning in the metrics instead): a split whose test stage is silently empty would train
    and report nothing on it.
    """
    wanted = ["train"]
    if opts.val_ratio > 0 or opts.folds:
        wanted.append("val")
    if opts.test_ratio > 0:
        wanted.append("test")
    empty = [s for s in wanted if metrics["stages"][s]["samples"] == 0]
    severity = "warn" if opts.allow_empty else "error"
    reason = ("a stage with a non-zero ratio received no sample: add data, lower the number "
              "of groups needed (group-by), change the ratios or seed, or allow it with "
              "--allow-empty") if empty else ""
    result = ConstraintResult(NON_EMPTY_STAGES, severity,
                              "violated" if empty else "satisfied", len(empty), tuple(empty),
                              reason)
    if result.failed:
        counts = " ".join(f"{s}={metrics['stages'][s]['samples']}" for s in EXCLUSIVE_STAGES)
        fold = f"fold {metrics['fold']}: " if "fold" in metrics else ""
        raise EmptyStageError(f"{fold}stage(s) {', '.join(empty)} received no sample "
                              f"({counts}); {reason}")
    metrics["constraints"].append(result.to_dict())
    return metrics


__all__ = [
    "STRATEGIES",
    "BakeOptions",
    "Baked",
    "bake",
    "compact_ids",
    "iterative_stratify",
    "split_universe",
    "stage_selectors",
    "to_config",
]
