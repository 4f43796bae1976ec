"""The error phrasing every module shares: an exception's first line and "(+N more)"."""

from __future__ import annotations

import re
from pathlib import Path

from dvc_cuvis.errors import and_more, first_line

PKG = Path(__file__).resolve().parents[1] / "dvc_cuvis"


def test_first_line_cuts_a_message_to_its_first_line() -> None:
    assert first_line(ValueError("  bad thing\n  at line 3\n")) == "bad thing"
    assert first_line(ValueError("one")) == "one"
    assert first_line(ValueError(""), "ValueError") == "ValueError"
    assert first_line(ValueError("  \n "), "ValueError") == "ValueError"
    assert first_line(RuntimeError()) == ""
    assert first_line("log line\nmore") == "log line"


def test_and_more_names_what_a_cut_list_leaves_out() -> None:
    assert and_more(7, 5) == " (+2 more)"
    assert and_more(5, 5) == and_more(3, 5) == and_more(0, 5) == ""
    assert and_more(11, 10) == " (+1 more)"


def test_no_module_spells_the_phrasing_again() -> None:
    """One home each: no module cuts an exception to its first line, or words "(+N more)",
    by hand."""
    patterns = [re.compile(r"\.strip\(\)\.splitlines\(\)"),
                re.compile(r"str\(exc\)\.splitlines\(\)"),
                re.compile(r'\(\+\{[^}]*\} more\)')]
    spelled = []
    for f in sorted(PKG.rglob("*.py")):
        if f.name == "errors.py":
            continue
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1):
            if any(p.search(line) for p in patterns):
                spelled.append(f"{f.relative_to(PKG)}:{n}")
    assert spelled == []
