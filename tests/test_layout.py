"""The tests' own layout: they mirror the package, a test module only holds tests, and the
shared pieces live in conftest files (fixtures) and ``tests/helpers`` (everything else)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "dvc_cuvis"
#: Folders of tests/ that are no package's tests.
NOT_A_PACKAGE = {"helpers", "fixtures", "fuzz_corpus", "sdk_double", "__pycache__"}


def _modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py")
                  if not NOT_A_PACKAGE & set(p.relative_to(TESTS).parts[:-1]))


def test_each_test_folder_mirrors_a_package() -> None:
    folders = {p.name for p in TESTS.iterdir() if p.is_dir()} - NOT_A_PACKAGE
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert folders <= packages, sorted(folders - packages)


def test_a_test_module_imports_no_other_test_module_and_holds_tests() -> None:
    problems = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        name = path.relative_to(TESTS).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = "." * node.level + (node.module or "")
                last = target.rsplit(".", 1)[-1]
                if last.startswith("test_") or target.endswith("conftest"):
                    problems.append(f"{name}:{node.lineno}: from {target} import ...")
        if path.name.startswith("test_"):
            tests = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)
                     and n.name.startswith(("test_", "Test"))]
            if not tests:
                problems.append(f"{name}: named test_* but holds no test (a helper?)")
    assert not problems, "\n".join(problems)


def test_helpers_hold_no_fixture() -> None:
    for path in sorted((TESTS / "helpers").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "@pytest.fixture" not in text, f"{path.name}: fixtures live in conftest files"
