"""The git pre-commit hook: its one-line message, and that it fails closed and judges what
the commit records (not the working tree), wherever git looks for it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from dvc_cuvis import BakeOptions, bake, read_universe, save_splits
from dvc_cuvis.repo.hooks import HOOK_MARK, hook_script
from tests.helpers.shell import BIN, ENV, run, sh

ROWS = "source,index\n" + "".join(f"day{k}.cu3s,0-1\n" for k in range(6))


def test_the_hook_names_every_staged_split_file_on_one_line(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    fake = tmp_path / "python"  # stands in for the installing interpreter: the check passes
    fake.write_text("#!/bin/sh\necho \"ran: $*\" >&2\nexit 0\n")
    fake.chmod(0o755)
    hook = tmp_path / "hook.sh"
    hook.write_text(hook_script(None, str(fake)))
    for name in ("splits.json", "sub dir/universe.csv", "folds/splits-1.json", "notes.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}\n")
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    r = subprocess.run(["sh", str(hook)], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        "dvc-cuvis: checking staged split files: folds/splits-1.json splits.json "
        "sub dir/universe.csv",
        "ran: -m dvc_cuvis check --staged",
    ]
    # nothing staged that the check reads: silent
    subprocess.run(["git", "rm", "-q", "--cached", "-r", "."], cwd=tmp_path, check=True)
    r = subprocess.run(["sh", str(hook)], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == ""


def _split_repo(root: Path) -> dict[str, str]:
    """A git repository with a universe.csv and its split committed (no hook yet); the
    texts of a good split, another good one and a broken one (a wrong pin)."""
    root.mkdir()
    sh("git", "init", "-q", cwd=root)
    (root / "universe.csv").write_text(ROWS)
    texts = {}
    for name, seed in (("good", 0), ("other", 7)):
        (baked,) = bake(read_universe(root / "universe.csv"), BakeOptions(seed=seed))
        save_splits(baked.config, root / "splits.json")
        texts[name] = (root / "splits.json").read_text()
    assert texts["good"] != texts["other"]
    doc = json.loads(texts["good"])
    doc["universe_hash"] = "0" * 64
    texts["broken"] = json.dumps(doc, indent=2) + "\n"
    (root / "splits.json").write_text(texts["good"])
    sh("git", "add", "universe.csv", "splits.json", cwd=root)
    sh("git", "commit", "-qm", "split", cwd=root)
    return texts


def _stage(root: Path, staged: str, worktree: str) -> None:
    """splits.json: ``staged`` in git's index, ``worktree`` in the working tree."""
    (root / "splits.json").write_text(staged)
    sh("git", "add", "splits.json", cwd=root)
    (root / "splits.json").write_text(worktree)


def _commits(root: Path) -> int:
    return int(sh("git", "rev-list", "--count", "HEAD", cwd=root))


def test_the_hook_checks_the_staged_split_with_no_tool_but_git(
        tmp_path: Path, cli, monkeypatch) -> None:
    """PATH holds git and dvc-cuvis only (no grep, sed, paste): the hook still runs the
    check, on the index's split, and on commits that stage only .dvc files or dvc.lock."""
    repo = tmp_path / "repo"
    texts = _split_repo(repo)
    monkeypatch.chdir(repo)
    assert cli("install-hook").code == 0
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "git").symlink_to(shutil.which("git") or "git")
    (bare / "dvc-cuvis").symlink_to(Path(BIN) / "dvc-cuvis")
    env = {**ENV, "PATH": str(bare)}
    # a broken split staged, the fixed one unstaged: refused
    _stage(repo, texts["broken"], texts["good"])
    r = run("git", "commit", "-qm", "broken", cwd=repo, env=env)
    assert r.returncode == 1, r.stderr
    assert "[DRIFT] universe" in r.stderr and _commits(repo) == 1
    # a good split staged, a broken one in the working tree: committed
    _stage(repo, texts["other"], texts["broken"])
    r = run("git", "commit", "-qm", "rebaked", cwd=repo, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _commits(repo) == 2
    # the broken split gets in by --no-verify; a commit of only a .dvc file and dvc.lock
    # runs the check too, and refuses it
    sh("git", "commit", "-qam", "bypass", "--no-verify", cwd=repo)
    (repo / "data.dvc").write_text("outs:\n- md5: 0123456789abcdef0123456789abcdef.dir\n"
                                   "  path: data\n")
    (repo / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")
    sh("git", "add", "data.dvc", "dvc.lock", cwd=repo)
    r = run("git", "commit", "-qm", "data", cwd=repo, env=env)
    assert r.returncode == 1 and "[DRIFT] universe" in r.stderr, r.stdout + r.stderr
    assert "checking staged split files: data.dvc dvc.lock" in r.stderr
    assert _commits(repo) == 3


def test_a_missing_tool_stops_the_commit(tmp_path: Path) -> None:
    """No git on PATH, or no dvc-cuvis anywhere: the hook refuses with one line naming what
    to install and how to bypass on purpose (never a silent pass)."""
    sh("git", "init", "-q", cwd=tmp_path)
    (tmp_path / "splits.json").write_text("{}\n")
    sh("git", "add", "splits.json", cwd=tmp_path)
    hook = tmp_path / "hook.sh"
    hook.write_text(hook_script(None, str(tmp_path / "gone" / "python")))
    only_git = tmp_path / "bin"
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git") or "git")
    empty = tmp_path / "empty"
    empty.mkdir()
    for path, what in ((empty, "git is not on PATH"), (only_git, "dvc-cuvis is not on PATH")):
        r = subprocess.run(["/bin/sh", str(hook)], cwd=tmp_path, capture_output=True,
                           text=True, env={"PATH": str(path), "HOME": str(tmp_path)})
        lines = [ln for ln in r.stderr.splitlines() if not ln.startswith("dvc-cuvis: checking")]
        assert r.returncode == 2 and len(lines) == 1, r.stderr
        assert what in lines[0] and "commit refused" in lines[0]
        assert "git commit --no-verify" in lines[0]


def test_install_hook_writes_where_git_runs_hooks(tmp_path: Path, cli, monkeypatch) -> None:
    """A linked worktree's commits run the hook installed from it; core.hooksPath is
    refused (another tool's folder) unless --force; a foreign hook is never lost."""
    repo = tmp_path / "repo"
    texts = _split_repo(repo)
    sh("git", "worktree", "add", "-q", str(tmp_path / "wt"), cwd=repo)
    wt = tmp_path / "wt"
    monkeypatch.chdir(wt)
    r = cli("install-hook")
    assert r.code == 0 and r.out == f"installed {repo / '.git' / 'hooks' / 'pre-commit'}\n"
    _stage(wt, texts["broken"], texts["broken"])
    r = run("git", "commit", "-qm", "broken", cwd=wt)
    assert r.returncode == 1 and "[DRIFT] universe" in r.stderr, r.stdout + r.stderr
    sh("git", "config", "core.hooksPath", ".husky", cwd=repo)
    husky = repo / ".husky"
    husky.mkdir()
    (husky / "pre-commit").write_text("#!/bin/sh\nnpx lint-staged\n")
    monkeypatch.chdir(repo)
    r = cli("install-hook")
    assert r.code == 2 and "core.hooksPath is set (.husky)" in r.err and "--force" in r.err
    assert (husky / "pre-commit").read_text() == "#!/bin/sh\nnpx lint-staged\n"
    r = cli("install-hook", "--force")
    assert r.code == 0 and r.out == f"installed {husky / 'pre-commit'}\n", r.err
    assert HOOK_MARK in (husky / "pre-commit").read_text()
    assert (husky / "pre-commit.before-dvc-cuvis").read_text() == "#!/bin/sh\nnpx lint-staged\n"


def test_check_staged_reads_the_split_and_dvc_lock_from_the_index(
        tmp_path: Path, cli, monkeypatch) -> None:
    """`check --staged`: splits.json and dvc.lock as the index holds them (dvc.lock's md5
    of splits.json is the staged file's); an unstaged params file is refused, not ignored."""
    repo = tmp_path / "repo"
    texts = _split_repo(repo)
    md5 = hashlib.md5(texts["other"].encode()).hexdigest()
    lock = (f"schema: '2.0'\nstages:\n  bake:\n    cmd: dvc-cuvis bake\n    outs:\n"
            f"    - path: splits.json\n      md5: {md5}\n")
    (repo / "dvc.lock").write_text(lock)
    sh("git", "add", "dvc.lock", cwd=repo)
    (repo / "dvc.lock").write_text("stages: [\n")  # unreadable, but not staged
    _stage(repo, texts["other"], texts["broken"])
    monkeypatch.chdir(repo)
    r = cli("check", "--staged")
    assert r.code == 0 and "[ok  ] staleness: matches dvc.lock (stages bake)" in r.out, r.out
    assert cli("check").code == 1  # the working tree: the broken split, dvc.lock unreadable
    (repo / "params.yaml").write_text("bake:\n  seed: 0\n")
    sh("git", "add", "params.yaml", cwd=repo)
    (repo / "params.yaml").write_text("bake:\n  seed: 1\n")
    r = cli("check", "--staged")
    assert r.code == 2 and r.err.startswith("dvc-cuvis: error: params.yaml: has unstaged changes")
    assert "git stash --keep-index" in r.err and os.path.exists(repo / "params.yaml")
