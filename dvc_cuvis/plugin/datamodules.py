"""The cuvis-ai plugin: drift-guarded DataModules that a trainrun YAML selects by name.

cuvis-ai finds a DataModule by its ``DATA_MODULE_NAME`` in a ``NodeRegistry`` filled from
plugin manifests.  The manifest shipped in ``dvc_cuvis/plugins/`` (its folder is what
``dvc-cuvis plugins-dir`` prints) declares three ``kind: data_module`` capabilities, the
classes of this module:

``dvc_npz_multi`` (:class:`DvcNpzMultiDataModule`), ``dvc_cu3s_multi``
(:class:`DvcCu3sMultiDataModule`), ``dvc_tiff_paired`` (:class:`DvcTiffPairedDataModule`)
    Subclasses of cuvis-ai-dataloader's ``MultiNpzDataModule``, ``MultiCu3sDataModule`` and
    ``TiffPairedDataModule`` taking every upstream parameter unchanged.  Their ``setup()``
    runs :func:`dvc_cuvis.check.drift.verify` before any frame is read — the pin, content md5
    (where the universe records it), selection, constraints, and dvc.lock staleness in a
    DVC repository — and only then the upstream ``setup()``.

Extra parameters (in a trainrun's ``data.params``): ``verify`` (``strict`` | ``warn`` |
``off``, default ``strict``), ``deep``, ``lock``, ``stat_cache``; ``dvc_tiff_paired`` also
takes ``universe_csv``.  ``validate_params`` refuses an unknown or mistyped parameter,
naming the closest valid one: a typo must not switch the check off.

This module imports cuvis-ai-dataloader (and so torch and pytorch-lightning) when it is
imported; ``import dvc_cuvis`` never imports it.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from cuvis_ai_dataloader.data.datamodule_cu3s_multi import MultiCu3sDataModule
from cuvis_ai_dataloader.data.datamodule_npz_multi import MultiNpzDataModule
from cuvis_ai_dataloader.data.datamodule_tiff_paired import TiffPairedDataModule

from dvc_cuvis.check.drift import (
    CHECKS,
    CheckOptions,
    DriftError,
    DriftReport,
    ensure,
    verify,
)
from dvc_cuvis.check.options import Current
from dvc_cuvis.config.options import Option, closest, did_you_mean
from dvc_cuvis.config.specs import GUARD, TIFF_UNIVERSE, VERSION
from dvc_cuvis.digests.stat_cache import StatCache, open_stat_cache
from dvc_cuvis.errors import DvcCuvisError, ParamsError
from dvc_cuvis.interop.modules import check_module_rules
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe
from dvc_cuvis.train.lineage_hooks import Lineage
from dvc_cuvis.train.lineage_values import JsonRecord

__all__ = ["GUARD_PARAMS", "DvcCu3sMultiDataModule", "DvcNpzMultiDataModule",
           "DvcTiffPairedDataModule", "TrainingDriftError"]

logger = logging.getLogger(__name__)


#: The parameters every guarded module adds to its upstream ones (the one spec,
#: :data:`dvc_cuvis.config.specs.GUARD`).  A later pre-step (such as fetching the data at a git
#: revision) adds its own here and in ``PRE_STEPS``.
GUARD_PARAMS: dict[str, Option] = dict(GUARD.options)

#: A dataset version (:mod:`dvc_cuvis.train.versioned`), spec
#: :data:`dvc_cuvis.config.specs.VERSION`.
VERSION_PARAMS: dict[str, Option] = dict(VERSION.options)


def _check_param(module: str, name: str, opt: Option, value: object) -> None:
    """Raise DvcCuvisError when ``value`` has a wrong type or is not one of the choices.

    A null is a value here (``lock: null`` means no dvc.lock), so it is accepted only where
    the option's types name it.
    """
    where = f"{module}: parameter '{name}'"
    if value is None and type(None) not in opt.accepts:
        raise DvcCuvisError(f"{where} must be {opt.accepts[0].__name__}, got None")
    try:
        opt.check(value, where)
    except ParamsError as exc:
        raise DvcCuvisError(str(exc)) from None


def _pin_version(module: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    from dvc_cuvis.train.versioned import plugin_pin

    return plugin_pin(module, kwargs)


def _version_params(name: str, params: dict[str, Any], upstream: dict[str, Any],
                    ) -> dict[str, Any]:
    from dvc_cuvis.train.versioned import plugin_validate

    return plugin_validate(name, params, upstream)


def _fetch_version(module: object, stage: str | None) -> None:
    from dvc_cuvis.train.versioned import plugin_fetch

    plugin_fetch(module, stage)


#: Loader arguments ``create_data_module`` passes by name; never inside ``params``.
_LOADER_ARGS = frozenset({"self", "splits", "batch_size", "num_workers"})


class TrainingDriftError(DriftError):
    """A guarded DataModule refused to set up: the split no longer matches its data.

    The message names the split file, every failed check with its counts, and the command
    that fixes each, every path absolute or relative to a folder it names (it may be read in
    the cuvis-ai GUI, far from this process's folder); ``err.report`` holds the full report.
    """

    def __init__(self, report: DriftReport, module: str) -> None:
        """The error for ``report``, raised by the module named ``module``."""
        super().__init__(report)
        lines = [f"{module}: refusing to train: {self.summary}"]
        keep = False
        for line in report.render().splitlines()[1:]:  # the failed checks' blocks of the report
            if line.startswith("  ["):
                keep = line.startswith(("  [DRIFT]", "  [FAIL]"))
            if keep:
                lines.append(line)
        if any(f.failed and f.details.get(k) for f in report.findings
               for k in ("missing", "modified")):
            # file names are universe.csv's own (relative to its folder); the reader of this
            # message may be a GUI user, who cannot know the server's working folder
            folder = Path(report.universe).resolve().parent.as_posix()
            lines.append(f"  (files are named relative to {folder}, the folder of universe.csv)")
        lines.append("  (no frame was read; to train on it anyway set data.params.verify: warn)")
        self.args = ("\n".join(lines),)


def _upstream_params(upstream: type) -> list[str]:
    """The keyword parameters of the upstream ``__init__`` that a trainrun's params can set."""
    init = inspect.unwrap(upstream.__init__)  # type: ignore[misc]
    return [n for n in inspect.signature(init).parameters if n not in _LOADER_ARGS]


class _Guarded:
    """The drift check in front of an upstream module's ``setup()`` (mixin, first base)."""

    #: The cuvis-ai-dataloader class this one guards (set by each subclass).
    UPSTREAM: ClassVar[type]
    #: This module's own parameters beyond the upstream ones and ``GUARD_PARAMS``.
    OWN_PARAMS: ClassVar[dict[str, Option]] = {}
    #: Steps run first in ``setup(stage)``, before the check (e.g. fetch the data at a
    #: revision); each is called with the module and the stage.
    PRE_STEPS: ClassVar[tuple[Callable[[object, str | None], None], ...]] = ()

    DATA_MODULE_NAME: ClassVar[str]

    @classmethod
    def guard_params(cls) -> dict[str, Option]:
        """Every parameter this class adds to the upstream module's."""
        return {**GUARD_PARAMS, **cls.OWN_PARAMS}

    @classmethod
    def valid_params(cls) -> list[str]:
        """Every name a trainrun's ``data.params`` may hold for this module."""
        return sorted({*_upstream_params(cls.UPSTREAM), *cls.guard_params()})

    @classmethod
    def _check_names(cls, params: dict[str, object]) -> None:
        valid = cls.valid_params()
        for key in sorted(params, key=str):
            if key in VERSION_PARAMS and key not in valid:
                raise DvcCuvisError(
                    f"{cls.DATA_MODULE_NAME}: '{key}' (training on a dataset version) is "
                    "supported by dvc_npz_multi only, not yet here; materialize the frames "
                    "and train with dvc_npz_multi, or check the version out "
                    f"(`git checkout {params.get('rev') or 'REV'} && dvc pull`) and drop "
                    f"'{key}'")
            if key not in valid:
                more = did_you_mean(closest(str(key), valid))
                raise DvcCuvisError(
                    f"{cls.DATA_MODULE_NAME}: unknown parameter '{key}'{more} (valid: "
                    f"{', '.join(valid)}); a mistyped parameter would otherwise be ignored")
        for name, opt in cls.guard_params().items():
            if name in params:
                _check_param(cls.DATA_MODULE_NAME, name, opt, params[name])

    @classmethod
    def validate_params(cls, params: dict[str, object]) -> None:
        """Refuse unknown or mistyped parameters (naming the closest), then upstream's checks."""
        cls._check_names(dict(params))
        ours = cls.guard_params()
        theirs = {k: v for k, v in params.items() if k not in ours}
        if "rev" in ours:  # a dataset version: its files are read at the revision
            theirs = _version_params(cls.DATA_MODULE_NAME, dict(params), theirs)
        upstream: Any = cls.UPSTREAM
        upstream.validate_params(theirs)

    def _take_guard_params(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Split ``kwargs`` (flat or DataConfig-shaped) into ours (set on self) and upstream's."""
        kwargs = dict(kwargs)
        kwargs.pop("data_module", None)
        nested = kwargs.pop("params", None) or {}
        for key, value in dict(nested).items():
            kwargs.setdefault(key, value)
        type(self)._check_names({k: v for k, v in kwargs.items() if k not in _LOADER_ARGS})
        values = {}
        for name, spec in type(self).guard_params().items():
            values[name] = kwargs.pop(name, spec.default)
        self.guard_settings: dict[str, Any] = values
        self.drift_report: DriftReport | None = None
        self._stat_cache: StatCache | None = None
        self._warned: str | None = None
        self._lineage = Lineage(self.DATA_MODULE_NAME, values["lineage"])
        self._checked: Path | Universe | None = None
        return kwargs

    # -- what is checked ------------------------------------------------------------------

    def _universe_for_check(self) -> tuple[Path | Universe, Current, Path]:
        """The universe to check against, ``current`` for verify(), and the folder whose
        repository holds the dvc.lock and stat cache (subclass hook)."""
        raise NotImplementedError

    def _cache(self, near: Path) -> StatCache:
        if self._stat_cache is None:
            self._stat_cache = open_stat_cache(self.guard_settings["stat_cache"], near)
        return self._stat_cache

    def check_drift(self) -> DriftReport | None:
        """Run the drift check now (per ``verify``); raises TrainingDriftError under strict."""
        mode = self.guard_settings["verify"]
        if mode == "off":
            return None
        splits: Any = getattr(self, "splits", None)
        if splits is None:
            raise DvcCuvisError(
                f"{self.DATA_MODULE_NAME}: no splits given; the drift check needs the split "
                "(data.splits.splits_path: splits.json), or set data.params.verify: off")
        universe, current, folder = self._universe_for_check()
        self._checked = universe  # what the dataset record names
        opts = CheckOptions(current=current, deep=self.guard_settings["deep"],
                            lock=self.guard_settings["lock"],
                            checks=getattr(self, "version_checks", CHECKS),
                            absolute_paths=True,  # read in a GUI, far from this process's folder
                            ).resolved(folder)  # "auto": the dvc.lock of the universe's repository
        report = verify(splits, universe, opts, self._cache(folder / "universe.csv"))
        self.drift_report = report
        if report.ok:
            return report
        if mode == "strict":
            try:
                ensure(report, "strict")
            except DriftError:
                raise TrainingDriftError(report, self.DATA_MODULE_NAME) from None
        text = report.render()
        if text != self._warned:  # once per distinct report, not on every setup(stage)
            self._warned = text
            ensure(report, "warn")
        return report

    def setup(self, stage: str | None = None) -> None:
        """Pre-steps, then the drift check and the dataset record, then the upstream
        ``setup(stage)``."""
        for step in self.PRE_STEPS:
            step(self, stage)
        report = self.check_drift()
        self._take_record(report)
        super().setup(stage)  # type: ignore[misc]

    # -- the dataset record (dvc_cuvis.train.lineage_hooks) ----------------------------------

    def _take_record(self, report: DriftReport | None) -> None:
        splits: Any = getattr(self, "splits", None)
        universe = self._checked if report is not None else self._record_universe()
        if splits is None or universe is None:
            return
        self._lineage.take(self, splits, universe, mode=self.guard_settings["verify"],
                           report=report, cache=self._stat_cache,
                           lock=self.guard_settings["lock"])

    def _record_universe(self) -> Path | Universe | None:
        """What the record names when nothing was checked (``verify: off``)."""
        csv = getattr(self, "_universe_csv", None) or self.guard_settings.get("universe_csv")
        return Path(csv) if csv else None

    @property
    def dataset_record(self) -> JsonRecord | None:
        """The dataset record of the last ``setup()`` (:mod:`dvc_cuvis.train.lineage`)."""
        return self._lineage.record

    def state_dict(self) -> dict[str, object]:
        """The module's state and its dataset record (kept in every Lightning checkpoint)."""
        return self._lineage.state(super().state_dict())  # type: ignore[misc]

    def load_state_dict(self, state_dict: dict[str, object]) -> None:
        """Compare a checkpoint's dataset record with the version set up now, then upstream's."""
        rest = self._lineage.load(self, state_dict, self.guard_settings["verify"])
        super().load_state_dict(rest)  # type: ignore[misc]

    def train_dataloader(self) -> object:
        """Upstream's train loader; the trainrun's record is written first (``lineage``)."""
        self._lineage.on_loader(self, "train")
        return super().train_dataloader()  # type: ignore[misc]

    def val_dataloader(self) -> object:
        """Upstream's val loader (a resume without a record is noted)."""
        self._lineage.on_loader(self, "val")
        return super().val_dataloader()  # type: ignore[misc]

    def test_dataloader(self) -> object:
        """Upstream's test loader (a resume without a record is noted)."""
        self._lineage.on_loader(self, "test")
        return super().test_dataloader()  # type: ignore[misc]


class _UniverseCsvGuarded(_Guarded):
    """Modules over a ``universe_csv`` (npz_multi, cu3s_multi): that file is checked."""

    #: The upstream module's name, whose universe rules apply to the universe.csv.
    RULES: ClassVar[str]

    def _universe_for_check(self) -> tuple[Path | Universe, Current, Path]:
        path = Path(getattr(self, "_universe_csv"))  # noqa: B009 (set by the upstream init)
        check_module_rules(read_universe(path), self.RULES)
        return path, None, path.parent


class DvcNpzMultiDataModule(_UniverseCsvGuarded, MultiNpzDataModule):
    """``dvc_npz_multi``: cuvis-ai-dataloader's ``npz_multi``, drift-checked in ``setup()``.

    Takes every ``MultiNpzDataModule`` parameter plus ``verify``, ``deep``, ``lock`` and
    ``stat_cache`` (see :mod:`dvc_cuvis.plugin.datamodules`).  Point ``universe_csv`` at the
    universe.csv that ``dvc-cuvis materialize`` wrote, and ``splits.splits_path`` at the
    splits.json beside it.
    """

    DATA_MODULE_NAME: ClassVar[str] = "dvc_npz_multi"
    UPSTREAM: ClassVar[type] = MultiNpzDataModule
    RULES: ClassVar[str] = "npz_multi"
    OWN_PARAMS: ClassVar[dict[str, Option]] = VERSION_PARAMS
    PRE_STEPS: ClassVar[tuple[Callable[[object, str | None], None], ...]] = (_fetch_version,)

    def __init__(self, **kwargs: object) -> None:
        """Upstream's parameters unchanged, plus the guard's and ``rev``/``repo``/``cache_dir``
        (nothing is read but the CSV; with ``rev``, the CSV and split at that revision)."""
        MultiNpzDataModule.__init__(self, **_pin_version(self, self._take_guard_params(kwargs)))


class DvcCu3sMultiDataModule(_UniverseCsvGuarded, MultiCu3sDataModule):
    """``dvc_cu3s_multi``: cuvis-ai-dataloader's ``cu3s_multi``, drift-checked in ``setup()``.

    Takes every ``MultiCu3sDataModule`` parameter plus the guard's.  The check needs a
    split (``splits``); a module-owned split (the CSV's ``split`` column) has no pin to
    check, so use ``verify: off`` for it.
    """

    DATA_MODULE_NAME: ClassVar[str] = "dvc_cu3s_multi"
    UPSTREAM: ClassVar[type] = MultiCu3sDataModule
    RULES: ClassVar[str] = "cu3s_multi"

    def __init__(self, **kwargs: object) -> None:
        """Upstream's parameters unchanged, plus the guard's (nothing is read but the CSV)."""
        MultiCu3sDataModule.__init__(self, **self._take_guard_params(kwargs))


class DvcTiffPairedDataModule(_Guarded, TiffPairedDataModule):
    """``dvc_tiff_paired``: cuvis-ai-dataloader's ``tiff_paired``, drift-checked in ``setup()``.

    tiff_paired has no universe file: it lists ``images_dir``.  The pin is checked against
    that listing — exactly what it will train on.  Given ``universe_csv`` (the one
    ``dvc-cuvis enumerate --format tiff`` wrote), the universe.csv must also equal the
    listing, and every file's content is checked against its recorded md5.
    """

    DATA_MODULE_NAME: ClassVar[str] = "dvc_tiff_paired"
    UPSTREAM: ClassVar[type] = TiffPairedDataModule
    OWN_PARAMS: ClassVar[dict[str, Option]] = dict(TIFF_UNIVERSE.options)

    def __init__(self, **kwargs: object) -> None:
        """Upstream's parameters unchanged, plus the guard's and ``universe_csv``."""
        TiffPairedDataModule.__init__(self, **self._take_guard_params(kwargs))

    def _listing(self) -> Universe:
        """The module's own enumeration (what it will train on) as a universe."""
        refs = self.enumerate()
        records = [{"source": r.source, "index": None} for r in refs]
        return Universe.from_records(records)

    def _universe_for_check(self) -> tuple[Path | Universe, Current, Path]:
        images = self.images_dir  # (set by the upstream init: a Path or None)
        if images is None:
            raise DvcCuvisError(
                f"{self.DATA_MODULE_NAME}: no images_dir given; the drift check lists it "
                "(data.params.images_dir: the folder of TIFF cubes), or set "
                "data.params.verify: off")
        listing = self._listing()
        csv = self.guard_settings["universe_csv"]
        if csv:
            check_module_rules(read_universe(csv), "tiff_paired")
            return Path(csv), listing, Path(csv).resolve().parent
        return listing, None, Path(images).resolve()
