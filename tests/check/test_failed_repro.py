"""After a failed ``dvc repro``: the outputs DVC removed are named, with a restore that works.

``dvc repro`` deletes a stage's outputs (all but ``persist: true`` ones) before it runs the
stage's command; when the command fails, dvc.lock keeps the last good run's entry and the
outputs stay deleted.  ``dvc repro`` alone then fails again, so the check says what happened
and the command that brings back the version dvc.lock records; pasted into a shell in a
repository that also holds unrelated committed, staged and unstaged work, it restores the
outputs and touches nothing else.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from pathlib import Path

import pytest

from dvc_cuvis.cli import main
from tests.helpers.repos import copy
from tests.helpers.shell import run, sh

BAKE_OUTS = ("metrics/splits.json", "plots/categories.json", "plots/groups.json",
             "plots/stages.json", "splits.json")
BAKE_CMD = "dvc-cuvis bake --params params.yaml"
MATERIALIZE_CMD = "dvc-cuvis materialize --params params.yaml"


def check(repo: Path) -> tuple[int, str]:
    """``dvc-cuvis check`` in ``repo``, in this process: its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(repo), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check"])
    said = out.getvalue() + err.getvalue()
    assert "Traceback" not in said and "internal error" not in said, said
    return code, said


def with_work(repo: Path) -> dict[str, object]:
    """Unrelated work added to ``repo``: a commit, an unstaged edit of it, a staged new file;
    what must survive a restore."""
    (repo / "notes.md").write_text("v1\n")
    sh("git", "add", "notes.md", cwd=repo)
    sh("git", "commit", "-qm", "notes", cwd=repo)
    (repo / "notes.md").write_text("v1, edited\n")
    (repo / "staged.txt").write_text("staged\n")
    sh("git", "add", "staged.txt", cwd=repo)
    return work(repo)


def work(repo: Path) -> dict[str, object]:
    return {"files": {p: (repo / p).read_bytes() for p in ("notes.md", "staged.txt")},
            "staged": sh("git", "diff", "--cached", "--name-only", cwd=repo),
            "log": sh("git", "log", "--format=%H", cwd=repo)}


def set_param(repo: Path, old: str, new: str) -> bytes:
    """A params value changed (one our verb refuses with exit 2; DVC parses it); the old bytes."""
    params = repo / "params.yaml"
    before = params.read_bytes()
    assert old in before.decode()
    params.write_text(before.decode().replace(old, new))
    return before


def failed_repro(repo: Path, stage: str) -> None:
    """A real ``dvc repro`` that fails at ``stage``, with our verb's exit 2."""
    proc = run("dvc", "repro", cwd=repo)
    assert proc.returncode != 0
    assert f"failed to reproduce '{stage}'" in proc.stdout + proc.stderr, proc.stderr


def paste(repo: Path, command: str) -> None:
    """``command`` pasted into ``bash -c`` in ``repo``."""
    pasted = run("bash", "-c", command, cwd=repo)
    assert pasted.returncode == 0, (command, pasted.stdout, pasted.stderr)


def dvc(repo: Path, command: str) -> None:
    """A ``dvc ...`` line run as its words, by DVC in this process (no quoting in it: the
    shell would pass the same words, as the pasted line of the bake test shows)."""
    assert command.startswith("dvc ") and not set("'\"\\$;&|") & set(command)
    sh(*shlex.split(command), cwd=repo)


@pytest.mark.slow
@pytest.mark.child_process  # dvc repro runs the stage's dvc-cuvis as a child
def test_a_failed_bake_is_restored_by_the_pasted_line(tracked_pipeline: Path,
                                                      tmp_path: Path) -> None:
    """bake refuses its params: DVC has removed splits.json (cache: false, git-tracked) and
    the other outputs; the check names the stage, its command and the one restore."""
    repo = copy(tracked_pipeline, tmp_path / "repo")
    kept = with_work(repo)
    good = set_param(repo, "val_ratio: 0.2", "val_ratio: 1.5")
    failed_repro(repo, "bake")
    assert not any((repo / p).exists() for p in BAKE_OUTS)
    code, said = check(repo)
    assert code == 2, said  # a missing input, as before: bad input
    assert said.count("\n") == 1 and said.startswith("dvc-cuvis: error: splits.json and 4 "
                                                     "other outputs of stage bake are missing")
    assert "the last run of stage bake (command: " + BAKE_CMD + ") failed" in said
    restore, rerun = re.findall(r"`([^`]+)`", said)[1:]  # the first is `dvc repro` explained
    assert restore == "git checkout -- " + " ".join(BAKE_OUTS), said
    assert rerun == "dvc repro"
    paste(repo, restore)
    assert work(repo) == kept
    (repo / "params.yaml").write_bytes(good)
    code, said = check(repo)
    assert code == 0, said
    assert "Data and pipelines are up to date" in sh("dvc", "status", cwd=repo)
    assert work(repo) == kept


@pytest.mark.slow
@pytest.mark.child_process
def test_a_failed_materialize_without_persist_is_restored_from_the_cache_or_the_remote(
        tracked_pipeline: Path, tmp_path: Path) -> None:
    """A materialize stage without ``persist: true``: DVC removes the cached folder; the
    staleness finding (exit 1) restores it with ``dvc checkout``, or ``dvc pull`` where the
    local cache lacks it."""
    repo = copy(tracked_pipeline, tmp_path / "repo")
    dvc_yaml = repo / "dvc.yaml"
    dvc_yaml.write_text(dvc_yaml.read_text().replace(
        "      - materialized:\n          persist: true\n", "      - materialized\n"))
    sh("git", "commit", "-qam", "materialize without persist", cwd=repo)
    kept = with_work(repo)
    good = set_param(repo, "compress: none", "compress: bogus")
    failed_repro(repo, "materialize")
    assert not (repo / "materialized").exists()
    code, said = check(repo)
    assert code == 1, said
    fix = next(line for line in said.splitlines() if "fix: " in line)
    assert ("fix: materialized is missing: `dvc repro` removes a stage's outputs before it "
            "runs the stage, and the last run of stage materialize (command: "
            f"{MATERIALIZE_CMD}) failed or was stopped; `dvc checkout materialized` brings "
            "back the version dvc.lock records (this discards nothing you committed), or fix "
            "the stage's error and rerun `dvc repro`") in fix, said
    no_cache = copy(repo, tmp_path / "no-cache")
    dvc(repo, "dvc checkout materialized")
    assert work(repo) == kept
    (repo / "params.yaml").write_bytes(good)
    assert check(repo)[0] == 0
    shutil.rmtree(no_cache / ".dvc/cache")
    code, said = check(no_cache)
    assert code == 1 and "`dvc pull materialized` brings back the version" in said, said
    dvc(no_cache, "dvc pull materialized")
    (no_cache / "params.yaml").write_bytes(good)
    assert check(no_cache)[0] == 0
    assert work(no_cache) == kept


def test_outputs_removed_as_dvc_repro_removes_them_and_by_hand(tracked_pipeline: Path,
                                                              tmp_path: Path) -> None:
    """One output of bake deleted, the others present: not DVC's removal, the hint stays.
    All of them deleted, as ``dvc repro`` deletes them (the tests above), with git's index
    no longer holding splits.json as dvc.lock records it: the failed run, and no restore
    command, since nothing here holds that version."""
    repo = copy(tracked_pipeline, tmp_path / "repo")
    (repo / "splits.json").unlink()
    code, said = check(repo)
    assert code == 2, said
    assert "splits file not found; run `dvc repro` to create it" in said
    assert "failed or was stopped" not in said
    for p in BAKE_OUTS[:-1]:
        (repo / p).unlink()
    sh("git", "rm", "-q", "--cached", "splits.json", cwd=repo)
    code, said = check(repo)
    assert code == 2, said
    assert ("the last run of stage bake (command: dvc-cuvis bake --params params.yaml) failed "
            "or was stopped; nothing here holds the version dvc.lock records of "
            "splits.json: fix the stage's error and rerun `dvc repro`") in said, said
    assert "checkout" not in said


def test_the_library_check_and_the_guard_say_it_too(tracked_pipeline: Path,
                                                     tmp_path: Path) -> None:
    """``verify()`` (what a DataModule's guard runs) on the split a failed bake removed: the
    same missing-file error class, with the sentence and the restore command."""
    from dvc_cuvis import verify
    from dvc_cuvis.errors import MissingSplitsFileError

    repo = copy(tracked_pipeline, tmp_path / "repo")
    for p in BAKE_OUTS:
        (repo / p).unlink()
    with contextlib.chdir(repo), pytest.raises(MissingSplitsFileError) as err:
        verify("splits.json", "universe.csv")
    said = str(err.value)
    assert "the last run of stage bake (command: " + BAKE_CMD + ") failed" in said, said
    assert "`git checkout -- " + " ".join(BAKE_OUTS) + "` brings back" in said, said
    paste(repo, "git checkout -- " + " ".join(BAKE_OUTS))
    with contextlib.chdir(repo):
        assert verify("splits.json", "universe.csv").ok
