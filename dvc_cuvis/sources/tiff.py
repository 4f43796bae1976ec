"""TIFF cubes + stem-keyed PNG label maps (the ``tiff_paired`` layout).

``<root>/<images>/<stem>.tif[f]`` is one sample; its label is ``<root>/<labels>/<stem>.png``
(same stem, exactly).  A label map holds category ids per pixel (0 = background), so a
sample's ``category_ids`` are the distinct non-zero values.  Stems must be unique (the
pairing key), and a label must have the cube's height and width.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.sources import (
    EnumerateOptions,
    Scan,
    list_files,
    parallel_map,
    rel_to_out,
    source_id,
)

_WAVELENGTH_RE = re.compile(r'<Item name="wavelength"[^>]*>\{([^}]+)\}')


def _tifffile() -> Any:
    try:
        import tifffile
    except ImportError:
        raise DvcCuvisError(
            "the tiff format needs tifffile: pip install 'dvc-cuvis[tiff]'"
        ) from None
    return tifffile


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise DvcCuvisError("PNG labels need Pillow: pip install 'dvc-cuvis[tiff]'") from None
    return Image


def cube_shape(path: Path) -> list[int]:
    """``[H, W, C]`` of a TIFF cube, read from its header (no pixel data)."""
    tifffile = _tifffile()
    try:
        with tifffile.TiffFile(path) as tf:
            series = tf.series[0]
            shape, axes = list(series.shape), series.axes
    except Exception as exc:
        raise DvcCuvisError(f"{path}: not a readable TIFF cube ({exc})") from None
    if len(shape) == 2:
        return [shape[0], shape[1], 1]
    if len(shape) != 3:
        raise DvcCuvisError(f"{path}: unsupported TIFF layout {axes} {shape} (need 2-D or 3-D)")
    if axes == "YXS":
        return shape
    return [shape[1], shape[2], shape[0]]


def read_cube(path: Path, wavelengths: list[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Cube ``[H, W, C]`` float32 and wavelengths ``[C]`` int32 (GDAL_METADATA or override)."""
    tifffile = _tifffile()
    try:
        with tifffile.TiffFile(path) as tf:
            series = tf.series[0]
            arr, axes = series.asarray(), series.axes
            try:
                meta = str(tf.pages[0].tags["GDAL_METADATA"].value)
            except (KeyError, IndexError, AttributeError):
                meta = ""
    except Exception as exc:
        raise DvcCuvisError(f"{path}: not a readable TIFF cube ({exc})") from None
    if arr.ndim == 2:
        arr = arr[..., None]
    elif arr.ndim == 3 and axes != "YXS":
        arr = np.transpose(arr, (1, 2, 0))
    elif arr.ndim != 3:
        raise DvcCuvisError(f"{path}: unsupported TIFF axis layout {axes}")
    cube = np.ascontiguousarray(arr.astype(np.float32))
    if wavelengths is None:
        m = _WAVELENGTH_RE.search(meta)
        if m is None:
            raise DvcCuvisError(
                f"{path}: GDAL_METADATA has no <Item name='wavelength'> entry; pass wavelengths "
                "explicitly"
            )
        wavelengths = [float(x) for x in m.group(1).split(",")]
    wl = np.asarray(wavelengths, dtype=np.float32)
    if len(wl) != cube.shape[2]:
        raise DvcCuvisError(f"{path}: wavelength count {len(wl)} != band count {cube.shape[2]}")
    return cube, wl.astype(np.int32)


def read_label_map(path: Path) -> np.ndarray:
    """PNG label map as ``[H, W]`` uint8 category ids."""
    image = _pil()
    try:
        with image.open(path) as im:
            if im.mode not in ("L", "P", "1"):
                im = im.convert("L")
            return np.asarray(im, dtype=np.uint8)
    except DvcCuvisError:
        raise
    except Exception as exc:
        raise DvcCuvisError(f"{path}: not a readable PNG label map ({exc})") from None


def label_info(path: Path) -> dict[str, Any]:
    """Shape and distinct non-zero category ids of a PNG label map."""
    arr = read_label_map(path)
    ids = [int(v) for v in np.unique(arr) if v != 0]
    return {"shape": [int(arr.shape[0]), int(arr.shape[1])], "ids": ids}


def scan_tiff(opts: EnumerateOptions) -> Scan:
    """Rows for every cube under ``root/images`` with its optional PNG label."""
    images_dir = opts.root / opts.images
    if not images_dir.is_dir():
        raise DvcCuvisError(f"{images_dir}: images folder not found (check --root / --images)")
    pattern = opts.pattern or "*.tif*"
    cubes = [p for p in list_files(images_dir, pattern) if p.suffix.lower() in (".tif", ".tiff")]
    stems: dict[str, Path] = {}
    for p in cubes:
        if p.stem in stems:
            raise DvcCuvisError(
                f"duplicate TIFF stem {p.stem!r}: {stems[p.stem]} and {p}; stems key the "
                "PNG labels and must be unique — rename one of them"
            )
        stems[p.stem] = p
    labels_dir = opts.root / opts.labels if opts.labels else None
    if labels_dir is not None and labels_dir.is_dir():
        for png in list_files(labels_dir, "*.png"):
            if png.stem not in stems:
                raise DvcCuvisError(
                    f"{png}: label has no cube {png.stem}.tif in {images_dir}; remove it or "
                    "add the cube"
                )
    elif opts.labels and labels_dir is not None and opts.labels != "labels":
        raise DvcCuvisError(f"{labels_dir}: labels folder not found (check --labels)")

    def one(p: Path) -> dict[str, Any]:
        st = p.stat()
        row: dict[str, Any] = {
            "source": source_id(p, opts.root, opts.absolute_sources),
            "index": 0,
            "materialized_path": rel_to_out(p, opts.out_dir),
            "format": "tiff",
        }
        png = labels_dir / f"{p.stem}.png" if labels_dir is not None else None
        if png is not None and png.is_file():
            shape = opts.cache.get(p, "tiff_shape", cube_shape, st)
            info = opts.cache.get(png, "label", label_info)
            if info["shape"] != shape[:2]:
                raise DvcCuvisError(
                    f"{png}: label shape {tuple(info['shape'])} does not match cube {p.name} "
                    f"{tuple(shape[:2])} (height, width)"
                )
            row["annotation"] = rel_to_out(png, opts.out_dir)
            row["category_ids"] = ";".join(str(c) for c in info["ids"])
            row["tags"] = "anomalous" if info["ids"] else "normal"
            if opts.hash_content:
                row["annotation_md5"] = opts.cache.md5(png)
        else:
            row["annotation"] = ""
            row["category_ids"] = ""
            row["tags"] = "unlabeled"
            if opts.hash_content:
                row["annotation_md5"] = ""
        if opts.hash_content:
            row["md5"] = opts.cache.md5(p, st)
        if opts.group == "parent":
            row["group"] = Path(row["source"]).parent.as_posix()
        return row

    records = parallel_map(one, cubes, jobs=opts.jobs, desc="tiff", show=opts.progress)
    return Scan(records)
