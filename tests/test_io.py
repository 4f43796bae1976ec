"""YAML is read through C parsers, ours and DVC's, with the same data as the pure-Python ones:
every stage and every ``dvc`` process parses dvc.yaml, dvc.lock and params.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dvc_cuvis._io import parse_yaml
from dvc_cuvis.errors import DvcCuvisError

ROOT = Path(__file__).resolve().parent.parent


def _yaml_files() -> list[Path]:
    found = [*ROOT.glob("*.yaml"), *ROOT.glob("*.lock"), *ROOT.glob("examples/**/*.yaml"),
             *(ROOT / "tests").rglob("*.yaml")]
    return sorted(p for p in found if p.is_file())


def test_our_yaml_reads_use_libyaml_where_pyyaml_has_it(monkeypatch) -> None:
    loaders = []
    real = yaml.load

    def spy(text, Loader):
        loaders.append(Loader)
        return real(text, Loader=Loader)

    monkeypatch.setattr(yaml, "load", spy)
    assert parse_yaml("a: 1\n", "x.yaml") == {"a": 1}
    assert loaders == [getattr(yaml, "CSafeLoader", yaml.SafeLoader)]
    assert yaml.__with_libyaml__, "PyYAML without libyaml: reads fall back to pure Python"


@pytest.mark.parametrize("path", _yaml_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_libyaml_reads_the_projects_yaml_as_the_pure_python_parser_does(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert parse_yaml(text, path) == (yaml.safe_load(text) or {})


@pytest.mark.parametrize("text", ["a: 1\nb: 2\nc: [unclosed\n", "a: 1\n  b: 2\n",
                                  "a: 1\nb: x: y\n", "- a\nb: 1\n"])
def test_a_syntax_error_names_the_line_the_pure_python_parser_names(text: str) -> None:
    try:
        yaml.load(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        line = exc.problem_mark.line + 1  # type: ignore[attr-defined]
    with pytest.raises(DvcCuvisError, match=rf"^params\.yaml:{line}: not valid YAML"):
        parse_yaml(text, "params.yaml")


def test_dvc_reads_its_files_through_ruamels_c_parser() -> None:
    """The package depends on ruamel.yaml.clib: ruamel.yaml 0.19 no longer pulls it, and
    without it every dvc process parses dvc.yaml, dvc.lock and params in pure Python."""
    from ruamel.yaml import YAML

    assert YAML(typ="safe").Parser.__module__.startswith("ruamel.yaml.clib"), (
        "ruamel.yaml.clib is missing: install the package's dependencies")
