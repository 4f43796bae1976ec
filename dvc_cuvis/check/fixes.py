"""The ``fix:`` of a failed finding: commands that work when pasted, as a whole step.

Every command a fix shows in backticks runs as printed, from the folder the check ran
in (or, where the reader cannot know that folder — the cuvis-ai plugin under the GUI's gRPC
server — from anywhere: every path absolute), and fixes what its finding names: ``dvc
repro`` where a pipeline produces the files, ``dvc checkout --force PATH...`` only for files
DVC can restore from its cache, naming each file it overwrites (never a checkout of
everything) and saying, before the command, that it discards their edits, ``dvc pull`` only
where a DVC remote is configured.  A step that needs values nobody knows here (the options
universe.csv was enumerated with, a remote's URL) is said in words, never shown as a
command.  What the repository holds is asked only when a finding failed.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

from dvc_cuvis.paths.roots import ancestors, dvc_root

__all__ = ["Workspace"]

class Workspace:
    """Where the fix commands run: the user's folder, and the repository holding the files."""

    def __init__(self, anchor: Path | None, cwd: Path | None = None,
                 absolute: bool = False) -> None:
        """``anchor``: the folder of universe.csv (or of the split); None for in-memory inputs.
        ``absolute``: name every path absolutely (the reader is not in this process's folder)."""
        self.anchor = anchor.resolve() if anchor is not None else None
        self.cwd = (cwd or Path.cwd()).resolve()
        self.absolute = absolute

    @cached_property
    def root(self) -> Path | None:
        """The DVC repository holding the files (None outside one)."""
        return dvc_root(self.anchor) if self.anchor is not None else None

    @cached_property
    def pipeline(self) -> Path | None:
        """The folder of the dvc.yaml whose stages produce the files (None without one)."""
        if self.anchor is None or self.root is None:
            return None
        for folder in ancestors(self.anchor):
            if (folder / "dvc.yaml").is_file():
                return folder
            if folder == self.root:
                break
        return None

    @cached_property
    def pull(self) -> str | None:
        """``dvc pull`` as it works here, or None where no remote is configured."""
        if self.root is None:
            return None
        from dvc_cuvis.repo.pull import pull_command

        return pull_command(self.root)

    def rel(self, path: Path | str, start: Path | None = None) -> str:
        """``path`` as the shell in ``start`` (default: the user's folder) names it."""
        if start is None and self.absolute:
            return Path(path).resolve().as_posix()
        return Path(os.path.relpath(Path(path).resolve(), start or self.cwd)).as_posix()

    def at(self, folder: Path, command: str) -> str:
        """``command`` run in ``folder``, from the user's folder."""
        if folder == self.cwd and not self.absolute:
            return command
        return f"cd {shlex.quote(self.rel(folder))} && {command}"

    def repro(self) -> str | None:
        """``dvc repro`` of the pipeline, or None without one."""
        return self.at(self.pipeline, "dvc repro") if self.pipeline is not None else None

    def restorable(self, files: Sequence[Path]) -> bool:
        """True when DVC can put each of ``files`` back from its local cache."""
        if self.root is None or not files:
            return False
        from dvc_cuvis.repo.pull import restorable

        return restorable(self.root, [self.rel(f, self.root) for f in files])

    def git_tracks(self, path: Path) -> bool:
        """True when git tracks ``path`` (so ``git checkout`` restores it)."""
        try:
            from dvc_cuvis.repo.git import Git

            with Git(path.parent) as git:
                return git.tracks(os.path.relpath(path.resolve(), git.top.resolve()))
        except Exception:  # no git, or no repository here: nothing git can restore
            return False

    # -- the fix of each finding --------------------------------------------------------

    def rebake(self, splits: Path | None) -> str:
        """Re-enumerate and re-bake (the universe check)."""
        repro = self.repro()
        if repro is not None:
            return f"re-enumerate and re-bake: `{repro}`"
        base = self.rel(splits) if splits is not None else "the old splits.json"
        return ("re-enumerate the data with the options universe.csv was made with, then "
                f"re-bake with --base {base} to keep assignments")

    def restore(self, missing: Sequence[Path], modified: Sequence[Path]) -> str:
        """Restore the files, or accept them (the content check)."""
        repro = self.repro()
        accept = f"re-enumerate and re-bake: `{repro}`" if repro else "re-enumerate and re-bake"
        files = sorted({*missing, *modified})
        if self.root is None or not self.restorable(files):
            return f"restore the files, or {accept}"
        force = "--force " if modified else ""
        named = " ".join(shlex.quote(self.rel(f, self.root)) for f in files)
        checkout = self.at(self.root, f"dvc checkout {force}{named}")
        if not modified:
            return f"restore them: `{checkout}`, or accept the change: {accept}"
        edits = "the edit" if len(modified) == 1 else f"the edits to these {len(modified)} files"
        return (f"discard {edits} (nothing else is touched): `{checkout}`, or keep "
                f"{'it' if len(modified) == 1 else 'them'}: {accept}")

    def regenerate(self) -> str:
        """Write universe.csv again from the data (a universe.csv edited by hand)."""
        repro = self.repro()
        if repro is not None:
            return f"regenerate universe.csv: `{repro}`"
        return ("regenerate universe.csv: run dvc-cuvis enumerate with the options it was "
                "made with")

    def pull_data(self) -> str:
        """Pull what is not pulled yet (content not pulled)."""
        if self.pull is None:
            return ("no DVC remote is configured here: add the remote that holds this data "
                    "(dvc remote add -d NAME URL), then pull")
        return f"`{self.at(self.root or self.cwd, self.pull)}`"

    def pull_outputs(self) -> str:
        """Pull the pipeline's outputs (staleness not pulled)."""
        if self.pull is None:
            return self.pull_data()
        pull = self.at(self.root or self.cwd, self.pull)
        return f"`{pull}` (the pipeline's outputs are on the remote)"

    def rerun(self) -> str:
        """Run the pipeline again (staleness drift)."""
        repro = self.repro()
        return f"run `{repro}`" if repro else "run the pipeline again"

    def relock(self, lock: Path) -> str:
        """Restore or rewrite an unreadable dvc.lock (staleness violation)."""
        folder = lock.parent.resolve()
        if self.root is None:
            return f"restore {lock.name} from version control, or run the pipeline again"
        rewrite = self.at(folder, f"rm {shlex.quote(lock.name)} && dvc repro")
        again = f"write it again (every stage runs): `{rewrite}`"
        if not self.git_tracks(lock):
            return again
        restore = self.at(folder, f"git checkout -- {shlex.quote(lock.name)}")
        return f"restore {lock.name}: `{restore}`, or {again}"

    def reselect(self, splits: Path | None, universe: Path | None) -> str:
        """Re-bake a split whose selectors match only partly (selection)."""
        repro = self.repro()
        if repro is not None:
            return f"re-bake the split: `{repro}`"
        if splits is None or universe is None:
            return ("re-bake the split against this universe (dvc-cuvis bake --base keeps "
                    "assignments)")
        s, u = shlex.quote(self.rel(splits)), shlex.quote(self.rel(universe))
        return ("re-bake it, keeping assignments and dropping the absent samples: "
                f"`dvc-cuvis bake --universe {u} --base {s} --out {s} --allow-removed`")
