"""TIFF cubes + stem-keyed PNG label maps (the ``tiff_paired`` layout).

``<root>/<images>/<stem>.tif[f]`` is one sample; its label is ``<root>/<labels>/<stem>.png``
(same stem, exactly).  A label map holds category ids per pixel (0 = background), so a
sample's ``category_ids`` are the distinct non-zero values.  Stems must be unique (the
pairing key), and a label must have the cube's height and width.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from typing import Any

import numpy as np

from dvc_cuvis.errors import DvcCuvisError, MissingExtraError, MissingFileError
from dvc_cuvis.sources._common import (
    EnumerateOptions,
    Located,
    Scan,
    list_files,
    locate,
    rel_to_out,
    scan_rows,
)
from dvc_cuvis.sources.door import REFUSED, TIFF_VERDICT, collect

_WAVELENGTH_RE = re.compile(r'<Item name="wavelength"[^>]*>\{([^}]+)\}')


def _tifffile() -> Any:
    try:
        import tifffile
    except ImportError:
        raise MissingExtraError(
            "the tiff format needs tifffile: pip install 'dvc-cuvis[tiff]'"
        ) from None
    # tifffile logs what it finds wrong in a damaged file before it raises; the error we
    # raise already carries it, so it must not reach stderr as a second line
    import logging

    log = logging.getLogger("tifffile")
    if not log.handlers:
        log.addHandler(logging.NullHandler())
    return tifffile


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise MissingExtraError("PNG labels need Pillow: pip install 'dvc-cuvis[tiff]'"
                                ) from None
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
        try:
            wavelengths = [float(x) for x in m.group(1).split(",") if x.strip()]
        except ValueError:
            raise DvcCuvisError(
                f"{path}: GDAL_METADATA wavelength list {{{m.group(1)}}} is not a list of "
                "numbers; fix the tag or pass wavelengths explicitly"
            ) from None
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
    except (DvcCuvisError, PermissionError):  # a missing extra, no permission: not the bytes
        raise
    except Exception as exc:
        raise DvcCuvisError(f"{path}: not a readable PNG label map ({exc})") from None


def label_info(path: Path) -> dict[str, Any]:
    """Shape and distinct non-zero category ids of a PNG label map."""
    arr = read_label_map(path)
    ids = [int(v) for v in np.unique(arr) if v != 0]
    return {"shape": [int(arr.shape[0]), int(arr.shape[1])], "ids": ids}


def _unique_stems(cubes: list[Located], images_dir: Path) -> dict[str, str]:
    """Each cube's stem -> its path below ``images_dir`` (stems key the labels: unique)."""
    stems: dict[str, str] = {}
    for f in cubes:
        stem = Path(f.rel).stem
        if stem in stems:
            raise DvcCuvisError(
                f"duplicate TIFF stem {stem!r}: {images_dir / stems[stem]} and "
                f"{images_dir / f.rel}; stems key the PNG labels and must be unique — rename "
                "one of them"
            )
        stems[stem] = f.rel
    return stems


def _check_labels(opts: EnumerateOptions, labels_dir: Path | None, stems: dict[str, str],
                  images_dir: Path) -> None:
    """Every PNG label has its cube; a labels folder named by the user exists."""
    if labels_dir is not None and labels_dir.is_dir():
        for rel in list_files(labels_dir, "*.png"):
            if Path(rel).stem not in stems:
                raise DvcCuvisError(
                    f"{labels_dir / rel}: label has no cube {Path(rel).stem}.tif in "
                    f"{images_dir}; remove it or add the cube"
                )
    elif opts.labels and labels_dir is not None and opts.labels != "labels":
        raise MissingFileError(f"{labels_dir}: labels folder not found (check --labels)")


def scan_tiff(opts: EnumerateOptions) -> Scan:
    """Rows for every cube under ``root/images`` with its optional PNG label."""
    images_dir = opts.root / opts.images
    if not images_dir.is_dir():
        raise MissingFileError(f"{images_dir}: images folder not found (check --root / --images)")
    pattern = opts.pattern or "*.tif*"
    cubes = [f for f in locate(images_dir, list_files(images_dir, pattern))
             if f.rel.lower().endswith((".tif", ".tiff"))]
    stems = _unique_stems(cubes, images_dir)
    labels_dir = opts.root / opts.labels if opts.labels else None
    _check_labels(opts, labels_dir, stems, images_dir)
    image_prefix = rel_to_out(images_dir, opts.out_dir)
    root_abs = os.path.abspath(opts.root)

    def one(f: Located, cached_only: bool) -> dict[str, Any]:
        refused = _door(opts, f, labels_dir, cached_only) if opts.verify else None
        if refused is not None:
            return refused
        source = (os.path.realpath(f.abs) if opts.absolute_sources
                  else os.path.relpath(f.abs, root_abs).replace(os.sep, "/"))
        row: dict[str, Any] = {
            "source": source,
            "index": None,  # one cube per file: a whole-file sample, uid = source (as upstream)
            "materialized_path": posixpath.join(image_prefix, f.rel),
            "format": "tiff",
        }
        png = labels_dir / f"{Path(f.rel).stem}.png" if labels_dir is not None else None
        if png is not None and png.is_file():
            shape = opts.cache.get(f.abs, "tiff_shape", cube_shape, f.st, cached_only=cached_only)
            info = opts.cache.get(png, "label", label_info, cached_only=cached_only)
            if info["shape"] != shape[:2]:
                raise DvcCuvisError(
                    f"{png}: label shape {tuple(info['shape'])} does not match cube "
                    f"{Path(f.rel).name} {tuple(shape[:2])} (height, width)"
                )
            row["annotation"] = rel_to_out(png, opts.out_dir)
            row["category_ids"] = ";".join(str(c) for c in info["ids"])
            row["tags"] = "anomalous" if info["ids"] else "normal"
            if opts.hash_content:
                row["annotation_md5"] = opts.cache.md5(png, cached_only=cached_only)
        else:
            row["annotation"] = ""
            row["category_ids"] = ""
            row["tags"] = "unlabeled"
            if opts.hash_content:
                row["annotation_md5"] = ""
        if opts.hash_content:
            row["md5"] = opts.cache.md5(f.abs, f.st, cached_only=cached_only)
        if opts.group == "parent":
            row["group"] = posixpath.dirname(row["source"])
        return row

    records, bad = collect(scan_rows(cubes, one, opts, "tiff"))
    return Scan(records, bad=bad)


def tiff_verdict(path: Path) -> list[str]:
    """What materialize would trip on in one TIFF cube ([] when nothing): its pixels and its
    wavelengths, read as :func:`read_cube` reads them (no path: a function of the bytes).

    What depends on the environment is raised, never returned (a verdict is kept by md5): a
    missing extra (:class:`MissingExtraError`) and a file that cannot be opened (OSError)."""
    with open(path, "rb"):  # unreadable (permissions): raised here, before tifffile wraps it
        pass
    try:
        read_cube(Path(path))
    except MissingExtraError:
        raise
    except DvcCuvisError as exc:
        return [str(exc).removeprefix(f"{path}: ")]
    return []


def _door(opts: EnumerateOptions, f: Located, labels_dir: Path | None, cached_only: bool
          ) -> dict[str, Any] | None:
    """The door for one cube (:mod:`dvc_cuvis.sources.door`): a refused row when the cube
    is unreadable or its label unreadable or of another height and width, else None."""
    if opts.hash_content and not cached_only:  # hashed first: its verdict may be in the memo
        opts.cache.md5(f.abs, f.st)
    problems = opts.cache.get(f.abs, TIFF_VERDICT, tiff_verdict, f.st, cached_only=cached_only)
    cube = os.path.join(opts.root, opts.images, f.rel)
    if problems:
        return {REFUSED: problems, "path": cube}
    png = labels_dir / f"{Path(f.rel).stem}.png" if labels_dir is not None else None
    if png is None or not png.is_file():
        return None
    try:
        info = opts.cache.get(png, "label", label_info, cached_only=cached_only)
    except MissingExtraError:  # this environment lacks Pillow: the label is not at fault
        raise
    except DvcCuvisError as exc:
        return {REFUSED: [str(exc).removeprefix(f"{os.path.abspath(png)}: ")],
                "path": str(png)}
    shape = opts.cache.get(f.abs, "tiff_shape", cube_shape, f.st, cached_only=cached_only)
    if info["shape"] != shape[:2]:
        return {REFUSED: [f"label shape {tuple(info['shape'])} does not match cube "
                          f"{cube} {tuple(shape[:2])} (height, width)"], "path": str(png)}
    return None
