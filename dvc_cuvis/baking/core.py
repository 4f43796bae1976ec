"""Split generation: from a universe to a baked splits.json (concrete selectors, hash pinned).

A baked split is produced by generation, never by editing: every strategy here computes
per-stage sets of universe positions, and :func:`to_config` writes them as ``file_indices``
selectors (sources in canonical order, ids sorted and run-length compacted to ``"a-b"``)
with the ``universe_hash`` pinned.

Each strategy is a splitter (:class:`Splitter`: one ``assign(groups)`` hook, scikit-learn
style, plus ``deal(groups, k)`` for folds), and :class:`Folds` wraps any of them.  The
metrics are computed from the positions (:func:`baked_resolution`), not by resolving the
written config again, and :class:`Baked` carries its verdicts typed.

Strategies (:data:`SPLITTERS`):

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
:mod:`dvc_cuvis.model.universe` (a category id ``!= 0``), except in ``random``/``stratified``
without folds, which keep resolve-splits' "any category id" for parity (:func:`anomaly_rule`).
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from cuvis_ai_schemas.training.data import (
    Constraint,
    DataSplitConfig,
    Selector,
    default_constraints,
)

from dvc_cuvis.config.specs import BAKE, GROUP_BY, PREDICT, STRATEGIES
from dvc_cuvis.errors import DvcCuvisError, EmptyStageError, SelectorError, and_more
from dvc_cuvis.model.selectors import Positions, Resolver, norm_sources
from dvc_cuvis.model.splits import (
    EXCLUSIVE_STAGES,
    STAGES,
    ConstraintResult,
    Resolution,
    evaluate_constraints,
    parse_constraints,
    resolve,
    stage_stats,
)
from dvc_cuvis.model.universe import ANOMALOUS, ANOMALOUS_FOR_PARITY, Universe, uid

logger = logging.getLogger(__name__)

TRAIN, VAL, TEST, UNASSIGNED = 0, 1, 2, -1
#: A notion of "anomalous" over a sample's category ids (see :mod:`dvc_cuvis.model.universe`).
AnomalyRule = Callable[[Sequence[int]], bool]
StageCodes = npt.NDArray[np.int8]


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
    def of(cls, uni: Universe, group_by: str) -> Groups:
        """Group the universe's rows by ``group_by`` (auto/source/group/sample)."""
        names, of_row = group_rows(uni, group_by)
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


def _hash01(seed: int, key: str, salt: str = "") -> float:
    digest = hashlib.sha256(f"dvc-cuvis/{salt}{seed}/{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


# -- strategies: one splitter each, behind one protocol ------------------------------------


class Splitter(Protocol):
    """A bake strategy, scikit-learn style: its parameters at construction, then hooks.

    :meth:`assign` gives every group of a view a stage code (``TRAIN``, ``VAL`` or
    ``TEST``); :meth:`deal` gives each a validation fold ``0..k-1``, which is all
    :class:`Folds` asks of a strategy.  A splitter sees groups only: never rows, never
    selectors; turning its codes into stages and files is the bake's business.
    """

    def assign(self, groups: Groups) -> StageCodes:
        """A stage code per group of ``groups``."""
        ...

    def deal(self, groups: Groups, k: int) -> npt.NDArray[np.int64]:
        """A fold ``0..k-1`` per group of ``groups``."""
        ...


@dataclass
class _Ratios:
    """What every splitter is parametrized by: a seed and the val/test shares of groups."""

    seed: int = 0
    val_ratio: float = 0.2
    test_ratio: float = 0.2


@dataclass
class HashSplitter(_Ratios):
    """``hash``: each group by a seeded sha256 of its id against the ratio thresholds.

    A group's stage depends on nothing else, so adding data never moves existing samples;
    a stage left empty borrows one group (:func:`_lend`), listed in ``lent_`` after
    :meth:`assign`.  Folds deal the groups round-robin in seeded-hash order (balanced).
    """

    lent_: list[str] = field(default_factory=list, init=False)

    def assign(self, groups: Groups) -> StageCodes:
        """Stage codes by hash, then a loan to each stage that stayed empty."""
        names = groups.names
        u = np.fromiter((_hash01(self.seed, n) for n in names), float, len(names))
        out = np.full(len(names), TRAIN, dtype=np.int8)
        out[u < self.test_ratio + self.val_ratio] = VAL
        out[u < self.test_ratio] = TEST
        self.lent_ = _lend(out, u, names, self.val_ratio, self.test_ratio)
        return out

    def deal(self, groups: Groups, k: int) -> npt.NDArray[np.int64]:
        """Round-robin over the groups ordered by a second seeded hash."""
        u = np.fromiter((_hash01(self.seed, n, "fold/") for n in groups.names), float,
                        len(groups))
        fold = np.empty(len(groups), dtype=np.int64)
        fold[np.argsort(u, kind="stable")] = np.arange(len(groups)) % k
        return fold


@dataclass
class RandomSplitter(_Ratios):
    """``random``: resolve-splits' own: a ``random.Random(seed)`` shuffle of the groups in
    canonical first-appearance order, ``round()`` counts, test then val then train."""

    def assign(self, groups: Groups) -> StageCodes:
        """Upstream's shuffle and slices."""
        order = list(range(len(groups)))
        random.Random(self.seed).shuffle(order)  # upstream: stdlib shuffle of the group list
        return _slice(order, (self.val_ratio, self.test_ratio))

    def deal(self, groups: Groups, k: int) -> npt.NDArray[np.int64]:
        """Round-robin over the shuffled groups."""
        return _deal_shuffled([np.arange(len(groups))], len(groups), self.seed, k)


@dataclass
class StratifiedSplitter(_Ratios):
    """``stratified``: resolve-splits' own: :class:`RandomSplitter` within the normal and
    then the anomalous groups (``rule``; see :func:`anomaly_rule`), each re-seeded."""

    rule: AnomalyRule = ANOMALOUS_FOR_PARITY

    def assign(self, groups: Groups) -> StageCodes:
        """Upstream's shuffle and slices per stratum."""
        out = np.full(len(groups), TRAIN, dtype=np.int8)
        flags = groups.anomalous(self.rule)
        for stratum in (np.flatnonzero(~flags), np.flatnonzero(flags)):
            order = list(range(len(stratum)))
            random.Random(self.seed).shuffle(order)  # re-seeded per stratum, as upstream
            out[stratum] = _slice(order, (self.val_ratio, self.test_ratio))
        return out

    def deal(self, groups: Groups, k: int) -> npt.NDArray[np.int64]:
        """Round-robin over each shuffled stratum."""
        flags = groups.anomalous(self.rule)
        every = np.arange(len(groups))
        return _deal_shuffled([every[~flags], every[flags]], len(groups), self.seed, k)


@dataclass
class MultilabelSplitter(_Ratios):
    """``multilabel``: iterative stratification (Sechidis et al., 2011) of groups over their
    COCO category ids, weighted by sample counts."""

    def assign(self, groups: Groups) -> StageCodes:
        """Train/val/test shares by :func:`iterative_stratify`."""
        labels, weights = groups.labels()
        ratios = [1 - self.val_ratio - self.test_ratio, self.val_ratio, self.test_ratio]
        return iterative_stratify(labels, weights, ratios, self.seed).astype(np.int8)

    def deal(self, groups: Groups, k: int) -> npt.NDArray[np.int64]:
        """K equal shares by :func:`iterative_stratify`."""
        labels, weights = groups.labels()
        return iterative_stratify(labels, weights, [1.0 / k] * k, self.seed)


#: The splitter of every strategy named in :data:`~dvc_cuvis.config.specs.STRATEGIES` (the one
#: list of names: ``--strategy`` choices, params validation), in its order.
SPLITTERS: dict[str, type[HashSplitter | RandomSplitter | StratifiedSplitter
                          | MultilabelSplitter]] = dict(zip(STRATEGIES, (
                              HashSplitter, RandomSplitter, StratifiedSplitter,
                              MultilabelSplitter), strict=True))
#: The drop-in strategies that reproduce cuvis-ai-dataloader's ``resolve-splits``.
PARITY_STRATEGIES: tuple[str, ...] = ("random", "stratified")


@dataclass
class Folds:
    """K folds around a splitter: its test holdout first, then K validation folds.

    ``holdout`` is the strategy with ``val_ratio`` 0: its :meth:`~Splitter.assign` places
    the test groups, its :meth:`~Splitter.deal` the others into ``k`` folds; fold ``j``
    validates on the groups dealt ``j`` and trains on the rest.
    """

    holdout: Splitter
    k: int

    def split(self, groups: Groups) -> list[StageCodes]:
        """One array of stage codes per group for each fold."""
        per_group = self.holdout.assign(groups)
        rest = np.flatnonzero(per_group != TEST)
        fold_of = np.full(len(groups), -1, dtype=np.int64)
        fold_of[rest] = self.holdout.deal(groups.take(rest), self.k)
        return [np.where(per_group == TEST, TEST, np.where(fold_of == j, VAL, TRAIN))
                .astype(np.int8) for j in range(self.k)]


def _deal_shuffled(strata: list[npt.NDArray[np.int64]], n: int, seed: int,
                   k: int) -> npt.NDArray[np.int64]:
    """Folds round-robin over each stratum shuffled by ``random.Random(seed)``."""
    fold = np.full(n, -1, dtype=np.int64)
    for stratum in strata:
        order = stratum.tolist()
        random.Random(seed).shuffle(order)
        for j, g in enumerate(order):
            fold[g] = j % k
    return fold


def _slice(order: Sequence[int], ratios: tuple[float, float]) -> StageCodes:
    """Upstream slicing of a shuffled order: test first, then val, then train."""
    n = len(order)
    n_test, n_val = round(n * ratios[1]), round(n * ratios[0])  # round-half-even, as upstream
    out = np.full(n, TRAIN, dtype=np.int8)
    for k, pos in enumerate(order):
        out[pos] = TEST if k < n_test else VAL if k < n_test + n_val else TRAIN
    return out


def _lend(
    out: StageCodes, u: npt.NDArray[np.float64], names: list[str], val_ratio: float,
    test_ratio: float,
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
    lo_hi = {TEST: (0.0, test_ratio),
             VAL: (test_ratio, test_ratio + val_ratio),
             TRAIN: (test_ratio + val_ratio, 1.0)}
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



@dataclass
class BakeOptions:
    """Every knob of a bake (also the ``bake:`` section of params.yaml).

    The defaults are those of the one spec, :data:`~dvc_cuvis.config.specs.BAKE` (which also gives
    the CLI its flags and ``init`` its params template).
    """

    strategy: str = BAKE.default("strategy")
    seed: int = BAKE.default("seed")
    val_ratio: float = BAKE.default("val_ratio")
    test_ratio: float = BAKE.default("test_ratio")
    group_by: str = BAKE.default("group_by")
    ad_aware: bool = BAKE.default("ad_aware")
    folds: int = BAKE.default("folds")
    predict: str = BAKE.default("predict")
    ranges: bool = not BAKE.default("no_ranges")
    constraints: list[Constraint] | None = None
    allow_removed: bool = BAKE.default("allow_removed")
    allow_empty: bool = BAKE.default("allow_empty")

    @classmethod
    def from_values(cls, values: dict[str, Any], *, where: str = "params.yaml") -> BakeOptions:
        """Checked options from the :data:`~dvc_cuvis.config.specs.BAKE` values (``BAKE.values``
        of a verb's settings, or ``BAKE.from_section`` of a params section)."""
        raw = values.get("constraints")
        opts = cls(
            strategy=values["strategy"], seed=values["seed"], val_ratio=values["val_ratio"],
            test_ratio=values["test_ratio"], group_by=values["group_by"],
            ad_aware=bool(values["ad_aware"]), folds=values["folds"],
            predict=values["predict"], ranges=not values["no_ranges"],
            constraints=(None if raw is None
                         else parse_constraints(raw, where=f"{where}: bake.constraints")),
            allow_removed=bool(values["allow_removed"]),
            allow_empty=bool(values["allow_empty"]),
        )
        opts.check()
        return opts

    @classmethod
    def from_section(cls, section: dict[str, Any], where: str = "params.yaml") -> BakeOptions:
        """Checked options from a params file's ``bake`` section (unknown keys refused)."""
        return cls.from_values(BAKE.from_section(section, where=where), where=where)

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
        if self.predict not in PREDICT:
            raise DvcCuvisError(f"predict must be 'all' (empty = whole universe) or 'test', "
                                f"got {self.predict!r}")


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
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
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


def anomaly_rule(opts: BakeOptions) -> AnomalyRule:
    """The notion of "anomalous" a bake uses (its strata and ``--ad-aware``).

    :data:`~dvc_cuvis.model.universe.ANOMALOUS` (ids ``!= 0``), except for the resolve-splits
    drop-ins (``random``/``stratified`` without folds), which keep
    :data:`~dvc_cuvis.model.universe.ANOMALOUS_FOR_PARITY` (any id) so that their membership
    stays resolve-splits' own.  Folds exist only here: they use the rule.
    """
    if opts.strategy in PARITY_STRATEGIES and not opts.folds:
        return ANOMALOUS_FOR_PARITY
    return ANOMALOUS


def splitter(opts: BakeOptions, *, val_ratio: float | None = None) -> Splitter:
    """The splitter of ``opts.strategy`` with the options' seed and ratios (``val_ratio``
    overrides the options', as a fold holdout has none)."""
    val = opts.val_ratio if val_ratio is None else val_ratio
    if opts.strategy == "stratified":
        return StratifiedSplitter(opts.seed, val, opts.test_ratio, rule=anomaly_rule(opts))
    return SPLITTERS[opts.strategy](opts.seed, val, opts.test_ratio)


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
    uni: Universe, opts: BakeOptions, lent: list[str] | None = None
) -> dict[str, Positions]:
    """Per-stage positions for ``uni`` by strategy and grouping."""
    groups = Groups.of(uni, opts.group_by)
    split = splitter(opts)
    per_group = split.assign(groups)
    if lent is not None:
        lent.extend(_lent(split))
    stages = _stages_from_rows(per_group[groups.of_row])
    _apply_ad_aware(uni, stages, opts)
    return stages


def fold_splits(
    uni: Universe, opts: BakeOptions, lent: list[str] | None = None
) -> list[dict[str, Positions]]:
    """K folds: a test holdout by strategy, then K validation folds over the remaining groups."""
    groups = Groups.of(uni, opts.group_by)
    folds = Folds(splitter(opts, val_ratio=0.0), opts.folds)
    out = []
    for per_group in folds.split(groups):
        stages = _stages_from_rows(per_group[groups.of_row])
        _apply_ad_aware(uni, stages, opts)
        out.append(stages)
    if lent is not None:
        lent.extend(_lent(folds))
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
                removed.extend(uid(sel.source, m) if sel.source else str(m) for m in w.missing)
            row_stage[got] = code
    if removed and not opts.allow_removed:
        more = and_more(len(removed), 5)
        shown = ", ".join(removed[:5]) + more
        raise DvcCuvisError(
            f"{where}: {len(removed)} sample(s) of the base split left the universe: {shown}; "
            "re-enumerate if this is unexpected, or pass --allow-removed to drop them"
        )
    groups = Groups.of(uni, opts.group_by)
    per_group = np.full(len(groups), UNASSIGNED, dtype=np.int8)
    known = row_stage != UNASSIGNED
    per_group[groups.of_row[known]] = row_stage[known]  # a group keeps its previous stage
    new_groups = np.flatnonzero(per_group == UNASSIGNED)
    if len(new_groups):
        per_group[new_groups] = splitter(opts).assign(groups.take(new_groups))
    fresh = ~known
    row_stage[fresh] = per_group[groups.of_row[fresh]]
    info = {"kept": int(known.sum()), "added": int(fresh.sum()), "removed": len(removed),
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
    :func:`~dvc_cuvis.model.splits.resolve` gives back, without resolving a selector.  Only when
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


def _baked(
    uni: Universe, stages: dict[str, Positions], opts: BakeOptions, *, source: str,
    constraints: list[Constraint] | None = None, extra: dict[str, Any] | None = None,
    fold: int | None = None, strategy: bool = False, removed: int = 0,
) -> Baked:
    """Config, metrics and verdicts of one split, all from its positions.

    ``strategy``: a strategy bake, which also gets our ``non_empty_stages`` check (an
    :class:`~dvc_cuvis.errors.EmptyStageError` unless ``allow_empty``).
    """
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
    baked = Baked(stages, cfg, metrics, results, stats, fold=fold, source=source)
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


def plot_data(
    baked: Baked, uni: Universe, categories: dict[str, int] | None = None, top_groups: int = 50,
) -> dict[str, list[dict[str, Any]]]:
    """Rows for DVC plots: per-stage sizes, per-category-and-stage counts, largest groups."""
    st = baked.stats
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
        extra: dict[str, Any] = {"source": source}
        several = len(splits) > 1
        if several:
            extra.update({"fold": j, "folds": len(splits)})
        out.append(_baked(uni, stages, opts, source=source, extra=extra,
                          fold=j if several else None))
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
        The samples to split (:func:`~dvc_cuvis.model.universe_io.read_universe`).
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
        pinned), ``metrics`` (counts, constraint results, parameters: the JSON DVC
        shows) and, typed, ``results`` (constraint outcomes), ``empty_stages``,
        ``warnings``, ``fold`` and ``source``.

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
    dvc_cuvis.model.splits.save_splits : write ``Baked.config`` as splits.json.
    dvc_cuvis.model.splits.resolve : the samples of each stage, by uid.
    dvc_cuvis.check.drift.verify : check a baked split against the data later.

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
    >>> from dvc_cuvis import BakeOptions, bake
    >>> from dvc_cuvis.model.splits import resolve, state
    >>> from dvc_cuvis import read_universe
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
        removed = 0
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
            removed = info["removed"]
        return [_baked(uni, stages, opts, source=extra["source"], constraints=constraints,
                       extra=extra, removed=removed)]
    lent: list[str] = []
    if opts.folds:
        folds = fold_splits(uni, opts, lent)
        out = []
        for j, stages in enumerate(folds):
            fold_info: dict[str, Any] = {"fold": j, "folds": opts.folds}
            if lent:
                fold_info["lent_groups"] = lent
            out.append(_baked(uni, stages, opts, source=opts.strategy, extra=fold_info, fold=j,
                              strategy=True))
        return out
    stages = split_universe(uni, opts, lent)
    return [_baked(uni, stages, opts, source=opts.strategy,
                   extra={"lent_groups": lent} if lent else None, strategy=True)]


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


__all__ = [
    "SPLITTERS",
    "STRATEGIES",
    "BakeOptions",
    "Baked",
    "Folds",
    "HashSplitter",
    "MultilabelSplitter",
    "RandomSplitter",
    "Splitter",
    "StratifiedSplitter",
    "bake",
    "compact_ids",
    "iterative_stratify",
    "split_universe",
    "splitter",
    "stage_selectors",
    "to_config",
]
