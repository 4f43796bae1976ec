"""The dataset walk: each file listed once, under its own path, and no loop of links.

A glob over the dataset folder that never descends a symlink to a folder: a link inside the
root is reported (its files are listed where they really lie, as DVC's own walk does), one
that leads out of the root is refused (:func:`~dvc_cuvis.paths.guard.is_within`).
"""

from __future__ import annotations

import fnmatch
import glob
import os
from dataclasses import dataclass
from pathlib import Path

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.paths.guard import is_within


@dataclass
class Walk:
    """What :func:`walk_glob` found: matching paths (relative, sorted), and the links to
    folders inside the root it did not descend (each with why), sorted."""

    paths: list[str]
    skipped_links: list[tuple[str, str]]


def walk_glob(root: Path | str, pattern: str) -> Walk:
    """The paths under ``root`` that ``pattern`` matches (glob's rules: ``**`` any number
    of folders, hidden names only for a pattern part that starts with ``.``).

    Unlike ``glob``, a symlink to a folder is never descended: each file is listed once,
    under its own path, and a loop of links cannot make the walk endless. A link to a
    folder inside the root is reported in ``skipped_links`` (its files are listed where
    they really lie, as DVC's own walk does); one that leads out of the root is refused.
    A link to a file is listed (DVC tracks it as the file).
    """
    walk = _GlobWalk(root, [p for p in pattern.split("/") if p not in ("", ".")])
    walk.step("", 0)
    return Walk(sorted(walk.found), sorted(walk.skipped.items()))


class _GlobWalk:
    """One :func:`walk_glob`: each folder listed once, links to folders never entered."""

    def __init__(self, root: Path | str, parts: list[str]) -> None:
        self.root, self.parts = root, parts
        self.top = os.path.abspath(root)
        self.root_real = os.path.realpath(self.top)
        self.found: set[str] = set()
        self.skipped: dict[str, str] = {}
        self.listing: dict[str, list[os.DirEntry[str]]] = {}

    def entries(self, rel: str) -> list[os.DirEntry[str]]:
        """The entries of folder ``rel``, sorted (none when it cannot be listed)."""
        if rel not in self.listing:
            try:
                with os.scandir(f"{self.top}/{rel}" if rel else self.top) as it:
                    self.listing[rel] = sorted(it, key=lambda e: e.name)
            except OSError:
                self.listing[rel] = []
        return self.listing[rel]

    def folder(self, rel: str, entry: os.DirEntry[str] | None) -> bool:
        """True if ``rel`` is a real folder to descend; a linked one is noted or refused."""
        full = f"{self.top}/{rel}"
        link = entry.is_symlink() if entry is not None else os.path.islink(full)
        if not link:
            return entry.is_dir() if entry is not None else os.path.isdir(full)
        if not os.path.isdir(full):
            return False
        real = os.path.realpath(full)
        if not is_within(self.root_real, real):
            raise DvcCuvisError(f"{full}: leads outside the dataset root {self.root} (a "
                                f"symlink to {real}); refusing to follow it")
        loop = is_within(real, os.path.realpath(os.path.dirname(full)))
        self.skipped[rel] = (
            "a loop: it leads back to a folder above it" if loop
            else f"a link to {os.path.relpath(real, self.root_real)} inside the root")
        return False

    def step(self, rel: str, i: int) -> None:
        """Match ``parts[i:]`` below folder ``rel``."""
        if i == len(self.parts):
            if rel:
                self.found.add(rel)
            return
        part, last = self.parts[i], i + 1 == len(self.parts)
        prefix = f"{rel}/" if rel else ""
        if part == "**":
            self.step(rel, i + 1)
            for e in self.entries(rel):
                if e.name.startswith("."):
                    continue
                if self.folder(prefix + e.name, e):
                    self.step(prefix + e.name, i)
                elif last:
                    self.found.add(prefix + e.name)
        elif glob.has_magic(part):
            hidden = part.startswith(".")
            for e in self.entries(rel):
                if (hidden or not e.name.startswith(".")) and fnmatch.fnmatchcase(e.name, part):
                    if last:
                        self.found.add(prefix + e.name)
                    elif self.folder(prefix + e.name, e):
                        self.step(prefix + e.name, i + 1)
        elif last:
            if os.path.lexists(f"{self.top}/{prefix}{part}"):
                self.found.add(prefix + part)
        elif self.folder(prefix + part, None):
            self.step(prefix + part, i + 1)
