"""The drift check's report: one finding per check, the verdict, and how to fix it.

A :class:`Finding` is what one check found, as typed ``facts``
(:mod:`dvc_cuvis.check.facts`), the one source of its ``details`` (the plain dict that
``--json`` prints and the verdict memo keeps).  Findings are values: a check that revises
another's finding returns a new one.  :class:`DriftReport` renders the findings for
people and for JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dvc_cuvis._io import write_json
from dvc_cuvis.check.facts import Details, Facts, Json, Plain
from dvc_cuvis.check.readable import detail_lines
from dvc_cuvis.errors import terminal

__all__ = ["CHECKS", "DriftReport", "Finding"]

CHECKS: tuple[str, ...] = ("universe", "content", "selection", "constraints", "staleness")


@dataclass(frozen=True)
class Finding:
    """The outcome of one check: ``ok``, ``drift``, ``violation`` or ``skipped``.

    ``facts`` is what the check found, typed; ``details`` is always ``facts.details()``
    (a ``details`` mapping given without facts becomes :class:`~dvc_cuvis.check.facts.Plain`
    facts), so the two cannot disagree and ``dataclasses.replace(f, facts=...)`` revises both.
    """

    check: str
    status: str
    summary: str
    details: Mapping[str, Json] = field(default_factory=dict)
    fix: str = ""
    facts: Facts | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        """Derive ``details`` from the facts (the one source of truth)."""
        facts = self.facts if self.facts is not None else Plain(dict(self.details))
        object.__setattr__(self, "facts", facts)
        object.__setattr__(self, "details", facts.details())

    @property
    def failed(self) -> bool:
        """True for drift or a violation."""
        return self.status in ("drift", "violation", "not-pulled")

    def record(self) -> dict[str, Json]:
        """The finding as a plain record (what the verdict memo keeps)."""
        return {"check": self.check, "status": self.status, "summary": self.summary,
                "details": self.details, "fix": self.fix}


@dataclass(frozen=True)
class DriftReport:
    """All findings for one split + universe."""

    splits: str
    universe: str
    findings: Sequence[Finding]
    #: True when the findings of the last clean check were reused (no file changed since)
    reused_verdict: bool = False
    #: Where this check's md5s came from (:meth:`StatCache.stats` of the cache it used: under
    #: ``deep`` a fresh one, not the caller's); run statistics, not part of the verdict
    hashing: Mapping[str, int] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        """Hold the findings as a tuple: a report is a value."""
        object.__setattr__(self, "findings", tuple(self.findings))

    @property
    def ok(self) -> bool:
        """True when no check found drift or a violation."""
        return not any(f.failed for f in self.findings)

    @property
    def exit_code(self) -> int:
        """0 clean, 1 drift or violation."""
        return 0 if self.ok else 1

    def finding(self, check: str) -> Finding:
        """The finding of ``check``."""
        return next(f for f in self.findings if f.check == check)

    def to_dict(self) -> Details:
        """JSON-ready form (``--json``)."""
        return {
            "ok": self.ok,
            "reused_verdict": self.reused_verdict,
            "splits": self.splits,
            "universe": self.universe,
            "checks": {f.check: {"status": f.status, "summary": f.summary, "fix": f.fix,
                                 "details": f.details} for f in self.findings},
        }

    def to_json(self) -> str:
        """``check --json``'s text: :meth:`to_dict` and the hashing statistics."""
        doc = {**self.to_dict(), "hashing": dict(self.hashing)}
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"

    def metrics(self) -> dict[str, bool | str | int]:
        """The metrics record ``--metrics`` writes: ``ok``, each check's status and, when the
        duplicate checks ran, their counts (in all, and per pair of stages: ``_train_val``,
        ``_train_test``, ``_val_test``), so ``dvc metrics diff`` shows where copies went."""
        return {"ok": self.ok, **{f.check: f.status for f in self.findings},
                **self._duplicate_counts()}

    def _duplicate_counts(self) -> dict[str, int]:
        """The duplicate checks' counts (none when they did not run)."""
        found = next((f for f in self.findings if f.check == "constraints"), None)
        counts = found.details.get("duplicates") if found is not None else None
        if not isinstance(counts, dict):
            return {}
        out = {"content_duplicates": int(counts["exact"]), "near_duplicates": int(counts["near"]),
               "unsigned_frames": int(counts["unsigned"])}
        per_pair = found.details.get("duplicates_by_stages") if found is not None else None
        for pair, n in (per_pair.items() if isinstance(per_pair, dict) else ()):
            out[f"content_duplicates_{pair}"] = int(n["exact"])
            out[f"near_duplicates_{pair}"] = int(n["near"])
        return out

    def plot_rows(self) -> list[dict[str, str | int]]:
        """DVC plot data, one bar per check (1 = drift or violation), for ``dvc plots diff``."""
        return [{"check": f.check, "status": f.status, "failed": int(f.failed)}
                for f in self.findings]

    def write(self, metrics: Path | str | None = None, plots: Path | str | None = None) -> None:
        """Write :meth:`metrics` to the file ``metrics`` and :meth:`plot_rows` to
        ``plots/check.json`` (each only when named), atomically."""
        if metrics:
            write_json(metrics, self.metrics())
        if plots:
            write_json(Path(plots) / "check.json", self.plot_rows())

    def render(self) -> str:
        """A readable verdict: one line per check, details, and the command that fixes it."""
        lines = [f"check {self.splits} against {self.universe}: "
                 + ("OK" if self.ok else "FAILED")
                 + (" (the last clean verdict: no file it rests on has changed)"
                    if self.reused_verdict else "")]
        for f in self.findings:
            mark = {"ok": "ok  ", "skipped": "skip", "drift": "DRIFT", "violation": "FAIL",
                    "not-pulled": "PULL"}
            lines.append(f"  [{mark.get(f.status, f.status)}] {f.check}: {f.summary}")
            for line in detail_lines(f.details):
                lines.append(f"         {line}")
            if f.failed and f.fix:
                lines.append(f"         fix: {f.fix}")
        # names in a line are data: no control character of theirs reaches the terminal
        # (nor colorama's stream wrapper, which DVC installs), no newline starts a line
        return "\n".join(terminal(line) for line in lines) + "\n"
