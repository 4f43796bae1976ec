"""A universe's rows as it is built: index cells, the whole-file rows, canonical order and
one row per identity, each refusal naming the row's line.

:class:`~dvc_cuvis.model.universe.Universe` checks its rows here whichever way they come
(universe.csv through :mod:`~dvc_cuvis.model.universe_io`, records from an enumerate run).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from dvc_cuvis.errors import UniverseError

#: An index cell: decimal digits only (a non-negative integer).
INT_RE = re.compile(r"^[0-9]+$")


def as_index(value: object) -> int:
    """A record's index as an int; -1 stands for "no index" (None or an empty cell)."""
    if value is None:
        return -1
    if isinstance(value, bool) or not isinstance(value, int | np.integer | str):
        raise UniverseError(f"index {value!r} is not an integer")
    if isinstance(value, str):
        if not value.strip():
            return -1
        if not INT_RE.match(value.strip()):
            raise UniverseError(f"index {value!r} is not a non-negative integer")
        return int(value.strip())
    if value < 0:
        raise UniverseError(f"index {value} must be >= 0")
    return int(value)


def indexless_mask(indexless: npt.ArrayLike | None, n: int,
                   path: Path | None) -> npt.NDArray[np.bool_] | None:
    """The whole-file row mask as a bool array of ``n`` rows, or None when no row is one."""
    if indexless is None:
        return None
    mask = np.asarray(indexless, dtype=bool)
    if len(mask) != n:
        raise UniverseError("universe columns have different lengths", path=path)
    return mask if mask.any() else None


def is_canonical(codes: npt.NDArray[np.int32], indices: npt.NDArray[np.int64]) -> bool:
    """True when the rows are strictly ascending by ``(source code, index)``."""
    c0, c1, i0, i1 = codes[:-1], codes[1:], indices[:-1], indices[1:]
    return bool(np.all((c1 > c0) | ((c1 == c0) & (i1 > i0))))


def refuse_duplicates(names: Sequence[str], codes: npt.NDArray[np.int32],
                      indices: npt.NDArray[np.int64], lines: npt.NDArray[np.int32] | None,
                      indexless: npt.NDArray[np.bool_] | None, path: Path | None) -> None:
    """Refuse the first repeated ``(source, index)`` of rows in canonical order."""
    dup = np.flatnonzero((codes[1:] == codes[:-1]) & (indices[1:] == indices[:-1]))
    if not len(dup):
        return
    j = int(dup[0])
    src, ix = names[int(codes[j])], int(indices[j])
    if indexless is not None and (indexless[j] or indexless[j + 1]):
        _refuse_mixed(names[int(codes[j])], lines, j, path)
    where = ""
    if lines is not None:
        a, b = sorted((int(lines[j]), int(lines[j + 1])))
        where = f" (lines {a} and {b})"
    raise UniverseError(
        f"duplicate identity (source, index)=({src!r}, {ix}){where}; "
        "each (source, index) must appear once — remove or renumber the row",
        path=path,
    )


def refuse_shared_whole_files(names: Sequence[str], codes: npt.NDArray[np.int32],
                              indexless: npt.NDArray[np.bool_],
                              lines: npt.NDArray[np.int32] | None, path: Path | None) -> None:
    """A whole-file row is the only row of its source (its uid is the bare source)."""
    counts = np.bincount(codes, minlength=len(names))
    shared = np.flatnonzero(indexless & (counts[codes] > 1))
    if len(shared):
        _refuse_mixed(names[int(codes[shared[0]])], lines, int(shared[0]), path)


def _refuse_mixed(source: str, lines: npt.NDArray[np.int32] | None, row: int,
                  path: Path | None) -> None:
    """Refuse a source that has a whole-file row and other rows."""
    where = f" (line {int(lines[row])})" if lines is not None else ""
    raise UniverseError(
        f"source {source!r} has a row with an empty index (the whole file is one sample, uid "
        f"= source){where} and other rows of the same source; give every row of a source an "
        "index, or keep only the one row with the empty index",
        path=path,
    )


def cell_bytes(value: object) -> bytes:
    """A record's cell as the UTF-8 bytes the column stores (a list joined by ``;``)."""
    if value is None:
        return b""
    if isinstance(value, list | tuple):
        return ";".join(str(v) for v in value).encode("utf-8")
    return str(value).encode("utf-8")


def split_tags(cell: bytes) -> tuple[str, ...]:
    """A ``tags`` cell as its tags (``;``-separated, blanks dropped)."""
    return tuple(t.strip() for t in cell.decode("utf-8").split(";") if t.strip())
