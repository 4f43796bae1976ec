"""The memo of DVC's resolution of a templated dvc.yaml: reused while its inputs are the same,
resolved again when any of them changes, and never trusted when unreadable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dvc_cuvis.repo.lockfile import stage_definitions
from dvc_cuvis.repo.resolved import _memo_path
from tests.helpers.shell import ENV

DVC_YAML = """\
vars:
  - extra.yaml
stages:
  bake:
    cmd: echo ${bake.seed} ${tag}
    deps: [universe.csv]
    outs: ["${bake.out}"]
  flags:
    cmd: echo ${opts}
  sub:
    wdir: sub
    vars: ["local.yaml:size"]
    cmd: echo ${size}
"""


PARAMS = "bake:\n  seed: 1\n  out: splits.json\nopts:\n  l: [1, 2]\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, env=ENV, check=True)
    (tmp_path / ".dvc").mkdir()
    (tmp_path / ".dvc" / "config").write_text("")
    (tmp_path / "dvc.yaml").write_text(DVC_YAML)
    (tmp_path / "params.yaml").write_text(PARAMS)
    (tmp_path / "extra.yaml").write_text("tag: a\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "local.yaml").write_text("size: 3\n")
    return tmp_path


def cmds(repo: Path) -> dict[str, str]:
    return {name: d["cmd"] for name, d in stage_definitions(repo).items() if name != "flags"}


def test_a_second_read_answers_from_the_memo_without_importing_dvc(repo: Path) -> None:
    first = stage_definitions(repo)
    assert first["bake"]["cmd"] == "echo 1 a" and first["bake"]["outs"] == ["splits.json"]
    assert _memo_path(repo, repo).is_file()
    code = ("import json, sys; from pathlib import Path; "
            "from dvc_cuvis.repo.lockfile import stage_definitions; "
            "d = stage_definitions(Path('.')); "
            "print(json.dumps([d, 'dvc.repo' in sys.modules, 'dvc.parsing' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, env=ENV, check=True,
                         capture_output=True, text=True).stdout
    again, imported_repo, imported_parsing = json.loads(out)
    assert again == first
    assert not imported_repo and not imported_parsing


@pytest.mark.parametrize("change,expected", [
    (lambda r: (r / "params.yaml").write_text(PARAMS.replace("seed: 1", "seed: 7")),
     {"bake": "echo 7 a", "sub": "echo 3"}),
    (lambda r: (r / "extra.yaml").write_text("tag: b\n"), {"bake": "echo 1 b", "sub": "echo 3"}),
    (lambda r: (r / "sub" / "local.yaml").write_text("size: 5\n"),
     {"bake": "echo 1 a", "sub": "echo 5"}),
    (lambda r: (r / "dvc.yaml").write_text(DVC_YAML.replace("echo ${size}", "echo x${size}")),
     {"bake": "echo 1 a", "sub": "echo x3"}),
], ids=["params.yaml", "a vars file", "a stage's vars file in its wdir", "dvc.yaml"])
def test_any_changed_input_is_resolved_again(repo: Path, change, expected) -> None:
    assert cmds(repo) == {"bake": "echo 1 a", "sub": "echo 3"}
    change(repo)
    assert cmds(repo) == expected


def test_dvc_config_is_an_input(repo: Path) -> None:
    """DVC's ``parsing`` settings change how a list renders in a command."""
    assert stage_definitions(repo)["flags"]["cmd"] == "echo --l 1 2"
    (repo / ".dvc" / "config").write_text("[parsing]\n    list = append\n")
    assert stage_definitions(repo)["flags"]["cmd"] == "echo --l 1 --l 2"


def test_an_unreadable_memo_is_ignored_and_rewritten(repo: Path) -> None:
    expected = stage_definitions(repo)
    memo = _memo_path(repo, repo)
    for junk in ("{not json", json.dumps({"key": "0" * 64, "stages": {"bake": {"cmd": "x"}}}),
                 json.dumps([1, 2])):
        memo.write_text(junk)
        assert stage_definitions(repo) == expected
        assert json.loads(memo.read_text())["stages"] == expected


def test_a_read_only_repository_still_resolves(repo: Path) -> None:
    (repo / ".dvc" / "tmp").mkdir()
    (repo / ".dvc" / "tmp").chmod(0o500)
    try:
        assert cmds(repo) == {"bake": "echo 1 a", "sub": "echo 3"}
        assert cmds(repo) == {"bake": "echo 1 a", "sub": "echo 3"}
    finally:
        (repo / ".dvc" / "tmp").chmod(0o700)
