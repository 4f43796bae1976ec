"""Every knob of a bake (also the ``bake:`` section of params.yaml), checked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuvis_ai_schemas.training.data import Constraint

from dvc_cuvis import limits
from dvc_cuvis.config.specs import BAKE, GROUP_BY, KEEP_TOGETHER, PREDICT, STRATEGIES
from dvc_cuvis.errors import DvcCuvisError, OptionError
from dvc_cuvis.leakage.adjacent import check_k
from dvc_cuvis.leakage.recordings import block_size
from dvc_cuvis.model.splits import parse_constraints

if TYPE_CHECKING:
    from dvc_cuvis.config.settings import Settings

#: The parameters that choose where a bake's stages come from besides a strategy.
SOURCES: tuple[str, ...] = ("from_csv", "rule", "base")
#: The default universe.csv read and splits.json written (the spec's).
_UNIVERSE: str = BAKE.default("universe")
_OUT: str = BAKE.default("out")
#: The parameters that import folds made by another project (:mod:`dvc_cuvis.interop`).
IMPORTS: tuple[str, ...] = ("from_glovita", "from_soma", "from_indices")


def check_folds(folds: object) -> None:
    """Refuse a fold count that is no whole number, 1, negative, or over the ceiling
    (``limits.max_folds``), before a single fold is built: K folds cost K arrays of the
    universe's size, so the count must be checked while it is still a number."""
    if isinstance(folds, bool) or not isinstance(folds, int):
        raise OptionError(f"{{folds}} must be a whole number (0: no folds), got {folds!r}",
                          "folds")
    if folds < 0 or folds == 1:
        raise OptionError(f"{{folds}}: folds must be 0 (off) or at least 2, got {folds}",
                          "folds")
    ceiling = limits.current().max_folds
    if folds > ceiling:
        env = limits.Limits.env_name("max_folds")
        raise OptionError(f"{{folds}}: {folds:,} folds is over the ceiling of {ceiling:,}; "
                          f"give fewer folds, or if you need them raise {env}=<n> "
                          "(docs/robustness.md)", "folds")


def check_sources(folds: int, chosen: list[str]) -> None:
    """Refuse two sources of stages at once (:data:`SOURCES`), and folds with any of them:
    folds are made by a strategy, while a CSV column, a rule or a base split is one split."""
    if len(chosen) > 1:
        raise OptionError(_choose_one(SOURCES, chosen), *SOURCES)
    if folds and chosen:
        raise OptionError(f"{{folds}} combines with a strategy, not with {{{chosen[0]}}}",
                          "folds", *SOURCES)


def _choose_one(names: tuple[str, ...], chosen: list[str]) -> str:
    """The message refusing two or more of ``names`` at once."""
    flags = ", ".join(f"{{{n}!f}}" for n in names)
    return f"choose one of {flags}: {' and '.join(f'{{{n}}}' for n in chosen)} are both set"


def _path(value: object) -> Path | str | None:
    """A path option's value as given (None when unset): messages show it as the user wrote it."""
    return value if isinstance(value, Path | str) and value else None


@dataclass(frozen=True)
class BakeOptions:
    """Every knob of a bake (also the ``bake:`` section of params.yaml), and the files of a
    whole bake run (:func:`~dvc_cuvis.baking.entry.bake_run`).

    The defaults are those of the one spec, :data:`~dvc_cuvis.config.specs.BAKE` (which also gives
    the CLI its flags and ``init`` its params template).  Every rule is checked here
    (:meth:`check`, :meth:`check_outputs`), and every error names the parameter, so a Python
    caller reads ``out_dir`` and the CLI ``--out-dir`` or the params key it came from.
    """

    strategy: str = BAKE.default("strategy")
    seed: int = BAKE.default("seed")
    val_ratio: float = BAKE.default("val_ratio")
    test_ratio: float = BAKE.default("test_ratio")
    group_by: str = BAKE.default("group_by")
    ad_aware: bool = BAKE.default("ad_aware")
    folds: int = BAKE.default("folds")
    predict: str = BAKE.default("predict")
    ranges: bool = not BAKE.default("no_ranges")
    constraints: list[Constraint] | None = None
    allow_removed: bool = BAKE.default("allow_removed")
    allow_empty: bool = BAKE.default("allow_empty")
    buffer: int = BAKE.default("buffer")
    keep_duplicates_together: str = BAKE.default("keep_duplicates_together")
    summaries: Path | str | None = None
    universe: Path | str = _UNIVERSE
    out: Path | str = _OUT
    out_dir: Path | str | None = None
    metrics: Path | str | None = None
    plots: Path | str | None = None
    from_csv: bool = BAKE.default("from_csv")
    rule: Path | str | None = None
    base: Path | str | None = None
    categories: Path | str | None = None
    from_glovita: Path | str | None = None
    from_soma: Path | str | None = None
    from_indices: Path | str | None = None
    id_column: str = BAKE.default("id_column")
    by_sample: bool = BAKE.default("by_sample")

    @classmethod
    def from_values(cls, values: dict[str, Any], *, where: str = "params.yaml") -> BakeOptions:
        """Checked options from the :data:`~dvc_cuvis.config.specs.BAKE` values (``BAKE.values``
        of a verb's settings, or ``BAKE.from_section`` of a params section)."""
        check_folds(values["folds"])  # first: K folds cost K arrays, so refuse a bomb early
        raw = values.get("constraints")
        paths = {n: _path(values.get(n)) for n in (
            "out_dir", "metrics", "plots", "rule", "base", "categories", "summaries",
            *IMPORTS)}
        opts = cls(
            strategy=values["strategy"], seed=values["seed"], val_ratio=values["val_ratio"],
            test_ratio=values["test_ratio"], group_by=values["group_by"],
            ad_aware=bool(values["ad_aware"]), folds=values["folds"],
            predict=values["predict"], ranges=not values["no_ranges"],
            constraints=(None if raw is None
                         else parse_constraints(raw, where=f"{where}: bake.constraints")),
            allow_removed=bool(values["allow_removed"]),
            allow_empty=bool(values["allow_empty"]),
            buffer=values["buffer"],
            keep_duplicates_together=values["keep_duplicates_together"],
            universe=values["universe"], out=values["out"],
            from_csv=bool(values["from_csv"]), id_column=str(values["id_column"]),
            by_sample=bool(values["by_sample"]), **paths,
        )
        opts.check()
        return opts

    @classmethod
    def from_section(cls, section: dict[str, Any], where: str = "params.yaml") -> BakeOptions:
        """Checked options from a params file's ``bake`` section (unknown keys refused)."""
        return cls.from_values(BAKE.from_section(section, where=where), where=where)

    @classmethod
    def from_settings(cls, settings: Settings) -> BakeOptions:
        """Checked options of a whole run from a verb's settings (flag > params section >
        default), outputs included."""
        opts = cls.from_values(BAKE.values(settings.get), where=settings.where)
        opts.check_outputs()
        return opts

    @property
    def sources(self) -> list[str]:
        """The sources of stages set besides a strategy (:data:`SOURCES`), in that order."""
        return [n for n in SOURCES if getattr(self, n)]

    @property
    def imported(self) -> tuple[str, Path] | None:
        """The convention and file of imported folds (None when none is set)."""
        chosen = [(n[len("from_"):], getattr(self, n)) for n in IMPORTS if getattr(self, n)]
        return (chosen[0][0], Path(chosen[0][1])) if chosen else None

    def check_outputs(self) -> None:
        """Refuse a run whose results have nowhere to go: folds write one file per fold, so
        they need ``out_dir``; and more than one import of folds at once."""
        if self.folds and not self.out_dir:
            raise OptionError("{folds} writes one splits file per fold: give {out_dir!g}",
                              "folds", "out_dir")
        chosen = [n for n in IMPORTS if getattr(self, n)]
        if len(chosen) > 1:
            raise OptionError(_choose_one(IMPORTS, chosen), *IMPORTS)
        if chosen and self.keep_duplicates_together != "off":
            raise OptionError(f"{{keep_duplicates_together}} merges the groups a strategy "
                              f"assigns; imported folds ({{{chosen[0]}}}) are placed already",
                              "keep_duplicates_together", chosen[0])

    def check(self) -> None:
        """Refuse impossible values and combinations with a message naming the parameter."""
        if self.strategy not in STRATEGIES:
            raise OptionError(
                f"unknown {{strategy}} {self.strategy!r}; choose one of {', '.join(STRATEGIES)}",
                "strategy")
        if not isinstance(self.group_by, str) or (self.group_by not in GROUP_BY
                                                  and block_size(self.group_by) is None):
            raise OptionError(
                f"unknown {{group_by}} {self.group_by!r}; choose one of "
                f"{', '.join(GROUP_BY)} or block:N", "group_by")
        if self.buffer:
            try:
                check_k(self.buffer, "{buffer}")
            except DvcCuvisError as exc:
                raise OptionError(str(exc), "buffer") from None
        elif isinstance(self.buffer, bool) or not isinstance(self.buffer, int):
            raise OptionError(f"{{buffer}} must be a whole number (0: off), got {self.buffer!r}",
                              "buffer")
        if self.keep_duplicates_together not in KEEP_TOGETHER:
            raise OptionError(f"unknown {{keep_duplicates_together}} "
                              f"{self.keep_duplicates_together!r}; choose one of "
                              f"{', '.join(KEEP_TOGETHER)}", "keep_duplicates_together")
        if self.keep_duplicates_together != "off" and self.sources:
            raise OptionError(f"{{keep_duplicates_together}} merges the groups a strategy "
                              f"assigns; {{{self.sources[0]}}} places every sample already",
                              "keep_duplicates_together", self.sources[0])
        self._check_numbers()
        check_folds(self.folds)
        if self.predict not in PREDICT:
            raise OptionError(f"{{predict}} must be 'all' (empty = whole universe) or 'test', "
                              f"got {self.predict!r}", "predict")
        check_sources(self.folds, self.sources)

    def _check_numbers(self) -> None:
        """The ratios (each in ``[0, 1)``, below 1 together) and the seed."""
        for name in ("val_ratio", "test_ratio"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 1:
                raise OptionError(f"{{{name}}} must be a number in [0, 1), got {v!r}", name)
        if self.val_ratio + self.test_ratio >= 1:
            raise OptionError(
                f"{{val_ratio}} + {{test_ratio}} must be below 1 (got {self.val_ratio} + "
                f"{self.test_ratio}); train would be empty", "val_ratio", "test_ratio")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise OptionError(f"{{seed}} must be a non-negative integer, got {self.seed!r}",
                              "seed")
