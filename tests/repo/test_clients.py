"""One client per outside system: what ``repo.git.Git`` hands out is plain values.

import-linter sees imports; a GitPython object handed out by the client and used through
its attributes imports nothing, so these tests call every public member of the client on a
real repository and look at what comes back.
"""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.repo.git import CommitInfo, Git
from dvc_cuvis.review.history import GitTree
from dvc_cuvis.review.log import split_log


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = tmp_path_factory.mktemp("clients")
    _git(top, "init", "-q")
    _git(top, "config", "user.email", "t@example.com")
    _git(top, "config", "user.name", "Ann Author")
    (top / "a.txt").write_text("1\n")
    _git(top, "add", "a.txt")
    _git(top, "commit", "-qm", "first\n\nbody")
    (top / "b.txt").write_text("b\n")
    (top / "a.txt").write_text("2\n")
    _git(top, "add", "a.txt", "b.txt")
    _git(top, "commit", "-qm", "second")
    (top / "a.txt").write_text("3\n")  # unstaged
    return top


#: How to call each public member of :class:`Git`; a new one must be added here, so what it
#: returns is looked at too.
CALLS: dict[str, tuple[Any, ...]] = {
    "commit": ("HEAD",),
    "read": ("HEAD", "a.txt"),
    "read_many": ("HEAD", ["a.txt", "none"]),
    "staged": ("a.txt",),
    "unstaged": (),
    "hooks_dir": (),
    "config": ("user.name",),
    "tracks": ("a.txt",),
    "commits_touching": ("HEAD", ["a.txt", "b.txt"]),
    "last_commits": (["a.txt"], 5),
    "close": (),
}


def _foreign(value: Any, where: str) -> list[str]:
    """Where ``value`` (looked into: containers, dataclasses) holds an object of a library
    outside the standard library and this package."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [p for f in dataclasses.fields(value)
                for p in _foreign(getattr(value, f.name), f"{where}.{f.name}")]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in
                _foreign(k, f"{where} key") + _foreign(v, f"{where}[{k!r}]")]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [p for k, v in enumerate(value) for p in _foreign(v, f"{where}[{k}]")]
    top = type(value).__module__.split(".")[0]
    ok = top in ("builtins", "pathlib", "posixpath", "dvc_cuvis")
    return [] if ok else [f"{where}: {type(value).__module__}.{type(value).__name__}"]


def test_no_gitpython_object_leaves_the_git_client(history: Path) -> None:
    g = Git(history)
    members = sorted(n for n, _ in inspect.getmembers(Git) if not n.startswith("_"))
    assert sorted(set(members) - {"shallow"}) == sorted(CALLS), "add the new member to CALLS"
    found = _foreign(g.shallow, "shallow")
    found += [p for name, value in sorted(vars(g).items()) if not name.startswith("_")
              for p in _foreign(value, name)]
    for name, args in CALLS.items():
        found += _foreign(getattr(g, name)(*args), name)
    assert found == []


def test_commits_touching_gives_plain_commits(history: Path) -> None:
    with Git(history) as g:
        head, first = _git(history, "rev-list", "HEAD").split()
        commits = g.commits_touching("HEAD", ["a.txt", "b.txt"])
        assert [c.sha for c in commits] == [head, first]
        assert all(isinstance(c, CommitInfo) for c in commits)
        assert (commits[1].subject, commits[1].author) == ("first", "Ann Author")
        assert commits[1].blob("b.txt") is None
        assert commits[0].blob("b.txt") == _git(history, "rev-parse", "HEAD:b.txt").strip()
        assert [c.sha for c in g.commits_touching("HEAD", ["b.txt"])] == [head]
        assert len(g.commits_touching("HEAD", ["a.txt"], limit=1)) == 1
        assert g.last_commits(["b.txt"], 5) == [head]
        stamp = int(_git(history, "log", "-1", "--format=%ct", first).strip())
        assert commits[1].committed == stamp


def test_history_readers_hold_no_gitpython_handle(history: Path) -> None:
    tree = GitTree(history)
    assert _foreign({k: v for k, v in vars(tree).items() if k != "git"}, "GitTree") == []
    with pytest.raises(DvcCuvisError, match=r"no commit in HEAD touches nothing\.json"):
        list(split_log(tree, "nothing.json", "nothing.csv"))
