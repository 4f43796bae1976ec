"""The "anomalous" rule: one rule, one named exception.

A sample is anomalous when it carries a category id other than 0 (:func:`is_anomalous`);
the one exception, any category id at all (:func:`is_anomalous_for_parity`), is kept only
where parity with cuvis-ai-dataloader's ``resolve-splits`` needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt


class _Categorized(Protocol):
    """What the notions' count reads of a universe (its category ids, by a rule)."""

    def has_column(self, name: str) -> bool: ...

    def anomalous(self, rule: Callable[[Sequence[int]], bool] = ...
                  ) -> npt.NDArray[np.bool_]: ...


def is_anomalous(category_ids: Sequence[int]) -> bool:
    """THE rule: a sample is anomalous when it carries a category id other than 0.

    0 is the background (normal) class, as cuvis-ai-core's ``no_train_anomalous``
    constraint reads it.  The checks, the report, and the bake strategies that exist only
    here (hash, multilabel, folds) all use this rule.
    """
    return any(c != 0 for c in category_ids)


def is_anomalous_for_parity(category_ids: Sequence[int]) -> bool:
    """The exception: *any* category id, 0 included, makes a sample anomalous.

    cuvis-ai-dataloader's ``resolve-splits`` reads it so; the ``random`` and
    ``stratified`` bakes (their strata and ``--ad-aware``) keep it only so that they
    produce the same membership as ``resolve-splits``.  Nothing else may use it.  The two
    notions differ exactly on samples whose ids are all 0 (see
    :func:`anomaly_notions_differ`), which the check and the report point out.
    """
    return bool(category_ids)


#: The one "anomalous" rule (ids ``!= 0``), and its one named exception (any id, for parity).
ANOMALOUS = is_anomalous
ANOMALOUS_FOR_PARITY = is_anomalous_for_parity


def anomaly_notions_differ(uni: _Categorized) -> int:
    """Samples that one notion calls anomalous and the other normal (ids all 0)."""
    if not uni.has_column("category_ids"):
        return 0
    return int((uni.anomalous() != uni.anomalous(ANOMALOUS_FOR_PARITY)).sum())


def anomaly_notions_note(samples: int) -> str:
    """What the check and the report say when ``samples`` rows make the notions differ."""
    return (f"{samples} sample(s) carry only category id 0 (background): normal for the "
            "checks, the report and the hash/multilabel/fold bakes, anomalous for the "
            "random/stratified --ad-aware bakes (resolve-splits' notion, kept for parity)")
