"""The repository around a path: its root, its YAML files, its git revisions, what tracks a path.

Every question "which repository is this file in, and what does it say?" is answered here, so
the rules agree everywhere: the root is the nearest folder holding ``.git`` or ``.dvc`` (the DVC
root is the nearest holding a ``.dvc`` folder, as ``dvc.repo.Repo.find_root``); dvc.lock,
dvc.yaml and params.yaml are read by one YAML loader whose errors name the file; files at a
revision are read through GitPython's ``cat-file --batch`` client (one process per repository,
however many files); and a path is tracked by git, by a ``.dvc`` file, or as a stage's output.

GitPython and PyYAML are imported on first use only: hashing and the stat cache, which ask
this module for the DVC root, never pay for them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dvc_cuvis._io import read_yaml
from dvc_cuvis.errors import RepoError
from dvc_cuvis.paths import ancestors, repo_root


def find_lock(start: Path | str) -> Path | None:
    """The dvc.lock of the project containing ``start``: the nearest one at or above it, not
    looking past the repository root (None outside DVC projects)."""
    for folder in ancestors(Path(start).resolve()):
        if (folder / "dvc.lock").is_file():
            return folder / "dvc.lock"
        if (folder / ".dvc").is_dir() or (folder / ".git").exists():
            return None
    return None


class Git:
    """One git repository, read through GitPython (files at revisions, commits, tracking)."""

    def __init__(self, path: Path | str) -> None:
        """Open the repository containing ``path`` (:class:`RepoError` when there is none)."""
        try:
            import git
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise RepoError(f"GitPython is needed to read git history ({exc})") from None
        try:
            self.repo = git.Repo(path, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise RepoError(f"{path}: not inside a git repository (git init, or pass the "
                            "dataset repository's path)") from None
        self.top = Path(self.repo.working_tree_dir or path)

    def commit(self, rev: str) -> str:
        """The full commit id ``rev`` names (:class:`RepoError` naming an unknown revision)."""
        try:
            return str(self.repo.commit(rev).hexsha)
        except Exception:
            raise RepoError(f"unknown revision {rev!r} in {self.top} (a tag, branch or commit; "
                            "`git tag` lists the tags)") from None

    def read(self, rev: str, rel: str) -> bytes | None:
        """The bytes of the file ``rel`` (posix, relative to the top) at ``rev``; None if it is
        absent there or no file (a folder, a submodule)."""
        if "\n" in rel or "\n" in rev:
            return None  # one request per line: such a name cannot be asked for
        try:
            _, kind, _, data = self.repo.git.get_object_data(f"{rev}:{rel}")
        except ValueError:  # "<rev>:<path> missing" (or ambiguous)
            return None
        return bytes(data) if kind in (b"blob", "blob") else None  # (bytes in GitPython 3)

    def read_many(self, rev: str, rels: list[str]) -> dict[str, bytes | None]:
        """``read`` for several files, through one ``cat-file --batch`` process."""
        return {rel: self.read(rev, rel) for rel in rels}

    def tracks(self, rel: str) -> bool:
        """True if git tracks the file ``rel`` (relative to the top) in the index."""
        return bool(self.repo.git.ls_files("--", rel).strip())

    def close(self) -> None:
        """Stop the git processes kept for reading (GitPython's persistent ``cat-file``)."""
        self.repo.close()

    def __enter__(self) -> Git:
        """This repository, closed at the end of the ``with`` block."""
        return self

    def __exit__(self, *exc: object) -> None:
        """:meth:`close`."""
        self.close()


def tracked_by(path: Path | str) -> tuple[str, str] | None:
    """What tracks ``path`` (a file or a folder): ``(kind, description)`` or None.

    ``kind`` is ``"dvc-file"`` (a ``.dvc`` file for it or a folder above it; the description
    names that file), ``"git"`` (git tracks it, or a file under it), or ``"stage"`` (it is,
    or lies inside, an output of a dvc.yaml stage; the description names the stage).
    """
    target = Path(os.path.abspath(path))
    root = repo_root(target)
    if root is None:
        return None
    for folder in (target, *target.parents):
        if folder == root:
            break
        dvc_file = folder.parent / f"{folder.name}.dvc"
        if dvc_file.is_file():
            return "dvc-file", dvc_file.relative_to(root).as_posix()
    if (root / ".git").exists():
        try:
            if Git(root).tracks(target.relative_to(root).as_posix()):
                return "git", "git"
        except RepoError:
            pass
    for folder in ancestors(target.parent):
        spec = folder / "dvc.yaml"
        stages: Any = read_yaml(spec).get("stages") if spec.is_file() else None
        for name, stage in stages.items() if isinstance(stages, dict) else ():
            outs = stage.get("outs") or [] if isinstance(stage, dict) else []
            wdir = folder / str(stage.get("wdir", ".")) if isinstance(stage, dict) else folder
            for out in outs if isinstance(outs, list) else ():
                rel = next(iter(out)) if isinstance(out, dict) else str(out)
                out_path = Path(os.path.normpath(wdir / rel))
                if out_path == target or out_path in target.parents:
                    return "stage", f"the output of stage '{name}' in dvc.yaml"
        if folder == root:
            break
    return None
