"""``dvc-cuvis export`` as one call: a baked split (or its folds) in another project's
convention, or a materialized split as a cuvis-ai data group.

The option rules (a data group's settings with a folder convention) live once, in
:class:`ExportOptions`; :func:`export_split` writes and returns what it wrote.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dvc_cuvis.config.specs import CONVENTIONS, CUVIS_AI, EXPORT
from dvc_cuvis.errors import OptionError

if TYPE_CHECKING:
    from dvc_cuvis.config.settings import Settings

__all__ = ["ExportOptions", "Exported", "export_split"]


@dataclass(frozen=True)
class ExportOptions:
    """What ``export`` writes: ``splits`` (or the ``fold-<k>.json`` files of ``folds_dir``)
    over ``universe``, in convention ``to`` under ``out_dir``; ``out`` and ``batch_size``
    are the cuvis-ai data group's (``out`` None: ``out_dir/data.yaml``)."""

    to: str
    universe: Path = Path("universe.csv")
    splits: Path = Path("splits.json")
    folds_dir: Path | None = None
    out_dir: Path = Path(EXPORT.default("out_dir"))
    id_column: str = EXPORT.default("id_column")
    labels: str = EXPORT.default("labels")
    out: Path | None = None
    batch_size: int | None = None
    metrics: Path | None = None

    def __post_init__(self) -> None:
        if self.to not in (*CONVENTIONS, CUVIS_AI):
            raise OptionError(f"{{to}} must be one of {', '.join((*CONVENTIONS, CUVIS_AI))}",
                              "to")
        if self.to == CUVIS_AI:
            return
        for name in ("out", "batch_size"):
            if getattr(self, name) is not None:  # the data group's: never silently ignored
                typo = "{out!typo=out_dir}" if name == "out" else ""
                raise OptionError(f"{{{name}}} is for --to {CUVIS_AI} (one data-group file); "
                                  f"{{to!shown}} writes a folder{typo}{{{name}!aside}}",
                                  name, "to", values={"to": self.to})

    @classmethod
    def from_settings(cls, s: Settings) -> ExportOptions:
        """The options of ``dvc-cuvis export`` (flag > params section > default); the
        files it reads must exist."""
        from dvc_cuvis.config.inputs import require_file, split_paths

        to = s.required("to", "--to glovita, soma, indices or cuvis-ai")
        universe, splits = split_paths(s)
        folds_dir, out, metrics = s.get("folds_dir"), s.get("out"), s.get("metrics")
        opts = cls(to=to, universe=universe, splits=splits,
                   folds_dir=Path(folds_dir) if folds_dir and to != CUVIS_AI else None,
                   out_dir=Path(s.get("out_dir")), id_column=s.get("id_column"),
                   labels=s.get("labels"), out=Path(out) if out else None,
                   batch_size=s.get("batch_size"),
                   metrics=Path(metrics) if metrics else None)
        for f in opts.split_files():
            require_file(f, "splits", s)
        require_file(universe, "universe", s)
        return opts.resolved()

    def split_files(self) -> list[Path]:
        """The splits.json files exported: ``splits``, or each fold of ``folds_dir``."""
        if self.folds_dir is None or self.to == CUVIS_AI:
            return [self.splits]
        from dvc_cuvis.model.splits import fold_files

        return fold_files(self.folds_dir)

    def resolved(self) -> ExportOptions:
        """The options with the data group's file decided (once)."""
        if self.to != CUVIS_AI or self.out is not None:
            return self
        return dataclasses.replace(self, out=self.out_dir / "data.yaml")


@dataclass(frozen=True)
class Exported:
    """The files an export wrote, in the order written."""

    written: tuple[Path, ...]

    @property
    def summary(self) -> str:
        """The one line the CLI prints."""
        return "wrote " + ", ".join(str(p) for p in self.written)


def export_split(options: ExportOptions) -> Exported:
    """Write a baked split (or its folds) in ``options.to``'s convention, or a materialized
    split's cuvis-ai data group: ``dvc-cuvis export`` as one call."""
    from dvc_cuvis.interop.convert import export
    from dvc_cuvis.interop.folds import from_resolutions
    from dvc_cuvis.model.resolution import resolve
    from dvc_cuvis.model.splits import load_splits
    from dvc_cuvis.model.universe_io import read_universe

    opts = options.resolved()
    if opts.to == CUVIS_AI:
        from dvc_cuvis.interop.cuvis_ai import data_group

        out = opts.out or opts.out_dir / "data.yaml"
        size = 1 if opts.batch_size is None else opts.batch_size
        return Exported((data_group(opts.universe, opts.splits, out, batch_size=size),))
    uni = read_universe(opts.universe)
    folds = from_resolutions([resolve(load_splits(f), uni, where=str(f))
                              for f in opts.split_files()])
    return Exported(tuple(export(folds, opts.to, opts.out_dir, id_column=opts.id_column,
                                 labels=opts.labels, metrics=opts.metrics)))
