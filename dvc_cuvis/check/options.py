"""The drift check's options, as one frozen value: what to check and how strictly.

Built once — by :meth:`CheckOptions.from_settings` from ``check``'s settings (flag > params
section > default), or by keyword construction from Python — and checked there: an
impossible value is an :class:`~dvc_cuvis.errors.OptionError` naming the *parameter*, which the CLI
names as the flag or params key it came from.  Every ``"auto"`` is resolved once, by
:meth:`CheckOptions.resolved`; nothing below :func:`~dvc_cuvis.check.drift.verify` looks
at ``"auto"`` again.

Adding an option is one line: a field here whose name is the setting's name in
:data:`~dvc_cuvis.config.specs.CHECK` (``from_settings`` reads every such field by name);
a severity also goes in :data:`SEVERITY_FIELDS` to be checked.  The steps read it from
``ctx.opts``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Union

from dvc_cuvis.check.report import CHECKS
from dvc_cuvis.check.spectral import check_spectral_severity
from dvc_cuvis.check.staged import Staged
from dvc_cuvis.errors import DvcCuvisError, OptionError
from dvc_cuvis.leakage.adjacent import check_k
from dvc_cuvis.model.universe import Universe

if TYPE_CHECKING:
    from dvc_cuvis.config.settings import Settings
    from dvc_cuvis.sources import EnumerateOptions

__all__ = ["SEVERITY_FIELDS", "CheckOptionError", "CheckOptions", "Current"]

#: What ``current`` accepts: the universe on disk now, the options to enumerate it
#: (preferred: enumerated through the check's own cache), or a function producing it.
Current = Union[Universe, "EnumerateOptions", Callable[[], Universe], None]

#: The options that are a severity (error, warn or off), checked as such.
SEVERITY_FIELDS: tuple[str, ...] = ("adjacent_frames", "spectral_shift", "wavelength_grid",
                                     "content_duplicate", "near_duplicate")

#: Settings of ``check`` whose value is not read into a field of the same name.
_NOT_FIELDS = ("checks", "stage", "lock", "no_lock", "categories", "stat_cache")


#: The name this error had before every options value raised one type; kept so that code
#: written against ``dvc_cuvis.check.CheckOptionError`` still imports and catches it.
CheckOptionError = OptionError


@dataclass(frozen=True)
class CheckOptions:
    """How :func:`~dvc_cuvis.check.drift.verify` checks a split (see its docstring)."""

    checks: tuple[str, ...] = CHECKS
    current: Current = None
    deep: bool = False
    name_to_id: Mapping[str, int] | None = None
    group_leakage: str = "auto"
    adjacent_frames: str = "warn"
    adjacent_k: int = 1
    spectral_shift: str = "warn"
    wavelength_grid: str = "error"
    content_duplicate: str = "error"
    near_duplicate: str = "warn"
    #: the materialized folder whose summaries the leakage constraints read (None: the
    #: universe's own when materialize wrote summaries there; resolved once by ``resolved``)
    summaries: Path | None = None
    lock: Path | str | None = "auto"
    data_dir: str | None = None
    allow_partial: bool = False
    allow_unpinned: bool = False
    staged: Staged | None = None
    stages: tuple[str, ...] | None = None
    absolute_paths: bool = False
    #: where digests are remembered when verify gets no cache: a file, "auto" (the
    #: repository's), None (memory only)
    stat_cache: Path | str | None = None
    #: why ``current`` is None although the universe check runs (shown in its details)
    not_rescanned: str = ""

    def __post_init__(self) -> None:
        """Normalize the sequences and refuse an impossible value, naming the parameter."""
        checks = self.checks.split(",") if isinstance(self.checks, str) else self.checks
        object.__setattr__(self, "checks", _known_checks(checks))
        object.__setattr__(self, "stages", _stage_names(self.stages))
        if self.summaries is not None:
            object.__setattr__(self, "summaries", Path(self.summaries))
        if self.data_dir == "auto":
            object.__setattr__(self, "data_dir", None)
        for name in SEVERITY_FIELDS:
            _param(name, check_spectral_severity, getattr(self, name))
        _param("adjacent_k", check_k, self.adjacent_k)

    @classmethod
    def from_settings(cls, s: Settings, universe: Path | None = None, *,
                      staged: Staged | None = None) -> CheckOptions:
        """The options from ``check``'s settings (flag > params section > default).

        ``universe``: the universe.csv checked, so that the data it was enumerated from is
        re-scanned as the params file's ``enumerate`` section says (None: no re-scan);
        ``staged``: the index view of ``--staged``.  The stat cache ``"auto"`` is the one
        of the working folder's repository.
        """
        from dvc_cuvis.config.specs import CHECK
        from dvc_cuvis.digests.stat_cache import default_cache_path
        from dvc_cuvis.model.categories import load_category_map

        names = {f.name for f in dataclasses.fields(cls)} & set(CHECK.options)
        values = {n: s.get(n) for n in sorted(names - set(_NOT_FIELDS))}
        stage, spec, cache = s.get("stage"), s.get("checks"), s.get("stat_cache") or "auto"
        lock = None if s.flag("no_lock") else (Path(s.get("lock")) if s.get("lock") else "auto")
        opts = cls(**values, checks=spec or CHECKS,
                   stages=((stage,) if isinstance(stage, str) else tuple(stage)) if stage
                   else None, lock=lock, staged=staged,
                   name_to_id=(load_category_map(s.get("categories")) if s.get("categories")
                               else None),
                   stat_cache=default_cache_path() if cache == "auto" else cache)
        if universe is None or "universe" not in opts.checks:
            return opts
        current, why = _rescan_options(s, universe)
        return dataclasses.replace(opts, current=current, not_rescanned=why)

    def resolved(self, anchor: Path | None, universe: Path | None = None) -> CheckOptions:
        """These options with every ``"auto"`` resolved for a split in folder ``anchor``
        (None: the working folder): ``lock`` to a dvc.lock or None, ``stat_cache`` to a
        file, ``summaries`` to the folder every summary-reading constraint reads (the one
        given, else ``universe``'s own when materialize wrote summaries there) or None."""
        from dvc_cuvis.check.summaries import summaries_folder
        from dvc_cuvis.digests.stat_cache import default_cache_path
        from dvc_cuvis.repo.lockfile import find_lock

        lock = self.lock
        if lock == "auto":
            lock = find_lock(anchor if anchor is not None else Path.cwd())
        cache = self.stat_cache
        if cache == "auto":
            cache = default_cache_path(anchor)
        return dataclasses.replace(self, lock=Path(lock) if lock else None, stat_cache=cache,
                                   summaries=summaries_folder(universe, self.summaries))

    def memo_key(self) -> list[object]:
        """The options a remembered verdict is keyed by (those that change a verdict)."""
        key: list[object] = [sorted(set(self.checks) & set(CHECKS[:4])), self.group_leakage,
                             [self.adjacent_frames, self.adjacent_k], self.data_dir,
                             self.allow_partial, self.allow_unpinned,
                             sorted((self.name_to_id or {}).items()),
                             # the summaries read, and what their constraints decide
                             [os.path.abspath(self.summaries) if self.summaries is not None
                              else None,
                              self.content_duplicate, self.near_duplicate,
                              self.spectral_shift, self.wavelength_grid]]
        if self.stages is not None:  # a one-stage verdict never stands for the whole split's
            key.append(list(self.stages))
        return key


def _rescan_options(s: Settings, universe: Path) -> tuple[EnumerateOptions | None, str]:
    """How to re-enumerate the data that made ``universe`` (the params file's enumerate
    section), or None and why not; its cache is the check's own, set by verify."""
    from dvc_cuvis.digests.stat_cache import StatCache
    from dvc_cuvis.sources import EnumerateOptions

    if s.flag("no_enumerate"):
        return None, "--no-enumerate"
    return EnumerateOptions.for_rescan(s.of("enumerate"), s.base, universe, StatCache(None),
                                       s.where)


def _param(name: str, check: Callable[[object, str], object], value: object) -> None:
    """``check(value, name)``; its error becomes an :class:`OptionError` naming ``name``."""
    try:
        check(value, "{" + name + "}")
    except DvcCuvisError as exc:
        raise OptionError(str(exc), name) from None


def _known_checks(checks: Iterable[str]) -> tuple[str, ...]:
    """``checks`` as a tuple; an :class:`OptionError` for an unknown name."""
    wanted = tuple(checks)
    unknown = set(wanted) - set(CHECKS)
    if unknown:
        raise OptionError(f"{{checks}}: unknown check(s) {sorted(unknown)}; choose from "
                          f"{list(CHECKS)}", "checks")
    return wanted


def _stage_names(stages: Iterable[str] | None) -> tuple[str, ...] | None:
    """``stages`` checked against the split's stage names (None stays None)."""
    if stages is None:
        return None
    from dvc_cuvis.model.splits import STAGES

    stages = tuple(stages)
    bad = [s for s in stages if s not in STAGES]
    if bad or not stages:
        raise OptionError(f"{{stages}}: stage {', '.join(bad) or '(none)'}: choose from "
                          f"{', '.join(STAGES)}", "stages")
    return tuple(dict.fromkeys(stages))
