"""Recordings and the order of their frames: what a group is when no ``group`` cell says.

A recording is known from where a frame lies (:meth:`~dvc_cuvis.model.universe.Universe.
recording_layout`): a cu3s session file, or the folder of npz/TIFF frame files.  Within a
recording a frame's position is its measurement index (a session, or any multi-frame file),
or for frame files the rank of the file name in natural sort order within its folder
(``f2`` before ``f10``).  Contiguous runs of those positions make the ``block:N`` groups.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.universe import Universe

__all__ = ["BLOCK", "block_size", "blocks", "flat_note", "frame_positions", "natural_key"]

#: The ``--group-by`` prefix of contiguous blocks of frames within a recording.
BLOCK = "block:"
_DIGITS = re.compile(r"(\d+)")
#: the most frames one block may hold (a larger N is one recording per group: use auto)
MAX_BLOCK = 1_000_000


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders ``f2`` before ``f10`` (digits compare as numbers), so a folder's
    frame files follow the order a camera wrote them."""
    return tuple((0, int(p)) if p.isdigit() else (1, p)
                 for p in _DIGITS.split(name) if p != "")


def frame_positions(uni: Universe) -> tuple[list[str], npt.NDArray[np.int32],
                                            npt.NDArray[np.int64]]:
    """Per row: its recording (names, codes) and its position within the recording, so that
    neighbouring frames and contiguous blocks can be found without reading a frame."""
    names, codes = uni.recordings()
    per_source, _flat = uni.recording_layout()
    pos = uni.indices.astype(np.int64)
    folder_sources = [k for k, rec in enumerate(per_source)
                      if rec.endswith("/") and rec != uni.source_names[k]]
    if folder_sources:
        rank = np.zeros(len(per_source), dtype=np.int64)
        by_folder: dict[str, list[int]] = {}
        for k in folder_sources:
            by_folder.setdefault(per_source[k], []).append(k)
        src = uni.source_names
        for members in by_folder.values():
            members.sort(key=lambda k: natural_key(src[k].rpartition("/")[2]))
            rank[members] = np.arange(len(members))
        is_folder = np.zeros(len(per_source), dtype=bool)
        is_folder[folder_sources] = True
        rows = is_folder[uni.codes]
        pos[rows] = rank[uni.codes[rows]]
    return names, codes, pos


def block_size(group_by: str) -> int | None:
    """N of a ``block:N`` group-by (None for any other), refused unless a whole number >= 1."""
    if not group_by.startswith(BLOCK):
        return None
    text = group_by[len(BLOCK):]
    if not text.isdigit() or not 1 <= int(text) <= MAX_BLOCK:
        raise DvcCuvisError(f"--group-by {group_by!r}: block:N needs N a whole number from 1 to "
                            f"{MAX_BLOCK:,} (frames per block of a recording), e.g. block:8")
    return int(text)


def blocks(uni: Universe, n: int) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Groups of ``n`` contiguous frames of one recording (by position), in canonical
    first-appearance order: the time analogue of spatial blocking."""
    names, codes, pos = frame_positions(uni)
    order = np.lexsort((pos, codes))
    rank = np.empty(len(uni), dtype=np.int64)
    if len(uni):
        starts = np.r_[True, codes[order][1:] != codes[order][:-1]]
        first = np.maximum.accumulate(np.where(starts, np.arange(len(order)), 0))
        rank[order] = np.arange(len(order)) - first  # the frame's rank in its recording
    block = rank // n
    keys = [f"{names[c]}@{b * n}" for c, b in zip(codes.tolist(), block.tolist(), strict=True)]
    out: list[str] = []
    seen: dict[str, int] = {}
    of_row = np.empty(len(uni), dtype=np.int64)
    for row, key in enumerate(keys):
        g = seen.get(key)
        if g is None:
            g = seen[key] = len(out)
            out.append(key)
        of_row[row] = g
    return out, of_row


def flat_note(uni: Universe) -> str | None:
    """The one note a bake prints when the frame files show no recording structure (all in
    one folder), since each frame is then its own group and neighbours may straddle stages."""
    _per_source, flat = uni.recording_layout()
    if not flat:
        return None
    return ("the frame files lie in one folder, so no recording is known: each frame is its "
            "own group; give recordings their own folders or a 'group' column if frames of "
            "one recording must stay together")
