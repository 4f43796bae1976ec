"""Every command a ``fix:`` line shows works when pasted, as a whole step.

For each drift state the check can report, a real repository is put in that state (a copy
of a pipeline built once per session), ``dvc-cuvis check`` runs (its entry point, in this
process; from a subfolder, as a child process as a user runs it), every
backticked command of its fix lines is pasted into ``bash -c`` in a fresh copy of that
state, on its own, and ``dvc-cuvis check`` must then pass.  The commands each state prints
are pinned too, so a state whose fix lines lost their commands fails as well.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.cli import main
from tests.helpers.repos import copy
from tests.helpers.shell import run, sh

pytestmark = [pytest.mark.slow, pytest.mark.child_process]  # the pasted commands are children

FRAME = "data/npz/day1_line-a_s01/frame_0000.npz"
OTHER = "data/npz/day1_line-a_s01/frame_0001.npz"


def fix_commands(out: str) -> list[str]:
    """The backticked commands of the report's ``fix:`` lines, in order, each once."""
    found: list[str] = []
    for line in out.splitlines():
        text = line.strip()
        if text.startswith("fix: "):
            found += [c for c in re.findall(r"`([^`]+)`", text) if c not in found]
    return found


def check(repo: Path) -> tuple[int, str]:
    """``dvc-cuvis check`` in ``repo`` (the command's entry point, in this process: the
    pasted commands are the child processes here): its exit code and report."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(repo), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check"])
    said = err.getvalue()
    assert "Traceback" not in said and "internal error" not in said, said
    return code, out.getvalue()


def edit_frame(repo: Path) -> None:
    """The frame rewritten with other (still valid) content: a modified frame."""
    path = repo / FRAME
    with np.load(path) as z:
        members = {k: z[k] for k in z.files}
    members["cube"] = members["cube"] + 1
    with path.open("wb") as fh:
        np.savez(fh, **members)


def delete_frame(repo: Path) -> None:
    (repo / FRAME).unlink()


def add_frame(repo: Path) -> None:
    shutil.copy(repo / FRAME, repo / "data/npz/day1_line-a_s01/frame_0099.npz")


def remove_session(repo: Path) -> None:
    shutil.rmtree(repo / "data/npz/day1_line-a_s01")


def edit_params(repo: Path) -> None:
    params = repo / "params.yaml"
    params.write_text(params.read_text().replace("seed: 0", "seed: 7"))


def corrupt_lock(repo: Path) -> None:
    (repo / "dvc.lock").write_text("stages: [\n")


def unpin(repo: Path) -> None:
    """The split pinned to another universe (a pin mismatch)."""
    doc = json.loads((repo / "splits.json").read_text())
    doc["universe_hash"] = "0" * 64
    (repo / "splits.json").write_text(json.dumps(doc, indent=2) + "\n")


def hand_edit_md5(repo: Path) -> None:
    """One md5 in universe.csv edited by hand: the data file is as enumerate saw it."""
    text = (repo / "universe.csv").read_text()
    row = next(line for line in text.splitlines() if FRAME in line)
    md5 = row.split(",")[5]
    (repo / "universe.csv").write_text(text.replace(md5, md5[:-4] + "0000"))


def partial_selector(repo: Path) -> None:
    doc = json.loads((repo / "splits.json").read_text())
    doc["val"].append({"kind": "files", "paths": ["npz/nowhere/frame_0000.npz"]})
    (repo / "splits.json").write_text(json.dumps(doc, indent=2) + "\n")


#: state -> (the pipeline it starts from, what breaks it, the commands its fix lines show)
STATES: dict[str, tuple[str, Callable[[Path], None], list[str]]] = {
    "modified frame, DVC tracks the data": (
        "tracked", edit_frame, ["dvc repro", f"dvc checkout --force {FRAME}"]),
    "missing frame, DVC tracks the data": (
        "tracked", delete_frame, ["dvc repro", f"dvc checkout {FRAME}"]),
    "removed session, DVC tracks the data": (
        "tracked", remove_session, ["dvc repro", f"dvc checkout {FRAME} {OTHER}"]),
    "added frame": ("tracked", add_frame, ["dvc repro"]),
    "edited params": ("tracked", edit_params, ["dvc repro"]),
    "unreadable dvc.lock in git": (
        "tracked", corrupt_lock, ["git checkout -- dvc.lock", "rm dvc.lock && dvc repro"]),
    "pin mismatch": ("tracked", unpin, ["dvc repro"]),
    "partial selector": ("tracked", partial_selector, ["dvc repro"]),
    "hand-edited md5 in universe.csv": ("tracked", hand_edit_md5, ["dvc repro"]),
    "modified frame, untracked data": ("untracked", edit_frame, ["dvc repro"]),
    "unreadable dvc.lock, not in git": (
        "untracked", corrupt_lock, ["rm dvc.lock && dvc repro"]),
}


@pytest.fixture
def bases(npz_pipeline: Path, tracked_pipeline: Path) -> dict[str, Path]:
    return {"tracked": tracked_pipeline, "untracked": npz_pipeline}


@pytest.mark.parametrize("state", list(STATES))
def test_each_fix_command_works_when_pasted(state: str, bases: dict[str, Path],
                                            tmp_path: Path) -> None:
    base, breaks, expected = STATES[state]
    broken = copy(bases[base], tmp_path / "broken")
    breaks(broken)
    code, out = check(broken)
    assert code == 1, out
    commands = fix_commands(out)
    assert sorted(commands) == sorted(expected), out
    for k, command in enumerate(commands):
        repo = copy(broken, tmp_path / f"paste{k}")
        pasted = run("bash", "-c", command, cwd=repo)
        assert pasted.returncode == 0, (command, pasted.stdout, pasted.stderr)
        code, after = check(repo)
        assert code == 0, (command, after)


def test_a_partial_selector_outside_a_pipeline(tmp_path: Path) -> None:
    """No DVC, no params: the fix is the bake that keeps assignments, with the real paths."""
    from dvc_cuvis.model.universe_io import read_universe

    (tmp_path / "universe.csv").write_text(
        "source,index\n" + "".join(f"s{k}.cu3s,0\n" for k in range(6)))
    split = {"train": [{"kind": "files", "paths": ["s0.cu3s", "s1.cu3s", "s2.cu3s", "gone.cu3s"]}],
             "val": [{"kind": "files", "paths": ["s3.cu3s"]}],
             "test": [{"kind": "files", "paths": ["s4.cu3s", "s5.cu3s"]}],
             "universe_hash": read_universe(tmp_path / "universe.csv").hash}
    (tmp_path / "splits.json").write_text(json.dumps(split))
    code, out = check(tmp_path)
    assert code == 1, out
    (command,) = fix_commands(out)
    assert command == ("dvc-cuvis bake --universe universe.csv --base splits.json --out "
                       "splits.json --allow-removed")
    sh("bash", "-c", command, cwd=tmp_path)
    code, out = check(tmp_path)
    assert code == 0, out


def test_a_clone_that_has_not_pulled_is_fixed_by_its_fix_line(fresh_clone: Path) -> None:
    code, out = check(fresh_clone)
    assert code == 1, out
    assert fix_commands(out) == ["dvc pull"], out
    sh("bash", "-c", "dvc pull", cwd=fresh_clone)
    assert check(fresh_clone)[0] == 0


def test_the_summaries_pull_pasted_keeps_unrelated_work(fresh_clone: Path) -> None:
    """The leakage checks' note in a clone names ``dvc pull materialized``; pasted in a
    repository holding a commit and uncommitted edits of its own, it brings the summaries
    and touches nothing else."""
    (fresh_clone / "notes.md").write_text("committed\n")
    sh("git", "add", "notes.md", cwd=fresh_clone)
    sh("git", "commit", "-qm", "unrelated work", cwd=fresh_clone)
    (fresh_clone / "notes.md").write_text("committed\nand an edit not committed\n")
    (fresh_clone / "draft.txt").write_text("untracked\n")
    r = run("dvc-cuvis", "check", "--json", cwd=fresh_clone)
    note = json.loads(r.stdout)["checks"]["constraints"]["details"]["spectra"]["missing_summaries"]
    assert note["fix"] == "dvc pull materialized", note
    sh("bash", "-c", note["fix"], cwd=fresh_clone)
    assert (fresh_clone / "materialized/summaries").is_dir()
    r = run("dvc-cuvis", "check", "--json", cwd=fresh_clone)
    spectra = json.loads(r.stdout)["checks"]["constraints"]["details"]["spectra"]
    assert "missing_summaries" not in spectra and spectra["summaries"] == "materialized"
    assert (fresh_clone / "notes.md").read_text() == "committed\nand an edit not committed\n"
    assert (fresh_clone / "draft.txt").read_text() == "untracked\n"
    assert run("git", "log", "-1", "--format=%s", cwd=fresh_clone).stdout.strip() == (
        "unrelated work")


def test_without_a_remote_no_pull_is_offered(fresh_clone: Path) -> None:
    """``dvc pull`` would fail here: the fix says what to configure, in words."""
    sh("dvc", "remote", "remove", "store", cwd=fresh_clone)
    code, out = check(fresh_clone)
    assert code == 1 and "not pulled" in out, out
    assert fix_commands(out) == [], out
    assert "dvc remote add -d NAME URL" in out
    assert run("bash", "-c", "dvc pull", cwd=fresh_clone).returncode != 0  # indeed refused


def test_fix_commands_run_from_a_subfolder(bases: dict[str, Path], tmp_path: Path) -> None:
    """From a subfolder the commands go to the repository first (``cd ... &&``)."""
    broken = copy(bases["tracked"], tmp_path / "broken")
    edit_frame(broken)
    r = run("dvc-cuvis", "check", cwd=broken / "data")
    assert r.returncode == 1, r.stdout + r.stderr
    commands = fix_commands(r.stdout)
    assert sorted(commands) == ["cd .. && dvc checkout --force " + FRAME, "cd .. && dvc repro"]
    for k, command in enumerate(commands):
        repo = copy(broken, tmp_path / f"paste{k}")
        pasted = run("bash", "-c", command, cwd=repo / "data")
        assert pasted.returncode == 0, (command, pasted.stderr)
        assert check(repo)[0] == 0, command


def test_a_clone_checked_from_a_subfolder_is_told_to_pull(fresh_clone: Path) -> None:
    """DVC reads a relative path from the folder it runs in: the check asks it from the root."""
    (fresh_clone / "notes").mkdir()
    r = run("dvc-cuvis", "check", cwd=fresh_clone / "notes")
    assert r.returncode == 1 and "[PULL] content: 8 frames not pulled" in r.stdout, r.stdout
    assert fix_commands(r.stdout) == ["cd .. && dvc pull"]
    sh("bash", "-c", "cd .. && dvc pull", cwd=fresh_clone / "notes")
    assert check(fresh_clone)[0] == 0



# -- the door's restore lines, with unrelated work in the repository ---------------------------

CATEGORIES = "data/npz/categories.json"


def flip(path: Path) -> None:
    """One byte of the frame's cube flipped (its zip CRC fails): a damaged frame."""
    from tests.helpers.files import sneaky_edit

    path.chmod(0o644)
    sneaky_edit(path)
    os.utime(path)


def rename_category(repo: Path, old: str, new: str) -> None:
    path = repo / CATEGORIES
    path.write_text(path.read_text().replace(f'"{old}"', f'"{new}"'))


@pytest.fixture(scope="module")
def with_work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tracked pipeline with a committed category rename (run and committed), an
    uncommitted edit of a committed file and a staged new file."""
    from tests.helpers.repos import pristine

    base = pristine("tracked-npz-pipeline", tmp_path_factory.getbasetemp() / "repos")
    repo = copy(base, tmp_path_factory.mktemp("work") / "repo")
    rename_category(repo, "scratch", "scrape")
    (repo / "notes.md").write_text("v1\n")
    sh("dvc", "repro", "-q", cwd=repo)
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-qm", "rename scratch -> scrape", cwd=repo)
    (repo / "notes.md").write_text("v1, edited\n")  # uncommitted
    (repo / "staged.txt").write_text("staged\n")
    sh("git", "add", "staged.txt", cwd=repo)
    return repo


def work(repo: Path) -> dict[str, object]:
    """What must survive a restore: files, the index, the commits."""
    return {"files": {p: (repo / p).read_bytes() for p in (CATEGORIES, "notes.md",
                                                           "staged.txt")},
            "staged": sh("git", "diff", "--cached", "--name-only", cwd=repo),
            "log": sh("git", "log", "--format=%H", cwd=repo)}


def enumerate_by_hand(repo: Path) -> str:
    """``dvc-cuvis enumerate`` run by hand in ``repo`` (in this process): its stderr."""
    err = io.StringIO()
    with contextlib.chdir(repo), contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        code = main(["enumerate", "--params", "params.yaml"])
    assert code == 2, err.getvalue()
    return err.getvalue()


def paste_restore(repo: Path, err: str, expected: str, *, repro: bool = False) -> None:
    """The restore line's one command pasted into ``bash -c``: it is ``expected``, the
    unrelated work is intact, and (after ``dvc repro`` where the stage had failed) the check
    passes."""
    assert "get the last good data back (this overwrites the damaged files and nothing else" \
        in err, err
    (command,) = re.findall(r"`([^`]+)`", err)
    assert command == expected, err
    kept = work(repo)
    pasted = run("bash", "-c", command, cwd=repo)
    assert pasted.returncode == 0, (command, pasted.stdout, pasted.stderr)
    assert work(repo) == kept
    if repro:  # "then run enumerate again": under dvc repro, the pipeline
        assert run("dvc", "repro", "-q", cwd=repo).returncode == 0
        assert work(repo) == kept
    assert check(repo)[0] == 0


def test_the_door_restores_a_frame_damaged_in_the_work_tree(with_work: Path,
                                                            tmp_path: Path) -> None:
    """enumerate run by hand: the .dvc file as it is records the intact bytes."""
    repo = copy(with_work, tmp_path / "repo")
    flip(repo / FRAME)
    paste_restore(repo, enumerate_by_hand(repo), f"dvc checkout --force {FRAME}")


def test_the_door_restores_a_frame_dvc_repro_committed(with_work: Path, tmp_path: Path) -> None:
    """Under ``dvc repro`` the .dvc file records the damage: HEAD's bytes, for that file."""
    repo = copy(with_work, tmp_path / "repo")
    flip(repo / FRAME)
    proc = run("dvc", "repro", cwd=repo)
    assert proc.returncode != 0
    paste_restore(repo, proc.stdout + proc.stderr,
                  f"dvc get . {FRAME} --rev HEAD -o {FRAME} --force", repro=True)


def test_the_door_restores_damage_committed_before_later_work(with_work: Path,
                                                              tmp_path: Path) -> None:
    """Damage committed, then later work committed to the same .dvc file (a description):
    the restore names the commit before the damage, for that file alone; the later work
    stays (reverting the .dvc file, as the old line did, would have lost it)."""
    repo = copy(with_work, tmp_path / "repo")
    intact = sh("git", "rev-parse", "HEAD", cwd=repo).strip()
    flip(repo / FRAME)
    sh("dvc", "add", "-q", "data/npz", cwd=repo)
    sh("git", "commit", "-qm", "damage, by mistake", "--", "data/npz.dvc", cwd=repo)
    dvc_file = repo / "data/npz.dvc"
    dvc_file.write_text(dvc_file.read_text().replace("outs:\n- ", "outs:\n- desc: line a\n  "))
    sh("git", "commit", "-qm", "describe the data", "--", "data/npz.dvc", cwd=repo)
    described = dvc_file.read_bytes()
    paste_restore(repo, enumerate_by_hand(repo),
                  f"dvc get . {FRAME} --rev {intact[:12]} -o {FRAME} --force")
    assert dvc_file.read_bytes() == described


def test_a_damaged_frame_never_added_has_nothing_to_restore_from(with_work: Path,
                                                                 tmp_path: Path) -> None:
    repo = copy(with_work, tmp_path / "repo")
    new = "data/npz/day1_line-a_s01/frame_0099.npz"
    shutil.copy(repo / FRAME, repo / new)
    flip(repo / new)
    err = enumerate_by_hand(repo)
    assert "`" not in err, err  # no command: nothing DVC or git holds is that frame
    assert (f"{new}: never added to DVC (data/npz.dvc), so there is nothing to restore "
            "from: replace it with a good copy (or remove it)") in err
