"""diff / log / install-hook on real git repositories with several split versions."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import dumps_splits, load_splits
from dvc_cuvis.model.universe_io import read_universe, write_universe
from tests.helpers.history import universe_of, write_version
from tests.helpers.shell import ENV, run, sh

STAGES3 = ("train", "val", "test")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hist")
    sh("git", "init", "-q", cwd=root)
    (root / "README").write_text("data\n")
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", "init without a split", cwd=root)
    write_version(root, universe_of(20), BakeOptions(seed=0, group_by="source"), "v1", folds=3)
    write_version(root, universe_of(20), BakeOptions(seed=1, group_by="source"), "v2 reseed",
                  folds=3)
    write_version(root, universe_of(24), BakeOptions(seed=1, group_by="source"), "v3 growth",
                  folds=4)
    cfg = json.loads((root / "splits.json").read_text())  # v4: a hand edit
    moved = cfg["train"].pop(0)
    cfg["test"].append(moved)
    (root / "splits.json").write_text(json.dumps(cfg, indent=2) + "\n")
    sh("git", "commit", "-qam", "v4 hand edit", cwd=root)
    return root


def membership(repo: Path, rev: str) -> dict[str, str]:
    """uid -> stage at ``rev`` computed independently of dvc_cuvis.review.history."""
    tmp = repo / ".tmp_rev"
    tmp.mkdir(exist_ok=True)
    for name in ("splits.json", "universe.csv"):
        data = subprocess.run(["git", "show", f"{rev}:{name}"], cwd=repo, capture_output=True,
                              check=True).stdout
        (tmp / name).write_bytes(data)
    res = resolve(load_splits(tmp / "splits.json"), read_universe(tmp / "universe.csv"))
    out = {u: "unassigned" for u in res.universe.uids()}
    for stage in reversed(STAGES3):
        for u in res.uids(stage):
            out[u] = stage
    return out


def expected_transitions(a: dict[str, str], b: dict[str, str]) -> tuple[int, dict[str, int]]:
    t: dict[str, int] = {}
    for u in set(a) | set(b):
        frm, to = a.get(u, "new"), b.get(u, "removed")
        if frm != to:
            t[f"{frm}->{to}"] = t.get(f"{frm}->{to}", 0) + 1
    moved = sum(1 for u in set(a) & set(b) if a[u] != b[u])
    return moved, dict(sorted(t.items()))


@pytest.mark.parametrize(("rev_a", "rev_b"), [("HEAD~3", "HEAD~2"), ("HEAD~2", "HEAD~1"),
                                               ("HEAD~1", "HEAD"), ("HEAD~3", "HEAD")])
def test_diff_json_counts_every_transition(repo: Path, cli, monkeypatch, rev_a, rev_b) -> None:
    monkeypatch.chdir(repo)
    r = cli("diff", rev_a, rev_b, "--json")
    assert r.code == 0, r.err
    got = json.loads(r.out)
    moved, transitions = expected_transitions(membership(repo, rev_a), membership(repo, rev_b))
    assert got["moved"] == moved
    assert got["transitions"] == transitions


def test_growth_shows_new_samples_and_hash_change(repo: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(repo)
    got = json.loads(cli("diff", "HEAD~2", "HEAD~1", "--json").out)
    assert got["universe"]["added"] == 16 and got["universe"]["removed"] == 0
    assert got["universe"]["a"]["hash"] != got["universe"]["b"]["hash"]
    assert sum(v for k, v in got["transitions"].items() if k.startswith("new->")) == 16


def test_text_and_markdown_reports(repo: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(repo)
    text = cli("diff", "HEAD~3", "HEAD~2").out
    assert text.startswith("split diff HEAD~3 -> HEAD~2")
    assert "params:\n  bake.seed: 0 -> 1" in text
    # one cu3s session is one recording: its per-sample line stays in the default summary
    assert "changed samples by recording" in text and "transitions (samples / sources):" in text
    assert "changed samples by source:" in cli("diff", "HEAD~3", "HEAD~2", "--by-sample").out
    md = cli("diff", "HEAD~3", "HEAD~2", "--md").out
    assert md.startswith("### Split diff `HEAD~3` → `HEAD~2`")
    assert "| stage | before | after | Δ |" in md and "| `bake.seed` | `0` | `1` |" in md
    hand = cli("diff", "HEAD~1", "HEAD").out
    assert "moved: 4 sample(s)" in hand and "train->test #0, #1, #2, #3" in hand


def test_workspace_is_the_default_other_end(repo: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(repo)
    got = json.loads(cli("diff", "--json").out)
    assert (got["a"], got["b"], got["moved"]) == ("HEAD", "workspace", 0)
    got = json.loads(cli("diff", "HEAD~1", "--json").out)
    assert got["b"] == "workspace" and got["moved"] == 4


def test_all_lists_every_sample_and_default_truncates(repo: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(repo)
    short = cli("diff", "HEAD~3", "HEAD").out
    full = cli("diff", "HEAD~3", "HEAD", "--all").out
    assert len(full) >= len(short)
    got = json.loads(cli("diff", "HEAD~3", "HEAD", "--json", "--all").out)
    assert got["changed_samples_total"] == len(got["changed_samples"])


def test_fold_diff(repo: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(repo)
    r = cli("diff", "HEAD~3", "HEAD~2", "--fold", "1", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["moved"] >= 0
    r = cli("diff", "HEAD~3", "HEAD~2", "--fold", "3")
    assert r.code == 2 and "splits/fold-3.json does not exist at revision HEAD~3" in r.err


def test_log_lists_split_commits_with_moves(repo: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(repo)
    r = cli("log", "--json")
    assert r.code == 0, r.err
    entries = json.loads(r.out)
    assert [e["subject"] for e in entries] == ["v4 hand edit", "v3 growth", "v2 reseed", "v1"]
    assert entries[-1]["moved"] is None and entries[0]["moved"] == 4
    assert entries[1]["added"] == 16
    moved, _ = expected_transitions(membership(repo, "HEAD~3"), membership(repo, "HEAD~2"))
    assert entries[2]["moved"] == moved
    assert sum(entries[0]["counts"][s] for s in STAGES3) == 24 * 4  # moved, not copied
    text = cli("log", "-n", "2").out.splitlines()
    assert len(text) == 3 and "v4 hand edit" in text[1]


def test_bad_revisions_and_places(repo: Path, cli, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(repo)
    r = cli("diff", "nosuchrev")
    assert r.code == 2 and "unknown revision 'nosuchrev'" in r.err
    r = cli("diff", "HEAD~4", "HEAD")
    assert r.code == 2 and "splits.json does not exist at revision HEAD~4" in r.err
    r = cli("diff", "a", "b", "c")
    assert r.code == 2 and "at most two revisions" in r.err
    monkeypatch.chdir(tmp_path)
    r = cli("diff")
    assert r.code == 2 and "not a git repository" in r.err
    r = cli("log")
    assert r.code == 2 and "not a git repository" in r.err
    shallow = tmp_path / "shallow"
    sh("git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow), cwd=tmp_path)
    monkeypatch.chdir(shallow)
    r = cli("diff", "HEAD~1", "HEAD")
    assert r.code == 2 and "shallow clone" in r.err and "git fetch --unshallow" in r.err
    fresh = tmp_path / "fresh"  # before the first commit: said so, for diff and log alike
    fresh.mkdir()
    sh("git", "init", "-q", cwd=fresh)
    monkeypatch.chdir(fresh)
    for verb in ("diff", "log"):
        r = cli(verb)
        assert r.code == 2 and "this repository has no commit yet" in r.err, (verb, r.err)


@pytest.mark.slow  # git + DVC commands, ~1.3 s
def test_pre_commit_hook_blocks_a_broken_split(repo: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    sh("git", "clone", "-q", str(repo), str(work), cwd=tmp_path)
    sh("dvc-cuvis", "install-hook", cwd=work)
    hook = (work / ".git/hooks/pre-commit").read_text()
    assert "dvc-cuvis check" in hook
    cfg = json.loads((work / "splits.json").read_text())
    cfg["val"].append({"kind": "file_indices", "source": "day0/s00.cu3s", "ids": [99]})
    (work / "splits.json").write_text(json.dumps(cfg, indent=2))
    sh("git", "add", "splits.json", cwd=work)
    proc = subprocess.run(["git", "commit", "-qm", "broken"], cwd=work, env=ENV,
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "selection" in proc.stdout + proc.stderr
    sh("git", "checkout", "HEAD", "--", "splits.json", cwd=work)
    (work / "notes.txt").write_text("unrelated\n")
    sh("git", "add", "notes.txt", cwd=work)
    sh("git", "commit", "-qm", "unrelated change", cwd=work)  # no split staged: hook is quiet
    r = subprocess.run(["dvc-cuvis", "install-hook"], cwd=work, env=ENV, capture_output=True,
                       text=True)
    assert r.returncode == 0
    (work / ".git/hooks/pre-commit").write_text("#!/bin/sh\necho mine\n")
    r = subprocess.run(["dvc-cuvis", "install-hook"], cwd=work, env=ENV, capture_output=True,
                       text=True)
    assert r.returncode == 2 and "is not ours" in r.stderr


@pytest.mark.slow  # git + DVC commands, ~1.3 s
def test_diff_reads_dvc_tracked_universe_through_dvc_api(tmp_path: Path, cli,
                                                         monkeypatch) -> None:
    """A universe.csv tracked by DVC (not in git) is read at each revision via dvc.api."""
    root = tmp_path / "dvcrepo"
    root.mkdir()
    sh("git", "init", "-q", cwd=root)
    sh("dvc", "init", "-q", cwd=root)
    for n, seed in ((10, 0), (12, 0)):
        uni = universe_of(n)
        write_universe(uni, root / "universe.csv")
        sh("dvc", "add", "-q", "universe.csv", cwd=root)
        (b,) = bake(uni, BakeOptions(seed=seed, group_by="source"))
        (root / "splits.json").write_text(dumps_splits(b.config))
        sh("git", "add", "-A", cwd=root)
        sh("git", "commit", "-qm", f"{n} sessions", cwd=root)
    tracked = sh("git", "ls-files", cwd=root).split()
    assert "universe.csv" not in tracked and "universe.csv.dvc" in tracked
    monkeypatch.chdir(root)
    r = cli("diff", "HEAD~1", "HEAD", "--json")
    assert r.code == 0, r.err
    got = json.loads(r.out)
    assert got["universe"]["added"] == 8 and got["moved"] == 0


def test_revisions_sharing_a_universe_parse_it_once(repo: Path, cli, monkeypatch) -> None:
    import dvc_cuvis.review.history as history

    calls: list[str] = []
    real = history.parse_universe_bytes

    def counting(data, **kw):
        calls.append(str(kw.get("path")))
        return real(data, **kw)

    monkeypatch.setattr(history, "parse_universe_bytes", counting)
    monkeypatch.chdir(repo)
    r = cli("diff", "HEAD~3", "HEAD~2", "--json")  # v1 -> v2: a re-bake, same universe.csv
    assert r.code == 0 and len(calls) == 1
    calls.clear()
    r = cli("diff", "HEAD~2", "HEAD~1", "--json")  # v2 -> v3: the universe grew
    assert r.code == 0 and len(calls) == 2
    calls.clear()
    assert cli("log", "--json").code == 0
    assert len(calls) == 2  # four split versions over two universe versions


def _dvc_repo_with_universe(root: Path) -> None:
    """Two commits: splits.json alone (no universe yet), then universe.csv added with DVC."""
    root.mkdir()
    sh("git", "init", "-q", cwd=root)
    sh("dvc", "init", "-q", cwd=root)
    uni = universe_of(10)
    (b,) = bake(uni, BakeOptions(seed=0, group_by="source"))
    (root / "splits.json").write_text(dumps_splits(b.config))
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", "split only", cwd=root)
    write_universe(uni, root / "universe.csv")
    sh("dvc", "add", "-q", "universe.csv", cwd=root)
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", "universe tracked by dvc", cwd=root)


@pytest.mark.slow  # git + DVC commands, ~1.3 s
def test_dvc_tracked_file_absent_at_a_revision(tmp_path: Path, cli, monkeypatch) -> None:
    root = tmp_path / "r"
    _dvc_repo_with_universe(root)
    monkeypatch.chdir(root)
    r = cli("diff", "HEAD~1", "HEAD")
    assert r.code == 2 and "universe.csv does not exist at revision HEAD~1" in r.err, r.err
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1


@pytest.mark.slow  # git + DVC commands, ~1.3 s
def test_dvc_tracked_file_without_data_is_not_reported_absent(tmp_path: Path, cli,
                                                                monkeypatch) -> None:
    """Declared by a .dvc file (or dvc.lock) but its data is gone: a fetch error, not 'absent'."""
    import shutil

    root = tmp_path / "r"
    _dvc_repo_with_universe(root)
    (root / "universe.csv").unlink()
    shutil.rmtree(root / ".dvc/cache")  # a clone that never ran `dvc pull`, no remote
    monkeypatch.chdir(root)
    r = cli("diff", "HEAD", "HEAD")
    assert r.code == 2, r.err
    assert "universe.csv is tracked by DVC at revision HEAD" in r.err, r.err
    assert "does not exist" not in r.err
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1
    # the fetch command it names is one DVC has (its fetch has no --rev): here it fails only
    # for want of a remote, never on its arguments
    (command,) = re.findall(r"`(dvc fetch [^`]+)`", r.err)
    pasted = run("bash", "-c", command, cwd=root)
    assert "unrecognized arguments" not in pasted.stderr + pasted.stdout, pasted.stderr
    assert "No remote provided" in pasted.stderr + pasted.stdout, pasted.stderr
    # the same through a dvc.lock output instead of a .dvc file
    sh("git", "rm", "-q", "universe.csv.dvc", cwd=root)
    (root / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": {"enumerate": {
        "cmd": "true", "outs": [{"path": "universe.csv", "md5": "0" * 32, "size": 1,
                                 "hash": "md5"}]}}}))
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", "lock", cwd=root)
    r = cli("diff", "HEAD", "HEAD")
    assert r.code == 2 and "universe.csv is tracked by DVC at revision HEAD" in r.err, r.err
