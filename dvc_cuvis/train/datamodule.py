"""A drift-guarded DataModule over materialized npz frames, and ``guard()`` for existing ones.

:class:`SplitDataModule` reads a materialized ``universe.csv`` + ``splits.json`` and serves
batches with exactly the keys of cuvis-ai-dataloader's ``npz_multi`` (``cube, mask,
class_mask, wavelengths, mesu_index, frame_id``).  Its ``setup()`` runs the drift check
first: ``verify="strict"`` (default) raises :class:`~dvc_cuvis.check.drift.DriftError` carrying
the report, ``"warn"`` logs it, ``"off"`` skips it.  Each instance is a ``LightningDataModule``
of the Lightning package in use, ``pytorch_lightning`` or ``lightning``
(:mod:`dvc_cuvis.train.lightning_env`), and a plain object without either; Lightning is
imported when the first module is made, torch when a dataloader is built.

:func:`guard` gives an existing cuvis-ai DataModule (duck-typed: anything with
``setup(stage)``) the same check before its own ``setup()``.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import numpy as np
from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis.check.drift import (
    CheckOptions,
    DriftReport,
    check_verify_mode,
    ensure,
    verify,
)
from dvc_cuvis.digests.stat_cache import StatCache, open_stat_cache
from dvc_cuvis.errors import DvcCuvisError, MissingExtraError
from dvc_cuvis.model.frame_read import read_npz
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe
from dvc_cuvis.paths.guard import PathGuard
from dvc_cuvis.train.lightning_env import datamodule_base, host_of, package_of, pick_package
from dvc_cuvis.train.lineage_hooks import Lineage
from dvc_cuvis.train.lineage_values import JsonRecord
from dvc_cuvis.train.stages import SETUP_STAGES, setup_stages

logger = logging.getLogger(__name__)

BATCH_KEYS: tuple[str, ...] = ("cube", "mask", "class_mask", "wavelengths", "mesu_index",
                               "frame_id")


class NpzFrames:
    """Map-style dataset of npz frames (works with ``torch.utils.data.DataLoader`` as is)."""

    def __init__(self, paths: list[str], indices: list[int]) -> None:
        """Frames at ``paths`` with their source read positions ``indices``."""
        self.paths = paths
        self.indices = indices

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> dict[str, object]:
        z = read_npz(self.paths[i])
        cube = np.asarray(z["cube"], dtype=np.float32)
        h, w = cube.shape[:2]
        mask = (np.asarray(z["mask"], dtype=np.int32) if "mask" in z
                else np.zeros((h, w), dtype=np.int32))
        class_mask = (np.asarray(z["class_mask"], dtype=np.uint8) if "class_mask" in z
                      else np.zeros((h, w), dtype=np.uint8))
        wavelengths = np.asarray(z["wavelengths"]).ravel().astype(np.int32)
        return {"cube": cube, "mask": mask, "class_mask": class_mask,
                "wavelengths": wavelengths, "mesu_index": self.indices[i], "frame_id": i}


#: (class, Lightning package) -> the class with that package's ``LightningDataModule`` added
#: as its last base, made once per process.
_HOSTED: dict[tuple[type, str], type] = {}


def _plain(cls: type) -> type:
    """The class a hosted class was made from (``cls`` itself otherwise)."""
    plain: type = cls.__dict__.get("_plain", cls)
    return plain


def hosted(cls: type, package: str | None) -> type:
    """``cls`` as a ``LightningDataModule`` of ``package``: a Trainer takes only DataModules of
    its own package; ``cls`` itself without Lightning, or when it has a Lightning base of its
    own."""
    plain = _plain(cls)
    if package is None or host_of(plain) is not None:
        return plain
    key = (plain, package)
    if key not in _HOSTED:
        _HOSTED[key] = type(plain.__name__, (plain, datamodule_base(package)), {
            "__module__": plain.__module__, "__qualname__": plain.__qualname__,
            "__doc__": plain.__doc__, "_plain": plain, "_lightning": package})
    return _HOSTED[key]


def _new(cls: Any) -> object:
    """An empty instance of ``cls`` under this process's Lightning (unpickling)."""
    return cls.__new__(cls)


class SplitDataModule:
    """Train/val/test/predict loaders over a materialized split, drift-checked in setup().

    Point it at the folder :func:`~dvc_cuvis.materialize.core.materialize` wrote: training
    then reads exactly the frames the split names, in batches shaped like
    cuvis-ai-dataloader's ``npz_multi``, and refuses to start when the split no longer
    matches the data (drift is an error before the first batch, not a silent change of
    what was trained on).

    Parameters
    ----------
    universe_csv : path-like
        The materialized universe.csv (its rows carry ``materialized_path``).
    splits : path-like
        The splits.json beside it.
    batch_size : int, default 1
    num_workers : int, default 0
        Passed to ``torch.utils.data.DataLoader``.
    pin_memory, persistent_workers : bool, default False
        Passed to the DataLoader (``persistent_workers`` only when ``num_workers > 0``).
    verify : {"strict", "warn", "off"}, default "strict"
        What ``setup()`` does with a failed drift check (see
        :func:`~dvc_cuvis.check.drift.ensure`).
    deep : bool, default False
        Re-hash every file in the check instead of trusting the stat cache.
    lock : path-like, "auto" or None, default "auto"
        The dvc.lock for the staleness check (None: no staleness check).
    stat_cache : path-like, "auto" or None, default "auto"
        Where digests are remembered (``"auto"``: the repository's
        ``.dvc/tmp/dvc-cuvis``; None: in memory only).
    shuffle_train : bool, default True
        Shuffle the train loader (with torch's global RNG: seed it for repeatable order).
    lineage : path-like, optional
        A folder where the dataset record is written (``dataset_lineage.json``) when the
        train loader is first built; the record is in ``state_dict()`` (every Lightning
        checkpoint) either way (see :mod:`dvc_cuvis.train.lineage_hooks`).

    Attributes
    ----------
    report : DriftReport or None
        The last check's report (None before ``setup()`` or with ``verify="off"``).
    dataset_record : dict or None
        The dataset record taken by the last ``setup()`` (:mod:`dvc_cuvis.train.lineage`).
    universe : Universe or None
        The universe read by ``setup()``.
    datasets : dict of str to NpzFrames
        One map-style dataset per stage built by ``setup(stage)``: ``"fit"`` builds
        train and val, ``"validate"`` val, ``"test"`` test, ``"predict"`` predict, None
        all four.

    Raises
    ------
    DvcCuvisError
        At construction: a bad ``verify``, ``batch_size`` or ``num_workers``.  In
        ``setup()``: an unknown stage, or a row without ``materialized_path`` (the
        universe is not a materialized one).  From a loader: ``setup()`` not called.
    DriftError
        In ``setup()`` with ``verify="strict"``, when the check fails (the report is on
        ``err.report``).
    MissingUniverseError, MissingSplitsFileError
        In ``setup()``: a file is missing (both are ``FileNotFoundError``).
    UniverseError, SplitsFileError, SelectorError
        In ``setup()``: a file is invalid, or (with ``verify`` not strict) the split does
        not resolve.

    See Also
    --------
    guard : the same check in front of an existing cuvis-ai DataModule.
    dvc_cuvis.materialize.core.materialize : write the folder this reads.
    dvc_cuvis.check.drift.verify : the check run by ``setup()``.

    Notes
    -----
    Batches have the keys ``cube, mask, class_mask, wavelengths, mesu_index,
    frame_id``; ``mesu_index`` is the sample's index in its source, ``frame_id`` its
    position in the stage's dataset, and a frame without masks gets zero masks.  The
    check runs on the split and universe objects ``setup()`` has just read, so what is
    checked is what is loaded.  An instance is a ``LightningDataModule`` of the package
    the program imported (``pytorch_lightning`` or ``lightning``; with both imported,
    ``pytorch_lightning`` until a Trainer of the other attaches it, as ``fit(model,
    datamodule=dm)`` does), a plain object without either; torch is imported when a loader
    is built.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from dvc_cuvis import bake, BakeOptions, SplitDataModule
    >>> from dvc_cuvis.materialize import ReaderParams, materialize_universe
    >>> from dvc_cuvis import read_universe
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for k in range(4):
    ...     np.savez(d / f"f{k}.npz", cube=np.full((2, 2, 3), k, np.float32),
    ...              wavelengths=np.array([500, 600, 700]))
    >>> _ = (d / "universe.csv").write_text(
    ...     "source,index,format\\n" + "".join(f"f{k}.npz,0,npz\\n" for k in range(4)))
    >>> uni = read_universe(d / "universe.csv")
    >>> (baked,) = bake(uni, BakeOptions(val_ratio=0.25, test_ratio=0.25))
    >>> _ = materialize_universe(uni, baked.config, d / "mat", ReaderParams())
    >>> dm = SplitDataModule(d / "mat" / "universe.csv", d / "mat" / "splits.json",
    ...                      batch_size=2, lock=None, stat_cache=None)
    >>> dm.setup("fit")
    >>> dm.report.ok, sorted(dm.datasets), len(dm.datasets["train"])
    (True, ['train', 'val'], 2)
    >>> batch = next(iter(dm.val_dataloader()))
    >>> list(batch), tuple(batch["cube"].shape)
    (['cube', 'mask', 'class_mask', 'wavelengths', 'mesu_index', 'frame_id'], (1, 2, 2, 3))

    A materialized frame that went missing stops ``setup()``:

    >>> (d / "mat" / dm.universe.value("materialized_path", 0)).unlink()
    >>> SplitDataModule(d / "mat" / "universe.csv", d / "mat" / "splits.json",
    ...                 lock=None, stat_cache=None).setup()
    Traceback (most recent call last):
    ...
    dvc_cuvis.check.drift.DriftError: ... content (0 file(s) modified, 1 missing since enumerate)
      fix: restore the files, or re-enumerate and re-bake
    """

    def __new__(cls, *args: object, **kwargs: object) -> Self:
        """An instance of ``cls`` as a ``LightningDataModule`` of the Lightning package in
        use (:func:`~dvc_cuvis.train.lightning_env.pick_package`)."""
        instance: Self = super().__new__(hosted(cls, pick_package()))
        return instance

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as its plain class: the unpickling process adds its own Lightning base."""
        return (_new, (_plain(type(self)),), self.__dict__)

    @property
    def trainer(self) -> object:
        """The Trainer this module is attached to (None before ``fit``, ``validate``, ...)."""
        return self.__dict__.get("trainer")

    @trainer.setter
    def trainer(self, trainer: object) -> None:
        """Attached to a Trainer of the other Lightning package, the module moves to it."""
        package = package_of(type(trainer).__module__) if trainer is not None else None
        if package is not None and type(self).__dict__.get("_lightning") not in (None, package):
            self.__class__ = hosted(type(self), package)
        self.__dict__["trainer"] = trainer

    def __init__(
        self,
        universe_csv: str | Path,
        splits: str | Path,
        *,
        batch_size: int = 1,
        num_workers: int = 0,
        pin_memory: bool = False,
        persistent_workers: bool = False,
        verify: str = "strict",
        deep: bool = False,
        lock: str | Path | None = "auto",
        stat_cache: str | Path | None = "auto",
        shuffle_train: bool = True,
        lineage: str | Path | None = None,
    ) -> None:
        """Configure; nothing is read until ``setup()``."""
        super().__init__()
        check_verify_mode(verify)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise DvcCuvisError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise DvcCuvisError(f"num_workers must be an integer >= 0, got {num_workers!r}")
        self.universe_csv = Path(universe_csv)
        self.splits_path = Path(splits)
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.pin_memory = bool(pin_memory)
        self.persistent_workers = bool(persistent_workers)
        self.verify_mode = verify
        self.deep = deep
        self.lock = lock
        self.stat_cache = stat_cache
        self._stat_cache_obj: StatCache | None = None
        self.shuffle_train = shuffle_train
        self.report: DriftReport | None = None
        self.universe: Universe | None = None
        self.datasets: dict[str, NpzFrames] = {}
        self._lineage = Lineage(type(self).__name__, lineage)

    @property
    def dataset_record(self) -> JsonRecord | None:
        """The dataset record of the last ``setup()`` (None before it)."""
        return self._lineage.record

    def state_dict(self) -> dict[str, object]:
        """The dataset record (Lightning keeps it in every checkpoint)."""
        base: Any = super()  # a LightningDataModule, or object without Lightning
        own = base.state_dict() if hasattr(base, "state_dict") else {}
        return self._lineage.state(own)

    def load_state_dict(self, state_dict: dict[str, object]) -> None:
        """Compare a checkpoint's dataset record with the version set up now (a resume of
        training on another version is refused under ``verify="strict"``)."""
        rest = self._lineage.load(self, state_dict, self.verify_mode)
        base: Any = super()
        if hasattr(base, "load_state_dict"):
            base.load_state_dict(rest)

    def _cache(self) -> StatCache:
        if self._stat_cache_obj is None:
            self._stat_cache_obj = open_stat_cache(self.stat_cache, self.universe_csv)
        return self._stat_cache_obj

    def setup(self, stage: str | None = None) -> None:
        """Run the drift check (per ``verify``), then resolve the stages into datasets."""
        uni = read_universe(self.universe_csv)
        cfg = load_splits(self.splits_path)
        if self.verify_mode != "off":  # checks exactly what was read (and will be loaded)
            opts = CheckOptions(deep=self.deep, lock=self.lock, stages=setup_stages(stage))
            report = verify(cfg, uni, opts, self._cache())
            # a DriftError names the file, not "splits"
            report = dataclasses.replace(report, splits=str(self.splits_path))
            self.report = ensure(report, self.verify_mode)
        res = resolve(cfg, uni, where=str(self.splits_path))
        base = self.universe_csv.parent
        for name in setup_stages(stage):
            pos = res.stages[name]
            rels = [uni.value("materialized_path", p) for p in pos.tolist()]
            missing = [uni.uid(p) for p, r in zip(pos.tolist(), rels, strict=True) if not r]
            if missing:
                raise DvcCuvisError(
                    f"{self.universe_csv}: {missing[0]} has no materialized_path; point the "
                    "DataModule at a materialized universe (dvc-cuvis materialize)"
                )
            guard = PathGuard(base)
            paths = [guard.resolve(r, what="materialized_path") for r in rels]
            self.datasets[name] = NpzFrames(paths,
                                            uni.indices[pos].tolist())
        self.universe = uni
        self._lineage.take(self, self.splits_path, self.universe_csv, mode=self.verify_mode,
                           report=self.report, lock=self.lock,
                           cache=self._cache() if self.verify_mode != "off" else None,
                           counts={s: len(res.stages[s]) for s in res.stages})

    def _loader(self, name: str, shuffle: bool) -> object:
        if name not in self.datasets:
            raise DvcCuvisError(f"the {name} dataset is not built; call setup() first")
        try:
            from torch.utils.data import DataLoader
        except ImportError:
            raise MissingExtraError("SplitDataModule's loaders need torch: "
                                    "pip install 'dvc-cuvis[torch]'") from None
        self._lineage.on_loader(self, name)

        kwargs: dict[str, Any] = {}
        if self.num_workers > 0:
            kwargs["persistent_workers"] = self.persistent_workers
        dataset: Any = self.datasets[name]  # map-style: __len__ + __getitem__
        return DataLoader(dataset, batch_size=self.batch_size, shuffle=shuffle,
                          num_workers=self.num_workers, pin_memory=self.pin_memory, **kwargs)

    def train_dataloader(self) -> object:
        """Shuffled loader over the train stage."""
        return self._loader("train", self.shuffle_train)

    def val_dataloader(self) -> object:
        """Loader over the val stage."""
        return self._loader("val", False)

    def test_dataloader(self) -> object:
        """Loader over the test stage."""
        return self._loader("test", False)

    def predict_dataloader(self) -> object:
        """Loader over the predict stage (empty predict = the whole universe)."""
        return self._loader("predict", False)


def guard(
    datamodule: Any,
    *,
    splits: str | Path | DataSplitConfig | None = None,
    universe: str | Path | Universe | None = None,
    verify_mode: str = "strict",
    cache: str | Path | StatCache | None = "auto",
    lineage: str | Path | None = None,
    **verify_kwargs: Any,
) -> Any:
    """Make ``datamodule.setup()`` run the drift check first (returns the same object).

    ``splits`` / ``universe`` default to what the module carries: a cuvis-ai
    ``BaseCuvisAIDataModule`` keeps its ``DataSplitConfig`` in ``.splits`` and
    cu3s_multi/npz_multi their universe in ``._universe_csv``.  ``cache`` is the stat
    cache (``"auto"``: the repository's ``.dvc/tmp/dvc-cuvis``), opened here, once: a
    ``setup()`` on unchanged files reuses the last clean verdict for the price of one
    ``stat`` per file.

    Use it when training already goes through a cuvis-ai DataModule (``npz_multi``,
    ``cu3s_multi``, ...) rather than :class:`SplitDataModule`: one line gives it the
    same refusal to train on a split that no longer matches the data.

    Parameters
    ----------
    datamodule : object
        Anything with a callable ``setup(stage)``.
    splits : path-like or DataSplitConfig, optional
        The split to check (default: ``datamodule.splits``); a
        ``DataSplitConfig(splits_path=...)`` is checked as the module will load it.
    universe : path-like or Universe, optional
        The universe.csv (default: ``datamodule.universe_csv`` or ``._universe_csv``).
    verify_mode : {"strict", "warn", "off"}, default "strict"
        What a failed check does (see :func:`~dvc_cuvis.check.drift.ensure`).
    cache : path-like, StatCache, "auto" or None, default "auto"
        The stat cache (None: in memory, for this guard's lifetime).
    lineage : path-like, optional
        A folder where the dataset record is written when the train loader is first built
        (:mod:`dvc_cuvis.train.lineage_hooks`).
    **verify_kwargs
        Passed to :func:`~dvc_cuvis.check.drift.verify` (``lock``, ``deep``, ``checks``,
        ``allow_partial``, ...).

    Returns
    -------
    object
        ``datamodule`` itself, its ``setup`` replaced on this instance only by one that
        checks first, stores the report in ``datamodule.drift_report`` and the dataset
        record in ``datamodule.dataset_record``, and then calls the original
        ``setup(stage)``.  Its ``state_dict()`` gains the record (merged with the module's
        own state) and its ``load_state_dict()`` compares a checkpoint's record first.

    Raises
    ------
    DvcCuvisError
        Now: the object has no ``setup``, no split or universe is given or found on it,
        or ``verify_mode`` is invalid.
    DriftError
        Later, from ``setup()`` with ``verify_mode="strict"``, when the check fails; the
        module's own ``setup`` is then not called.
    MissingSplitsFileError, MissingUniverseError, SplitsFileError, UniverseError
        Later, from ``setup()``: an input file is missing or invalid.

    See Also
    --------
    SplitDataModule : a DataModule over materialized frames with the check built in.
    dvc_cuvis.check.drift.verify : the check itself.

    Notes
    -----
    The files are read, and the check runs, on every ``setup()`` call, not once in
    ``guard()``: an edit between two ``setup()`` calls is seen.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from dvc_cuvis import bake, BakeOptions, guard, read_universe, save_splits
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> rows = "".join(f"day{k}.cu3s,0-1\\n" for k in range(6))
    >>> _ = (d / "universe.csv").write_text("source,index\\n" + rows)
    >>> (baked,) = bake(read_universe(d / "universe.csv"), BakeOptions())
    >>> save_splits(baked.config, d / "splits.json")
    >>> class Module:  # stands for any cuvis-ai DataModule
    ...     def setup(self, stage=None):
    ...         print("setup", stage)
    >>> dm = guard(Module(), splits=d / "splits.json", universe=d / "universe.csv",
    ...            cache=None, lock=None)
    >>> dm.setup("fit")
    setup fit
    >>> dm.drift_report.ok
    True

    After the universe changes, ``setup()`` refuses before the module reads anything:

    >>> with open(d / "universe.csv", "a") as fh:
    ...     _ = fh.write("day6.cu3s,0\\n")
    >>> dm.setup("fit")
    Traceback (most recent call last):
    ...
    dvc_cuvis.check.drift.DriftError: .../splits.json does not match the data: universe (...)
      fix: ...
    """
    setup = getattr(datamodule, "setup", None)
    if not callable(setup):
        raise DvcCuvisError(f"{type(datamodule).__name__} has no setup(stage) to guard")
    splits = splits if splits is not None else getattr(datamodule, "splits", None)
    if universe is None:
        universe = getattr(datamodule, "universe_csv", None) or getattr(
            datamodule, "_universe_csv", None)
    if splits is None or universe is None:
        raise DvcCuvisError(
            f"guard({type(datamodule).__name__}): pass splits= and universe= (the module "
            "carries no splits config or universe_csv to check)"
        )
    check_verify_mode(verify_mode)

    stat_cache = open_stat_cache(
        cache, universe.path if isinstance(universe, Universe) else universe)

    record = Lineage(type(datamodule).__name__, lineage)

    def guarded_setup(stage: str | None = None) -> object:
        report = None
        if verify_mode != "off":
            # verify() reads a splits_path config now, as the module will in setup()
            # the stages setup(stage) loads; a stage Lightning does not name: every stage
            opts = CheckOptions(stages=SETUP_STAGES.get(stage), **verify_kwargs)
            report = verify(splits, universe, opts, stat_cache)
            datamodule.drift_report = ensure(report, verify_mode)
        datamodule.dataset_record = record.take(
            datamodule, splits, universe, mode=verify_mode, report=report, cache=stat_cache,
            lock=verify_kwargs.get("lock", "auto"))
        return setup(stage)

    datamodule.setup = guarded_setup
    hook_lineage(datamodule, record, verify_mode)
    return datamodule


def hook_lineage(datamodule: Any, record: Lineage, verify_mode: str) -> None:
    """Give one instance the record in ``state_dict()``, the resume guard in
    ``load_state_dict()`` and the loader hook (its own methods are still called)."""
    own_state = getattr(datamodule, "state_dict", None)
    own_load = getattr(datamodule, "load_state_dict", None)

    def state_dict() -> dict[str, object]:
        return record.state(own_state() if callable(own_state) else None)

    def load_state_dict(state: dict[str, object]) -> None:
        rest = record.load(datamodule, state, verify_mode)
        if callable(own_load):
            own_load(rest)

    datamodule.state_dict, datamodule.load_state_dict = state_dict, load_state_dict
    for stage in ("train", "val", "test", "predict"):
        loader = getattr(datamodule, f"{stage}_dataloader", None)
        if callable(loader):
            setattr(datamodule, f"{stage}_dataloader", _hooked(datamodule, record, stage,
                                                               loader))


def _hooked(datamodule: object, record: Lineage, stage: str,
            loader: Callable[..., object]) -> Callable[..., object]:
    # wraps: Lightning looks through ``__wrapped__`` to tell a loader the module defines
    # from its base class's (which raises): a module without a val loader keeps none
    @functools.wraps(loader)
    def build(*args: object, **kwargs: object) -> object:
        record.on_loader(datamodule, stage)
        return loader(*args, **kwargs)

    return build
