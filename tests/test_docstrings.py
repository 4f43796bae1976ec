"""The Examples of the notebook API's docstrings run, and print what they say they print.

Each public function or class a notebook calls carries a numpydoc docstring whose Examples
build tiny inputs in a temporary folder; this runs exactly those examples (not every
docstring of the package), so an example that drifts from the code fails here.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import io
import itertools
import re
import tempfile
import tokenize
from pathlib import Path

import pytest

#: The notebook API: every object here documents Parameters, Returns (functions), Raises,
#: See Also and a runnable Example.
PUBLIC_API: tuple[str, ...] = (
    "dvc_cuvis.model.universe_io.read_universe",
    "dvc_cuvis.model.splits.load_splits",
    "dvc_cuvis.model.resolution.resolve",
    "dvc_cuvis.model.splits.effective_splits",
    "dvc_cuvis.baking.core.bake",
    "dvc_cuvis.baking.entry.bake_run",
    "dvc_cuvis.review.report_run.report",
    "dvc_cuvis.materialize.core.materialize",
    "dvc_cuvis.materialize.core.materialize_universe",
    "dvc_cuvis.check.drift.verify",
    "dvc_cuvis.check.drift.ensure",
    "dvc_cuvis.train.datamodule.SplitDataModule",
    "dvc_cuvis.train.datamodule.guard",
)

SECTIONS: tuple[str, ...] = ("Parameters", "Raises", "See Also", "Examples")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _lookup(dotted: str) -> tuple[object, object]:
    module_name, _, attr = dotted.rpartition(".")
    module = importlib.import_module(module_name)
    return module, getattr(module, attr)


def _heading(doc: str, name: str) -> bool:
    lines = [line.strip() for line in doc.splitlines()]
    return any(a == name and b == "-" * len(name) for a, b in itertools.pairwise(lines))


@pytest.fixture(autouse=True)
def _private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Examples call ``tempfile.mkdtemp()``: keep their folders under pytest's tmp_path."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("dotted", PUBLIC_API)
def test_docstring_has_the_numpydoc_sections(dotted: str) -> None:
    _, obj = _lookup(dotted)
    doc = obj.__doc__ or ""
    wanted = SECTIONS if isinstance(obj, type) else ("Returns", *SECTIONS)
    missing = [s for s in wanted if not _heading(doc, s)]
    assert not missing, f"{dotted}: docstring lacks section(s) {missing}"
    summary = doc.strip().splitlines()[0]
    assert summary.endswith((".", ")")), f"{dotted}: first line is not a one-line summary"


@pytest.mark.parametrize("dotted", PUBLIC_API)
def test_docstring_examples_run(dotted: str) -> None:
    module, obj = _lookup(dotted)
    tests = doctest.DocTestFinder(recurse=False).find(obj, dotted, module=module)
    examples = sum(len(t.examples) for t in tests)
    assert examples >= 3, f"{dotted}: expected a runnable Examples section, found {examples}"
    runner = doctest.DocTestRunner(optionflags=FLAGS, verbose=False)
    report = io.StringIO()
    for test in tests:
        runner.run(test, out=report.write)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{dotted}: {result.failed} example(s) failed\n{report.getvalue()}"
    assert result.attempted == examples


_NUM = r"\d+(?:\.\d+)?"
_UNIT = r"(?:ms|µs|s|seconds?|minutes?|KB|KiB|MB|MiB|GB|GiB|%|x|×)"
#: A figure someone measured: "~N unit", "about N unit", "measured: N unit", "costs N unit",
#: a throughput (N GB/s), "N s for ...", "N x faster". A limit or constant ("under 1 MiB",
#: "a 256 x 256 x 61 frame") has none of these marks and is allowed.
MEASURED = re.compile(
    rf"(?:~|\babout\s+|\bmeasured:?\s+|\bcosts?\s+(?:about\s+|~)?)\s*{_NUM}\s*{_UNIT}(?!\w)"
    rf"|{_NUM}\s*(?:KB|MB|GB|MiB|GiB)/s\b"
    rf"|\b{_NUM}\s*(?:ms|s)\s+(?:for|of\s+CPU|a\s+path|against)\b"
    rf"|\b{_NUM}\s*(?:x|×)\s+(?:faster|slower|its\s+speed)")


def _measured_figures(src: str) -> list[str]:
    """Each docstring's and comment's measured figures in a module's source, as ``line: text``."""
    found: list[str] = []
    if not MEASURED.search(src):  # nothing anywhere in the file: nothing in a docstring
        return found
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node, clean=False) or ""
            found += [f"{getattr(node, 'lineno', 1)}: {m.group(0)}" for m in MEASURED.finditer(doc)]
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            found += [f"{tok.start[0]}: {m.group(0)}" for m in MEASURED.finditer(tok.string)]
    return found


def test_no_docstring_or_comment_quotes_a_measured_figure() -> None:
    root = Path(__file__).resolve().parents[1] / "dvc_cuvis"
    bad = [f"{path.relative_to(root.parent)}:{hit}" for path in sorted(root.rglob("*.py"))
           for hit in _measured_figures(path.read_text(encoding="utf-8"))]
    assert not bad, f"measured figures age: move them to docs/performance.md and say why: {bad}"


def test_the_figure_finder_tells_a_measurement_from_a_limit() -> None:
    measured = ('"""Opening it costs ~0.2 s."""\n', '"""Runs at ~0.75 GB/s."""\n',
                '"""24 s for a 50k split."""\n', "x = 1  # about 1\n  s of every report\n",
                '"""It is (measured: 0.44 ms) slow."""\n', '"""up to ~3x its speed"""\n')
    assert all(_measured_figures(src) for src in measured[:3] + measured[4:])
    limits = ('"""Files under 1 MiB are always read."""\n', '"""A 256 x 256 x 61 frame."""\n',
              '"""Ids 0-5 and 10% of the rows are held out."""\n', "CAP = 64  # MiB, a ceiling\n")
    assert not any(_measured_figures(src) for src in limits)
