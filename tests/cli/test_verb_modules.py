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
