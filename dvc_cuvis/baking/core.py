"""Bake: from a universe to baked splits.json (concrete selectors, hash pinned).

:func:`bake` takes the assignment from a strategy (:mod:`dvc_cuvis.baking.splitters`), the
universe's ``split`` column, a rule-form split or a previous baked split
(:mod:`dvc_cuvis.baking.assign`), and writes each split with its metrics and verdicts
(:mod:`dvc_cuvis.baking.write`, :mod:`dvc_cuvis.baking.baked`).  The options are
:class:`~dvc_cuvis.baking.options.BakeOptions`.
"""

from __future__ import annotations

from cuvis_ai_schemas.training.data import Constraint, DataSplitConfig

from dvc_cuvis.baking.assign import (
    fold_splits,
    split_universe,
    stages_from_base,
    stages_from_csv,
    stages_from_rule,
)
from dvc_cuvis.baking.baked import Baked, baked_split
from dvc_cuvis.baking.groups import Together
from dvc_cuvis.baking.options import BakeOptions, check_sources
from dvc_cuvis.errors import DvcCuvisError, OptionError, SelectorError
from dvc_cuvis.leakage.recordings import BLOCK, flat_note
from dvc_cuvis.model.universe import Universe


def bake(
    uni: Universe,
    opts: BakeOptions,
    *,
    from_csv: bool = False,
    rule: DataSplitConfig | None = None,
    base: DataSplitConfig | None = None,
    name_to_id: dict[str, int] | None = None,
    where: str = "",
    together: Together = (),
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
    together : tuple of tuple of int, optional
        Sets of rows whose groups are merged into one before a strategy assigns them (the
        clusters of duplicate frames, :mod:`dvc_cuvis.baking.together`).

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
    dvc_cuvis.model.resolution.resolve : the samples of each stage, by uid.
    dvc_cuvis.check.drift.verify : check a baked split against the data later.

    Notes
    -----
    Assignment is per group (``group_by``: a row's ``group`` cell, else its recording: the
    cu3s session file or the folder of npz/TIFF frame files), so the frames of one
    recording never straddle stages.  ``opts.buffer`` leaves the first K frames after each
    stage boundary inside a recording out of every stage (``metrics["buffered"]``).  The default
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
    >>> from dvc_cuvis.model.resolution import resolve
    >>> from dvc_cuvis.model.split_state import state
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
    given = {"from_csv": from_csv, "rule": rule is not None, "base": base is not None}
    check_sources(opts.folds, [n for n, on in given.items() if on])
    if any(given.values()):
        if together or opts.keep_duplicates_together != "off":
            raise OptionError("{keep_duplicates_together} merges the groups a strategy "
                              "assigns; a CSV column, a rule or a base split places every "
                              "sample already", "keep_duplicates_together")
        return [_sourced(uni, opts, from_csv, rule, base, name_to_id, where)]
    out = _strategy_bake(uni, opts, together)
    by_recording = opts.group_by in ("auto", "group", "recording") or opts.group_by.startswith(
        BLOCK)
    note = flat_note(uni) if by_recording else None
    if note:
        out[0].warnings.append(note)  # once, however many folds
    return out


def _strategy_bake(uni: Universe, opts: BakeOptions, together: Together) -> list[Baked]:
    """One split, or one per fold, by ``opts.strategy``."""
    lent: list[str] = []
    if opts.folds:
        folds = fold_splits(uni, opts, lent, together)
        out = []
        for j, stages in enumerate(folds):
            fold_info: dict[str, object] = {"fold": j, "folds": opts.folds}
            if lent:
                fold_info["lent_groups"] = lent
            out.append(baked_split(uni, stages, opts, source=opts.strategy, extra=fold_info,
                                   fold=j, strategy=True))
        return out
    stages = split_universe(uni, opts, lent, together)
    return [baked_split(uni, stages, opts, source=opts.strategy,
                        extra={"lent_groups": lent} if lent else None, strategy=True)]


def _sourced(uni: Universe, opts: BakeOptions, from_csv: bool, rule: DataSplitConfig | None,
             base: DataSplitConfig | None, name_to_id: dict[str, int] | None,
             where: str) -> Baked:
    """One split whose stages come from the ``split`` column, a rule or a base split."""
    constraints: list[Constraint] | None = None
    removed = 0
    if from_csv:
        stages = stages_from_csv(uni)
        source = "csv"
    elif rule is not None:
        try:
            stages = stages_from_rule(uni, rule, name_to_id, where)
        except SelectorError as exc:
            raise DvcCuvisError(str(exc)) from None
        constraints = list(rule.constraints) if opts.constraints is None else None
        source = "rule"
    else:
        assert base is not None
        stages, info = stages_from_base(uni, base, opts, where=where)
        constraints = list(base.constraints) if opts.constraints is None else None
        source = "base"
        removed = int(info["removed"])
    extra: dict[str, object] = {"source": source}
    if source == "base":
        extra["base"] = info
    return baked_split(uni, stages, opts, source=source, constraints=constraints,
                       extra=extra, removed=removed)
