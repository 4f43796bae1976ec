"""The drift check: the pin, content, selection, constraints and staleness of a split
against the data, and the verdict memo that makes an unchanged check free.
"""

from __future__ import annotations

from dvc_cuvis.check.drift import (
    CHECKS,
    CheckOptionError,
    CheckOptions,
    DriftError,
    DriftReport,
    Finding,
    ensure,
    verify,
)
from dvc_cuvis.check.duplicates import (
    split_audit,
)
from dvc_cuvis.check.verdicts import (
    VerdictMemo,
)

__all__ = [
    "CHECKS",
    "CheckOptionError",
    "CheckOptions",
    "DriftError",
    "DriftReport",
    "Finding",
    "VerdictMemo",
    "ensure",
    "split_audit",
    "verify",
]
