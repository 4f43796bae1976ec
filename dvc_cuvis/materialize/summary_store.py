"""Where frames' spectral summaries are kept: one JSON shard per folder of frames.

A frame ``frames/<folders>/<name>.npz`` of a materialized folder has its summary in
``summaries/<folders>/%summary.json`` beside it (``%`` cannot start an escaped folder name, so
a shard never meets a folder). One changed frame rewrites the one shard of its folder; the
shards sit inside the materialized folder, so DVC tracks them with the frames.

A shard maps each frame name to its sample (``source``, ``index``), the frame's ``md5`` and
the summary (:func:`~dvc_cuvis.materialize.summaries.to_record`), under one ``recipe``
number: a shard of another recipe counts as absent. An entry's ``signature`` field (the
duplicate checks' record, :mod:`dvc_cuvis.leakage.signatures`) carries its own version: an
entry without one, or of another version, is unsigned, and materialize signs it again.
Bytes are stable: sorted keys, fixed separators, ``\\n`` line endings.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import zipfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from dvc_cuvis._io import atomic_write_parts, sync_file_system
from dvc_cuvis.errors import DvcCuvisError, first_line
from dvc_cuvis.leakage.signatures import SIGNATURE_KEY, SIGNATURE_VERSION, signature
from dvc_cuvis.leakage.signatures import to_record as signature_record
from dvc_cuvis.limits import LimitError, NestingError, loads_json
from dvc_cuvis.materialize.summaries import RECIPE, summarize, to_record
from dvc_cuvis.paths.owned import owned_files, owned_folder

#: The folder of a materialized output holding the shards.
SUMMARIES_DIR = "summaries"
#: A shard's file name in its folder.
SHARD_NAME = "%summary.json"
#: Frames of a materialized folder that keep a thumbnail in their summary, at most.
THUMBNAIL_CAP = 512
FRAMES_PREFIX = "frames/"


def shard_of(frame: str) -> str:
    """The shard (relative to the materialized folder) holding the summary of ``frame``."""
    if not frame.startswith(FRAMES_PREFIX):
        raise DvcCuvisError(f"{frame!r}: not a frame name (frames/<source>.<index>.npz)")
    folder = posixpath.dirname(frame[len(FRAMES_PREFIX):])
    return posixpath.join(SUMMARIES_DIR, folder, SHARD_NAME)


class DamagedShardError(DvcCuvisError):
    """A summaries shard that is not what materialize writes (materialize rebuilds it)."""

    def __init__(self, path: Path, why: str) -> None:
        """The shard at ``path`` and what is wrong with it; the message names the fix."""
        super().__init__(f"{path}: damaged summaries shard ({why}); rerun dvc-cuvis "
                         "materialize on its folder, which rebuilds it")
        self.path, self.why = path, why


def read_shard(path: Path) -> dict[str, dict[str, Any]]:
    """The entries of a shard (frame name -> entry); empty when absent or of another recipe;
    :class:`DamagedShardError` naming the file and the command that rebuilds it."""
    try:
        data = loads_json(path.read_bytes(), path)
    except FileNotFoundError:
        return {}
    except NestingError:
        raise DamagedShardError(path, "nested too deep") from None
    except LimitError:  # a DVC_CUVIS_MAX_* setting that is not a number: said, not hidden
        raise
    except (OSError, ValueError) as exc:
        raise DamagedShardError(path, first_line(exc, type(exc).__name__)[:120]) from None
    if not isinstance(data, dict) or data.get("recipe") != RECIPE:
        return {}
    frames = data.get("frames")
    if not isinstance(frames, dict):
        raise DamagedShardError(path, "no 'frames'")
    if not all(isinstance(entry, dict) for entry in frames.values()):
        raise DamagedShardError(path, "an entry is not an object")
    return frames


_NUMBER = {int, float}


def spectral_problem(entry: Mapping[str, object]) -> str:
    """What keeps an entry's spectral fields from being computed with (``wavelengths``:
    numbers; ``mean`` and ``std``: numbers or null, one per band), or "": for a shard pulled
    from anyone's push, which is data, so no reader meets a string or a missing band there."""
    wl = entry.get("wavelengths")
    if type(wl) is not list or set(map(type, wl)) - _NUMBER:
        return "'wavelengths' is not a list of numbers"
    for key in ("mean", "std"):
        values = entry.get(key)
        if (type(values) is not list or len(values) != len(wl)
                or set(map(type, values)) - _NUMBER - {type(None)}):
            return f"'{key}' is not a list of numbers or nulls, one per wavelength"
    return ""
    wl = entry.get("wavelengths")
    if type(wl) is not list or set(map(type, wl)) - _NUMBER:
        return "'wavelengths' is not a list of numbers"
    for key in ("mean", "std"):
        values = entry.get(key)
        if (type(values) is not list or len(values) != len(wl)
                or set(map(type, values)) - _NUMBER - {type(None)}):
            return f"'{key}' is not a list of numbers or nulls, one per wavelength"
    return ""


def dumps_shard(entries: Mapping[str, Mapping[str, Any]]) -> str:
    """A shard's text: the recipe and its entries, sorted, one stable JSON document."""
    return json.dumps({"recipe": RECIPE, "frames": dict(sorted(entries.items()))},
                      sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"


def write_shard(path: Path, entries: Mapping[str, Mapping[str, Any]], *,
                fsync: bool = True) -> bool:
    """Write a shard atomically unless it already holds these bytes; an empty one is removed.

    ``fsync=False``: the caller syncs the file system once after many shards. Returns
    whether the file changed.
    """
    if not entries:
        if os.path.lexists(path):  # the entry itself (a link is removed, never followed)
            os.unlink(path)
            return True
        return False
    text = dumps_shard(entries)
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_parts(path, [text.encode("utf-8")], fsync=fsync)
    return True


def load_summaries(out_dir: Path, frames: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The stored entries of ``frames`` (frame name -> entry), reading each shard once."""
    wanted: dict[str, list[str]] = {}
    for frame in frames:
        wanted.setdefault(shard_of(frame), []).append(frame)
    found: dict[str, dict[str, Any]] = {}
    for shard in sorted(wanted):
        entries = read_shard(out_dir / shard)
        for frame in wanted[shard]:
            if frame in entries:
                found[frame] = entries[frame]
    return found


def shard_files(out_dir: Path) -> list[Path]:
    """Every shard under a materialized folder, sorted."""
    root = out_dir / SUMMARIES_DIR
    return sorted(root.rglob(SHARD_NAME)) if root.is_dir() else []


def _kept(prev: dict[str, Any] | None, md5: str, thumb: bool, signed: bool
          ) -> dict[str, Any] | None:
    """A stored entry that still holds for a frame of ``md5`` (its thumbnail dropped when no
    longer wanted; with ``signed``, only one with a current signature); None when the frame
    must be summarized again."""
    if prev is None or prev.get("md5") != md5 or (signed and not is_signed(prev)):
        return None
    if thumb and "thumbnail" not in prev:
        return None
    return prev if thumb else {k: v for k, v in prev.items() if k != "thumbnail"}


def refresh(
    out_dir: Path, frames: Mapping[str, tuple[str, int, str]],
    fresh: Mapping[str, dict[str, Any]], thumbs: frozenset[str], *,
    summarize_frame: Callable[[str], dict[str, Any]] | None, sync: bool = True,
    notes: list[str] | None = None,
) -> int:
    """Bring every shard in step with ``frames`` (name -> source, index, md5).

    A frame's entry is its ``fresh`` summary (written this run), else the stored one if it is
    of the same md5 (and has a thumbnail where one is wanted), else ``summarize_frame(name)``:
    the frame is read once more. With ``summarize_frame`` None (summaries off) a frame
    without a valid entry is left out (an unsigned one is kept: it is signed when summaries
    are on, or by ``--sign-only``). Entries of frames gone are dropped, and an emptied
    shard is removed. ``sync=False``: the caller syncs the file system after (materialize's
    manifest write does). A damaged shard reads as empty and is rebuilt, said in ``notes``.
    Returns how many frames were summarized again.
    """
    by_shard: dict[str, list[str]] = {}
    for name in frames:
        by_shard.setdefault(shard_of(name), []).append(name)
    root = out_dir / SUMMARIES_DIR  # a real folder of ours, links refused: we delete in it
    owned_folder(root, out_dir)
    present = {Path(p).relative_to(out_dir).as_posix() for p in owned_files(root)
               if os.path.basename(p) == SHARD_NAME}
    again = changed = 0
    for shard in sorted(set(by_shard) | present):
        try:
            old = read_shard(out_dir / shard)
        except DamagedShardError as exc:
            old = {}
            if notes is not None:
                notes.append(f"{exc.path}: damaged summaries shard ({exc.why}); "
                             + ("rebuilt" if summarize_frame else "dropped (summaries are off)"))
        entries: dict[str, dict[str, Any]] = {}
        for name in sorted(by_shard.get(shard, [])):
            source, index, md5 = frames[name]
            rec = fresh.get(name) or _kept(old.get(name), md5, name in thumbs,
                                           summarize_frame is not None)
            if rec is None and summarize_frame is not None:
                rec, again = summarize_frame(name), again + 1
            if rec is not None:
                entries[name] = {**rec, "source": source, "index": index, "md5": md5}
        changed += write_shard(out_dir / shard, entries, fsync=False)
    if changed and sync:  # one sync of the file system for every shard written
        sync_file_system(out_dir)
    return again


def thumbnail_frames(uids: Mapping[str, str], cap: int) -> frozenset[str]:
    """The frames (name -> uid) that keep a thumbnail: the ``cap`` smallest uid hashes.

    Adding samples moves the choice only at its margin, and the same split always keeps the
    same thumbnails.
    """
    ranked = sorted((hashlib.sha256(uid.encode()).hexdigest(), name) for name, uid in uids.items())
    return frozenset(name for _, name in ranked[:cap])


def is_signed(entry: Mapping[str, Any]) -> bool:
    """Whether a stored entry holds a signature of the current version (a damaged one is
    not: materialize writes it again, and the check names the shard)."""
    rec = entry.get(SIGNATURE_KEY)
    return isinstance(rec, dict) and rec.get("v") == SIGNATURE_VERSION


def sign_frames(out_dir: Path, frames: Mapping[str, tuple[str, int, str]]) -> tuple[int, int]:
    """Give every frame (name -> source, index, md5) of a materialized folder a signed
    summary entry, read from its npz frame: only unsigned entries change, no frame is
    written or removed.

    This is what ``dvc-cuvis materialize --sign-only`` runs, so shards written before
    signatures existed are signed without reading a source again. A frame without an entry
    gets a whole summary taken from its npz (the input dtype's saturation ceiling is not
    known there). Returns (frames signed, shards written).
    """
    from dvc_cuvis.model.frame_read import read_npz

    by_shard: dict[str, list[str]] = {}
    for name in frames:
        by_shard.setdefault(shard_of(name), []).append(name)
    signed = written = 0
    for shard in sorted(by_shard):
        entries = dict(read_shard(out_dir / shard))
        for name in sorted(by_shard[shard]):
            source, index, md5 = frames[name]
            entry = entries.get(name)
            if entry is not None and entry.get("md5") != md5:
                entry = None  # of another frame: summarized again
            if entry is not None and is_signed(entry):
                continue
            try:
                arrays = read_npz(str(out_dir / name))
            except (OSError, ValueError, zipfile.BadZipFile) as exc:
                raise DvcCuvisError(f"{out_dir / name}: cannot read the frame to sign it "
                                    f"({first_line(exc, type(exc).__name__)[:120]}); rerun "
                                    "dvc-cuvis materialize, which rewrites it") from None
            entries[name] = ({**entry, SIGNATURE_KEY: signature_record(signature(arrays["cube"]))}
                             if entry is not None else
                             {**to_record(summarize(arrays["cube"], arrays["wavelengths"],
                                                    arrays.get("class_mask"))),
                              "source": source, "index": index, "md5": md5})
            signed += 1
        written += write_shard(out_dir / shard, entries, fsync=False)
    if written:
        sync_file_system(out_dir)
    return signed, written


def sign_materialized(out_dir: Path) -> tuple[int, int]:
    """``materialize --sign-only``: sign the frames of the folder materialize wrote (its
    universe.csv names them; frame names are materialize's own, never a path from the file);
    returns (frames signed, shards written)."""
    from dvc_cuvis.errors import MissingFileError
    from dvc_cuvis.model.frame_names import frame_name
    from dvc_cuvis.model.universe_io import read_universe

    path = out_dir / "universe.csv"
    if not path.is_file():
        raise MissingFileError(f"{path}: not found; --sign-only signs a folder materialize "
                               "wrote (its universe.csv, frames/ and summaries/)")
    mat = read_universe(path)
    md5s = mat.column("md5") if mat.has_column("md5") else [""] * len(mat)
    frames = {}
    for pos in range(len(mat)):
        index = 0 if mat.indexless is not None and bool(mat.indexless[pos]) else int(
            mat.indices[pos])
        frames[frame_name(mat.source(pos), index)] = (mat.source(pos), index, md5s[pos])
    return sign_frames(out_dir, frames)
