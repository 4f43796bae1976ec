"""A split resolved against a universe: per-stage positions with cuvis-ai-core's selector
semantics, the per-row stage codes, and upstream's guard on a ``dir_indices`` split's pin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from cuvis_ai_schemas.training.data import (
    DataSplitConfig,
)

from dvc_cuvis.errors import SelectorError
from dvc_cuvis.model.selectors import (
    PartialMatch,
    Positions,
    Resolver,
)
from dvc_cuvis.model.split_state import has_dir_indices
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES, STAGES, UNASSIGNED

if TYPE_CHECKING:
    from dvc_cuvis.model.universe import Universe

@dataclass
class Resolution:
    """Per-stage positions into one universe, plus what the resolver noticed."""

    universe: Universe
    stages: dict[str, Positions]
    predict_is_all: bool = False
    warnings: list[PartialMatch] = field(default_factory=list)

    def uids(self, stage: str) -> list[str]:
        """uids of ``stage`` in resolution order."""
        return self.universe.uids(self.stages[stage])

    def as_uid_lists(self) -> dict[str, list[str]]:
        """``{"train": [uid, ...], "val": ..., "test": ..., "predict": ...}``."""
        return {s: self.uids(s) for s in STAGES}

    def assignment(self) -> npt.NDArray[np.int8]:
        """Per-row stage code (see :func:`stage_codes`)."""
        return stage_codes(self.stages, len(self.universe))


def stage_codes(stages: Mapping[str, Positions], size: int) -> npt.NDArray[np.int8]:
    """Per row of a universe of ``size`` rows: 0 train, 1 val, 2 test, 3 unassigned.

    The one per-row stage code (diff, log, report and the drift check all read it);
    :data:`STAGE_CODE_NAMES` names the codes.  Predict may overlap anything and has no code.

    Tie rule: a row listed by more than one of train/val/test — an overlap that the
    ``no_split_overlap`` constraint reports — takes the *first* of them in file order
    (train before val before test), as a stage's own selectors keep a sample's first
    occurrence.  So a sample in both train and test counts as train everywhere.
    """
    out = np.full(size, UNASSIGNED, dtype=np.int8)
    for code in reversed(range(len(EXCLUSIVE_STAGES))):  # earlier stages overwrite later
        out[stages[EXCLUSIVE_STAGES[code]]] = code
    return out


def check_pinned_universe(cfg: DataSplitConfig, universe: Universe, *, where: str = "") -> None:
    """Upstream's guard: a split that still has ``dir_indices`` must match its pinned hash."""
    if not cfg.universe_hash or not has_dir_indices(cfg):
        return
    actual = universe.hash
    if actual != cfg.universe_hash:
        raise SelectorError(
            f"{where or 'splits.json'}: universe changed since the split was written "
            f"(pinned {cfg.universe_hash[:12]}..., now {actual[:12]}...) and it still uses "
            "positional dir_indices; re-bake it (`dvc-cuvis bake --rule ...`)"
        )


def resolve(
    cfg: DataSplitConfig,
    universe: Universe,
    *,
    name_to_id: dict[str, int] | None = None,
    where: str = "",
) -> Resolution:
    """Resolve every stage of ``cfg`` (empty predict = the whole universe).

    This answers "which samples does each stage hold?" with cuvis-ai-core's selector
    semantics (``resolve_selectors``), computed with indexes instead of a scan per
    selector: the same positions, in the same order, for a rule or a baked split.

    Parameters
    ----------
    cfg : DataSplitConfig
        The split, e.g. from :func:`load_splits` or a bake.
    universe : Universe
        The samples to select from (:func:`~dvc_cuvis.model.universe_io.read_universe`).
    name_to_id : dict of str to int, optional
        Category name to id, for ``categories`` selectors that name categories.
    where : str, default ""
        Prefixed to error messages (usually the splits file's name).

    Returns
    -------
    Resolution
        ``stages`` maps each of train/val/test/predict to universe positions in
        resolution order; ``uids(stage)`` and ``as_uid_lists()`` give identities;
        ``predict_is_all`` is True when predict was empty; ``warnings`` lists the
        selectors that matched only part of what they name.

    Raises
    ------
    SelectorError
        A top-level selector matches no sample (the message names the stage, the
        selector and a close source name), a name is unknown, or a split that still
        uses positional ``dir_indices`` was written for a different universe (its pinned
        hash differs).

    See Also
    --------
    load_splits : read the split.
    evaluate_constraints : the split's constraints on a resolution.
    dvc_cuvis.check.drift.verify : every check, including the pin of a baked split.

    Notes
    -----
    A stage is its selectors unioned in order, each sample kept at its first occurrence;
    matches within one selector come in universe order.  Two things are *not* errors
    here, to stay upstream's resolver: a selector matching only some of its ids (it is
    in ``warnings``; the check fails on it unless ``allow_partial``), and a baked split
    whose pinned ``universe_hash`` differs from ``universe.hash`` (only ``dir_indices``
    are guarded here; :func:`dvc_cuvis.check.drift.verify` checks every pin).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from dvc_cuvis import load_splits, read_universe, resolve
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "universe.csv").write_text("source,index\\na.cu3s,0\\na.cu3s,1\\nb.cu3s,0\\n")
    >>> _ = (d / "splits.json").write_text(json.dumps({
    ...     "train": [{"kind": "file_indices", "source": "a.cu3s", "ids": ["0-2"]}],
    ...     "test": [{"kind": "files", "paths": ["b.cu3s"]}]}))
    >>> res = resolve(load_splits(d / "splits.json"), read_universe(d / "universe.csv"))
    >>> res.uids("train"), res.uids("test"), res.predict_is_all
    (['a.cu3s#0', 'a.cu3s#1'], ['b.cu3s#0'], True)
    >>> [w.message() for w in res.warnings]
    ["train[0]: selector 'file_indices' of 'a.cu3s' matched 2 of 3 requested indices; missing: 2"]

    A selector that matches nothing is an error:

    >>> _ = (d / "typo.json").write_text(json.dumps(
    ...     {"train": [{"kind": "files", "paths": ["c.cu3s"]}]}))
    >>> resolve(load_splits(d / "typo.json"), read_universe(d / "universe.csv"),
    ...         where="typo.json")
    Traceback (most recent call last):
    ...
    dvc_cuvis.errors.SelectorError: typo.json: train[0]: ... did you mean 'b.cu3s'? ...
    """
    check_pinned_universe(cfg, universe, where=where)
    resolver = Resolver(universe, name_to_id)
    stages: dict[str, Positions] = {}
    prefix = f"{where}: " if where else ""
    for stage in STAGES:
        try:
            stages[stage] = resolver.resolve(getattr(cfg, stage), stage=stage)
        except SelectorError as exc:
            raise SelectorError(f"{prefix}{exc}") from None
    predict_all = not cfg.predict
    if predict_all:
        stages["predict"] = np.arange(len(universe), dtype=np.int64)
    return Resolution(universe, stages, predict_all, resolver.warnings)
