"""A real browser for the report tests: Debian's headless chromium."""

from __future__ import annotations

import os
import shutil

import pytest

CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
                "--hide-scrollbars"]


def require_browser() -> str:
    """The chromium binary; in CI (env ``CI`` set) its absence fails, elsewhere it skips."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        why = "Debian chromium is not installed (scripts/test.sh installs it when run as root)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {why}: the report was never opened in a browser")
        pytest.skip(why)
    return found
