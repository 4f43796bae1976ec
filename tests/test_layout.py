"""The tests' own layout: they mirror the package, a test module only holds tests, the shared
pieces live in conftest files (fixtures) and ``tests/helpers`` (everything else), and the
suite collects without the optional extras (checked here for a test module's own imports;
``docs/development.md`` says how to check a core-only install for real)."""

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


#: The optional extras (and what only they bring): a test module imports them only after a
#: ``pytest.importorskip`` at its top, so the suite collects on a core-only install.
OPTIONAL = {"torch", "pytorch_lightning", "lightning", "hydra", "cuvis", "cuvis_ai_core",
            "cuvis_ai_dataloader", "dask", "distributed", "tifffile", "PIL", "pycocotools",
            "matplotlib", "pandas", "pyarrow", "dvc_ssh", "selenium"}


def _top_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module) of each import at module level, in order."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))  # and "pkg.name" of ``from pkg import name``
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def _first_skip(tree: ast.Module) -> int | None:
    """The line of the first module-level ``pytest.importorskip(...)``, if any."""
    for node in tree.body:
        for call in ast.walk(node):
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "importorskip"):
                return node.lineno
    return None


def test_optional_extras_are_imported_after_an_importorskip() -> None:
    heavy_helpers = set()
    for path in sorted((TESTS / "helpers").glob("*.py")):
        tops = {m.split(".")[0] for _, m in _top_imports(ast.parse(path.read_text("utf-8")))}
        if tops & OPTIONAL:
            heavy_helpers.add(f"tests.helpers.{path.stem}")
    problems = []
    for path in [*_modules(), *TESTS.rglob("conftest.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _first_skip(tree)
        for line, module in _top_imports(tree):
            optional = module.split(".")[0] in OPTIONAL or module in heavy_helpers
            if optional and (skip is None or line < skip or path.name == "conftest.py"):
                problems.append(f"{path.relative_to(TESTS)}:{line}: import {module}")
    assert not problems, "\n".join(sorted(set(problems)))


def test_the_modules_run_on_one_worker_exist_and_build_a_module_scoped_fixture() -> None:
    """A renamed module would silently be split across workers again (each building its
    repository); a module without a module-scoped fixture gains nothing from the grouping."""
    from tests.helpers.scheduling import ONE_WORKER_MODULES, scope_of

    root = TESTS.parent
    for name in sorted(ONE_WORKER_MODULES):
        assert (root / name).is_file(), name
        assert 'scope="module"' in (root / name).read_text(), name
    assert scope_of("tests/repo/test_fetch.py::test_x[a]") == "tests/repo/test_fetch.py"
    assert scope_of("tests/test_docs.py::test_x[a]") == "tests/test_docs.py::test_x[a]"


def test_prebuild_splits_the_repositories_between_the_workers(tmp_path: Path,
                                                               monkeypatch) -> None:
    """Each worker builds a different share, together every repository, each once."""
    from tests.helpers import repos

    built: list[str] = []

    def builder(name: str):
        return lambda root: (built.append(name), (root / "made").write_text(name))

    fake = {n: builder(n) for n in ("a", "b", "c", "d", "e")}
    monkeypatch.setattr(repos, "BUILDERS", fake)
    monkeypatch.delenv(repos.REPOS_ENV, raising=False)
    shares = [repos.prebuild(tmp_path / "repos", k, 2) for k in (0, 1)]
    assert shares == [["a", "c", "e"], ["b", "d"]] and sorted(built) == list("abcde")
    assert repos.prebuild(tmp_path / "repos", 0, 1) == list("abcde") and len(built) == 5
    assert (tmp_path / "repos" / "d" / "made").read_text() == "d"
