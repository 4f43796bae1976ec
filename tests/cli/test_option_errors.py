"""One option error for every verb: each options value raises ``errors.OptionError`` naming
the Python parameter, and the CLI's one mapper names the flag or the params key instead."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dvc_cuvis.baking import BakeOptions
from dvc_cuvis.check.options import CheckOptions
from dvc_cuvis.check.resolving import ResolveOptions
from dvc_cuvis.errors import OptionError
from dvc_cuvis.interop import ExportOptions
from dvc_cuvis.materialize import MaterializeOptions
from dvc_cuvis.repo import FetchOptions
from dvc_cuvis.review import ReportOptions
from dvc_cuvis.review.history_options import DiffOptions, LogOptions
from dvc_cuvis.sources import EnumerateOptions
from dvc_cuvis.train.lineage_report import LineageOptions

PACKAGE = Path(__file__).resolve().parents[2] / "dvc_cuvis"

#: One impossible value per options value: (class, how to build it badly, the parameter).
BAD: list[tuple[type, Callable[[Path], object], str]] = [
    (EnumerateOptions, lambda d: EnumerateOptions(format="cu4s", root=d, out_dir=d), "format"),
    (BakeOptions, lambda d: BakeOptions(folds=1).check(), "folds"),  # checked before a bake
    (MaterializeOptions, lambda d: MaterializeOptions(out_dir=d, jobs=0), "jobs"),
    (CheckOptions, lambda d: CheckOptions(adjacent_k=0), "adjacent_k"),
    (ReportOptions, lambda d: ReportOptions(universe="u.csv", splits="s.json", repo="../x"),
     "repo"),
    (FetchOptions, lambda d: FetchOptions(stages=()), "stages"),
    (ExportOptions, lambda d: ExportOptions(to="excel"), "to"),
    (ResolveOptions, lambda d: ResolveOptions(group_leakage="sometimes"), "group_leakage"),
    (DiffOptions, lambda d: DiffOptions(fmt="html"), "fmt"),  # type: ignore[arg-type]
    (LogOptions, lambda d: LogOptions(max_count=-1), "max_count"),
    (LineageOptions, lambda d: LineageOptions(paths=("a.ckpt",), compare=("b", "c")),
     "compare"),
]


def test_every_options_value_raises_the_one_option_error_naming_the_parameter(
        tmp_path: Path) -> None:
    declared = {m.group(1) for f in PACKAGE.rglob("*.py") if "cli" not in f.parts
                for m in re.finditer(r"^class (\w+Options)\b", f.read_text(), re.M)}
    assert declared == {cls.__name__ for cls, _, _ in BAD}  # a new options value gets a case
    for cls, build, param in BAD:
        with pytest.raises(Exception) as info:
            build(tmp_path)
        err: Any = info.value
        assert type(err) is OptionError, (cls.__name__, type(err), err)
        assert err.param == param and err.exit_code == 2, (cls.__name__, err.params)
        said = str(err)
        assert re.search(rf"\b{param}\b", said), (cls.__name__, said)  # the Python name
        assert "--" + param.replace("_", "-") not in said, (cls.__name__, said)  # no flag
        assert "{" not in said and "\n" not in said, (cls.__name__, said)


def test_the_cli_names_the_flag_typed_or_the_params_key_it_came_from(
        tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    typed = cli("log", "--no-params", "--max-count", "-1")
    assert typed.code == 2 and typed.out == ""
    assert typed.err == "dvc-cuvis: error: --max-count must be a whole number of commits, got -1\n"
    (tmp_path / "params.yaml").write_text("log:\n  max_count: -1\n")
    from_file = cli("log")
    assert from_file.code == 2 and from_file.out == ""
    assert from_file.err == (
        "dvc-cuvis: error: params.yaml: log.max_count must be a whole number of commits, "
        "got -1 (delete 'max_count' from the 'log' section of params.yaml, or pass "
        "--no-params to read no params file)\n")
