"""The dataset record as values: what a guarded module set up, and a stage change.

:class:`LineageRecord` is the record a guarded DataModule takes at ``setup()``
(:func:`~dvc_cuvis.train.lineage.take_record`).  It is stored as plain JSON (a checkpoint's
``state_dict``, ``dataset_lineage.json``); :meth:`LineageRecord.to_json` writes the layout
every earlier version wrote, key for key, and :meth:`LineageRecord.from_json` reads it back,
so checkpoints written before still read.  :class:`Transition` is a sample's stage change,
written ``a->b`` in JSON and parsed here once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from dvc_cuvis._version import __version__

__all__ = ["FORMAT", "KIND", "CheckFacts", "DataEntry", "LineageRecord", "RepoFacts",
           "Transition", "UniverseFacts", "as_record"]

#: What a record says it is (a saved record is refused without it).
KIND = "dvc-cuvis dataset record"
#: The version of the record's layout.
FORMAT = 1

#: A record as JSON: what a checkpoint and ``dataset_lineage.json`` hold.
JsonRecord = dict[str, Any]


def _part(doc: Mapping[str, object], key: str) -> Mapping[str, object]:
    value = doc.get(key)
    return value if isinstance(value, Mapping) else {}


def _text(value: object) -> str | None:
    """A JSON string, or None for anything else (a part a record leaves unknown)."""
    return value if isinstance(value, str) else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Transition:
    """A sample's stage change: ``before -> after`` (``new``/``removed`` at an end that
    lacks it), the ``a->b`` key of a diff's counts parsed once."""

    before: str
    after: str

    @classmethod
    def parse(cls, key: str) -> Transition:
        """The transition a diff's ``a->b`` key names."""
        before, _, after = key.partition("->")
        return cls(before, after)

    @property
    def is_move(self) -> bool:
        """True for a sample present at both ends (not added, not removed)."""
        return self.before != "new" and self.after != "removed"

    def __str__(self) -> str:
        """The JSON key: ``a->b``."""
        return f"{self.before}->{self.after}"


@dataclass(frozen=True)
class RepoFacts:
    """The repository a record was taken in (None: not in one, or not known)."""

    root: str | None = None
    origin: str | None = None
    commit: str | None = None
    dirty: bool | None = None

    def to_json(self) -> dict[str, object]:
        """The record's ``repo`` object."""
        return {"root": self.root, "origin": self.origin, "commit": self.commit,
                "dirty": self.dirty}


@dataclass(frozen=True)
class UniverseFacts:
    """universe.csv as recorded: its repository path and md5, or a listing's hash."""

    path: str | None = None
    md5: str | None = None
    #: The hash of a universe listed in memory (tiff_paired), which has no file.
    listing_hash: str | None = None

    def to_json(self) -> dict[str, object]:
        """The record's ``universe`` object (``listing_hash`` only for a listing)."""
        out: dict[str, object] = {"path": self.path, "md5": self.md5}
        if self.listing_hash is not None:
            out["listing_hash"] = self.listing_hash
        return out


@dataclass(frozen=True)
class DataEntry:
    """One md5 DVC recorded for the data: the path it covers, the file (dvc.lock, a ``.dvc``
    file) and stage recording it."""

    path: str | None
    md5: str | None
    source: str | None
    stage: str | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, object]) -> DataEntry:
        """An entry of a record's ``data`` list."""
        return cls(_text(doc.get("path")), _text(doc.get("md5")), _text(doc.get("source")),
                   _text(doc.get("stage")))

    def to_json(self) -> dict[str, object]:
        """The entry as the record's ``data`` list holds it."""
        return {"path": self.path, "md5": self.md5, "source": self.source,
                "stage": self.stage}


@dataclass(frozen=True)
class CheckFacts:
    """The drift check the module ran before the record was taken."""

    mode: str | None = None
    verdict: str | None = None
    reused_verdict: bool = False
    failed: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        """The record's ``check`` object."""
        return {"mode": self.mode, "verdict": self.verdict,
                "reused_verdict": self.reused_verdict, "failed": list(self.failed)}


@dataclass(frozen=True)
class LineageRecord:
    """Which version of the data a guarded module set up (see the module doc)."""

    module: str | None = None
    repo: RepoFacts = RepoFacts()
    splits_path: str | None = None
    splits_sha256: str | None = None
    universe: UniverseFacts = UniverseFacts()
    universe_hash: str | None = None
    #: Samples per stage (None: a rule stage, or an empty predict: the whole universe).
    stages: Mapping[str, int | None] = field(default_factory=dict)
    data: tuple[DataEntry, ...] = ()
    #: The baked split itself, as plain JSON.
    split: JsonRecord = field(default_factory=dict)
    check: CheckFacts = CheckFacts()
    dvc_cuvis: str | None = __version__
    format: int = FORMAT

    def finished(self, dirty: bool | None) -> LineageRecord:
        """The record with the repository's dirty flag filled in."""
        return replace(self, repo=replace(self.repo, dirty=dirty))

    def to_json(self) -> JsonRecord:
        """The record as plain JSON, in the layout every version wrote."""
        return {"kind": KIND, "format": self.format, "dvc_cuvis": self.dvc_cuvis,
                "module": self.module, "repo": self.repo.to_json(),
                "splits": {"path": self.splits_path, "sha256": self.splits_sha256},
                "universe": self.universe.to_json(), "universe_hash": self.universe_hash,
                "stages": dict(self.stages), "data": [e.to_json() for e in self.data],
                "split": dict(self.split), "check": self.check.to_json()}

    @classmethod
    def from_json(cls, doc: Mapping[str, object]) -> LineageRecord:
        """A record read back (a missing part is left unknown: older and partial records)."""
        repo, splits, uni, check = (_part(doc, k) for k in ("repo", "splits", "universe",
                                                             "check"))
        data, failed, dirty = doc.get("data"), check.get("failed"), repo.get("dirty")
        return cls(
            module=_text(doc.get("module")),
            repo=RepoFacts(_text(repo.get("root")), _text(repo.get("origin")),
                           _text(repo.get("commit")), dirty if isinstance(dirty, bool) else None),
            splits_path=_text(splits.get("path")), splits_sha256=_text(splits.get("sha256")),
            universe=UniverseFacts(_text(uni.get("path")), _text(uni.get("md5")),
                                   _text(uni.get("listing_hash"))),
            universe_hash=_text(doc.get("universe_hash")),
            stages={str(k): _count(v) for k, v in _part(doc, "stages").items()},
            data=tuple(DataEntry.from_json(e) for e in (data if isinstance(data, list) else [])
                       if isinstance(e, Mapping)),
            split=dict(_part(doc, "split")),
            check=CheckFacts(_text(check.get("mode")), _text(check.get("verdict")),
                             bool(check.get("reused_verdict")),
                             tuple(map(str, failed)) if isinstance(failed, list) else ()),
            dvc_cuvis=_text(doc.get("dvc_cuvis")), format=_count(doc.get("format")) or FORMAT)

    def version_key(self) -> tuple[object, ...]:
        """What makes two records the same dataset version: the split, universe.csv's bytes
        and the data's recorded md5s (not the commit: a commit that touched other files
        keeps it)."""
        data = tuple(sorted(((d.path, d.md5) for d in self.data), key=repr))
        return (json.dumps(self.split, sort_keys=True), self.universe.md5,
                self.universe.listing_hash, data)

    def recorded_md5s(self) -> dict[str, str | None]:
        """The data's recorded md5 by path."""
        return {str(e.path): e.md5 for e in self.data}


def as_record(record: LineageRecord | Mapping[str, object]) -> LineageRecord:
    """``record`` as a value (a record read back as JSON is converted)."""
    return record if isinstance(record, LineageRecord) else LineageRecord.from_json(record)
