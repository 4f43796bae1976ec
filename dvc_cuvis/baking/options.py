"""Every knob of a bake (also the ``bake:`` section of params.yaml), checked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuvis_ai_schemas.training.data import Constraint

from dvc_cuvis import limits
from dvc_cuvis.config.specs import BAKE, GROUP_BY, PREDICT, STRATEGIES
from dvc_cuvis.errors import DvcCuvisError, ParamsError
from dvc_cuvis.leakage.adjacent import check_k
from dvc_cuvis.leakage.recordings import block_size
from dvc_cuvis.model.splits import parse_constraints

#: How an error names the folds setting when it does not know where it came from.
FOLDS = "folds (--folds / bake.folds)"


def check_folds(folds: Any, named: str = FOLDS) -> None:
    """Refuse a fold count that is no whole number, 1, negative, or over the ceiling
    (``limits.max_folds``), before a single fold is built: K folds cost K arrays of the
    universe's size, so the count must be checked while it is still a number."""
    if isinstance(folds, bool) or not isinstance(folds, int):
        raise ParamsError(f"{named} must be a whole number (0: no folds), got {folds!r}")
    if folds < 0 or folds == 1:
        raise ParamsError(f"{named}: folds must be 0 (off) or at least 2, got {folds}")
    ceiling = limits.current().max_folds
    if folds > ceiling:
        env = limits.Limits.env_name("max_folds")
        raise ParamsError(f"{named}: {folds:,} folds is over the ceiling of {ceiling:,}; "
                          f"give fewer folds, or if you need them raise {env}=<n> "
                          "(docs/robustness.md)")


@dataclass
class BakeOptions:
    """Every knob of a bake (also the ``bake:`` section of params.yaml).

    The defaults are those of the one spec, :data:`~dvc_cuvis.config.specs.BAKE` (which also gives
    the CLI its flags and ``init`` its params template).
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

    @classmethod
    def from_values(cls, values: dict[str, Any], *, where: str = "params.yaml") -> BakeOptions:
        """Checked options from the :data:`~dvc_cuvis.config.specs.BAKE` values (``BAKE.values``
        of a verb's settings, or ``BAKE.from_section`` of a params section)."""
        raw = values.get("constraints")
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
        )
        opts.check()
        return opts

    @classmethod
    def from_section(cls, section: dict[str, Any], where: str = "params.yaml") -> BakeOptions:
        """Checked options from a params file's ``bake`` section (unknown keys refused)."""
        return cls.from_values(BAKE.from_section(section, where=where), where=where)

    def check(self) -> None:
        """Refuse impossible combinations with a message naming the option."""
        if self.strategy not in STRATEGIES:
            raise DvcCuvisError(
                f"unknown strategy {self.strategy!r}; choose one of {', '.join(STRATEGIES)}"
            )
        if not isinstance(self.group_by, str) or (self.group_by not in GROUP_BY
                                                  and block_size(self.group_by) is None):
            raise DvcCuvisError(
                f"unknown group-by {self.group_by!r}; choose one of {', '.join(GROUP_BY)} "
                "or block:N"
            )
        if self.buffer:
            check_k(self.buffer, "buffer (--buffer / bake.buffer)")
        elif isinstance(self.buffer, bool) or not isinstance(self.buffer, int):
            raise DvcCuvisError(f"buffer (--buffer / bake.buffer) must be a whole number "
                                f"(0: off), got {self.buffer!r}")
        for name in ("val_ratio", "test_ratio"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 1:
                flag = name.replace("_", "-")
                raise DvcCuvisError(f"{flag} must be a number in [0, 1), got {v!r}")
        if self.val_ratio + self.test_ratio >= 1:
            raise DvcCuvisError(
                f"val-ratio + test-ratio must be below 1 (got {self.val_ratio} + "
                f"{self.test_ratio}); train would be empty"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise DvcCuvisError(f"seed must be a non-negative integer, got {self.seed!r}")
        check_folds(self.folds)
        if self.predict not in PREDICT:
            raise DvcCuvisError(f"predict must be 'all' (empty = whole universe) or 'test', "
                                f"got {self.predict!r}")
