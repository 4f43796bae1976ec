"""``diff`` and ``log`` as library calls: options in, a typed result out.

A notebook gets the same answer as the command line: :func:`diff` returns a
:class:`DiffResult` (the per-sample comparison and how it is written), :func:`log` a
:class:`LogResult` (one :class:`~dvc_cuvis.review.log.LogEntry` per commit).  The CLI only
prints :meth:`DiffResult.output` / :meth:`LogResult.output`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from dvc_cuvis.model.compare import SplitDiff, Version, diff_versions
from dvc_cuvis.review.history import GitTree, load_pair, open_tree
from dvc_cuvis.review.history_options import DiffOptions, HistoryPaths, LogOptions
from dvc_cuvis.review.log import LogEntry, render_log, split_log
from dvc_cuvis.review.render import (
    render_markdown,
    render_spectra_markdown,
    render_spectra_text,
    render_text,
)

if TYPE_CHECKING:
    from dvc_cuvis.review.spectra_diff import SpectraDiff

__all__ = ["DiffResult", "LogResult", "diff", "log"]


@dataclass(frozen=True)
class RepoPaths:
    """A split's files as repository-relative posix paths (what git is asked for)."""

    splits: str
    universe: str
    params: str | None


def repo_paths(paths: HistoryPaths, tree: GitTree) -> RepoPaths:
    """``paths`` inside ``tree``: as given in another repository, else made relative to its
    top (an error names a path outside it)."""
    if paths.repo:
        return RepoPaths(paths.splits, paths.universe, paths.params)
    params = tree.rel(paths.params) if paths.params is not None else None
    return RepoPaths(tree.rel(paths.splits), tree.rel(paths.universe), params)


@dataclass(frozen=True)
class DiffResult:
    """What a split change does, per sample, and how the caller asked to see it."""

    diff: SplitDiff
    options: DiffOptions
    #: the spectral comparison (None: no materialized folder to read summaries from)
    spectra: SpectraDiff | None = None

    def to_dict(self) -> dict[str, object]:
        """The ``--json`` object (every changed sample with ``all``, else the first 200)."""
        doc = self.diff.to_dict(limit=None if self.options.all else 200)
        if self.spectra is not None:
            doc["spectra"] = self.spectra.to_dict()
        return doc

    def output(self) -> str:
        """The text the CLI prints, in the options' format."""
        limit = None if self.options.all else 20
        if self.options.fmt == "json":
            return json.dumps(self.to_dict(), ensure_ascii=False, default=str) + "\n"
        md = self.options.fmt == "md"
        render = render_markdown if md else render_text
        out = render(self.diff, limit=limit, by_sample=self.options.by_sample)
        if self.spectra is not None:
            out += (render_spectra_markdown if md else render_spectra_text)(self.spectra,
                                                                           limit=limit)
        return out


def diff(options: DiffOptions) -> DiffResult:
    """The per-sample difference of a split between two revisions (default HEAD against
    the workspace), both ends resolved against their own universe."""
    tree = open_tree(options.paths.repo)
    at = repo_paths(options.paths, tree)
    pair = load_pair(tree, options.rev_a, options.rev_b, at.splits, at.universe, at.params)
    return DiffResult(diff_versions(*pair), options, _spectra(options, tree, *pair))


def _spectra(options: DiffOptions, tree: GitTree, a: Version, b: Version
             ) -> SpectraDiff | None:
    """The spectral comparison when a materialized folder is named (``--repo`` reads git
    alone: the summaries are data, so it says it does not compare them)."""
    from dvc_cuvis.review.spectra_diff import SpectraDiff, spectra_diff

    folder = options.summaries
    if folder is None:
        return None
    if options.paths.repo:
        return SpectraDiff(folder, a.label, b.label,
                           why=f"--repo reads git alone, and the summaries in {folder} are data")
    return spectra_diff(tree, a, options.rev_a, b, options.rev_b, tree.rel(folder))


@dataclass(frozen=True)
class LogResult:
    """The commits that changed a split, newest first."""

    entries: tuple[LogEntry, ...]
    options: LogOptions

    def to_list(self) -> list[dict[str, object]]:
        """The ``--json`` list (one object per commit)."""
        return [asdict(e) for e in self.entries]

    def output(self) -> str:
        """The text the CLI prints: a table, or JSON."""
        if self.options.as_json:
            return json.dumps(self.to_list(), ensure_ascii=False) + "\n"
        return render_log(self.entries)


def log(options: LogOptions) -> LogResult:
    """The commits from ``options.rev`` that changed the split or its universe, each
    compared with its predecessor."""
    tree = open_tree(options.paths.repo)
    at = repo_paths(options.paths, tree)
    entries = split_log(tree, at.splits, at.universe, rev=options.rev,
                        max_count=options.max_count)
    return LogResult(tuple(entries), options)
