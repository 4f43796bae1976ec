"""Pinned output: a text compared byte for byte with its file under a ``golden/`` folder.

A deliberate change of the output rewrites the files (``DVC_CUVIS_UPDATE_GOLDEN=1 pytest
...``) and shows in review as a changed file; without it, a missing file fails the test.
"""

from __future__ import annotations

import os
from pathlib import Path

UPDATE = "DVC_CUVIS_UPDATE_GOLDEN"


def assert_pinned(text: str, path: Path, what: str) -> None:
    """``text`` is the content of ``path`` (``what``: how the failure names it)."""
    if os.environ.get(UPDATE) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
    assert path.exists(), f"{path}: nothing pinned yet; write it with {UPDATE}=1"
    assert text == path.read_text(encoding="utf-8"), (
        f"{what} is not its pinned copy {path}; if the change is meant, rewrite it with "
        f"{UPDATE}=1 and review it")
