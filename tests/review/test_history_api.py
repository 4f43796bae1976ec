"""``diff`` and ``log`` as library calls: the same answer as the command line, and option
rules checked once, in the options value, naming the parameter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dvc_cuvis.baking.core import BakeOptions
from dvc_cuvis.errors import DvcCuvisError, OptionError
from dvc_cuvis.review.history_options import (
    DiffOptions,
    HistoryPaths,
    LogOptions,
)
from dvc_cuvis.review.history_run import diff, log
from tests.helpers.history import universe_of, write_version
from tests.helpers.shell import sh


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hist-api")
    sh("git", "init", "-q", cwd=root)
    write_version(root, universe_of(8), BakeOptions(seed=0, group_by="source"), "v1")
    write_version(root, universe_of(9), BakeOptions(seed=1, group_by="source"), "v2")
    return root


def test_diff_and_log_from_python_print_what_the_cli_prints(repo: Path, cli: Any,
                                                            monkeypatch: Any) -> None:
    monkeypatch.chdir(repo)
    paths = HistoryPaths(params="params.yaml")  # the CLI reads ./params.yaml
    for fmt, flag in (("text", ()), ("md", ("--md",)), ("json", ("--json",))):
        result = diff(DiffOptions(paths, "HEAD~1", "HEAD", fmt=fmt))  # type: ignore[arg-type]
        assert result.output() == cli("diff", "HEAD~1", "HEAD", *flag).out
    assert result.diff.transitions_total("new") == 4  # the ninth session's frames
    assert json.loads(result.output())["moved"] == result.diff.moved
    entries = log(LogOptions()).entries
    assert [e.subject for e in entries] == ["v2", "v1"] and entries[0].added == 4
    assert log(LogOptions(as_json=True)).output() == cli("log", "--json").out
    assert log(LogOptions(max_count=1)).output() == cli("log", "-n", "1").out


def test_option_rules_are_checked_once_and_name_the_parameter(cli: Any) -> None:
    with pytest.raises(DvcCuvisError, match="at most two revisions"):
        DiffOptions.from_revs(["a", "b", "c"], HistoryPaths())
    with pytest.raises(OptionError) as err:
        DiffOptions.from_revs([], HistoryPaths(repo="../other"))
    assert err.value.param == "repo" and str(err.value).startswith("diff repo ../other needs")
    assert err.value.named(lambda name, form: "--repo").startswith("diff --repo ../other needs")
    with pytest.raises(OptionError, match="max_count must be a whole number"):
        LogOptions(max_count=-1)
    with pytest.raises(OptionError, match="fmt must be text, md or json"):
        DiffOptions(fmt="html")  # type: ignore[arg-type]
    other = DiffOptions.from_revs(["v1"], HistoryPaths(repo="x"))
    assert (other.rev_a, other.rev_b) == ("v1", "HEAD")  # another repository: no workspace
    run = cli("log", "-n", "-1")
    assert run.code == 2 and "--max-count must be a whole number" in run.err, run.err
