"""Bake strategies: one splitter each, behind one protocol (:class:`Splitter`).

Each strategy is a splitter (one ``assign(groups)`` hook, scikit-learn style, plus
``deal(groups, k)`` for folds), and :class:`Folds` wraps any of them (:data:`SPLITTERS`):

* ``hash`` (default) — each group lands by a seeded sha256 of its id compared with the
  ratio thresholds.  A group's stage depends on nothing else, so adding data never moves
  existing samples.
* ``random`` / ``stratified`` — cuvis-ai-dataloader's ``resolve-splits`` strategies, with
  the same membership for the same universe, seed, ratios and grouping (``random.Random``
  shuffle of groups in canonical first-appearance order, ``round()`` counts, test then val
  then train slices; stratified shuffles normal then anomalous groups, each re-seeded).
* ``multilabel`` — iterative stratification (Sechidis et al., 2011) of groups over their
  COCO category ids, weighted by sample counts.

``folds`` turns any strategy into K folds: a test holdout first, then K validation folds
over the rest.

"Anomalous" (``--ad-aware``, the stratified strata) is the one rule of
:mod:`dvc_cuvis.model.universe` (a category id ``!= 0``), except in ``random``/``stratified``
without folds, which keep resolve-splits' "any category id" for parity (:func:`anomaly_rule`).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from dvc_cuvis.baking.groups import TEST, TRAIN, VAL, AnomalyRule, Groups, StageCodes
from dvc_cuvis.baking.options import BakeOptions
from dvc_cuvis.config.specs import STRATEGIES
from dvc_cuvis.errors import OptionError
from dvc_cuvis.model.anomalous import ANOMALOUS, ANOMALOUS_FOR_PARITY


def _hash01(seed: int, key: str, salt: str = "") -> float:
    digest = hashlib.sha256(f"dvc-cuvis/{salt}{seed}/{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


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
        if self.k > len(rest):  # before any fold is built: each validates on a group at least
            raise OptionError(
                f"{{folds}}: {self.k:,} folds, but only {len(rest):,} of {len(groups):,} groups "
                "remain outside the test holdout and each fold validates on one at least; "
                "give fewer folds, a smaller test ratio, or a finer {group_by!f}",
                "folds", "group_by")
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


def anomaly_rule(opts: BakeOptions) -> AnomalyRule:
    """The notion of "anomalous" a bake uses (its strata and ``--ad-aware``).

    :data:`~dvc_cuvis.model.anomalous.ANOMALOUS` (ids ``!= 0``), except for the resolve-splits
    drop-ins (``random``/``stratified`` without folds), which keep
    :data:`~dvc_cuvis.model.anomalous.ANOMALOUS_FOR_PARITY` (any id) so that their membership
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
