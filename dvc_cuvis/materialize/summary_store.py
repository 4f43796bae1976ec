"""Where frames' spectral summaries are kept: one JSON shard per folder of frames.

A frame ``frames/<folders>/<name>.npz`` of a materialized folder has its summary in
``summaries/<folders>/%summary.json`` beside it (``%`` cannot start an escaped folder name, so
a shard never meets a folder). One changed frame rewrites the one shard of its folder; the
shards sit inside the materialized folder, so DVC tracks them with the frames.

A shard maps each frame name to its sample (``source``, ``index``), the frame's ``md5`` and
the summary (:func:`~dvc_cuvis.materialize.summaries.to_record`), under one ``recipe``
number: a shard of another recipe counts as absent. Bytes are stable: sorted keys, fixed
separators, ``\\n`` line endings.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from dvc_cuvis._io import atomic_write_text
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.materialize.summaries import RECIPE

#: The folder of a materialized output holding the shards.
SUMMARIES_DIR = "summaries"
#: A shard's file name in its folder.
SHARD_NAME = "%summary.json"
FRAMES_PREFIX = "frames/"


def shard_of(frame: str) -> str:
    """The shard (relative to the materialized folder) holding the summary of ``frame``."""
    if not frame.startswith(FRAMES_PREFIX):
        raise DvcCuvisError(f"{frame!r}: not a frame name (frames/<source>.<index>.npz)")
    folder = posixpath.dirname(frame[len(FRAMES_PREFIX):])
    return posixpath.join(SUMMARIES_DIR, folder, SHARD_NAME)


def read_shard(path: Path) -> dict[str, dict[str, Any]]:
    """The entries of a shard (frame name -> entry); empty when absent or of another recipe."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise DvcCuvisError(f"{path}: not a summaries shard ({exc}); delete it and rerun "
                            "dvc-cuvis materialize") from None
    if not isinstance(data, dict) or data.get("recipe") != RECIPE:
        return {}
    frames = data.get("frames")
    if not isinstance(frames, dict):
        raise DvcCuvisError(f"{path}: not a summaries shard (no 'frames'); delete it and rerun "
                            "dvc-cuvis materialize")
    return frames


def dumps_shard(entries: Mapping[str, Mapping[str, Any]]) -> str:
    """A shard's text: the recipe and its entries, sorted, one stable JSON document."""
    return json.dumps({"recipe": RECIPE, "frames": dict(sorted(entries.items()))},
                      sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"


def write_shard(path: Path, entries: Mapping[str, Mapping[str, Any]]) -> bool:
    """Write a shard atomically unless it already holds these bytes; an empty one is removed.

    Returns whether the file changed.
    """
    if not entries:
        if path.exists():
            path.unlink()
            return True
        return False
    text = dumps_shard(entries)
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)
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
