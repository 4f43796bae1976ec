"""_io: YAML is read through C parsers, ours and DVC's, with the same data as the pure-Python
ones (every stage and every ``dvc`` process parses dvc.yaml, dvc.lock and params.yaml), and an
atomic write that fails keeps the old file and leaves no temp file."""

from __future__ import annotations

import os
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


@pytest.mark.parametrize("fail", ["write", "fsync", "interrupt", "rename"])
def test_a_failed_atomic_write_keeps_the_old_file_and_leaves_no_temp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: str) -> None:
    import errno

    from dvc_cuvis._io import atomic_write_bytes

    target = tmp_path / "f.npz"
    target.write_bytes(b"old frame")
    real_write = os.write
    calls: list[int] = []

    def half_then_full(fd: int, data: memoryview) -> int:
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data[: len(data) // 2])

    def fail_with(exc: BaseException):  # type: ignore[no-untyped-def]
        def raiser(*_a: object, **_k: object) -> None:
            raise exc
        return raiser

    with monkeypatch.context() as m:
        if fail == "write":
            m.setattr(os, "write", half_then_full)
        elif fail == "fsync":
            m.setattr(os, "fsync", fail_with(OSError(errno.EIO, "I/O error")))
        elif fail == "interrupt":
            m.setattr(os, "fsync", fail_with(KeyboardInterrupt()))
        else:
            m.setattr(os, "replace", fail_with(OSError(errno.EXDEV, "cross-device link")))
        with pytest.raises((OSError, KeyboardInterrupt)):
            atomic_write_bytes(target, b"new frame " * 10_000)
    assert fail != "write" or len(calls) == 2  # a partial temp file really existed
    assert target.read_bytes() == b"old frame"
    assert [p.name for p in tmp_path.iterdir()] == ["f.npz"]  # no temp file left
    atomic_write_bytes(target, b"new frame")  # and the next write of that path goes through
    assert target.read_bytes() == b"new frame" and [p.name for p in tmp_path.iterdir()] == [
        "f.npz"]
