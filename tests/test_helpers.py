"""The two ways the tests run a command without a fresh interpreter give what a process
gives: DVC's command line in this process (``run("dvc", ...)``) and a forked child."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tests.helpers import forked
from tests.helpers.shell import ENV, run, sh

pytestmark = pytest.mark.child_process  # the reference runs are child processes


def test_dvc_in_this_process_answers_as_the_dvc_process(tmp_path: Path) -> None:
    sh("git", "init", "-q", cwd=tmp_path)
    sh("dvc", "init", "-q", cwd=tmp_path)
    assert (tmp_path / ".dvc" / "config").is_file()
    here = run("dvc", "add", "nowhere", cwd=tmp_path)
    there = run(sys.executable, "-m", "dvc", "add", "nowhere", cwd=tmp_path)
    assert here.returncode == there.returncode != 0
    assert here.stderr == there.stderr and "nowhere" in here.stderr
    assert here.stdout == there.stdout
    bad = run("dvc", "nosuchverb", cwd=tmp_path)  # argparse's refusal, as the process's
    assert bad.returncode == run(sys.executable, "-m", "dvc", "nosuchverb",
                                 cwd=tmp_path).returncode != 0


def test_a_stage_dvc_runs_in_this_process_prints_into_its_output(tmp_path: Path) -> None:
    """What DVC's children print (a stage's command) lands in the output, after DVC's own
    line for the stage, as a process's output would hold it; the environment is the child's
    while DVC runs, and this process's afterwards."""
    sh("git", "init", "-q", cwd=tmp_path)
    sh("dvc", "init", "-q", cwd=tmp_path)
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  hello:\n    cmd: echo from-the-stage-$MARK >&2 && echo out > o.txt\n"
        "    outs: [o.txt]\n")
    before = dict(os.environ)
    done = run("dvc", "repro", cwd=tmp_path, env={**ENV, "MARK": "m1"})
    assert done.returncode == 0, done.stderr
    assert "from-the-stage-m1" in done.stderr
    assert "Running stage 'hello'" in done.stdout
    assert dict(os.environ) == before and os.getcwd() != str(tmp_path)


def test_a_forked_python_c_is_a_fresh_main(tmp_path: Path) -> None:
    ok = forked.python_c("import os, sys\nprint(os.getcwd(), __name__, sys.argv)\n", tmp_path,
                         {**ENV, "X": "1"}, preload=["json"])
    assert ok.returncode == 0 and ok.stdout == f"{tmp_path} __main__ ['-c']\n", ok
    missing = forked.python_c("json.dumps(1)\n", tmp_path, ENV, preload=["json"])
    assert missing.returncode == 1 and "NameError: name 'json'" in missing.stderr
    assert forked.python_c("raise SystemExit(3)", tmp_path, ENV).returncode == 3
    said = forked.python_c("import os; print(os.environ['X'])", tmp_path, {**ENV, "X": "y"})
    assert said.stdout == "y\n" and "X" not in os.environ


def test_a_forked_child_killed_is_a_real_kill(tmp_path: Path) -> None:
    def child() -> int:
        print("before", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        return 0

    r = forked.call(child, tmp_path, ENV, argv=["x"])
    assert r.returncode == -signal.SIGKILL and r.stdout == "before\n"
