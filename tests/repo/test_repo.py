"""The one repository module: roots, YAML files, files at git revisions, what tracks a path."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import dvc_cuvis.repo
from dvc_cuvis import _io
from dvc_cuvis.paths import roots
from dvc_cuvis.repo import git as repo
from dvc_cuvis.repo import lockfile


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def git_init(top: Path) -> Path:
    """An empty git repository at ``top`` with a committer set."""
    top.mkdir(parents=True, exist_ok=True)
    git(top, "init", "-q")
    git(top, "config", "user.email", "t@example.com")
    git(top, "config", "user.name", "t")
    return top


@pytest.fixture
def project(tmp_path: Path) -> Path:
    top = git_init(tmp_path / "proj")
    (top / "data/a/b").mkdir(parents=True)
    (top / ".dvc").mkdir()
    (top / "notes.txt").write_text("v1\n")
    git(top, "add", "notes.txt")
    git(top, "commit", "-qm", "v1")
    git(top, "tag", "v1")
    (top / "notes.txt").write_text("v2\n")
    git(top, "commit", "-qam", "v2")
    return top


def test_roots(project: Path, tmp_path: Path) -> None:
    deep = project / "data/a/b"
    assert roots.repo_root(deep) == project
    assert roots.dvc_root(deep) == project
    (project / "data/a/.dvc").mkdir()  # a subrepository: its own DVC root
    assert roots.dvc_root(project / "data/a/b/x") == project / "data/a"
    memo: dict[str, str | None] = {}
    assert roots.dvc_root(deep, memo) == project / "data/a" and memo[str(deep)] == str(
        project / "data/a")
    (project / "data/a/.dvc").rmdir()
    assert roots.dvc_root(deep, memo) == project / "data/a"  # the caller's memo answers
    assert roots.dvc_root(deep) == project
    outside = tmp_path / "outside"
    outside.mkdir()
    assert roots.repo_root(outside) is None and roots.dvc_root(outside) is None
    # the string form, as hashing's bridge to DVC walks many files with one memo
    strings: dict[str, str | None] = {}
    assert roots.dvc_root_of(str(deep), strings) == str(project) == strings[str(project / "data")]
    assert roots.dvc_root_of(str(outside), strings) is None and strings[str(outside)] is None


def test_find_lock_stops_at_the_repository_root(project: Path, tmp_path: Path) -> None:
    assert lockfile.find_lock(project / "data/a") is None
    (project / "dvc.lock").write_text("schema: '2.0'\n")
    assert lockfile.find_lock(project / "data/a/b") == project / "dvc.lock"
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\n")  # above the root: not this project's
    (project / "dvc.lock").unlink()
    assert lockfile.find_lock(project / "data") is None


def test_yaml_errors_name_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "params.yaml"
    bad.write_text("bake:\n  seed: 1\n  val: [1,\n")
    with pytest.raises(repo.RepoError, match=r"params.yaml:\d+: not valid YAML"):
        _io.read_yaml(bad)
    (tmp_path / "empty.yaml").write_text("")
    assert _io.read_yaml(tmp_path / "empty.yaml") == {}
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbfa: 1\n")
    assert _io.read_yaml(tmp_path / "bom.yaml") == {"a": 1}
    (tmp_path / "latin.yaml").write_bytes(b"a: \xe9\n")
    with pytest.raises(repo.RepoError, match=r"latin\.yaml: not UTF-8"):
        _io.read_yaml(tmp_path / "latin.yaml")
    with pytest.raises(repo.RepoError, match=r"missing\.yaml: cannot be read"):
        _io.read_yaml(tmp_path / "missing.yaml")


@pytest.mark.lowest_dvc
def test_dvc_lock_and_its_params_are_read_through_this_module(tmp_path: Path) -> None:
    """lockfile's readers: find_lock is the face's; a dvc.lock that is not YAML names its
    line (lockfile's own error); a recorded params file that cannot be read, even one that is
    not UTF-8, is a changed value (no traceback)."""
    assert lockfile.find_lock is dvc_cuvis.repo.find_lock
    bad = tmp_path / "dvc.lock"
    bad.write_text("stages:\n  bake:\n    cmd: [x,\n")
    with pytest.raises(lockfile.LockReadError, match=r"dvc\.lock:\d+: unreadable dvc\.lock \(not "
                       r"valid YAML: "):
        lockfile.LockFile.read(bad)
    assert lockfile.LockFile.parse("", bad).stages == []
    lock = lockfile.LockFile.parse("stages:\n  bake:\n    cmd: x\n    params:\n"
                                   "      params.yaml:\n        bake.seed: 1\n", bad)
    (tmp_path / "params.yaml").write_text("bake:\n  seed: 1\n")
    assert lockfile._compare_params(lock, lock.stages[0], {}) == []
    (tmp_path / "params.yaml").write_bytes(b"bake:\n  seed: \xff\n")
    assert lockfile._compare_params(lock, lock.stages[0], {}) == [
        "params.yaml:bake.seed (stage bake)"]


def test_files_at_revisions(project: Path) -> None:
    g = repo.Git(project / "data")
    assert g.top == project
    assert g.read("v1", "notes.txt") == b"v1\n"
    assert g.read("HEAD", "notes.txt") == b"v2\n"
    assert g.read("v1", "no such file.txt") is None
    assert g.read_many("v1", ["notes.txt", "nope"]) == {"notes.txt": b"v1\n", "nope": None}
    assert g.commit("v1") == git(project, "rev-parse", "v1").strip()
    with pytest.raises(repo.RepoError, match="unknown revision 'v9'"):
        g.commit("v9")


def test_files_at_head_read_as_git_has_them(tmp_path: Path) -> None:
    """What the seed reads (HEAD's dvc.lock, universe.csv, metrics) through one ``cat-file
    --batch``: names with blanks, a name ending in " blob", a folder, an uncommitted file and
    an empty repository all read as git has them, and the reader stays in step."""
    top = git_init(tmp_path / "r é")
    with repo.Git(top) as g:  # no commit yet: nothing at HEAD
        assert g.read("HEAD", "a.txt") is None
    (top / "sub dir").mkdir()
    (top / "sub dir" / "x blob").write_bytes(b"blob 12\n\x00\xff")
    (top / "a.txt").write_bytes(b"")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "c")
    (top / "a.txt").write_bytes(b"edited, not committed")
    (top / "new.txt").write_bytes(b"new")
    with repo.Git(top / "sub dir") as g:
        assert g.top.resolve() == top.resolve()
        assert g.read("HEAD", "sub dir/x blob") == b"blob 12\n\x00\xff"
        assert g.read("HEAD", "a.txt") == b""  # HEAD's bytes, not the workspace's
        assert g.read("HEAD", "new.txt") is None
        assert g.read("HEAD", "sub dir") is None  # a tree
        assert g.read("HEAD", "gone blob") is None  # git echoes it: "HEAD:gone blob missing"
        assert g.read("HEAD", "line\nbreak") is None
        assert g.read("HEAD", "sub dir/x blob") == b"blob 12\n\x00\xff"  # still in step


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_closing_stops_git_when_a_read_is_cut_short(tmp_path: Path) -> None:
    """A read abandoned while git is still writing a large file must not hang the close
    (the abandoned stream's own clean-up then finds its pipe closed: a warning, no hang)."""
    import threading

    import numpy as np

    top = git_init(tmp_path / "r")
    (top / "big.bin").write_bytes(np.random.default_rng(1).bytes(4 << 20))
    git(top, "add", "-A")
    git(top, "commit", "-qm", "c")
    g = repo.Git(top)
    stream = g._repo.git.stream_object_data("HEAD:big.bin")[3]  # asked for, never read
    popen = g._repo.git.cat_file_all.proc  # git cat-file --batch
    stop = threading.Thread(target=g.__exit__, args=(RuntimeError, RuntimeError("cut"), None))
    stop.start()
    stop.join(20)
    hung = stop.is_alive()
    del stream
    assert not hung and popen.poll() is not None


def test_not_a_git_repository(tmp_path: Path) -> None:
    with pytest.raises(repo.RepoError, match="not a git repository"):
        repo.Git(tmp_path)


@pytest.mark.lowest_dvc
def test_what_tracks_a_path(project: Path) -> None:
    assert repo.tracked_by(project / "notes.txt") == ("git", "git")
    assert repo.tracked_by(project / "data") is None
    (project / "data.dvc").write_text("outs:\n- path: data\n")
    assert repo.tracked_by(project / "data/a/b/f.npz") == ("dvc-file", "data.dvc")
    (project / "dvc.yaml").write_text(
        "stages:\n  m:\n    cmd: x\n    wdir: sub\n    outs:\n    - out/frames:\n"
        "        persist: true\n    - plain.txt\n")
    stage = ("stage", "the output of stage 'm' in dvc.yaml")
    assert repo.tracked_by(project / "sub/out/frames/f.npz") == stage
    assert repo.tracked_by(project / "sub/plain.txt") == stage
    assert repo.tracked_by(project / "sub/out") is None  # the folder above an output
    assert repo.tracked_by(project / "sub/other.txt") is None


@pytest.mark.lowest_dvc
def test_what_tracks_a_path_in_foreach_and_matrix_stages(project: Path) -> None:
    """Stages DVC expands (``foreach``, ``matrix``, ``${}`` from params.yaml) track their
    outputs under the names DVC gives them, as ``dvc status`` sees them."""
    import shutil

    from dvc.repo import Repo

    shutil.rmtree(project / ".dvc")
    Repo.init(str(project)).close()
    (project / "params.yaml").write_text("days: [mon, tue]\nout: frames\n")
    (project / "dvc.yaml").write_text(
        "stages:\n"
        "  day:\n    foreach: ${days}\n    do:\n      cmd: echo ${item}\n"
        "      outs:\n      - ${out}/${item}\n"
        "  grid:\n    matrix:\n      size: [s, l]\n      band: [4, 8]\n"
        "    cmd: echo ${item.size}\n    outs:\n    - grid/${item.size}-${item.band}.npz\n"
        "    metrics:\n    - metrics/${item.size}-${item.band}.json:\n        cache: false\n")
    assert repo.tracked_by(project / "frames/tue/f.npz") == (
        "stage", "the output of stage 'day@tue' in dvc.yaml")
    assert repo.tracked_by(project / "frames/mon") == (
        "stage", "the output of stage 'day@mon' in dvc.yaml")
    assert repo.tracked_by(project / "frames/wed/f.npz") is None
    assert repo.tracked_by(project / "frames") is None  # the folder above the outputs
    assert repo.tracked_by(project / "grid/l-8.npz") == (
        "stage", "the output of stage 'grid@l-8' in dvc.yaml")
    assert repo.tracked_by(project / "metrics/s-4.json") == (
        "stage", "the output of stage 'grid@s-4' in dvc.yaml")
    assert repo.tracked_by(project / "grid/m-8.npz") is None


def test_one_error_for_an_unknown_revision(project: Path, tmp_path: Path) -> None:
    """Every reader of revisions asks the one git client, so an unknown revision reads the
    same wherever it is named: the files of a split, its log, a dataset version; a shallow
    clone's says how to fetch more history."""
    from dvc_cuvis.review.history import GitTree
    from dvc_cuvis.review.log import split_log
    from dvc_cuvis.train.versioned import resolve_commit

    want = "unknown revision 'v9' (a tag, branch or commit; `git tag` lists the tags)"
    tree = GitTree(project)
    raised = []
    for call in (lambda: repo.Git(project).commit("v9"), lambda: tree.commit("v9"),
                 lambda: tree.read("v9", "notes.txt"),
                 lambda: next(split_log(tree, "splits.json", "universe.csv", rev="v9"))):
        with pytest.raises(repo.RepoError) as err:
            call()
        raised.append((type(err.value), str(err.value)))
    assert raised == [(repo.RepoError, want)] * 4
    with pytest.raises(repo.RepoError) as err:
        resolve_commit(str(project), "v9")
    assert str(err.value) == f"{project}: {want}"
    assert tree.commit("v1") == repo.Git(project).commit("v1") == resolve_commit(
        str(project), "v1") == git(project, "rev-parse", "v1").strip()
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", project.as_uri(), str(shallow))
    hint = ("unknown revision 'v1' — this is a shallow clone: fetch more history "
            "(`git fetch --unshallow`)")
    for call in (lambda: repo.Git(shallow).commit("v1"),
                 lambda: GitTree(shallow).read("v1", "notes.txt")):
        with pytest.raises(repo.RepoError, match=re.escape(hint)):
            call()


def test_a_remote_is_asked_through_the_same_client(project: Path, tmp_path: Path) -> None:
    """A dataset repository named by URL: its tags resolve to commits (an annotated tag to
    its commit), an unknown name is the same error, an unreadable remote names git's reason."""
    from dvc_cuvis.train.versioned import resolve_commit

    git(project, "tag", "-a", "v2", "-m", "annotated")
    url = project.as_uri()
    head = git(project, "rev-parse", "HEAD").strip()
    assert repo.remote_commit(url, "v2") == head == resolve_commit(url, "v2")
    assert repo.remote_commit(url, "v1") == git(project, "rev-parse", "v1").strip()
    assert repo.remote_commit(url, "v9") is None
    with pytest.raises(repo.RepoError, match=re.escape(
            f"{url}: unknown revision 'v9' (a tag, branch or commit; `git tag` lists the tags)")):
        resolve_commit(url, "v9")
    gone = (tmp_path / "gone").as_uri()
    with pytest.raises(repo.RepoError, match=rf"^{re.escape(gone)}: cannot read the repository "
                                             r"\(.+\)$"):
        resolve_commit(gone, "v1")
    folder = repo.mirror(url, tmp_path / "m.git", "mirror")
    assert repo.Git(folder).commit("v2") == head
    git(project, "commit", "-q", "--allow-empty", "-m", "v3")
    git(project, "tag", "v3")
    assert repo.Git(repo.mirror(url, folder, "mirror")).commit("v3") == git(
        project, "rev-parse", "v3").strip()  # fetched, not cloned again
    with pytest.raises(repo.RepoError, match=r"^mirror \(.+\)$"):
        repo.mirror(gone, tmp_path / "n.git", "mirror")
