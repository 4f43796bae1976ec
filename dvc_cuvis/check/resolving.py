"""``dvc-cuvis resolve`` as one call: every stage of a splits.json resolved against a
universe.csv, with the module's rules, the split's constraints and the partly matching
selectors, as one typed result that the CLI prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dvc_cuvis.config.specs import LEAKAGE
from dvc_cuvis.errors import OptionError, and_more, terminal

if TYPE_CHECKING:
    from cuvis_ai_schemas.training.data import DataSplitConfig

    from dvc_cuvis.config.settings import Settings
    from dvc_cuvis.model.constraints import ConstraintResult
    from dvc_cuvis.model.resolution import Resolution

__all__ = ["ResolveOptions", "Resolved", "resolve_split"]


@dataclass(frozen=True)
class ResolveOptions:
    """Which split to resolve against which universe, and what fails the resolve.

    ``group_leakage``: ``auto`` (an error when the universe has a group column), ``error``,
    ``warn`` or ``off``; ``allow_partial``: a selector matching only some of its ids is a
    warning, not a failure; ``module``: the cuvis-ai-dataloader module whose universe rules
    apply (None: the one universe.csv states, if any).
    """

    universe: Path = Path("universe.csv")
    splits: Path = Path("splits.json")
    categories: Path | None = None
    group_leakage: str = "auto"
    allow_partial: bool = False
    module: str | None = None

    def __post_init__(self) -> None:
        if self.group_leakage not in LEAKAGE:
            raise OptionError(f"{{group_leakage}} must be one of {', '.join(LEAKAGE)}",
                              "group_leakage")

    @classmethod
    def from_settings(cls, s: Settings) -> ResolveOptions:
        """The options of ``dvc-cuvis resolve`` (flag > params section > default); the
        split and universe must exist."""
        from dvc_cuvis.config.inputs import require_file, split_paths

        universe, splits = split_paths(s)
        require_file(splits, "splits", s)
        require_file(universe, "universe", s)
        categories = s.get("categories")
        return cls(universe=universe, splits=splits,
                   categories=Path(categories) if categories else None,
                   group_leakage=s.get("group_leakage", "auto"),
                   allow_partial=s.flag("allow_partial"), module=s.get("module"))


@dataclass(frozen=True)
class Resolved:
    """A resolved split: the stages, the constraints' outcomes and what to tell the user."""

    options: ResolveOptions
    config: DataSplitConfig
    resolution: Resolution
    constraints: tuple[ConstraintResult, ...]
    notes: tuple[str, ...]

    @property
    def failed(self) -> tuple[ConstraintResult, ...]:
        """The constraints that fail the resolve (error severity, violated or unavailable)."""
        return tuple(r for r in self.constraints if r.failed)

    @property
    def partial(self) -> bool:
        """True when a selector matches only partly and that is not allowed."""
        return bool(self.resolution.warnings) and not self.options.allow_partial

    @property
    def ok(self) -> bool:
        """True when nothing fails the resolve (exit 0)."""
        return not self.failed and not self.partial

    def warnings(self) -> list[str]:
        """The stderr lines before the result: the module's notes, each partly matching
        selector (a warning, or an error unless allowed)."""
        kind = "warning" if self.options.allow_partial else "error"
        where = self.options.splits
        return [*(f"dvc-cuvis: note: {self.options.universe}: {n}" for n in self.notes),
                *(terminal(f"dvc-cuvis: {kind}: {where}: {w.message()}")
                  for w in self.resolution.warnings)]

    def lines(self) -> list[str]:
        """The summary: split, universe and pin, a table of the stages, each constraint."""
        from dvc_cuvis.model.split_state import state
        from dvc_cuvis.model.stats import stage_stats

        cfg, uni, res = self.config, self.resolution.universe, self.resolution
        pinned = cfg.universe_hash
        hash_line = "not pinned"
        if pinned:
            hash_line = "matches" if pinned == uni.hash else f"DIFFERS (pinned {pinned[:12]})"
        out = [terminal(f"splits:   {self.options.splits} ({state(cfg)})"),
               terminal(f"universe: {self.options.universe} — {len(uni)} samples, "
                        f"{len(uni.source_names)} sources, hash {uni.hash[:12]} ({hash_line})"),
               f"{'stage':<8} {'samples':>9} {'sources':>8} {'groups':>7}"]
        for name, st in stage_stats(res).items():
            note = "  (empty: whole universe)" if name == "predict" and res.predict_is_all else ""
            out.append(f"{name:<8} {st['samples']:>9} {st['sources']:>8} {st['groups']:>7}{note}")
        for r in self.constraints:
            extra = f" — {r.reason}" if r.reason and r.status != "satisfied" else ""
            offend = f": {', '.join(r.offending[:5])}{and_more(r.count, 5)}" if r.offending else ""
            out.append(terminal(f"constraint {r.kind} [{r.severity}]: {r.status}{extra}{offend}"))
        return out

    def failure(self) -> str | None:
        """The one stderr line of a failed resolve (exit 1), or None."""
        if self.ok:
            return None
        names = [f"{r.kind} {r.status}" for r in self.failed]
        if self.partial:
            names.append(f"{len(self.resolution.warnings)} selector(s) match only partly "
                         "(--allow-partial to accept)")
        return terminal(f"dvc-cuvis: check failed: {self.options.splits}: {', '.join(names)}")


def resolve_split(opts: ResolveOptions) -> Resolved:
    """Resolve every stage of a split and evaluate its constraints: ``dvc-cuvis resolve``
    as one call, so a notebook sees what the CLI prints and why it fails."""
    from dvc_cuvis.interop.modules import module_notes
    from dvc_cuvis.model.categories import load_category_map
    from dvc_cuvis.model.constraints import evaluate_constraints
    from dvc_cuvis.model.resolution import resolve
    from dvc_cuvis.model.splits import load_splits
    from dvc_cuvis.model.universe_io import read_universe

    cfg = load_splits(opts.splits)
    uni = read_universe(opts.universe)
    name_to_id = load_category_map(opts.categories) if opts.categories else None
    notes = module_notes(opts.universe, opts.module, uni)
    res = resolve(cfg, uni, name_to_id=name_to_id, where=str(opts.splits))
    results = evaluate_constraints(res, cfg.constraints, group_leakage=opts.group_leakage)
    return Resolved(opts, cfg, res, tuple(results), notes)
