"""The deterministic npz frame: its members, and how each member is compressed.

One module owns the frame format of the DESIGN contract (``cube [H,W,C] float32``,
``wavelengths [C] int32``, ``source`` str, optional ``class_mask [H,W] uint8`` and
``mask [H,W] int32``) so that materialize (which writes frames), the DataModule (which
reads them) and interop (which writes index arrays in the same container) cannot drift
apart.  Beside it: the frame's bytes (:mod:`~dvc_cuvis.model.frame_bytes`: sorted members,
fixed zip timestamps and attributes, arrays through ``np.lib.format``, never pickled), its
reader (:mod:`~dvc_cuvis.model.frame_read`), the zip CRC both use
(:mod:`~dvc_cuvis.model.zip_crc`) and its file name under ``frames/``
(:mod:`~dvc_cuvis.model.frame_names`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvc_cuvis.errors import DvcCuvisError


@dataclass(frozen=True)
class Compression:
    """Per-member zip compression: stored (None) or deflate at a level."""

    cube: int | None = None
    masks: int | None = None

    @classmethod
    def parse(cls, spec: str) -> Compression:
        """``none`` | ``deflate[:level]`` | ``masks[:level]`` (store the cube, deflate masks)."""
        name, _, level_s = str(spec).partition(":")
        try:
            level = int(level_s) if level_s else 6
        except ValueError:
            level = -1
        if not 0 <= level <= 9:
            raise DvcCuvisError(f"compress {spec!r}: level must be an integer 0-9")
        if name == "none" and not level_s:
            return cls(None, None)
        if name == "deflate":
            return cls(level, level)
        if name == "masks":
            return cls(None, level)
        raise DvcCuvisError(
            f"compress {spec!r}: choose none, deflate[:level] or masks[:level]"
        )

    def level_for(self, member: str) -> int | None:
        """Deflate level of a member (None = stored)."""
        return self.cube if member in ("cube", "wavelengths", "source") else self.masks

def apply_crop(arr: np.ndarray, crop: tuple[int, int, int, int] | None, where: str) -> np.ndarray:
    """Remove ``T,B,L,R`` pixels from the spatial border (cube and masks alike)."""
    if crop is None:
        return arr
    t, b, left, r = crop
    h, w = arr.shape[:2]
    if t + b >= h or left + r >= w:
        raise DvcCuvisError(f"{where}: crop {crop} too large for a {h}x{w} frame")
    return arr[t:h - b, left:w - r]


def frame_arrays(
    cube: np.ndarray,
    wavelengths: np.ndarray,
    source: str,
    classes: np.ndarray | None,
    crop: tuple[int, int, int, int] | None,
    where: str,
) -> dict[str, np.ndarray]:
    """The npz members of one frame per the DESIGN contract."""
    if cube.ndim != 3:
        raise DvcCuvisError(f"{where}: cube must be [H, W, C], got shape {cube.shape}")
    out: dict[str, np.ndarray] = {
        "cube": np.ascontiguousarray(apply_crop(cube, crop, where), dtype=np.float32),
        "wavelengths": np.asarray(wavelengths).ravel().astype(np.int32),
        "source": np.array(source),
    }
    if len(out["wavelengths"]) != cube.shape[2]:
        raise DvcCuvisError(
            f"{where}: {len(out['wavelengths'])} wavelengths for {cube.shape[2]} bands"
        )
    if classes is not None:
        if classes.shape[:2] != cube.shape[:2]:
            raise DvcCuvisError(
                f"{where}: label {classes.shape[:2]} and cube {cube.shape[:2]} differ in size"
            )
        top = int(classes.max()) if classes.size else 0
        if top > 255 or (classes.size and int(classes.min()) < 0):
            raise DvcCuvisError(
                f"{where}: category id {top} exceeds the uint8 range of class_mask (0-255); "
                "renumber the categories"
            )
        cls = np.ascontiguousarray(apply_crop(classes, crop, where)).astype(np.uint8)
        out["class_mask"] = cls
        out["mask"] = (cls > 0).astype(np.int32)
    return out
