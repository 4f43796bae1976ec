"""``dvc-cuvis install-hook``: a git pre-commit hook that runs the drift check."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._settings import EXIT_OK, verb_parser
from dvc_cuvis.errors import DvcCuvisError

HOOK_MARK = "# installed by dvc-cuvis install-hook"
#: The staged paths that trigger the check (also ``.pre-commit-hooks.yaml``'s ``files``).
STAGED = r"(^|/)(splits[^/]*\.json|universe\.csv)$"


def add_parser(sub: Any) -> None:
    """The ``install-hook`` verb's flags."""
    p = verb_parser(sub, "install-hook",
                    "install a git pre-commit hook running `dvc-cuvis check`", section=False)
    p.add_argument("--params", metavar="FILE",
                   help="params file the hook passes to check (default: the check's own rule)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing pre-commit hook that is not ours (default: refuse)")
    p.set_defaults(func=run)


def hook_script(params: str | None, python: str) -> str:
    """The hook: check staged split files with the interpreter that installed it.

    A commit made from a shell without the virtual environment on PATH must still run the
    check, so the hook calls ``python -m dvc_cuvis`` of the installing interpreter, and only
    falls back to ``dvc-cuvis`` on PATH when that interpreter is gone.
    """
    flags = f" --params {shlex.quote(params)}" if params else ""
    py = shlex.quote(python)
    return f"""#!/bin/sh
{HOOK_MARK}
# Runs the drift check when a splits file or a universe.csv is being committed.
staged=$(git diff --cached --name-only --diff-filter=ACMR | grep -E '{STAGED}')
[ -z "$staged" ] && exit 0
echo "dvc-cuvis: checking staged split files: $(printf '%s\n' "$staged" | paste -sd ' ' -)" >&2
if [ -x {py} ]; then
  exec {py} -m dvc_cuvis check{flags}
fi
if command -v dvc-cuvis >/dev/null 2>&1; then
  exec dvc-cuvis check{flags}
fi
echo "dvc-cuvis: not found ({py} is gone and dvc-cuvis is not on PATH); reinstall the hook" >&2
exit 2
"""


def run(args: argparse.Namespace) -> int:
    """Install a git pre-commit hook that runs `dvc-cuvis check` when split files are staged."""
    from dvc_cuvis._io import atomic_write_text
    from dvc_cuvis.review.history import GitTree

    tree = GitTree(".")
    hooks = Path(tree.repo.git_dir) / "hooks"
    hook = hooks / "pre-commit"
    if hook.exists() and HOOK_MARK not in hook.read_text(errors="replace") and not args.force:
        raise DvcCuvisError(f"{hook} exists and is not ours; add `dvc-cuvis check` to it by hand "
                            "or use --force to replace it")
    hooks.mkdir(parents=True, exist_ok=True)
    atomic_write_text(hook, hook_script(args.params, sys.executable))
    hook.chmod(0o755)
    print(f"installed {hook}")
    return EXIT_OK
