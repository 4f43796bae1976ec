"""The package map holds: layers (import-linter), no import circle, faces, short functions.

import-linter's layers contract sees imports between packages; a circle inside one package
or one layer is found here, counting imports inside functions and under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "dvc_cuvis"
#: A face (``__init__``) may load an optional heavy name lazily; no other module may.
MAX_TOP_MODULES = 8
MAX_CODE_LINES = 60


def _modules() -> dict[str, Path]:
    mods = {}
    for f in PKG.rglob("*.py"):
        name = ".".join(f.relative_to(ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = f
    return mods


def _imported(mod: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The package's modules ``mod`` imports (anywhere in it), as module names."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names]
            cands = [n if n in mods else target for n in names]
        elif isinstance(node, ast.Import):
            cands = [a.name for a in node.names]
        else:
            continue
        for t in cands:
            while t and t not in mods:
                t = t.rpartition(".")[0]
            if t and t != mod:
                out.add(t)
    return out


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_counting_function_level_and_type_checking_imports() -> None:
    mods = _modules()
    edges = {}
    for m, f in mods.items():
        # a face importing its own modules, or a module its own face, is no circle
        edges[m] = {t for t in _imported(m, f, mods)
                    if not t.startswith(m + ".") and not m.startswith(t + ".")}
    assert _cycles(edges) == []


def test_the_cycle_finder_sees_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_layers_contract_holds() -> None:
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.skip("import-linter is not installed (the test extra installs it)")
    r = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 kept, 0 broken" in r.stdout


def test_every_package_is_a_layer() -> None:
    """A new package must be placed in the contract, or it is checked by nothing."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    packages = sorted(p.name for p in PKG.iterdir() if (p / "__init__.py").is_file())
    assert packages and all(f'"dvc_cuvis.{p}"' in text for p in packages), packages


def test_at_most_eight_modules_beside_the_packages() -> None:
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top


def test_no_module_getattr_outside_a_face_and_no_import_after_code() -> None:
    problems = []
    for f in sorted(PKG.rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        rel = f.relative_to(ROOT).as_posix()
        if f.name != "__init__.py" and any(
                isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
            problems.append(f"{rel}: module __getattr__")
        seen_code = False
        for n in tree.body:
            is_doc = isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                if seen_code:
                    problems.append(f"{rel}:{n.lineno}: import below code")
            elif isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
                continue
            elif not is_doc:
                seen_code = True
    assert problems == []


def _token_lines(src: str) -> set[int]:
    """The lines of ``src`` a code token touches (no blank or comment-only line)."""
    lines: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type not in skip:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines


def _code_lines(src: str, node: ast.AST, token_lines: set[int] | None = None) -> int:
    """Lines of ``node`` holding code: no blank, comment-only or docstring line
    (``token_lines``: :func:`_token_lines` of ``src``, when the caller has it already)."""
    doc: set[int] = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body:
            first = n.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                doc |= set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lo, hi = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    code = _token_lines(src) if token_lines is None else token_lines
    return len({ln for ln in code if lo <= ln <= hi} - doc)


def test_no_function_over_sixty_code_lines() -> None:
    long = []
    for f in sorted(PKG.rglob("*.py")):
        src = f.read_text(encoding="utf-8")
        code = _token_lines(src)  # once per file, not once per function
        for n in ast.walk(ast.parse(src)):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                count = _code_lines(src, n, code)
                if count > MAX_CODE_LINES:
                    long.append(f"{f.relative_to(ROOT)}:{n.lineno} {n.name}: {count}")
    assert long == []


def test_the_line_counter_skips_docstrings_comments_and_blanks() -> None:
    src = ('def f():\n    """Doc.\n\n    more\n    """\n    # note\n\n'
           "    x = (1,\n         2)\n    return x\n")
    node = ast.parse(src).body[0]
    assert _code_lines(src, node) == 4


def test_faces_import_no_optional_heavy_dependency() -> None:
    faces = sorted(".".join(p.relative_to(ROOT).parts[:-1])
                   for p in PKG.rglob("__init__.py"))
    code = ("import sys\n"
            f"for m in {faces!r}:\n    __import__(m)\n"
            "heavy = [m for m in ('torch', 'lightning', 'pytorch_lightning', 'cuvis', 'dask',"
            " 'distributed', 'cuvis_ai_dataloader', 'tifffile', 'pycocotools')"
            " if m in sys.modules]\n"
            "print(','.join(heavy))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == ""


def test_the_public_api_is_importable_from_the_package_top() -> None:
    import dvc_cuvis

    for name in dvc_cuvis.__all__:
        assert getattr(dvc_cuvis, name) is not None, name
    from dvc_cuvis import SplitDataModule, guard, verify

    assert verify.__module__ == "dvc_cuvis.check.drift"
    assert guard.__module__ == "dvc_cuvis.train.datamodule"
    assert SplitDataModule.__name__ == "SplitDataModule"


def _backslash_continuations(src: str) -> list[int]:
    """Lines that end in a backslash continuation outside strings: the tokens jump a line with
    no NEWLINE or NL between them."""
    found = []
    prev = None
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if (prev is not None and tok.start[0] > prev.end[0]
                and prev.type not in (tokenize.NEWLINE, tokenize.NL)
                and tok.type not in (tokenize.DEDENT, tokenize.ENDMARKER)):
            found.append(prev.end[0])
        prev = tok
    return found


def test_no_backslash_continuation_in_the_package() -> None:
    texts = {path: path.read_text(encoding="utf-8") for path in sorted(PKG.rglob("*.py"))}
    bad = [f"{path.relative_to(ROOT)}:{line}" for path, text in texts.items()
           if "\\\n" in text for line in _backslash_continuations(text)]
    assert not bad, f"backslash continuations (use parentheses): {bad}"


def test_the_continuation_finder_sees_one_and_skips_strings() -> None:
    assert _backslash_continuations("x = 1 + \\\n    2\n") == [1]
    assert _backslash_continuations('S = """\\\ntext\n"""\ny = (1 +\n     2)\n') == []


def test_nothing_in_tests_imports_benchmarks() -> None:
    bad = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "benchmarks" not in text:  # no import of it can hide in this file
            continue
        for node in ast.walk(ast.parse(text)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{path.relative_to(ROOT)}:{node.lineno}: {name}" for name in names
                    if name == "benchmarks" or name.startswith("benchmarks.")]
    assert not bad, f"tests import benchmarks (move the helper to tests/helpers): {bad}"
