"""The drift check's report: one finding per check, the verdict, and how to fix it.

A :class:`Finding` is what one check found, shown as ``details`` (a plain dict: what
``--json`` prints and the verdict memo keeps); where another check revises it, its typed
``facts`` (:mod:`dvc_cuvis.check.facts`) travel with it.  :class:`DriftReport` renders the
findings for people and for JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dvc_cuvis.check.facts import Facts
from dvc_cuvis.errors import and_more, terminal

__all__ = ["CHECKS", "DriftReport", "Finding"]

CHECKS: tuple[str, ...] = ("universe", "content", "selection", "constraints", "staleness")


@dataclass
class Finding:
    """The outcome of one check: ``ok``, ``drift``, ``violation`` or ``skipped``."""

    check: str
    status: str
    summary: str
    details: dict[str, Any] = field(default_factory=dict)
    fix: str = ""
    #: what the check found, typed, for the checks that revise this finding (not shown:
    #: ``details`` says the same)
    facts: Facts | None = field(default=None, compare=False, repr=False)

    @property
    def failed(self) -> bool:
        """True for drift or a violation."""
        return self.status in ("drift", "violation", "not-pulled")

    def record(self) -> dict[str, Any]:
        """The finding as a plain record (what the verdict memo keeps)."""
        return {"check": self.check, "status": self.status, "summary": self.summary,
                "details": self.details, "fix": self.fix}


@dataclass
class DriftReport:
    """All findings for one split + universe."""

    splits: str
    universe: str
    findings: list[Finding]
    #: True when the findings of the last clean check were reused (no file changed since)
    reused_verdict: bool = False
    #: Where this check's md5s came from (:meth:`StatCache.stats` of the cache it used: under
    #: ``deep`` a fresh one, not the caller's); run statistics, not part of the verdict
    hashing: dict[str, int] = field(default_factory=dict, compare=False)

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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``--json``)."""
        return {
            "ok": self.ok,
            "reused_verdict": self.reused_verdict,
            "splits": self.splits,
            "universe": self.universe,
            "checks": {f.check: {"status": f.status, "summary": f.summary, "fix": f.fix,
                                 "details": f.details} for f in self.findings},
        }

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
            for line in _detail_lines(f.details):
                lines.append(f"         {line}")
            if f.failed and f.fix:
                lines.append(f"         fix: {f.fix}")
        # names in a line are data: no control character of theirs reaches the terminal
        # (nor colorama's stream wrapper, which DVC installs), no newline starts a line
        return "\n".join(terminal(line) for line in lines) + "\n"


def _detail_lines(details: dict[str, Any], limit: int = 8) -> list[str]:
    out = []
    for key, value in details.items():
        if isinstance(value, list):
            if not value:
                continue
            shown = ", ".join(str(v) for v in value[:limit])
            more = and_more(len(value), limit)
            out.append(f"{key}: {shown}{more}")
        elif isinstance(value, dict):
            if value:
                out.append(f"{key}: " + ", ".join(f"{k}={v}" for k, v in value.items()))
        elif value not in (None, ""):
            out.append(f"{key}: {value}")
    return out
