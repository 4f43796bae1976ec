"""Input npz files as users write them, for the tests of the frame's writer and reader and
of materialize's tasks (a stored cube whose CRC the writer may reuse, and odd ones it may not).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# 4.2 MB: md5 in a thread beside the write; 3 KB: hashed inline; the others are not copyable
CUBES: dict[str, tuple[tuple[int, int, int], Any]] = {
    "big": ((64, 64, 260), np.float32), "small": ((8, 8, 12), np.float32),
    "float64": ((8, 8, 12), np.float64), "big-endian": ((8, 8, 12), np.dtype(">f4")),
    "header-v2": ((8, 8, 12), np.float32), "trailing": ((8, 8, 12), np.float32),
}


def input_npz(path: Path, cube: np.ndarray, odd: str = "") -> bytes:
    """An input frame as a user's ``np.savez`` writes it (every member stored).

    ``odd``: ``header-v2`` (the cube's ``.npy`` header in format 2.0) or ``trailing``
    (bytes after the cube's data inside its member): both readable, neither copyable.
    """
    rng = np.random.default_rng(7)
    classes = rng.integers(0, 4, cube.shape[:2]).astype(np.uint8)
    members: dict[str, Any] = {
        "cube": cube, "wavelengths": np.arange(400, 400 + cube.shape[2], dtype=np.int32),
        "class_mask": classes, "mask": (classes > 0).astype(np.int32), "source": np.array("s")}
    if not odd:
        np.savez(path, **members)
        return path.read_bytes()
    with zipfile.ZipFile(path, "w") as zf:
        for key, arr in members.items():
            member = io.BytesIO()
            version = (2, 0) if key == "cube" and odd == "header-v2" else None
            np.lib.format.write_array(member, arr, version=version)
            tail = b"\0" * 64 if key == "cube" and odd == "trailing" else b""
            zf.writestr(f"{key}.npy", member.getvalue() + tail)
    return path.read_bytes()


def spy_known_crc(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the members whose CRC the writer takes from the input (the fast path)."""
    import dvc_cuvis.model.frame_bytes as frame_bytes

    used: list[str] = []
    real = frame_bytes._write_known_crc

    def spy(zf, sink, info, pieces, crc):  # type: ignore[no-untyped-def]
        used.append(info.filename)
        return real(zf, sink, info, pieces, crc)

    monkeypatch.setattr(frame_bytes, "_write_known_crc", spy)
    return used


def allow_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs written just now may be mapped (forked workers inherit this too)."""
    import dvc_cuvis.model.frame_read as frame_read

    monkeypatch.setattr(frame_read, "RACY_NS", 0)
