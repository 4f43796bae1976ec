"""Where ``check`` finds the frames' summaries, read once for every constraint that needs
them (the duplicate and the spectral constraints), and what it says when they are missing.

The folder is resolved once, in :meth:`~dvc_cuvis.check.options.CheckOptions.resolved`:
``--summaries DIR`` when given, else the universe's own folder when materialize wrote
summaries there (a ``summaries/`` folder beside universe.csv).  Each shard read is stamped
before it is read and handed to the verdict memo as a witness, so a remembered verdict
stands until a shard changes; an absent shard is witnessed as None (never remembered).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dvc_cuvis.check.facts import Details
from dvc_cuvis.check.fixes import Workspace
from dvc_cuvis.digests.hashing import Stamp, stamp_of
from dvc_cuvis.errors import DvcCuvisError, and_more
from dvc_cuvis.leakage.signatures import SIGNATURE_KEY
from dvc_cuvis.materialize.summary_store import SUMMARIES_DIR, read_shard, shard_of
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.paths.roots import repo_root
from dvc_cuvis.repo.lockfile import LockFile, LockReadError, find_lock

__all__ = ["Entry", "SplitSummaries", "missing_note", "read_split_summaries", "shown_folder",
           "split_positions", "summaries_folder", "unpulled"]

#: A frame's stored summary entry (a shard's JSON object: wavelengths, mean, signature...).
Entry = dict[str, Any]
#: The frames a note on missing summaries names one by one (the rest are counted).
NAMED = 5
#: The fields of a stored entry the constraints read (the rest is let go with its shard, so a
#: check holds three fields per frame, not the whole summary).
KEPT = ("mean", "wavelengths", SIGNATURE_KEY)


def summaries_folder(universe: Path | str | Universe | None, given: Path | str | None
                     ) -> Path | None:
    """The materialized folder whose shards hold the summaries: ``given``, else the
    universe's own folder when it is materialize's (a ``summaries/`` folder beside it)."""
    if given:
        return Path(given)
    if universe is None:
        return None
    path = universe.path if isinstance(universe, Universe) else Path(universe)
    if path is None or not (path.parent / SUMMARIES_DIR).is_dir():
        return None
    return path.parent


def unpulled(folder: Path, lock: Path | None) -> bool:
    """Whether ``folder``'s summaries are absent because it is a DVC output that is not (all)
    pulled (dvc.lock records it, or a ``.dvc`` file tracks it): a clone, or one that fetched
    a stage's frames only, where ``dvc pull`` brings them, not a wrong ``--summaries``.
    ``lock``: the dvc.lock to read (None: the project's own, also when the check was told to
    leave dvc.lock aside, as this only names the fix)."""
    if (folder / SUMMARIES_DIR).is_dir():
        return False
    if folder.with_name(folder.name + ".dvc").is_file():
        return True
    lock = lock or find_lock(folder.parent)
    if lock is None:
        return False
    try:
        recorded = LockFile.read(lock)
    except LockReadError:
        return False
    rel = recorded.rel(folder)
    return any(stage.writes(rel) for stage in recorded.stages)


def shown_folder(folder: Path) -> str:
    """``folder`` as ``check --json`` names it: relative to its repository, else to the
    working folder (never a machine path)."""
    root = repo_root(folder)
    start = root if root is not None else Path.cwd()
    return Path(os.path.relpath(os.path.abspath(folder), os.path.abspath(start))).as_posix()


@dataclass(frozen=True)
class SplitSummaries:
    """The stored summary entries of a split's train/val/test frames, read once."""

    folder: Path
    universe: Universe
    #: position -> stage (train wins an overlap; insertion order: test, val, train)
    stage_of: dict[int, str]
    #: position -> its frame name in the materialized folder
    names: dict[int, str]
    #: frame name -> stored entry (frames without an entry are absent)
    entries: dict[str, Entry]

    def entry(self, pos: int) -> Entry | None:
        """The stored entry of the frame at ``pos`` (None: it has no summary)."""
        return self.entries.get(self.names[pos])

    def without(self, universe: Universe) -> list[str]:
        """The uids of the frames without a summary, in universe order."""
        return [universe.uid(p) for p in sorted(self.names) if self.names[p] not in self.entries]


def split_positions(res: Resolution) -> dict[int, str]:
    """Position -> stage of every train/val/test frame (train wins an overlap, which
    no_split_overlap reports; insertion order: test, val, train)."""
    stage_of: dict[int, str] = {}
    for stage in reversed(EXCLUSIVE_STAGES):
        for pos in res.stages[stage].tolist():
            stage_of[int(pos)] = stage
    return stage_of


def _kept(entry: Entry, grids: dict[str, object]) -> Entry:
    """The :data:`KEPT` fields of a stored entry, its wavelengths one shared list per grid
    (``grids``: the grids met so far, by their text)."""
    kept = {k: entry[k] for k in KEPT if k in entry}
    if isinstance(kept.get("wavelengths"), list):
        kept["wavelengths"] = grids.setdefault(repr(kept["wavelengths"]), kept["wavelengths"])
    return kept


def read_split_summaries(res: Resolution, folder: Path,
                         witness: list[tuple[str, Stamp | None]] | None = None
                         ) -> SplitSummaries:
    """Every train/val/test frame's stored entry (its :data:`KEPT` fields), each shard read
    once; a damaged shard raises naming it; each shard is added to ``witness`` with its
    stamp taken before it is read (None when absent)."""
    if not folder.is_dir():
        raise DvcCuvisError(f"{folder}: no such materialized folder (--summaries names the "
                            "folder materialize wrote: its frames/ and summaries/)")
    uni: Universe = res.universe
    stage_of = split_positions(res)
    names = {p: frame_name(uni.source(p), uni.index(p)) for p in stage_of}
    wanted: dict[str, list[str]] = {}
    for name in names.values():
        wanted.setdefault(shard_of(name), []).append(name)
    entries: dict[str, Entry] = {}
    grids: dict[str, object] = {}
    for shard in sorted(wanted):
        path = folder / shard
        if witness is not None:
            try:
                witness.append((os.path.abspath(path), stamp_of(os.stat(path))))
            except OSError:
                witness.append((os.path.abspath(path), None))
        stored = read_shard(path)
        entries.update({n: _kept(stored[n], grids) for n in wanted[shard] if n in stored})
    return SplitSummaries(folder, uni, stage_of, names, entries)


def _command(ws: Workspace, folder: Path | None, universe: Path | None,
             splits: Path | None, pull: bool) -> tuple[str, str]:
    """The one command that produces the summaries, and what to do after it (``pull``: the
    folder is a DVC output not pulled, which ``dvc pull`` brings)."""
    if pull and folder is not None:
        return f"dvc pull {shlex.quote(ws.rel(folder))}", ""
    if folder is not None and (folder / "universe.csv").is_file():
        target = folder
    elif folder is None and universe is not None and (universe.parent / "frames").is_dir():
        target = universe.parent  # a materialized universe written without summaries
    else:
        target = None
    if target is not None:
        return (f"dvc-cuvis materialize --sign-only --out-dir {shlex.quote(ws.rel(target))}",
                "")
    if universe is None or splits is None:
        return "", ("materialize the split with dvc-cuvis materialize, then pass its folder "
                    "as summaries")
    out = folder if folder is not None else universe.parent / "materialized"
    command = (f"dvc-cuvis materialize --universe {shlex.quote(ws.rel(universe))} --splits "
               f"{shlex.quote(ws.rel(splits))} --out-dir {shlex.quote(ws.rel(out))}")
    return command, ("" if folder is not None else
                     f"then check with --summaries {shlex.quote(ws.rel(out))}")


def missing_note(kinds: list[str], why: str, without: list[str], frames: int, ws: Workspace,
                 folder: Path | None, universe: Path | None, splits: Path | None,
                 pull: bool = False) -> Details:
    """The one note saying that ``kinds`` could not read every frame's summary: why, the
    frames without one (counted, the first few named) and the command that produces them
    (``pull``: the folder is a DVC output not pulled)."""
    command, then = _command(ws, folder, universe, splits, pull)
    named = without[:NAMED]
    line = (f"{' and '.join(kinds)} {'not run' if len(without) == frames else 'incomplete'}: "
            f"{why}; {len(without)} of {frames} frame(s) without a spectral summary: "
            f"{', '.join(named)}{and_more(len(without), len(named))}")
    if command:
        line += f"; produce them: {command}" + (f", {then}" if then else "")
    elif then:
        line += f"; {then}"
    return {"constraints": kinds, "why": why, "count": len(without), "frames": named,
            "more": and_more(len(without), len(named)).strip(), "fix": command,
            "then": then, "line": line}
