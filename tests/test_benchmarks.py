"""Every benchmark imports, as a module of the ``benchmarks`` package, so none can rot
unnoticed between the runs that measure with it (``scripts/test.sh`` smoke-runs three of
them with ``--quick``; ``docs/performance.md`` has the full runs)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
MODULES = sorted(p.stem for p in BENCHMARKS.glob("*.py") if p.stem != "__init__")
#: What a benchmark may need beyond the core install (the test and plugin extras).
OPTIONAL = {"cuvis_ai_core", "cuvis_ai_dataloader", "torch", "pytorch_lightning", "lightning",
            "dask", "distributed", "tifffile", "PIL", "pycocotools", "matplotlib", "pandas",
            "pyarrow", "psutil", "dvc_ssh"}


def test_every_benchmark_module_is_listed() -> None:
    assert {"_common", "bench_core", "bench_check", "bench_dvc_commit", "soak"} <= set(MODULES)
    assert (BENCHMARKS / "__init__.py").is_file()


@pytest.mark.parametrize("name", MODULES)
def test_the_benchmark_imports(name: str) -> None:
    try:
        module = importlib.import_module(f"benchmarks.{name}")
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in OPTIONAL:
            pytest.skip(f"benchmarks.{name} needs {exc.name}")
        raise
    if name.startswith("bench_") or name == "soak":
        assert callable(module.main), f"benchmarks.{name} has no main()"


@pytest.mark.parametrize("name", MODULES)
def test_the_benchmark_imports_nothing_from_the_tests_and_edits_no_path(name: str) -> None:
    tree = ast.parse((BENCHMARKS / f"{name}.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            assert node.module.split(".")[0] != "tests", (name, node.lineno)
            if node.level == 0 and node.module.split(".")[0] in MODULES:
                pytest.fail(f"{name}:{node.lineno}: import benchmarks.{node.module}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                assert alias.name.split(".")[0] not in {"tests", *MODULES}, (name, node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value  # sys.path.insert(...), .append(...), .extend(...)
            edits_path = (node.func.attr in {"insert", "append", "extend"}
                          and isinstance(target, ast.Attribute) and target.attr == "path"
                          and isinstance(target.value, ast.Name) and target.value.id == "sys")
            assert not edits_path, f"{name}:{node.lineno}: sys.path edited"


def _is_json_dump(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"dump", "dumps"} and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "json")


@pytest.mark.parametrize("name", [m for m in MODULES if m != "_common"])
def test_the_benchmark_uses_the_shared_parser_and_json_writer(name: str) -> None:
    """Options and JSON output come from ``_common`` (one skeleton, not one per file)."""
    tree = ast.parse((BENCHMARKS / f"{name}.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        assert not (isinstance(node, ast.Attribute) and node.attr == "ArgumentParser"), (
            f"{name}:{node.lineno}: its own argparse parser; use _common.standard_args")
        assert not (isinstance(node, ast.ImportFrom) and node.module == "argparse"
                    and any(a.name == "ArgumentParser" for a in node.names)), (name, node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if callee in {"print", "write"} and any(_is_json_dump(a) for a in node.args):
                pytest.fail(f"{name}:{node.lineno}: its own JSON writer; use _common.print_json")


def _code_lines(source: list[str], func: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of a function that hold code: no blank lines, comments or docstring."""
    doc: set[int] = set()
    first = func.body[0]
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        doc = set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines = range(func.lineno, (func.end_lineno or func.lineno) + 1)
    return sum(1 for n in lines
               if n not in doc and source[n - 1].strip()
               and not source[n - 1].strip().startswith("#"))


@pytest.mark.parametrize("name", MODULES)
def test_no_benchmark_function_is_over_60_code_lines(name: str) -> None:
    """A benchmark holds its workload in named steps, each short enough to read at once."""
    text = (BENCHMARKS / f"{name}.py").read_text(encoding="utf-8")
    source = text.splitlines()
    sizes = {f"{f.name}:{f.lineno}": _code_lines(source, f) for f in ast.walk(ast.parse(text))
             if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
    long = [f"{f} ({n})" for f, n in sizes.items() if n > 60]
    assert not long, f"benchmarks/{name}.py: over 60 code lines: {', '.join(long)}"
