"""Path safety: a path read through a universe stays inside its folder (``guard``), the
dataset walk lists each file once (``walk``), deletion never follows a link out of a folder
we own (``owned``), and the root walk finds the repository that holds a path (``roots``).
"""

from __future__ import annotations

from dvc_cuvis.paths.guard import PathGuard, is_within, resolve_inside
from dvc_cuvis.paths.owned import LinkedFolderError, owned_files, owned_folder
from dvc_cuvis.paths.roots import ancestors, dvc_root, dvc_root_of, repo_root, require_dvc_root
from dvc_cuvis.paths.walk import Walk, walk_glob

__all__ = [
    "LinkedFolderError",
    "PathGuard",
    "Walk",
    "ancestors",
    "dvc_root",
    "dvc_root_of",
    "is_within",
    "owned_files",
    "owned_folder",
    "repo_root",
    "require_dvc_root",
    "resolve_inside",
    "walk_glob",
]
