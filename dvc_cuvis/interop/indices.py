"""Per-stage index arrays into the canonical universe, for scikit-learn style code.

``indices.npz`` holds int64 arrays ``train``, ``val``, ``test``, ``predict`` (positions
into the universe in canonical ``(source, index)`` order) and ``universe_hash`` (0-d str),
so ``X[z["train"]]`` works on any array built in universe order.  K folds are written as
``fold-<k>.npz``.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np

from dvc_cuvis.errors import DvcCuvisError, MissingFileError
from dvc_cuvis.interop.folds import Folds, check_disjoint
from dvc_cuvis.model.frame_bytes import npz_bytes
from dvc_cuvis.model.frame_read import read_npz_input
from dvc_cuvis.model.frames import Compression
from dvc_cuvis.model.universe import Universe

KEYS = ("train", "val", "test", "predict")


def indices_bytes(stages: dict[str, np.ndarray], uni: Universe) -> bytes:
    """A deterministic npz of the stage positions and the universe hash."""
    arrays = {k: np.sort(stages[k]).astype(np.int64) for k in KEYS}
    arrays["universe_hash"] = np.array(uni.hash)
    return npz_bytes(arrays, Compression())


def read_indices(path: Path, uni: Universe) -> Folds:
    """Stage positions from an ``indices.npz`` written for this universe."""
    try:
        src = read_npz_input(path.read_bytes(), where=f"{path}: ")  # within declared sizes
        src.verify()
        arrays = dict(src.arrays)
    except FileNotFoundError:
        raise MissingFileError(f"{path}: indices file not found") from None
    except (OSError, ValueError, zipfile.BadZipFile, io.UnsupportedOperation) as exc:
        raise DvcCuvisError(f"{path}: not a readable indices npz ({exc})") from None
    pinned, stages = _checked_arrays(path, arrays)
    if pinned is not None and pinned != uni.hash:
        raise DvcCuvisError(f"{path}: positions were written for universe {pinned[:12]}, this "
                            f"one is {uni.hash[:12]}; positions only mean something there")
    for k, pos in stages.items():
        if len(pos) and (pos.min() < 0 or pos.max() >= len(uni)):
            raise DvcCuvisError(f"{path}: {k} has positions outside 0..{len(uni) - 1}")
        if len(np.unique(pos)) != len(pos):
            raise DvcCuvisError(f"{path}: {k} repeats a position")
    check_disjoint(stages, str(path), uni)
    return Folds(uni, [stages])


def _checked_arrays(
    path: Path, arrays: dict[str, np.ndarray]
) -> tuple[str | None, dict[str, np.ndarray]]:
    """The pinned hash and int64 stage arrays; any other key or a non-integer array is refused
    (a float array cast to int would silently pick other samples)."""
    unknown = sorted(set(arrays) - {*KEYS, "universe_hash"})
    if unknown:
        raise DvcCuvisError(f"{path}: unexpected array(s) {unknown}; an indices npz holds "
                            f"{', '.join(KEYS)} and universe_hash")
    if not set(arrays) & set(KEYS):
        raise DvcCuvisError(f"{path}: no stage array; an indices npz holds {', '.join(KEYS)}")
    pinned = None
    if "universe_hash" in arrays:
        h = arrays["universe_hash"]
        if h.ndim != 0 or h.dtype.kind != "U":
            raise DvcCuvisError(f"{path}: universe_hash must be a 0-d string, got {h.dtype} "
                                f"shape {h.shape}")
        pinned = str(h)
    stages = {}
    for k in KEYS:
        a = arrays.get(k, np.zeros(0, dtype=np.int64))
        if a.ndim != 1 or (a.dtype.kind not in "iu" and len(a)):
            raise DvcCuvisError(f"{path}: {k} must be a 1-d integer array of universe "
                                f"positions, got {a.dtype} shape {a.shape}")
        stages[k] = a.astype(np.int64)
    return pinned, stages
