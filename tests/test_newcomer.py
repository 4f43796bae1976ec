"""A newcomer's first day: the README's workflow in a fresh git + DVC repo, then each mistake.

The commands are read from the README (the fenced block after ``<!-- newcomer-workflow -->``)
and run in order; a ``# exit N`` comment is the exit code that line must end with. Then every
mistake a new user makes is made on purpose, asserting the exit code and the message.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers import forked
from tests.helpers.newcomer import newcomer_repo
from tests.helpers.shell import ENV

ROOT = Path(__file__).resolve().parents[1]
@pytest.fixture(scope="module")
def day_one(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return newcomer_repo(tmp_path_factory)


def run(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), cwd=repo, env=env or ENV, capture_output=True, text=True)


@pytest.mark.slow
def test_readme_workflow_runs_as_written(day_one: Path) -> None:
    log = run(day_one, "git", "log", "--format=%s").stdout.split("\n")
    assert log[:2] == ["New recording", "Split pipeline"]
    assert (day_one / "data/npz.dvc").is_file()  # init tracked the raw data
    params = yaml.safe_load((day_one / "params.yaml").read_text())
    assert params["bake"]["categories"] == "metrics/universe.json"  # names wired
    assert "categories" in json.loads((day_one / "metrics/universe.json").read_text())
    splits = json.loads((day_one / "metrics/splits.json").read_text())
    assert all(splits["stages"][s]["samples"] > 0 for s in ("train", "val", "test"))
    assert "Split diff" in (day_one.parent / "split-diff.md").read_text()
    assert run(day_one, "dvc-cuvis", "check").returncode == 0
    # the final `git add -A` commits no stray file: no PR comment, no report, no DVC scratch
    assert run(day_one, "git", "status", "--porcelain").stdout == ""
    tracked = run(day_one, "git", "ls-files").stdout.split()
    stray = [p for p in tracked if p.endswith((".md", ".html")) or p.startswith(".dvc/tmp")]
    assert stray == [], stray


def test_init_prints_the_readme_next_steps(tmp_path: Path) -> None:
    from dvc_cuvis.repo.project import NEXT_STEPS

    r = run(tmp_path, "dvc-cuvis", "init", "--format", "npz", "--root", "data/npz")
    assert r.returncode == 2 and "git init && dvc init" in r.stderr  # refused, not a note
    assert not (tmp_path / "dvc.yaml").exists()
    run(tmp_path, "git", "init", "-q")
    run(tmp_path, "dvc", "init", "-q")
    r = run(tmp_path, "dvc-cuvis", "init", "--format", "npz", "--root", "data/npz")
    assert r.returncode == 0 and NEXT_STEPS in r.stdout
    readme = (ROOT / "README.md").read_text()
    for line in NEXT_STEPS.splitlines()[1:]:
        assert line.split("#")[0].strip() in readme


@pytest.fixture
def repo(day_one: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(day_one, copy, symlinks=True)
    return copy


@pytest.mark.slow  # builds a repository of its own: several seconds
@pytest.mark.parametrize("seed", [0, 7])
def test_few_recordings_never_bake_an_empty_stage(repo: Path, seed: int) -> None:
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["bake"]["seed"] = seed
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    r = run(repo, "dvc-cuvis", "bake")
    assert r.returncode == 0, r.stderr
    counts = dict(kv.split("=") for kv in r.stdout.split()[1:4])
    assert all(int(v) > 0 for v in counts.values()), r.stdout


@pytest.mark.slow  # builds a repository of its own: several seconds
def test_a_params_typo_is_an_error(repo: Path) -> None:
    text = (repo / "params.yaml").read_text().replace("  val_ratio: 0.2", "  val_ratoi: 0.3")
    (repo / "params.yaml").write_text(text)
    for verb in ("check", "bake", "resolve"):
        r = run(repo, "dvc-cuvis", verb)
        assert r.returncode == 2
        assert "unknown key 'val_ratoi' in section 'bake'; did you mean 'val_ratio'?" in r.stderr


@pytest.mark.slow  # builds a repository of its own: several seconds
def test_an_abbreviated_flag_is_refused(repo: Path) -> None:
    r = run(repo, "dvc-cuvis", "export", "--to", "glovita", "--out", "g.json")
    assert r.returncode == 2 and "did you mean --out-dir?" in r.stderr
    assert not (repo / "g.json").exists()
    assert run(repo, "dvc-cuvis", "export", "--to", "glovita", "--out-dir", "gv").returncode == 0


@pytest.mark.slow
def test_a_deleted_frame_is_restored_by_the_checks_own_fix(repo: Path) -> None:
    frame = sorted((repo / "data/npz").rglob("frame_*.npz"))[0]
    frame.unlink()
    r = run(repo, "dvc-cuvis", "check")
    assert r.returncode == 1 and "dvc checkout" in r.stdout
    assert run(repo, "dvc", "checkout").returncode == 0  # works: init tracked the data
    assert frame.is_file()
    assert run(repo, "dvc-cuvis", "check").returncode == 0


@pytest.mark.slow  # builds a repository of its own: several seconds
def test_the_hook_runs_from_a_shell_without_the_venv(repo: Path) -> None:
    bare = {**ENV, "PATH": "/usr/local/bin:/usr/bin:/bin"}
    assert shutil.which("dvc-cuvis", path=bare["PATH"]) is None
    doc = json.loads((repo / "splits.json").read_text())
    doc["val"].append({"kind": "files", "paths": ["nowhere/x.npz"]})
    (repo / "splits.json").write_text(json.dumps(doc, indent=2))
    run(repo, "git", "add", "splits.json")
    r = run(repo, "git", "commit", "-qm", "broken split", env=bare)
    assert r.returncode != 0 and "not found" not in r.stderr
    assert "selection" in r.stdout + r.stderr


@pytest.mark.slow
def test_every_verb_works_with_its_defaults(repo: Path) -> None:
    outputs = {p: p.read_bytes() for p in (repo / "report.html", repo / "metrics/check.json")}
    r = run(repo / "data", "dvc-cuvis", "report", "--base", "HEAD~1")  # from a subfolder too
    assert r.returncode == 0, r.stderr
    assert (repo / "data/split-report.html").is_file()
    for verb in (["resolve"], ["diff"], ["log"], ["check"]):
        assert run(repo, "dvc-cuvis", *verb).returncode == 0, verb
    # a plain check that fails (new data) is still read-only for the pipeline's outputs
    src = next((repo / "data/npz").glob("*/frame_0000.npz"))
    shutil.copy(src, src.with_name("frame_0999.npz"))
    assert run(repo, "dvc-cuvis", "check").returncode == 1
    assert {p: p.read_bytes() for p in outputs} == outputs  # interactive runs wrote no output
    assert "report" not in run(repo, "dvc", "status").stdout


@pytest.mark.slow
def test_diff_shows_a_reprocessed_frame(repo: Path) -> None:
    frame = sorted((repo / "data/npz").rglob("frame_*.npz"))[0]
    data = bytearray(frame.read_bytes())
    data[-30] ^= 0x01  # a re-processed frame: same sample, new bytes
    frame.write_bytes(bytes(data))
    assert run(repo, "dvc", "add", "data/npz").returncode == 0
    assert run(repo, "dvc", "repro").returncode == 0
    r = run(repo, "dvc-cuvis", "diff", "--json")
    assert json.loads(r.stdout)["content_changed"]["total"] == 1
    assert "content changed: 1 sample(s)" in run(repo, "dvc-cuvis", "diff").stdout


@pytest.mark.slow
def test_a_partial_selector_fails_resolve_and_check_alike(repo: Path) -> None:
    doc = json.loads((repo / "splits.json").read_text())
    sel = doc["test"][0]
    if sel["kind"] == "file_indices":
        sel["ids"] = [*sel["ids"], 999]
    else:
        sel["paths"] = [*sel["paths"], "nowhere/x.npz"]
    (repo / "splits.json").write_text(json.dumps(doc, indent=2))
    r1, r2 = run(repo, "dvc-cuvis", "resolve"), run(repo, "dvc-cuvis", "check")
    assert r1.returncode == 1 and r2.returncode == 1
    assert r1.stderr.count("requested") == 1  # the partial match is printed once
    assert "selection" in r2.stdout and "match only partly" in r2.stdout
    assert run(repo, "dvc-cuvis", "resolve", "--allow-partial").returncode == 0


@pytest.mark.slow  # builds a repository of its own: several seconds
def test_help_describes_every_verb(repo: Path) -> None:
    r = run(repo, "dvc-cuvis", "--help")
    for verb in ("init", "enumerate", "bake", "resolve", "materialize", "check", "diff", "log",
                 "report", "export", "install-hook"):
        assert re.search(rf"^\s+{verb}\s+\S", r.stdout, re.M) or f"{verb}\n" in r.stdout, verb
    assert "exit codes" in r.stdout
    assert os.environ.get("PATH") is not None


@pytest.mark.slow
def test_the_readme_guard_snippet_runs_as_written(repo: Path) -> None:
    text = (ROOT / "README.md").read_text().split("<!-- guard-snippet", 1)[1]
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    # in a child forked from this process, torch imported once (tests/helpers/forked.py)
    r = forked.python_c(code, repo, ENV, preload=forked.installed())
    assert r.returncode == 0, r.stderr[-2000:]
    # it writes nothing the pipeline or git tracks
    assert run(repo, "git", "status", "--porcelain").stdout == ""
    status = run(repo, "dvc", "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout or "{}") == {}, status.stdout
    # and it refuses a tampered pin before training
    doc = json.loads((repo / "materialized/splits.json").read_text())
    doc["universe_hash"] = "0" * 64
    (repo / "materialized/splits.json").write_text(json.dumps(doc))
    r = forked.python_c(code, repo, ENV, preload=forked.installed())
    assert r.returncode != 0 and "DriftError" in r.stderr


def test_the_pre_commit_framework_hook_is_declared(tmp_path: Path) -> None:
    """`.pre-commit-hooks.yaml`: users add the check by repository URL (hook id below)."""
    import tomllib

    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "dvc-cuvis-check" and hook["language"] == "python"
    assert hook["pass_filenames"] is False
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert hook["entry"].split()[0] in scripts  # the entry is our console script
    files = re.compile(hook["files"])
    for staged in ("splits.json", "example/splits.json", "universe.csv", "a/b/universe.csv",
                   "splits-v2.json", "data.dvc", "a/data.dvc", "dvc.lock", "a/dvc.lock",
                   "params.yaml", "dvc.yaml"):
        assert files.search(staged), staged
    for other in ("README.md", "universe.csv.bak", "splits.json/x", "notes.dvc.txt"):
        assert not files.search(other), other
    # the plain git hook triggers on the same pattern (as sh's case patterns, grep-free)
    from dvc_cuvis.repo.hooks import PATTERNS, STAGED, hook_script

    assert hook["files"] == STAGED and hook["entry"] == "dvc-cuvis check --staged"
    assert f"    {'|'.join(PATTERNS)}) " in hook_script(None, "py")
