"""One "did you mean" for every error that suggests a name: keys, values, sections, flags."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from dvc_cuvis.config.options import closest, did_you_mean

PKG = Path(__file__).resolve().parents[2] / "dvc_cuvis"


def test_one_wording_names_in_quotes_and_flags_as_typed() -> None:
    assert did_you_mean("val_ratio") == "; did you mean 'val_ratio'?"
    assert did_you_mean("--out-dir") == "; did you mean --out-dir?"
    assert did_you_mean(None) == did_you_mean("") == ""


def test_closest_takes_a_cutoff() -> None:
    names = ["d/a.cu3s", "d/b.cu3s", "zzz"]
    assert closest("d/c.cu3s", names) == "d/b.cu3s"  # a tie goes to the greater name
    assert closest("val_ratoi", ["val_ratio", "test_ratio"]) == "val_ratio"
    assert closest("qqqq", names) is None
    assert closest("ab", ["abcd"], cutoff=0.5) == "abcd"
    assert closest("ab", ["abcd"], cutoff=0.7) is None


def _message_strings(tree: ast.AST) -> list[ast.Constant]:
    """The string constants of ``tree`` that are no docstring (the text of messages)."""
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            docs.add(id(body[0].value))
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs]


def test_no_module_words_did_you_mean_itself() -> None:
    pattern = re.compile(r"did you mean", re.IGNORECASE)
    spelled = []
    for f in sorted(PKG.rglob("*.py")):
        if f.relative_to(PKG).as_posix() == "config/options.py":
            continue
        tree = ast.parse(f.read_text(encoding="utf-8"))
        spelled += [f"{f.relative_to(PKG)}:{n.lineno}" for n in _message_strings(tree)
                    if pattern.search(n.value)]
    assert spelled == []


def test_the_finder_sees_messages_not_docstrings() -> None:
    tree = ast.parse('"""did you mean, in a docstring."""\n'
                     'def f(x):\n    """Did you mean?"""\n'
                     '    raise ValueError(f"{x}; did you mean it?")\n')
    assert [n.value for n in _message_strings(tree)] == ["; did you mean it?"]
