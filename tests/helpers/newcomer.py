"""The README's newcomer workflow, run as written: the repository a user has after day one
(``tests/test_newcomer.py`` checks it, ``tests/test_docs.py`` runs the docs' blocks in copies)."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.repos import BUILDERS, pristine
from tests.helpers.shell import ENV

ROOT = Path(__file__).resolve().parents[2]
GEN = [sys.executable, str(ROOT / "examples/generate.py"), "--sessions", "6", "--frames", "3",
       "--size", "8", "8", "--bands", "4", "--seed", "5"]


def readme_workflow() -> list[str]:
    """The README's newcomer workflow block, one command per line."""
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- newcomer-workflow -->", 1)[1]
    block = block.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def _script(lines: list[str], tmp: Path) -> str:
    """The workflow as one bash script: each line checked for its ``# exit N``, frames
    generated where the README says to put yours."""
    out = ["set -u", 'fail() { echo "README line $1 ended with exit $2, expected $3" >&2; '
           "exit 99; }"]
    for n, line in enumerate(lines, 1):
        cmd, _, comment = line.partition(" #")
        if line.startswith("# later:"):  # a new recording arrives (base files unchanged)
            out.append(f"{' '.join(GEN)} --out {tmp}/gen2 --extra-sessions 1 >/dev/null && "
                       f"cp -rn {tmp}/gen2/npz/. data/npz/")
            continue
        want = int(m.group(1)) if (m := re.search(r"exit (\d)", comment)) else 0
        out.append(f"{cmd.strip()}; rc=$?; [ $rc -eq {want} ] || fail {n} $rc {want}")
        if cmd.startswith("mkdir -p data/npz"):  # "your frames"
            out.append(f"{' '.join(GEN)} --out {tmp}/gen >/dev/null && "
                       f"cp -r {tmp}/gen/npz/. data/npz/")
    return "\n".join(out) + "\n"


def build_day_one(work: Path) -> None:
    """The README workflow, run as written in ``work`` (the repository: ``work/my-dataset``)."""
    proc = subprocess.run(["bash", "-c", _script(readme_workflow(), work)], cwd=work, env=ENV,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (work / "my-dataset" / "dvc.yaml").is_file()


#: The workflow's repository, built once per test session (test_docs runs the docs' commands
#: in copies of it too); its name follows the README block, so an edited block builds anew.
NEWCOMER = "newcomer-" + hashlib.sha256("\n".join(readme_workflow()).encode()).hexdigest()[:10]
BUILDERS.setdefault(NEWCOMER, build_day_one)


def newcomer_repo(factory: pytest.TempPathFactory) -> Path:
    """The README workflow's repository after its last line (never modify it: copy it)."""
    return pristine(NEWCOMER, factory.getbasetemp() / "repos") / "my-dataset"
