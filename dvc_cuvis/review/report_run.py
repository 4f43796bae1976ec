"""The report workflow as one library call: :func:`report` resolves a split, runs the drift
check, compares it with a base revision, draws its spectra and its leakage pairs
(:class:`ReportResult`); :func:`write_report` writes the page and the spectra plot data.

``dvc-cuvis report`` is these two calls and a print, so a notebook gets the same page.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis.check.drift import DriftReport
from dvc_cuvis.config.specs import REPORT
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import OptionError
from dvc_cuvis.model.compare import SplitDiff, Version
from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.review.report import ReportInput
from dvc_cuvis.review.spectra import SplitSpectra
from dvc_cuvis.sources import EnumerateOptions

if TYPE_CHECKING:
    from dvc_cuvis.config.settings import Settings
    from dvc_cuvis.review.history import GitTree
    from dvc_cuvis.review.leakage_pairs import LeakageFigures

__all__ = ["ReportOptions", "ReportResult", "report", "write_report"]

#: The page written when no ``out`` is given (the spec's default).
_OUT: str = REPORT.default("out")


@dataclass(frozen=True)
class ReportOptions:
    """What a report shows and where it goes (also the ``report:`` section of params.yaml).

    ``check``: run the drift check (``dvc-cuvis check``'s, re-scan included when ``rescan``
    says how the universe was made); ``base``: a git revision to compare with (``repo``: read
    it from that repository); ``summaries``: the materialized folder whose spectral summaries
    the spectra section draws.  ``stat_cache`` ``"auto"`` is resolved once, by
    :meth:`resolved`.
    """

    universe: Path | str
    splits: Path | str
    out: Path | str = _OUT
    base: str | None = None
    repo: str | None = None
    categories: Path | str | None = None
    title: str | None = None
    check: bool = True
    summaries: Path | str | None = None
    spectral_shift_threshold: float = REPORT.default("spectral_shift_threshold")
    thumbnails: int = REPORT.default("thumbnails")
    spectra_plot: Path | str | None = None
    allow_partial: bool = False
    allow_unpinned: bool = False
    stat_cache: Path | str | StatCache = "auto"
    rescan: EnumerateOptions | None = None

    def __post_init__(self) -> None:
        """Refuse ``repo`` without ``base``: it only says where the base revision is read."""
        if self.repo and not self.base:
            raise OptionError("{repo} names where {base!g} is read: give {base!f} too",
                              "repo", "base")

    @classmethod
    def from_settings(cls, settings: Settings, universe: Path, splits: Path) -> ReportOptions:
        """Resolved options from a verb's settings (flag > params section > default) and the
        split's files (``cli._inputs.split_paths``: the pipeline's bake stage names them)."""
        v = REPORT.values(settings.get)
        opts = cls(universe=universe, splits=splits, out=v["out"], base=v["base"],
                   repo=v["repo"], categories=v["categories"], title=v["title"],
                   check=not v["no_check"], summaries=v["summaries"],
                   spectral_shift_threshold=v["spectral_shift_threshold"],
                   thumbnails=v["thumbnails"], spectra_plot=v["spectra_plot"],
                   allow_partial=bool(v["allow_partial"]),
                   allow_unpinned=bool(v["allow_unpinned"])).resolved()
        cache = opts.cache  # open when the check runs (resolved), else None
        if cache is None:
            return opts
        rescan, _ = EnumerateOptions.for_rescan(settings.of("enumerate"), settings.base,
                                                universe, cache, settings.where)
        return dataclasses.replace(opts, rescan=rescan)

    def resolved(self) -> ReportOptions:
        """These options with the stat cache open (``"auto"``: the repository's)."""
        if isinstance(self.stat_cache, StatCache) or not self.check:
            return self
        from dvc_cuvis.digests.stat_cache import open_stat_cache

        return dataclasses.replace(self, stat_cache=open_stat_cache(self.stat_cache))

    @property
    def cache(self) -> StatCache | None:
        """The open stat cache (None until :meth:`resolved`)."""
        return self.stat_cache if isinstance(self.stat_cache, StatCache) else None

    @property
    def page_title(self) -> str:
        """The page's title: ``title``, else one naming the split."""
        return self.title or f"Split report: {self.splits}"


@dataclass(frozen=True)
class ReportResult:
    """A report: the page, what it shows, and the spectra plot rows (``spectra_plot``)."""

    html: str
    shown: ReportInput
    plot_rows: tuple[dict[str, object], ...] = ()

    def summary(self, opts: ReportOptions) -> str:
        """The one line that says where the page went and its size."""
        return f"wrote {opts.out} ({len(self.html.encode()) // 1024} KiB)"


def report(opts: ReportOptions) -> ReportResult:
    """The report of a split as ``dvc-cuvis report`` makes it, from the options alone.

    Its stages, constraints, drift verdict, change since ``opts.base``, spectra and (with a
    materialized folder) leakage pairs, in one call, so a notebook gets the page the command
    writes.

    Parameters
    ----------
    opts : ReportOptions
        The split and universe, the page's file and title, whether to run the drift check,
        the base revision (and repository) to compare with, and the spectral summaries.

    Returns
    -------
    ReportResult
        The page (``html``), what it shows (``shown``, a :class:`ReportInput`) and the
        spectra plot rows; nothing is written yet.

    Raises
    ------
    OptionError
        ``repo`` without ``base`` (named by parameter).
    DvcCuvisError
        A missing or bad split or universe, a selector that does not resolve, an unknown
        revision.

    See Also
    --------
    write_report : write the page and the plot rows.
    dvc_cuvis.check.drift.verify : the drift check the page shows.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from dvc_cuvis import BakeOptions, bake, read_universe, save_splits
    >>> from dvc_cuvis.review import ReportOptions, report, write_report
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> rows = "".join(f"day{k}.cu3s,0-1\\n" for k in range(6))
    >>> _ = (d / "universe.csv").write_text("source,index\\n" + rows)
    >>> (baked,) = bake(read_universe(d / "universe.csv"), BakeOptions())
    >>> save_splits(baked.config, d / "splits.json")
    >>> opts = ReportOptions(universe=d / "universe.csv", splits=d / "splits.json",
    ...                      out=d / "report.html", check=False)
    >>> result = report(opts)
    >>> write_report(result, opts)
    >>> result.shown.title.startswith("Split report:"), (d / "report.html").is_file()
    (True, True)
    """
    from dvc_cuvis.model.categories import load_category_map
    from dvc_cuvis.model.constraints import evaluate_constraints
    from dvc_cuvis.model.resolution import resolve
    from dvc_cuvis.model.splits import load_splits
    from dvc_cuvis.model.universe_io import read_universe
    from dvc_cuvis.review.report import render

    opts = opts.resolved()
    cfg = load_splits(opts.splits)
    uni = read_universe(Path(opts.universe))
    names = load_category_map(opts.categories) if opts.categories else None
    res = resolve(cfg, uni, name_to_id=names, where=str(opts.splits))
    constraints = [r.to_dict() for r in evaluate_constraints(res, cfg.constraints)]
    drift = _drift(cfg, uni, names, opts) if opts.check else None
    diff, base_version = _diff(opts) if opts.base else (None, None)
    spectra, note = _spectra(opts, res, base_version)
    shown = ReportInput(opts.page_title, res, constraints, drift, names, diff,
                        cfg.universe_hash, spectra, note, _leakage(opts, res))
    rows: tuple[dict[str, object], ...] = ()
    if opts.spectra_plot and spectra is not None:
        from dvc_cuvis.review.spectra import plot_rows

        rows = tuple(plot_rows(spectra))
    return ReportResult(render(shown), shown, rows)


def _drift(cfg: DataSplitConfig, uni: Universe, names: dict[str, int] | None,
           opts: ReportOptions) -> DriftReport:
    """The same check ``dvc-cuvis check`` runs (re-scan included): the one call of verify,
    reading the summaries the leakage section reads, so its constraints name those pairs (a
    folder that is not there is said by the spectra and leakage sections, not an error)."""
    from dvc_cuvis.check.drift import verify

    folder = opts.summaries if opts.summaries and Path(opts.summaries).is_dir() else None
    return verify(cfg, uni, name_to_id=names, lock="auto", cache=opts.cache,
                  current=opts.rescan, allow_partial=opts.allow_partial,
                  allow_unpinned=opts.allow_unpinned, summaries=folder)


def _diff(opts: ReportOptions) -> tuple[SplitDiff, tuple[GitTree, Version] | None]:
    """The change since ``opts.base``, and the base version when it is read from this
    repository (the spectra compare train there; ``repo`` reads git alone)."""
    from dvc_cuvis.model.compare import diff_versions
    from dvc_cuvis.review.history import GitTree, load_pair, load_version, open_tree

    assert opts.base is not None
    here = GitTree(".")
    splits_rel, uni_rel = str(here.rel(Path(opts.splits))), str(here.rel(Path(opts.universe)))
    if not opts.repo:
        old, new = load_pair(here, opts.base, None, splits_rel, uni_rel)
        return diff_versions(old, new), (here, old)
    old = load_version(open_tree(opts.repo), opts.base, splits_rel, uni_rel, None)
    return diff_versions(old, load_version(here, None, splits_rel, uni_rel, None)), None


def _spectra(opts: ReportOptions, res: Resolution,
             base: tuple[GitTree, Version] | None) -> tuple[SplitSpectra | None, str]:
    """The split's spectra from the summaries folder (if one is set), or why there are none."""
    from dvc_cuvis.materialize.summary_store import shard_files
    from dvc_cuvis.review.spectra import split_spectra

    if not opts.summaries:
        return None, ""
    folder = Path(opts.summaries)
    if not shard_files(folder):
        return None, (f"no spectral summaries in {opts.summaries}: run dvc-cuvis materialize "
                      "with summaries on (the default; --no-summaries or "
                      "materialize.no_summaries turns them off)")
    spectra = split_spectra(res, folder, threshold=opts.spectral_shift_threshold,
                            thumbnails=opts.thumbnails)
    if opts.base:
        _base_shift(spectra, folder, base, opts.base)
    return spectra, ""


def _leakage(opts: ReportOptions, res: Resolution) -> LeakageFigures | None:
    """The leakage section's figures from the materialized folder the check reads
    (``summaries``, else the universe's own when materialize wrote it); None without one."""
    from dvc_cuvis.check.summaries import summaries_folder
    from dvc_cuvis.review.leakage_pairs import leakage_figures

    folder = summaries_folder(Path(opts.universe), opts.summaries)
    return leakage_figures(res, folder) if folder is not None else None


def _base_shift(spectra: SplitSpectra, folder: Path, base: tuple[GitTree, Version] | None,
                rev: str) -> None:
    """Train at ``rev`` against train now, from the local DVC cache (else a note why not)."""
    from dvc_cuvis.review.spectra_base import base_entries, train_shift

    if base is None:
        spectra.base_note = (f"train at {rev} is not compared spectrally: --repo reads git "
                             "alone, and the summaries are data")
        return
    tree, old = base
    entries, why = base_entries(tree, rev, tree.rel(folder))
    if entries:
        now = {grid: stages.get("train", []) for grid, stages in spectra.entries.items()}
        spectra.base, why = train_shift(old, entries, now, spectra.threshold)
    spectra.base_note = "" if spectra.base else f"train at {rev} is left out: {why}"


def write_report(result: ReportResult, opts: ReportOptions) -> None:
    """Write the spectra plot rows (when ``spectra_plot`` is set) and the page."""
    from dvc_cuvis._io import write_json
    from dvc_cuvis.review.report import write

    if opts.spectra_plot:
        write_json(Path(opts.spectra_plot), list(result.plot_rows))
    write(Path(opts.out), result.html)
