"""What ``diff`` and ``log`` read: the options of a split's history, checked once.

:class:`DiffOptions` and :class:`LogOptions` are built from a verb's settings
(:meth:`DiffOptions.from_settings`) or by keyword from Python; their rules (how many
revisions, a ``repo`` without revisions) are checked when the value is built, so the entry
points (:func:`~dvc_cuvis.review.history_run.diff`, :func:`~dvc_cuvis.review.history_run.log`)
trust them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from dvc_cuvis.errors import DvcCuvisError, OptionError

if TYPE_CHECKING:
    from dvc_cuvis.config.settings import Settings

__all__ = ["DiffOptions", "HistoryPaths", "LogOptions"]

#: How a diff is written: plain text, markdown (a pull-request comment) or JSON.
DiffFormat = Literal["text", "md", "json"]


@dataclass(frozen=True)
class HistoryPaths:
    """The files of a split's history: inside ``repo`` as given when one is named, else
    relative to the current folder (made repository-relative once the repository is open)."""

    splits: str = "splits.json"
    universe: str = "universe.csv"
    #: The params file each revision's category names and params come from (None: none).
    params: str | None = None
    #: Another repository (a path or a git URL), read from git alone; None: the current one.
    repo: str | None = None

    @classmethod
    def from_settings(cls, s: Settings, paths: tuple[Path, Path]) -> HistoryPaths:
        """The paths a verb's settings name; ``paths``: (universe.csv, splits.json) as the
        settings rule picks them (flag > section > resolve > bake > default)."""
        repo = getattr(s.args, "repo", None)
        fold = getattr(s.args, "fold", None) if repo else s.get("fold")
        if repo:  # another repository: paths inside it, as given
            universe = Path(s.args.universe or "universe.csv")
            splits = Path(s.args.splits or "splits.json")
            if fold is not None:
                splits = Path(s.args.folds_dir or "splits") / f"fold-{fold}.json"
            return cls(splits.as_posix(), universe.as_posix(), "params.yaml", str(repo))
        universe, splits = paths
        if fold is not None:
            folds_dir = s.get("folds_dir") or s.from_file(
                "out_dir", s.of("bake").get("out_dir") or "splits", "bake")
            splits = Path(folds_dir) / f"fold-{fold}.json"
        params = str(s.file) if s.file is not None else None
        return cls(str(splits), str(universe), params, None)


@dataclass(frozen=True)
class DiffOptions:
    """A per-sample diff of a split between two revisions (None: the workspace)."""

    paths: HistoryPaths = HistoryPaths()
    rev_a: str = "HEAD"
    rev_b: str | None = None
    #: List every changed sample (else the first 20; 200 in JSON).
    all: bool = False
    #: One line per changed sample instead of one per recording.
    by_sample: bool = False
    fmt: DiffFormat = "text"
    #: The materialized folder whose summaries the spectral section compares (None: none).
    summaries: str | None = None

    def __post_init__(self) -> None:
        """Refuse an unknown format."""
        if self.fmt not in ("text", "md", "json"):
            raise OptionError("{fmt} must be text, md or json, got " + repr(self.fmt), "fmt")

    @classmethod
    def from_revs(cls, revs: list[str], paths: HistoryPaths, **kw: object) -> DiffOptions:
        """Options from the command line's ``REV_A [REV_B]`` (none: HEAD against the
        workspace; another repository has no workspace, so it needs at least REV_A)."""
        if len(revs) > 2:
            raise DvcCuvisError("diff takes at most two revisions: [REV_A [REV_B]]")
        if paths.repo and not revs:
            raise OptionError(f"diff {{repo}} {paths.repo} needs REV_A [REV_B] "
                              "(REV_B defaults to HEAD; another repository has no workspace "
                              "to compare with)", "repo")
        rev_a = revs[0] if revs else "HEAD"
        rev_b = revs[1] if len(revs) == 2 else ("HEAD" if paths.repo else None)
        return cls(paths, rev_a, rev_b, **kw)  # type: ignore[arg-type]

    @classmethod
    def from_settings(cls, s: Settings, paths: tuple[Path, Path]) -> DiffOptions:
        """The options of ``dvc-cuvis diff`` (``paths``: see :meth:`HistoryPaths.from_settings`)."""
        fmt: DiffFormat = "json" if s.args.json else ("md" if s.args.md else "text")
        return cls.from_revs(list(s.args.revs), HistoryPaths.from_settings(s, paths),
                             all=bool(s.get("all")), by_sample=bool(s.get("by_sample")),
                             fmt=fmt, summaries=_summaries(s))


def _summaries(s: Settings) -> str | None:
    """The materialized folder of the spectral section: the flag or key, else (in this
    repository) the materialize section's out_dir; None with ``no_spectra`` or when none."""
    if s.get("no_spectra"):
        return None
    if getattr(s.args, "repo", None):  # another repository: only a folder named for it
        given = getattr(s.args, "summaries", None)
        return str(given) if given else None
    folder = s.get("summaries")
    if folder is None:
        value = s.of("materialize").get("out_dir")
        folder = s.from_file("out_dir", value, "materialize") if value else None
    return str(folder) if folder else None


@dataclass(frozen=True)
class LogOptions:
    """The commits that changed a split, newest first, from ``rev``."""

    paths: HistoryPaths = HistoryPaths()
    rev: str = "HEAD"
    #: At most this many commits (None: all).
    max_count: int | None = None
    as_json: bool = False

    def __post_init__(self) -> None:
        """Refuse a negative commit count."""
        n = self.max_count
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise OptionError("{max_count} must be a whole number of commits, got " + repr(n),
                              "max_count")

    @classmethod
    def from_settings(cls, s: Settings, paths: tuple[Path, Path]) -> LogOptions:
        """The options of ``dvc-cuvis log`` (``paths``: see :meth:`HistoryPaths.from_settings`)."""
        return cls(HistoryPaths.from_settings(s, paths), s.args.rev, s.get("max_count"),
                   bool(s.args.json))
