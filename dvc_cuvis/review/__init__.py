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

__all__ = [
    "GitTree",
    "LogEntry",
    "ReportInput",
    "load_pair",
    "load_version",
    "open_tree",
    "render_markdown",
    "render_text",
    "split_log",
]
