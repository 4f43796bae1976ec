"""``lineage`` as a library call: which dataset version trained each model, and whether it
changed since, or whether two models' test metrics are comparable.

:class:`LineageOptions` is checked once when built; :func:`lineage` returns a
:class:`LineageResult` that holds what the CLI prints (text or JSON) and the exit code it
asks for, so a notebook and the command line get one answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dvc_cuvis.errors import DvcCuvisError, OptionError
from dvc_cuvis.train.lineage_compare import (
    Tree,
    compare_records,
    dataset_of,
    describe_text,
    one_record,
    open_repository,
    read_records,
    status,
)
from dvc_cuvis.train.lineage_values import JsonRecord, LineageRecord, as_record

if TYPE_CHECKING:
    from dvc_cuvis.config.settings import Settings

__all__ = ["LineageOptions", "LineageResult", "ModelStatus", "lineage"]


@dataclass(frozen=True)
class LineageOptions:
    """The models to look at (``paths``), or two to compare (``compare``), against ``rev``
    (None: the working tree) of ``repo`` (None: the one each record names)."""

    paths: tuple[str, ...] = ()
    compare: tuple[str, str] | None = None
    rev: str | None = None
    repo: str | None = None
    #: A changed split or data is a failed check (exit 1).
    fail_on_stale: bool = False
    as_json: bool = False

    def __post_init__(self) -> None:
        """Refuse paths beside ``compare``, and neither."""
        if self.compare is not None and self.paths:
            raise OptionError("lineage {compare} A B takes no other PATH", "compare")
        if self.compare is None and not self.paths:
            raise DvcCuvisError("lineage needs a PATH (a .ckpt, a trainrun output folder or "
                                "a dataset_lineage.json), or --compare A B")

    @classmethod
    def from_settings(cls, s: Settings) -> LineageOptions:
        """The options of ``dvc-cuvis lineage``."""
        compare = (str(s.args.compare[0]), str(s.args.compare[1])) if s.args.compare else None
        repo = s.get("repo")
        return cls(tuple(s.args.paths or ()), compare,
                   s.get("rev"), str(repo) if repo else None, bool(s.flag("fail_on_stale")),
                   bool(s.args.json))


@dataclass(frozen=True)
class ModelStatus:
    """One model's dataset version, and whether the split and data at ``rev`` are still it."""

    path: str
    record: LineageRecord
    rev: str
    current: bool
    changes: dict[str, Any]

    def to_dict(self) -> dict[str, object]:
        """The ``--json`` object of one model."""
        return {"path": self.path, "dataset": dataset_of(self.record), "rev": self.rev,
                "current": self.current, "changes": self.changes}

    def lines(self) -> list[str]:
        """The model's paragraph of the text report."""
        r = self.record
        dirty = r.repo.dirty
        state = "dirty state unknown" if dirty is None else ("dirty" if dirty else "clean")
        stages = ", ".join(f"{k} {'all' if v is None else v}" for k, v in r.stages.items())
        data = "; ".join(f"{d.path} {d.md5} ({d.source})" for d in r.data)
        lines = [self.path,
                 f"  trained on: commit {_short(r.repo.commit, 8)} ({state}), "
                 f"{r.splits_path} sha256 {_short(r.splits_sha256)}, universe_hash "
                 f"{_short(r.universe_hash)}",
                 f"  samples: {stages}" + (f"; data: {data}" if data else ""),
                 f"  check: {r.check.mode}, {r.check.verdict}; dvc_cuvis "
                 f"{r.dvc_cuvis} ({r.module})"]
        if self.current:
            lines.append(f"  {self.rev}: current (the same split, universe.csv and data)")
        else:
            lines.append(f"  {self.rev}: STALE: {describe_text(self.changes)}")
        return lines


def _short(value: str | None, n: int = 12) -> str:
    return str(value)[:n] if value else "-"


@dataclass(frozen=True)
class LineageResult:
    """Each model's status, or the comparison of two models."""

    options: LineageOptions
    models: tuple[ModelStatus, ...] = ()
    comparison: dict[str, Any] | None = None

    @property
    def stale(self) -> bool:
        """True when any model's split or data changed since it was trained."""
        return any(not m.current for m in self.models)

    @property
    def exit_code(self) -> int:
        """1 when a model is stale and the options make that a failed check, else 0."""
        return 1 if self.stale and self.options.fail_on_stale else 0

    def output(self) -> str:
        """The text the CLI prints (JSON with ``as_json``)."""
        if self.comparison is not None:
            return _comparison_text(self.comparison, self.options.as_json)
        if self.options.as_json:
            return json.dumps({"models": [m.to_dict() for m in self.models]},
                              ensure_ascii=False) + "\n"
        return "\n".join(line for m in self.models for line in m.lines()) + "\n"


def _comparison_text(out: dict[str, Any], as_json: bool) -> str:
    """Two models' comparison as the CLI prints it."""
    if as_json:
        return json.dumps(out, ensure_ascii=False) + "\n"
    t = out["test_samples"]
    lines = [f"A: {out['a']}", f"B: {out['b']}",
             f"test sets: {'identical' if out['test_sets_identical'] else 'different'} "
             f"({t['a']} and {t['b']} samples, {t['shared']} shared)"]
    for key, text in (("b_fit_in_a_test", "B's train/val samples in A's test set"),
                      ("a_fit_in_b_test", "A's train/val samples in B's test set")):
        o = out[key]
        first = f" ({', '.join(o['first'])}{', ...' if o['count'] > len(o['first']) else ''})"
        lines.append(f"{text}: {o['count']}" + (first if o["count"] else ""))
    lines.append(out["verdict"])
    return "\n".join(lines) + "\n"


def _model(file: str, record: JsonRecord, options: LineageOptions) -> ModelStatus:
    try:
        tree = open_repository(record, options.repo)
        now = status(record, tree, options.rev)
    except DvcCuvisError as exc:
        raise DvcCuvisError(f"{file}: {exc}") from None
    return ModelStatus(file, as_record(record), now["rev"], now["current"], now["changes"])


def _tree_or_none(record: JsonRecord, repo: str | None) -> Tree | None:
    try:
        return open_repository(record, repo)
    except DvcCuvisError:  # no repository: the split's own ids are enough
        return None


def lineage(options: LineageOptions) -> LineageResult:
    """Each model's dataset version against ``options.rev``, or (``compare``) whether two
    models were tested on the same test set and neither trained on the other's."""
    if options.compare is not None:
        (fa, ra), (fb, rb) = (one_record(Path(p)) for p in options.compare)
        trees = (_tree_or_none(ra, options.repo), _tree_or_none(rb, options.repo))
        return LineageResult(options, comparison={"a": fa, "b": fb,
                                                  **compare_records(ra, rb, trees)})
    models = tuple(_model(f, r, options) for p in options.paths
                   for f, r in read_records(Path(p)))
    return LineageResult(options, models=models)
