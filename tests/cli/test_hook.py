"""The git pre-commit hook's own message: one line, whatever the number of staged files."""

from __future__ import annotations

import subprocess
from pathlib import Path

from dvc_cuvis.cli.hook import hook_script


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
        "ran: -m dvc_cuvis check",
    ]
    # nothing staged that the check reads: silent
    subprocess.run(["git", "rm", "-q", "--cached", "-r", "."], cwd=tmp_path, check=True)
    r = subprocess.run(["sh", str(hook)], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == ""
