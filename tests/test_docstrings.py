"""The Examples of the notebook API's docstrings run, and print what they say they print.

Each public function or class a notebook calls carries a numpydoc docstring whose Examples
build tiny inputs in a temporary folder; this runs exactly those examples (not every
docstring of the package), so an example that drifts from the code fails here.
"""

from __future__ import annotations

import doctest
import importlib
import io
import itertools
import tempfile
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
