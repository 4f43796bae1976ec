"""A whole bake run as one library call: :func:`bake_run` builds the split(s) and everything a
user is told about them (:class:`BakeResult`), :func:`write_bake` writes them.

The CLI (``dvc-cuvis bake``) is these two calls and a print, so a notebook gets exactly what
the command writes: the splits, the split metrics, the DVC plot rows, the samples the bake
moved since the committed split, and the warnings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dvc_cuvis.baking.baked import Baked, bake_imported, plot_data
from dvc_cuvis.baking.core import bake
from dvc_cuvis.baking.options import BakeOptions
from dvc_cuvis.baking.together import Kept, keep_together
from dvc_cuvis.errors import OptionError
from dvc_cuvis.leakage.clusters import SignatureSet
from dvc_cuvis.model.universe import Universe

__all__ = ["BakeResult", "PlotFiles", "SignatureReader", "bake_run", "write_bake"]

#: Reads the stored signatures of a universe's samples from a materialized folder (given, or
#: None: the universe's own folder); :func:`dvc_cuvis.check.duplicates.stored_signatures` is
#: the one the CLI passes (it lives above this package, beside the duplicate checks).
SignatureReader = Callable[[Universe, "Path | str | None"], SignatureSet]

#: DVC plot rows per file name (``stages.json``: one row per stage, ...), in write order.
PlotFiles = tuple[tuple[str, tuple[dict[str, object], ...]], ...]


@dataclass(frozen=True)
class BakeResult:
    """What one bake run made: the baked split(s) and what to tell about them.

    ``folded``: one splits file per fold (``fold-<k>.json`` under ``out_dir``), else one
    splits.json; ``moves``: one line per recording whose existing samples moved since the
    split committed at ``HEAD`` (also in ``warnings``); ``warnings``: every warning, in the
    order a user should read them; ``plots``: DVC plot rows per file name (one split only).
    """

    baked: tuple[Baked, ...]
    universe_hash: str
    folded: bool
    strategy: str
    moves: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    plots: PlotFiles = ()

    @property
    def metrics(self) -> dict[str, object]:
        """The split metrics JSON (``{"folds": [...]}`` for folds)."""
        if self.folded:
            return {"folds": [b.metrics for b in self.baked]}
        return self.baked[0].metrics

    def summary(self, opts: BakeOptions) -> str:
        """The one line that says what was baked and where it went."""
        if self.folded:
            return f"baked {len(self.baked)} folds ({self.strategy}) -> {opts.out_dir}/fold-*.json"
        (one,) = self.baked
        counts = " ".join(f"{x}={n}" for x, n in one.counts.items())
        return (f"baked {counts} ({one.source}) -> {opts.out}; "
                f"universe_hash {self.universe_hash[:12]}")


def bake_run(opts: BakeOptions, signatures: SignatureReader | None = None) -> BakeResult:
    """One bake run as ``dvc-cuvis bake`` makes it, from the options alone.

    A notebook gets the same split, metrics, plot rows, moves and warnings as the command.

    Parameters
    ----------
    opts : BakeOptions
        The knobs of :func:`~dvc_cuvis.baking.core.bake` and the files of the run: the
        universe read; a strategy, ``folds``, ``from_csv``, ``rule``, ``base`` or imported
        folds (``from_glovita``/``from_soma``/``from_indices``); ``out``/``out_dir``,
        ``metrics`` and ``plots`` for :func:`write_bake`; ``by_sample`` for the moves.
    signatures : SignatureReader, optional
        Reads the frames' stored signatures, needed by ``keep_duplicates_together``: pass
        :func:`dvc_cuvis.check.duplicates.stored_signatures`, as the CLI does.

    Returns
    -------
    BakeResult
        The baked split(s), the universe hash, the moves since the split committed at
        ``HEAD`` and every warning in reading order; nothing is written yet.

    Raises
    ------
    OptionError
        A value or combination the options refuse (it names the parameter, ``out_dir``).
    DvcCuvisError
        A bad universe, rule, base split or imported file (the file and row named).
    EmptyStageError
        A stage with a non-zero ratio received no sample, unless ``allow_empty``.

    See Also
    --------
    write_bake : write what this returns where ``opts`` names it.
    dvc_cuvis.baking.core.bake : the split(s) alone, from a universe in memory.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from dvc_cuvis.baking import BakeOptions, bake_run, write_bake
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> rows = "".join(f"day{k}.cu3s,0-1\\n" for k in range(6))
    >>> _ = (d / "universe.csv").write_text("source,index\\n" + rows)
    >>> opts = BakeOptions(universe=d / "universe.csv", out=d / "splits.json", seed=0)
    >>> result = bake_run(opts)
    >>> write_bake(result, opts)
    >>> result.baked[0].counts, (d / "splits.json").is_file()
    ({'train': 6, 'val': 2, 'test': 4}, True)

    Folds need a folder, and the error names the parameter a Python caller typed:

    >>> bake_run(BakeOptions(universe=d / "universe.csv", folds=3))
    Traceback (most recent call last):
    ...
    dvc_cuvis.errors.OptionError: folds writes one splits file per fold: give out_dir
    """
    from dvc_cuvis.model.categories import load_category_map
    from dvc_cuvis.model.universe_io import read_universe

    opts.check()
    opts.check_outputs()
    uni = read_universe(Path(opts.universe))
    names = load_category_map(opts.categories) if opts.categories else None
    kept = _kept(uni, opts, signatures)
    baked = _imported(uni, opts)
    if baked is None:
        baked = _baked(uni, opts, names, kept)
    if opts.keep_duplicates_together != "off":
        for b in baked:
            b.metrics["keep_duplicates_together"] = kept.metrics
    folded = len(baked) > 1 if opts.imported else bool(opts.folds)
    warnings = [*kept.warnings, *(w for w in (b.empty_warning() for b in baked) if w)]
    moves: list[str] = []
    plots: PlotFiles = ()
    if not folded:
        from dvc_cuvis.baking.moves import moves_of
        from dvc_cuvis.model.splits import dumps_splits

        moves = moves_of(baked[0], uni, opts, dumps_splits(baked[0].config).encode("utf-8"),
                         kept.together)
        if opts.plots:
            plots = tuple((name, tuple(rows))
                          for name, rows in plot_data(baked[0], uni, names).items())
    warnings += moves + [w for b in baked for w in b.warnings]
    return BakeResult(tuple(baked), uni.hash, folded, opts.strategy, tuple(moves),
                      tuple(warnings), plots)


def _kept(uni: Universe, opts: BakeOptions, signatures: SignatureReader | None) -> Kept:
    """The clusters ``keep_duplicates_together`` merges (none when it is off)."""
    if opts.keep_duplicates_together == "off":
        return Kept()
    if signatures is None:
        raise OptionError("{keep_duplicates_together} reads the frames' stored signatures: "
                          "pass signatures=dvc_cuvis.check.duplicates.stored_signatures",
                          "keep_duplicates_together")
    return keep_together(uni, opts, signatures(uni, opts.summaries))


def _baked(uni: Universe, opts: BakeOptions, names: dict[str, int] | None,
           kept: Kept) -> list[Baked]:
    """The split(s) by a strategy, the ``split`` column, a rule or a base split."""
    from dvc_cuvis.model.splits import load_splits

    return bake(uni, opts, from_csv=opts.from_csv,
                rule=load_splits(opts.rule) if opts.rule else None,
                base=load_splits(opts.base) if opts.base else None,
                name_to_id=names, where=str(opts.rule or opts.base or ""),
                together=kept.together)


def _imported(uni: Universe, opts: BakeOptions) -> list[Baked] | None:
    """The split(s) of folds imported from another project's files (None when not asked)."""
    if opts.imported is None:
        return None
    from dvc_cuvis.interop import read_folds

    kind, path = opts.imported
    folds = read_folds(kind, path, uni, id_column=opts.id_column)
    baked = bake_imported(uni, folds.splits, opts, kind)
    if len(baked) > 1 and not opts.out_dir:
        raise OptionError(f"the {kind} file has {len(baked)} folds: give {{out_dir!g}}", "out_dir")
    return baked


def write_bake(result: BakeResult, opts: BakeOptions) -> None:
    """Write the split(s), the split metrics and the plot rows where ``opts`` names them."""
    from dvc_cuvis._io import write_json
    from dvc_cuvis.model.splits import save_folds, save_splits

    if result.folded:
        save_folds([b.config for b in result.baked], Path(opts.out_dir or "."))
    else:
        save_splits(result.baked[0].config, opts.out)
    if opts.metrics:
        write_json(opts.metrics, result.metrics)
    for name, rows in result.plots:
        write_json(Path(opts.plots or ".") / name, list(rows))
