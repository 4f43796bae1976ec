"""Each ``cli/<verb>.py`` stands on the library and the CLI's shared modules alone."""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parents[2] / "dvc_cuvis" / "cli"


def _imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_no_verb_module_imports_another() -> None:
    verbs = {f"dvc_cuvis.cli.{p.stem}" for p in CLI.glob("*.py")
             if not p.stem.startswith("_")}
    assert "dvc_cuvis.cli.check" in verbs and "dvc_cuvis.cli.resolve" in verbs
    crossing = sorted(f"{p.stem} -> {m}" for p in sorted(CLI.glob("*.py"))
                      if not p.stem.startswith("_")
                      for m in _imported_modules(p) & (verbs - {f"dvc_cuvis.cli.{p.stem}"}))
    assert crossing == []


def test_the_import_finder_sees_both_forms(tmp_path: Path) -> None:
    f = tmp_path / "v.py"
    f.write_text("from dvc_cuvis.cli import check\n"
                 "def run():\n    import dvc_cuvis.cli.resolve\n")
    assert {"dvc_cuvis.cli.check", "dvc_cuvis.cli.resolve"} <= _imported_modules(f)


def test_no_cli_module_opens_dvc_itself() -> None:
    opened = sorted(f"{p.name}: {m}" for p in sorted(CLI.glob("*.py"))
                    for m in _imported_modules(p) if m == "dvc" or m.startswith("dvc."))
    assert opened == []  # all DVC API goes through dvc_cuvis.repo


def _code_lines(path: Path) -> dict[str, int]:
    """Code lines (no blank, comment or docstring line) of each top-level function."""
    import io
    import tokenize

    src = path.read_text(encoding="utf-8")
    code = {tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(src).readline)
            if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE,
                                tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)}
    out: dict[str, int] = {}
    for node in ast.parse(src).body:
        if isinstance(node, ast.FunctionDef):
            doc: set[int] = set()
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                doc = set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
            span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
            out[node.name] = len(set(span) & code - doc)
    return out


def test_the_cli_holds_no_workflow() -> None:
    """A verb's ``run`` builds options, makes the one library call and prints: at most 25
    code lines, and with its helpers (settings gathered for the options) at most 50 per
    verb.  The workflow itself lives in the library, where a notebook calls it."""
    too_long = []
    for path in sorted(CLI.glob("*.py")):
        if path.stem.startswith("_"):
            continue
        lines = _code_lines(path)
        runs = [n for n in lines if n == "run" or n.startswith("run_")]
        assert runs, f"{path.name}: no run function"
        too_long += [f"{path.name}: {n} has {lines[n]} code lines" for n in runs if lines[n] > 25]
        rest = sum(v for n, v in lines.items() if n != "add_parser" and not n.startswith("add_"))
        if rest > 50 * len(runs):
            too_long.append(f"{path.name}: {rest} code lines beside add_parser")
    assert too_long == []


def test_the_workflow_rule_sees_a_long_run(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(26))
    (tmp_path / "v.py").write_text(f'def run():\n    """Doc."""\n{body}\n')
    assert _code_lines(tmp_path / "v.py") == {"run": 27}  # the def line counts too
