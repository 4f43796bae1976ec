"""Review: split versions at git revisions, ``diff`` and ``log`` for people, the HTML
report and DVC's plot data.
"""

from __future__ import annotations

from dvc_cuvis.review.history import (
    GitTree,
    load_pair,
    load_version,
    open_tree,
)
from dvc_cuvis.review.log import (
    LogEntry,
    split_log,
)
from dvc_cuvis.review.render import (
    render_markdown,
    render_text,
)
from dvc_cuvis.review.report import (
    ReportInput,
)
from dvc_cuvis.review.report_run import (
    ReportOptions,
    ReportResult,
    report,
    write_report,
)

__all__ = [
    "GitTree",
    "LogEntry",
    "ReportInput",
    "ReportOptions",
    "ReportResult",
    "load_pair",
    "load_version",
    "open_tree",
    "render_markdown",
    "render_text",
    "report",
    "split_log",
    "write_report",
]
