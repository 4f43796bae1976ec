"""What a guarded module remembers between two dataset records: parsed files by stamp, the
work trees git's files were read from, the dvc.lock found per folder, and the last facts.

One :class:`LineageMemo` belongs to one record keeper
(:class:`~dvc_cuvis.train.lineage_hooks.Lineage`, so to one DataModule or ``guard()``):
it lives and dies with it, and no module keeps a cache of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dvc_cuvis.repo.git import FileMemo, HeadReader, Stamp

if TYPE_CHECKING:
    from dvc_cuvis.repo.lockfile import LockFile
    from dvc_cuvis.train.lineage_values import DataEntry, LineageRecord

__all__ = ["FactsKey", "LineageMemo", "Witnessed"]


@dataclass(frozen=True)
class FactsKey:
    """What a record's facts were taken for: the split file, universe.csv, the lock setting
    and the stat cache (by identity: another cache may answer another md5)."""

    splits: str
    universe: str
    lock: str
    cache: object | None


@dataclass(frozen=True)
class Witnessed:
    """A record's facts about the data, with the files they were read from and those files'
    stamps: while no stamp changed, the facts stand."""

    files: tuple[str, ...]
    stamps: tuple[Stamp | None, ...]
    record: LineageRecord

    def holds(self) -> bool:
        """True while no file the facts were read from changed."""
        return tuple(Stamp.of(p) for p in self.files) == self.stamps


@dataclass
class LineageMemo:
    """The memo of one record keeper (see the module doc)."""

    files: FileMemo = field(default_factory=FileMemo)
    head: HeadReader = field(init=False)
    #: Folder -> the dvc.lock found for it (while that file exists).
    locks: dict[str, Path] = field(default_factory=dict)
    #: (dvc.lock, universe.csv, root) -> the parsed lock searched and what it records.
    entries: dict[tuple[str, str, str | None],
                  tuple[LockFile, tuple[DataEntry, ...]]] = field(default_factory=dict)
    #: The facts of the last record per :class:`FactsKey`.
    facts: dict[FactsKey, Witnessed] = field(default_factory=dict)
    #: The last record taken per :class:`FactsKey`, with the facts and the setting it was
    #: taken on: the same answer is the same value (its JSON is not built again).
    taken: dict[FactsKey, tuple[LineageRecord, tuple[object, ...]]] = field(
        default_factory=dict)

    def __post_init__(self) -> None:
        """git's files are parsed into the same file memo."""
        self.head = HeadReader(self.files)
