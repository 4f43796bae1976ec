"""The settings rule lives in config: one representation of a key (Option), one path rule."""

from __future__ import annotations

import argparse
import ast
import os
from pathlib import Path

import pytest

from dvc_cuvis.config.options import Option, OptionSet
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import SECTIONS
from dvc_cuvis.errors import ParamsError

_SPEC = OptionSet("ruleverb", Option("universe", "u", "universe.csv", path=True),
                  Option("mode", "m", "a", choices=("a", "b")),
                  Option("jobs", "j", 1, kind=int))


def test_a_path_value_is_relative_to_the_params_file() -> None:
    opt = _SPEC["universe"]
    assert opt.from_params("data/u.csv", "conf") == os.path.normpath("conf/data/u.csv")
    assert opt.from_params("../u.csv", Path("conf/sub")) == os.path.normpath("conf/u.csv")
    for kept in ("none", "auto", "/abs/u.csv"):
        assert opt.from_params(kept, "conf") == kept
    assert opt.from_params("u.csv", ".") == opt.from_params("u.csv", "") == "u.csv"
    assert _SPEC["mode"].from_params("x/y", "conf") == "x/y"  # not a path option
    assert opt.from_params(3, "conf") == 3


def test_the_library_and_the_cli_read_a_section_by_the_same_rule(tmp_path: Path,
                                                                 monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "p.yaml").write_text("ruleverb:\n  universe: d/u.csv\n  jobs: 4\n")
    monkeypatch.setitem(SECTIONS, "ruleverb", _SPEC)  # a verb of the static map, undone after
    s = Settings(argparse.Namespace(command="ruleverb", params="conf/p.yaml"))
    lib = _SPEC.from_section(s.section, s.base)
    assert s.get("universe") == lib["universe"] == os.path.normpath("conf/d/u.csv")
    assert s.get("jobs") == lib["jobs"] == 4
    assert s.get("mode") == lib["mode"] == "a"
    assert s.origin("jobs") == "conf/p.yaml: ruleverb.jobs"
    assert s.origin("mode") == "the default of --mode"


def test_one_key_check_for_the_library_and_the_cli(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(SECTIONS, "ruleverb", _SPEC)  # a verb of the static map, undone after
    (tmp_path / "params.yaml").write_text("ruleverb:\n  jbos: 2\n")
    with pytest.raises(ParamsError) as cli_err:
        Settings(argparse.Namespace(command="ruleverb"))
    with pytest.raises(ParamsError) as lib_err:
        _SPEC.from_section({"jbos": 2}, where="params.yaml")
    assert str(cli_err.value) == str(lib_err.value) == (
        "params.yaml: unknown key 'jbos' in section 'ruleverb'; did you mean 'jobs'? "
        "(valid keys: jobs, mode, universe)")
    (tmp_path / "params.yaml").write_text("ruleverb:\n  mode: c\n")
    with pytest.raises(ParamsError, match=r"ruleverb.mode: 'c' is not one of a, b"):
        Settings(argparse.Namespace(command="ruleverb"))


def test_the_cli_keeps_no_copy_of_a_key() -> None:
    """cli/_settings builds parsers only: no dataclass of its own for a key or a section."""
    import dvc_cuvis.cli._settings as mod

    tree = ast.parse(Path(mod.__file__).read_text(encoding="utf-8"))
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    assert classes == ["Parser"]
    assert not hasattr(mod, "Settings") and not hasattr(mod, "SECTIONS")
