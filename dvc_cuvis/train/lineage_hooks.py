"""Where a guarded module keeps its dataset record, and the guard on resuming a checkpoint.

Each host keeps what it trains in its own place, and the record goes there:

* **Lightning**: the module's ``state_dict()`` (Lightning writes it into every .ckpt under the
  class's ``__qualname__``), merged with the module's own state;
* **the logger**: ``trainer.logger.log_hyperparams`` under ``dataset/...`` keys (a key the
  model's own hyperparameters use is left out, never overwritten);
* **a trainrun's output folder**: with the ``lineage`` parameter (a folder, e.g. a cuvis-ai
  trainrun's ``${output_dir}``), ``dataset_lineage.json`` is written there when the train
  loader is first built: statistical cuvis-ai runs build no Lightning trainer, and cuvis-ai
  gives a DataModule no ``output_dir``.

Lightning calls ``load_state_dict()`` after ``setup()`` when it restores a checkpoint: a
checkpoint whose record names another dataset version is refused on a resume of training
under ``verify: strict`` (:class:`~dvc_cuvis.train.lineage.LineageError`, one paragraph of
per-sample changes), and logged under ``warn`` and for validate/test.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis._io import write_json
from dvc_cuvis.check.drift import DriftReport
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.compare import diff_versions
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.train.lineage import (
    KEY,
    RECORD_FILE,
    LineageError,
    finish,
    hyperparams,
    is_record,
    same_version,
    take,
)
from dvc_cuvis.train.lineage_compare import (
    changes_of,
    compare_records,
    describe_text,
    open_repository,
    record_version,
)
from dvc_cuvis.train.lineage_memo import LineageMemo
from dvc_cuvis.train.lineage_values import JsonRecord, LineageRecord, as_record

logger = logging.getLogger(__name__)


def _fn(owner: object) -> str | None:
    """What the attached trainer is doing (``fit``, ``validate``, ...), None unattached."""
    trainer = getattr(owner, "trainer", None)
    fn = getattr(getattr(trainer, "state", None), "fn", None)
    return None if fn is None else str(getattr(fn, "value", fn))


def _version_text(record: LineageRecord) -> str:
    commit = (record.repo.commit or "no commit")[:8]
    dirty = ", dirty" if record.repo.dirty else ""
    return f"commit {commit}{dirty}, split sha256 {(record.splits_sha256 or '')[:12]}"


def _change_text(saved: LineageRecord,
                 now: LineageRecord) -> tuple[str, dict[str, Any]]:
    """The per-sample changes from ``saved``'s version to ``now``'s, and the comparison."""
    try:
        a, known_a = record_version(saved, open_repository(saved, None), "checkpoint")
        b, known_b = record_version(now, open_repository(now, None), "now")
        d = diff_versions(a, b)
        changes = changes_of(d, known_a and known_b)
        current = now.recorded_md5s()
        changes["data_changed"] = sorted(p for p, m in saved.recorded_md5s().items()
                                         if current.get(p, m) != m)
        return describe_text(changes), compare_records(saved, now)
    except DvcCuvisError as exc:
        return f"the per-sample changes cannot be listed ({exc})", {}


class Lineage:
    """One guarded module's dataset record and the places it is kept."""

    def __init__(self, module: str, folder: str | Path | None = None) -> None:
        """For the module named ``module``; ``folder``: where a trainrun keeps its record."""
        self.module = module
        self.folder = folder
        #: The record of the last ``setup()`` (None before it).
        self.value: LineageRecord | None = None
        #: What this keeper remembers between records (it lives as long as the module).
        self.memo = LineageMemo()
        self._json: JsonRecord | None = None
        self._restored = False
        self._noted = False
        self._logged: set[tuple[int, str]] = set()

    def take(self, owner: object, splits: Path | str | DataSplitConfig,
             universe: Path | str | Universe, *, mode: str, report: DriftReport | None,
             cache: StatCache | None = None, lock: Path | str | None = "auto",
             counts: dict[str, int] | None = None) -> JsonRecord:
        """Take the record at ``setup()`` and log it to an attached trainer's logger."""
        self._set(take(splits, universe, module=self.module, mode=mode, report=report,
                       cache=cache, lock=lock, counts=counts, memo=self.memo))
        self._log(getattr(owner, "trainer", None))
        return self.record or {}

    def _set(self, value: LineageRecord | None) -> None:
        if value is not self.value:
            self.value, self._json = value, None

    @property
    def record(self) -> JsonRecord | None:
        """The record of the last ``setup()`` as plain JSON (None before it)."""
        if self._json is None and self.value is not None:
            self._json = self.value.to_json()
        return self._json

    def _finished(self) -> JsonRecord | None:
        """The record with its dirty flag (one ``git status`` per record), as JSON."""
        if self.value is not None:
            self._set(finish(self.value))
        return self.record

    def _log(self, trainer: Any) -> None:
        loggers = list(getattr(trainer, "loggers", None) or []) if trainer is not None else []
        if not loggers or self.value is None:
            return
        try:
            model = trainer.lightning_module
        except Exception:  # no model attached yet
            model = None
        own = set(getattr(model, "hparams", None) or {})
        params = {k: v for k, v in hyperparams(self._finished() or {}).items() if k not in own}
        for lg in loggers:
            key = (id(lg), repr(sorted(params.items())))
            if key not in self._logged:  # once per logger and version (MLflow refuses a
                self._logged.add(key)    # param logged again with another value)
                lg.log_hyperparams(params)

    def state(self, own: object = None) -> dict[str, object]:
        """The module's state with the record added (``own``: the module's own state)."""
        merged = dict(own) if isinstance(own, dict) else {}
        if self.value is not None:
            merged[KEY] = self._finished()
        return merged

    def load(self, owner: object, state: object, mode: str) -> dict[str, object]:
        """Compare a checkpoint's record with the version set up now; the rest of ``state``
        (the module's own) is returned for its own ``load_state_dict``."""
        self._restored = True
        rest = dict(state) if isinstance(state, dict) else {}
        saved = rest.pop(KEY, None)
        if not is_record(saved):
            logger.warning("%s: the checkpoint carries no dataset record (written by another "
                           "module or an older dvc-cuvis): its dataset version is not "
                           "compared with this one", self.module)
            return rest
        if self.value is None or same_version(saved, self.value):
            return rest
        fitting = _fn(owner) == "fit"
        text, cmp = _change_text(as_record(saved), self.value)
        head = (f"{self.module}: the checkpoint was trained on another dataset version "
                f"({_version_text(as_record(saved))}) than the one set up now "
                f"({_version_text(self.value)}): {text}")
        if fitting and mode == "strict":
            raise LineageError(
                f"{head}. Refusing to resume training on changed data: resume from a "
                "checkpoint of this version, start a new run (no ckpt_path), or set "
                "verify: warn to resume anyway.")
        if fitting:
            logger.warning("%s; resuming training anyway (verify: %s).", head, mode)
        else:
            inside = (cmp.get("a_fit_in_b_test") or {}).get("count")
            tail = (f"; {inside} of the test samples now were in its train or val stages"
                    if inside else "")
            logger.warning("%s%s: metrics here are not those of its own test set.", head, tail)
        return rest

    def on_loader(self, owner: object, stage: str) -> None:
        """A loader is built: write the trainrun's record (train), note an unrecorded resume."""
        ckpt = getattr(getattr(owner, "trainer", None), "ckpt_path", None)
        if ckpt and not self._restored and not self._noted:
            self._noted = True
            logger.warning("%s: the checkpoint %s carries no dataset record for this module: "
                           "its dataset version is not compared with this one", self.module,
                           ckpt)
        if stage == "train" and self.folder and self.value is not None:
            target = Path(self.folder)
            if target.suffix != ".json":
                target = target / RECORD_FILE
            target.parent.mkdir(parents=True, exist_ok=True)
            write_json(target, self._finished())
