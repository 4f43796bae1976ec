"""The two ways the tests run a command without a fresh interpreter give what a process
gives: DVC's command line in this process (``run("dvc", ...)``) and a forked child."""

from __future__ import annotations

import os
import signal
import sys
import warnings
from pathlib import Path

import pytest

from tests.helpers import forked
from tests.helpers.shell import ENV, dvc_handlers, run, sh

pytestmark = pytest.mark.child_process  # the reference runs are child processes


def _process(*args: str, cwd: Path):  # type: ignore[no-untyped-def]
    """The same ``dvc`` command as a process (``python -m dvc``: what the executable runs)."""
    return run(sys.executable, "-m", "dvc", *args, cwd=cwd)


def _console() -> tuple[object, ...]:
    """What a call must leave as it found: descriptors 1 and 2, the streams, DVC's handlers."""
    return (os.fstat(1).st_ino, os.fstat(2).st_ino, sys.stdout, sys.stderr, os.getcwd(),
            dict(os.environ), sorted((id(h), id(h.stream)) for h in dvc_handlers()))


@pytest.mark.slow  # four dvc processes for reference, ~3 s
def test_dvc_in_this_process_answers_as_the_dvc_process(tmp_path: Path) -> None:
    sh("git", "init", "-q", cwd=tmp_path)
    sh("dvc", "init", "-q", cwd=tmp_path)
    assert (tmp_path / ".dvc" / "config").is_file()
    before = _console()
    for args in (["add", "nowhere"],            # DVC's own error
                 ["nosuchverb"],                # argparse's refusal
                 ["remote", "list"],            # nothing to say, exit 0
                 ["config", "core.nosuch"],     # a configuration error
                 ["status", "--json"]):         # JSON, written past colorama's streams
        here, there = run("dvc", *args, cwd=tmp_path), _process(*args, cwd=tmp_path)
        assert (here.returncode, here.stdout, here.stderr) == (
            there.returncode, there.stdout, there.stderr), args
    assert run("dvc", "add", "nowhere", cwd=tmp_path).returncode != 0
    assert "nowhere" in run("dvc", "add", "nowhere", cwd=tmp_path).stderr
    assert _console() == before


def test_a_stage_dvc_runs_in_this_process_prints_into_its_output(tmp_path: Path) -> None:
    """What DVC's children print (a stage's command) lands in the output after DVC's own
    line for the stage, as a process's output holds it; the environment is the child's while
    DVC runs, and this process's afterwards."""
    sh("git", "init", "-q", cwd=tmp_path)
    sh("dvc", "init", "-q", cwd=tmp_path)
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  hello:\n    cmd: echo from-the-stage-$MARK && echo to-stderr >&2 "
        "&& echo out > o.txt\n    outs: [o.txt]\n")
    before = _console()
    done = run("dvc", "repro", cwd=tmp_path, env={**ENV, "MARK": "m1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.index("Running stage 'hello'") < done.stdout.index("from-the-stage-m1")
    assert done.stderr == "to-stderr\n" and "to-stderr" not in done.stdout.splitlines()
    assert _console() == before


def test_this_process_is_restored_when_dvc_raises(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import dvc.cli

    def boom(args: list[str]) -> int:
        os.environ["LEFT_BEHIND"] = "1"
        print("said before", flush=True)
        raise RuntimeError("boom")

    monkeypatch.setattr(dvc.cli, "main", boom)
    before = _console()
    with pytest.raises(RuntimeError, match="boom"):
        run("dvc", "status", cwd=tmp_path)
    assert _console() == before and "LEFT_BEHIND" not in os.environ


def test_a_forked_python_c_is_a_fresh_main(tmp_path: Path) -> None:
    show = "import os, sys\nprint(os.getcwd(), __name__, sys.argv, sys.path[0] == '')\n"
    ok = forked.python_c(show, tmp_path, ENV, preload=["json"])
    assert ok.returncode == 0 and ok.stdout == f"{tmp_path} __main__ ['-c'] True\n", ok
    missing = forked.python_c("json.dumps(1)\n", tmp_path, ENV, preload=["json"])
    assert missing.returncode == 1 and "NameError: name 'json'" in missing.stderr
    assert forked.python_c("raise SystemExit(3)", tmp_path, ENV).returncode == 3
    assert forked.python_c("raise SystemExit", tmp_path, ENV).returncode == 0
    said = forked.python_c("import os; print(os.environ['X'])", tmp_path, {**ENV, "X": "y"})
    assert said.stdout == "y\n" and "X" not in os.environ
    # this checkout's test modules are this process's, not a user's
    assert "tests.helpers.forked" in sys.modules
    gone = forked.python_c("import tests.helpers.forked", Path("/"), ENV)
    assert gone.returncode == 1 and "ModuleNotFoundError" in gone.stderr, gone
    # Python's warning filters, not pytest's: a warning of __main__ reaches stderr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warned = forked.python_c("import warnings; warnings.warn('w1', DeprecationWarning)",
                                 tmp_path, ENV)
    assert warned.returncode == 0 and "DeprecationWarning: w1" in warned.stderr, warned


def test_a_forked_child_killed_is_a_real_kill(tmp_path: Path) -> None:
    def child() -> int:
        print("before", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        return 0

    r = forked.call(child, tmp_path, ENV, argv=["x"])
    assert r.returncode == -signal.SIGKILL and r.stdout == "before\n"


def test_a_forked_child_past_its_time_is_stopped_with_what_it_started(tmp_path: Path) -> None:
    mark = tmp_path / "grandchild.pid"

    def child() -> int:
        import subprocess
        import time

        mark.write_text(str(subprocess.Popen(["sleep", "60"]).pid))
        time.sleep(60)
        return 0

    import subprocess

    with pytest.raises(subprocess.TimeoutExpired):
        forked.call(child, tmp_path, ENV, argv=["x"], timeout=1)
    pid = int(mark.read_text())
    for _ in range(100):  # the grandchild is killed with its group (a zombie until reaped)
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        except FileNotFoundError:
            break
        if state == "Z":
            break
        import time

        time.sleep(0.02)
    else:
        pytest.fail(f"the grandchild {pid} outlived the timeout")
