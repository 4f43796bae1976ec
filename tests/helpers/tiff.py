"""TIFF cubes with GDAL wavelengths and PNG labels (tifffile and Pillow: a test using these
is skipped where they are not installed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

WL = (450, 550, 650, 750)


def gdal_xml(wl: tuple[int, ...] = WL) -> str:
    """GDAL's ENVI metadata naming the band wavelengths ``wl``."""
    items = ",".join(str(w) for w in wl)
    return ('<GDALMetadata>\n  <Item name="wavelength" domain="ENVI">{' + items
            + '}</Item>\n</GDALMetadata>\n')


def write_cube(path: Path, h: int = 6, w: int = 5, wl: tuple[int, ...] | None = WL,
               seed: int = 0) -> np.ndarray:
    """A (C, H, W) planar cube with GDAL wavelengths (none when ``wl`` is None)."""
    tifffile = pytest.importorskip("tifffile")
    bands = len(wl) if wl else 4
    cube = np.random.default_rng(seed).integers(0, 4000, (bands, h, w)).astype(np.uint16)
    tags = [(42112, "s", 0, gdal_xml(wl), True)] if wl else []
    path.parent.mkdir(parents=True, exist_ok=True)
    tifffile.imwrite(path, cube, photometric="minisblack", planarconfig="separate",
                     extratags=tags)
    return cube


def write_label(path: Path, h: int = 6, w: int = 5, value: int = 0) -> None:
    """An 8-bit PNG label of ``h`` x ``w``, ``value`` in a 2 x 2 square."""
    image = pytest.importorskip("PIL.Image")
    path.parent.mkdir(parents=True, exist_ok=True)
    arr = np.zeros((h, w), dtype=np.uint8)
    arr[1:3, 1:3] = value
    image.fromarray(arr, mode="L").save(path)


def scrap_folder(root: Path) -> Path:
    """A ``tiff_dataset_dir``-like folder: images/*.tif(f), labels/*.png for some stems."""
    for k, name in enumerate(["scrap_10.tif", "scrap_01.tif", "scrap_02.tiff", "Ä_03.tif",
                              "scrap 04.tif"]):
        write_cube(root / "images" / name, seed=k)
    write_label(root / "labels/scrap_01.png", value=1)
    write_label(root / "labels/scrap_10.png", value=0)
    return root
