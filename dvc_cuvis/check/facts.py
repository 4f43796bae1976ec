"""What a failed check found, as values: the facts one check hands to another.

A :class:`~dvc_cuvis.check.report.Finding` shows its facts as ``details``, a plain dict
(what ``--json`` prints and the verdict memo keeps).  The checks that revise another
check's finding (:mod:`dvc_cuvis.check.not_pulled` tells "not pulled yet" from drift) read
these typed values instead of the dict's keys, as dvc-data hands a ``HashInfo`` around
rather than a string.  Each ``details()`` builds the dict in the order ``--json`` shows.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from dvc_cuvis.repo.lockfile import Change

__all__ = ["ContentDrift", "Details", "DiskDiff", "Facts", "Json", "NotPulled",
           "OtherStagesAbsent", "Plain", "Staleness", "UniverseFacts", "UniverseProblem",
           "rescan_note"]

#: A JSON value, as ``--json`` prints it and the verdict memo keeps it.
Json: TypeAlias = str | int | float | bool | Sequence["Json"] | Mapping[str, "Json"] | None
#: A finding's ``details``: JSON values by name, in the order ``--json`` shows them.
Details: TypeAlias = dict[str, Json]


@dataclass(frozen=True)
class ContentDrift:
    """Files whose bytes are not what universe.csv recorded (relative to its folder)."""

    missing: tuple[str, ...]
    modified: tuple[str, ...]
    affected_samples: int
    #: stage -> affected samples, when the split resolved (None: unknown)
    affected_stages: Mapping[str, int] | None = None
    #: how many of ``missing`` DVC tracks but are not pulled (0: none, or not asked)
    not_pulled: int = 0
    #: universe.csv rows whose md5 was edited by hand (their file's bytes are enumerate's)
    edited_rows: tuple[int, ...] = ()

    def details(self) -> Details:
        """The finding's ``details``."""
        out: Details = {"missing": list(self.missing), "modified": list(self.modified),
                               "affected_samples": self.affected_samples}
        if self.affected_stages is not None:
            out["affected_stages"] = dict(self.affected_stages)
        if self.not_pulled:
            out["not_pulled"] = self.not_pulled
        if self.edited_rows:
            out["edited_rows"] = list(self.edited_rows)
        return out


@dataclass(frozen=True)
class NotPulled:
    """Files missing only because DVC has not pulled them yet."""

    files: tuple[str, ...]

    def details(self) -> Details:
        """The finding's ``details``."""
        return {"not_pulled": sorted(self.files)}


@dataclass(frozen=True)
class OtherStagesAbsent:
    """Files of stages a one-stage check leaves out, absent here: not pulled, not drift."""

    missing: tuple[str, ...]

    def details(self) -> Details:
        """The finding's ``details``."""
        return {"other_stages_not_pulled": len(self.missing)}


@dataclass(frozen=True)
class Staleness:
    """dvc.lock against the workspace: the stages compared and what differs."""

    stages: tuple[str, ...]
    changed: tuple[Change, ...]
    params_changed: tuple[str, ...]
    #: the compared stages that differ: a drift names these, not every stage compared
    stale: tuple[str, ...] = ()

    def details(self) -> Details:
        """The finding's ``details``: the stale stages when something differs, else the
        stages compared."""
        drifted = bool(self.changed or self.params_changed)
        return {"stages": list(self.stale if drifted else self.stages),
                "changed": [str(c) for c in self.changed],
                "params_changed": list(self.params_changed)}


@dataclass(frozen=True)
class DiskDiff:
    """universe.csv against the data on disk now: samples added, removed, re-digested."""

    added_sources: tuple[str, ...] = ()
    removed_sources: tuple[str, ...] = ()
    renamed: tuple[str, ...] = ()
    added_samples: int = 0
    removed_samples: int = 0
    redigested_sources: tuple[str, ...] = ()
    redigested_samples: int = 0

    def details(self) -> Details:
        """Its part of the universe finding's ``details``."""
        out: Details = {}
        if self.added_samples or self.removed_samples:
            out.update(added_sources=list(self.added_sources),
                       removed_sources=list(self.removed_sources), renamed=list(self.renamed),
                       added_samples=self.added_samples, removed_samples=self.removed_samples)
        if self.redigested_samples:
            out.update(redigested_sources=list(self.redigested_sources),
                       redigested_samples=self.redigested_samples)
        return out


class UniverseProblem(enum.Enum):
    """One reason the universe check fails."""

    PIN = "the pinned universe_hash differs"
    UNPINNED = "the split pins no universe_hash"
    DISK = "samples added or removed on disk"
    REDIGESTED = "samples on disk re-digested"


@dataclass(frozen=True)
class UniverseFacts:
    """The universe check: its notes (``data_dir``, ``note``, ``anomaly_notions``), its
    problems in the order the summary names them, and the comparison with the disk."""

    notes: Mapping[str, str] = field(default_factory=dict)
    problems: tuple[UniverseProblem, ...] = ()
    disk: DiskDiff = field(default_factory=DiskDiff)
    #: dvc.lock vouches that the data is what universe.csv was enumerated from (no re-scan)
    vouched: bool = False
    #: why the data on disk was not re-scanned ("" when it was, or when nothing says why)
    not_rescanned: str = ""

    def details(self) -> Details:
        """The finding's ``details``."""
        out: Details = {**self.notes, **self.disk.details()}
        return {**out, **rescan_note(self.not_rescanned)}


def rescan_note(why: str) -> dict[str, str]:
    """The universe details' note on a re-scan not made (empty when ``why`` is)."""
    return {"data_on_disk": f"not re-scanned: {why}"} if why else {}


@dataclass(frozen=True)
class Plain:
    """The details of a finding that no other check revises, as the check wrote them."""

    values: Mapping[str, Json] = field(default_factory=dict)

    def details(self) -> Details:
        """The finding's ``details``."""
        return dict(self.values)


#: The facts a finding may carry.
Facts = ContentDrift | NotPulled | OtherStagesAbsent | Plain | Staleness | UniverseFacts
