"""The git pre-commit hook that runs the drift check on what a commit records
(``dvc-cuvis check --staged``), and its installation where git looks for it.

The hook fails closed: whatever it needs and cannot find stops the commit with one line.
An existing hook that is not ours is never overwritten (refused, or with ``force`` kept
under another name), and a hooks folder another tool manages is refused without ``force``.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.repo.git import Git

__all__ = ["HOOK_MARK", "KEPT", "PATTERNS", "STAGED", "Installed", "hook_script", "install_hook"]

HOOK_MARK = "# installed by dvc-cuvis install-hook"
#: The staged paths that trigger the check (also ``.pre-commit-hooks.yaml``'s ``files``):
#: the split files, the .dvc files and dvc.lock that vouch for their data, and the pipeline.
STAGED = r"(^|/)(splits[^/]*\.json|universe\.csv|dvc\.lock|dvc\.yaml|params\.yaml|[^/]*\.dvc)$"
#: ``STAGED`` as ``case`` patterns of POSIX sh (there ``*`` matches ``/`` too: a few more
#: commits run the check, none fewer), and any name git quotes (odd characters: checked).
PATTERNS = ("splits*.json", "*/splits*.json", "universe.csv", "*/universe.csv", "*.dvc",
            "dvc.lock", "*/dvc.lock", "dvc.yaml", "*/dvc.yaml", "params.yaml", "*/params.yaml",
            '\\"*')
_BYPASS = "or skip the check once with 'git commit --no-verify'"
KEPT = "pre-commit.before-dvc-cuvis"
#: The hook's refusals: one line each, no ``$``, backquote or double quote (sh's "..." text).
_NO_GIT = ("dvc-cuvis: git is not on PATH, so the split check cannot run: commit refused; "
           f"install git, {_BYPASS}")
_GIT_FAILED = ("dvc-cuvis: git cannot list the staged files (see above), so the split check "
               f"cannot run: commit refused; repair the repository, {_BYPASS}")
_GONE = (" is gone and dvc-cuvis is not on PATH), so the split check cannot run: commit "
         f"refused; install dvc-cuvis and run 'dvc-cuvis install-hook' again, {_BYPASS}")



@dataclass(frozen=True)
class Installed:
    """Where the hook was written, and where a previous hook that was not ours was kept."""

    hook: Path
    kept: Path | None = None


def hook_script(params: str | None, python: str) -> str:
    """The hook: check what a commit records, with the interpreter that installed it.

    Git clients and IDEs start hooks with odd PATHs, so the hook needs nothing but sh's
    builtins, git and the installing interpreter (by its absolute path); whatever of these
    is missing stops the commit with one line saying what to do, never lets it through.
    """
    flags = f" --params {shlex.quote(params)}" if params else ""
    py = shlex.quote(python)
    return f"""#!/bin/sh
{HOOK_MARK}
# Runs `dvc-cuvis check --staged` when a commit stages a split file, a universe.csv, a .dvc
# file, dvc.lock, dvc.yaml or params.yaml. Needs git and the Python below, nothing else:
# what is missing stops the commit.
if ! command -v git >/dev/null 2>&1; then
  echo "{_NO_GIT}" >&2
  exit 2
fi
if ! names=$(git -c core.quotePath=false diff --cached --name-only --no-renames); then
  echo "{_GIT_FAILED}" >&2
  exit 2
fi
staged=
while IFS= read -r name; do
  case $name in
    {"|".join(PATTERNS)}) staged="$staged $name" ;;
  esac
done <<DVC_CUVIS_NAMES
$names
DVC_CUVIS_NAMES
[ -z "$staged" ] && exit 0
printf '%s\n' "dvc-cuvis: checking staged split files:$staged" >&2
if [ -x {py} ]; then
  exec {py} -m dvc_cuvis check --staged{flags}
fi
if command -v dvc-cuvis >/dev/null 2>&1; then
  exec dvc-cuvis check --staged{flags}
fi
printf '%s%s%s\n' "dvc-cuvis: not found (" {py} "{_GONE}" >&2
exit 2
"""


def _hooks_dir(git: Git, force: bool) -> Path:
    """Where git runs this repository's hooks; refused (without ``force``) when
    ``core.hooksPath`` hands them to a folder that is not the repository's own."""
    hooks: Path = git.hooks_dir()
    shared = git.config("core.hooksPath")
    if shared and not force:
        raise DvcCuvisError(
            f"core.hooksPath is set ({shared}): git runs the hooks in {hooks}, a folder that "
            "another tool (husky, a shared or global hooks folder) manages and other "
            "repositories may use; add `dvc-cuvis check --staged` to its pre-commit by hand, "
            f"or use --force to write {hooks / 'pre-commit'}")
    return hooks


def _set_aside(hook: Path, force: bool) -> Path | None:
    """A pre-commit hook that is not ours is refused, or with ``force`` kept under
    another name: never overwritten."""
    if not (hook.is_symlink() or hook.exists()):
        return None
    if (hook.is_file() and not hook.is_symlink()
            and HOOK_MARK in hook.read_text(errors="replace")):
        return None  # ours: updated in place
    if not force:
        raise DvcCuvisError(f"{hook} exists and is not ours; add `dvc-cuvis check --staged` "
                            f"to it by hand, or use --force to replace it (it is kept as {KEPT})")
    kept = hook.with_name(KEPT)
    if kept.is_symlink() or kept.exists():
        raise DvcCuvisError(f"{kept} exists already (kept by an earlier --force); move it "
                            "away, then install again")
    hook.rename(kept)
    return kept


def install_hook(folder: Path | str = ".", *, params: str | None = None, force: bool = False,
                 python: str | None = None) -> Installed:
    """Install the pre-commit hook of the repository at ``folder``, so that no commit
    records a split that does not match its data: ``dvc-cuvis install-hook`` as one call.

    Parameters
    ----------
    folder
        A folder inside the git repository (its hooks folder is found through git).
    params
        The params file the hook passes to ``check --staged`` (None: the check's own rule).
    force
        Keep a pre-commit hook that is not ours as ``pre-commit.before-dvc-cuvis`` and
        replace it, and install into a folder ``core.hooksPath`` names (else both refused).
    python
        The interpreter the hook runs dvc-cuvis with (None: this one, ``sys.executable``).

    Returns
    -------
    Installed
        ``hook`` (the file written) and ``kept`` (where a previous hook went, or None).

    Raises
    ------
    DvcCuvisError
        Not a git repository, a hook that is not ours, or a managed hooks folder, without
        ``force``.
    """
    from dvc_cuvis._io import atomic_write_text

    with Git(folder, purpose="install-hook installs into a git repository") as git:
        hooks = _hooks_dir(git, force)
    hook = hooks / "pre-commit"
    kept = _set_aside(hook, force)
    hooks.mkdir(parents=True, exist_ok=True)
    atomic_write_text(hook, hook_script(params, python or sys.executable))
    hook.chmod(0o755)
    return Installed(hook, kept)
