"""TIFF cubes + stem-keyed PNG label maps (the ``tiff_paired`` layout).

``<root>/<images>/<stem>.tif[f]`` is one sample; its label is ``<root>/<labels>/<stem>.png``
(same stem, exactly).  A label map holds category ids per pixel (0 = background), so a
sample's ``category_ids`` are the distinct non-zero values.  Stems must be unique (the
pairing key), and a label must have the cube's height and width.
"""

from __future__ import annotations

import hashlib
import math
import os
import posixpath
import re
import zlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from dvc_cuvis.digests.stat_cache import content_key
from dvc_cuvis.errors import DvcCuvisError, MissingExtraError, MissingFileError
from dvc_cuvis.limits import LimitError, Limits, check_declared, current
from dvc_cuvis.sources._common import (
    EnumerateOptions,
    Located,
    Scan,
    list_files,
    locate,
    rel_to_out,
    scan_rows,
)
from dvc_cuvis.sources.door import REFUSED, TIFF_VERDICT, collect, remembered
from dvc_cuvis.sources.wavelengths import WAVELENGTH_OPTION, format_wavelengths

if TYPE_CHECKING:
    from PIL.Image import Image
    from tifffile import TiffPageSeries

_WAVELENGTH_RE = re.compile(r'<Item name="wavelength"[^>]*>\{([^}]+)\}')


def _tifffile() -> ModuleType:
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


def _pil() -> ModuleType:
    try:
        from PIL import Image
    except ImportError:
        raise MissingExtraError("PNG labels need Pillow: pip install 'dvc-cuvis[tiff]'"
                                ) from None
    return Image


#: TIFF compressions of the deflate family, whose segments are inflated within their size
_DEFLATE = (8, 32946, 50013)
#: bytes per pixel of a decoded label, by Pillow mode (others: 4)
_MODE_BYTES = {"1": 1, "L": 1, "P": 1, "LA": 2, "PA": 2, "La": 2, "I;16": 2, "I;16B": 2,
               "RGB": 3, "YCbCr": 3}


def _declared(series: TiffPageSeries, path: Path) -> None:
    """Refuse a cube whose declared shape and dtype (and its float32 frame) pass the ceiling."""
    limits, env = current(), Limits.env_name("max_array_bytes")
    shape, dtype = tuple(int(n) for n in series.shape), series.dtype
    if dtype is None:
        raise DvcCuvisError(f"{path}: not a readable TIFF cube (unsupported sample format)")
    count = math.prod(shape)
    check_declared(f"{path}: TIFF cube {shape} {dtype}", count * dtype.itemsize,
                   limits.max_array_bytes, env)
    check_declared(f"{path}: TIFF cube {shape} as float32", count * 4, limits.max_array_bytes,
                   env)


def _segments_bounded(tf: Any, series: Any, path: Path) -> None:
    """Every strip or tile lies in the file, and a deflated one inflates to no more than
    its declared shape, checked in pieces before tifffile decodes it whole."""
    fh = tf.filehandle
    for p, page in enumerate(series.pages):
        if page is None:
            continue
        key = page.keyframe
        expected = math.prod(key.chunks) * (key.dtype.itemsize if key.dtype is not None else 8)
        segments = zip(page.dataoffsets, page.databytecounts, strict=False)
        for i, (offset, count) in enumerate(segments):
            if offset + count > fh.size:
                raise DvcCuvisError(f"{path}: not a readable TIFF cube (page {p} segment {i} "
                                    f"declares {count:,} bytes past the end of the file; "
                                    "truncated?)")
            if key.compression in _DEFLATE and count:
                fh.seek(offset)
                _inflates_within(fh.read(count), expected,
                                 f"{path}: not a readable TIFF cube (page {p} segment {i}")


def _inflates_within(data: bytes, expected: int, where: str) -> None:
    """Inflate ``data`` a piece at a time and throw it away: more than ``expected`` bytes
    is a damaged (or hostile) segment."""
    inflater = zlib.decompressobj()
    total, tail = 0, data
    try:
        while tail or not inflater.eof:
            piece = inflater.decompress(tail, 1 << 20)
            tail = inflater.unconsumed_tail
            total += len(piece)
            if total > expected:
                raise DvcCuvisError(f"{where} inflates to more than the {expected:,} bytes "
                                    "its tile or strip declares: damaged or hostile)")
            if not piece:
                break
    except zlib.error:
        return  # tifffile names the damage when it decodes


def cube_shape(path: Path) -> list[int]:
    """``[H, W, C]`` of a TIFF cube, read from its header (no pixel data)."""
    tifffile = _tifffile()
    try:
        with tifffile.TiffFile(path) as tf:
            series = tf.series[0]
            shape, axes = list(series.shape), series.axes
            _declared(series, path)
    except DvcCuvisError:
        raise
    except Exception as exc:
        raise DvcCuvisError(f"{path}: not a readable TIFF cube ({exc})") from None
    if len(shape) == 2:
        return [shape[0], shape[1], 1]
    if len(shape) != 3:
        raise DvcCuvisError(f"{path}: unsupported TIFF layout {axes} {shape} (need 2-D or 3-D)")
    if axes == "YXS":
        return shape
    return [shape[1], shape[2], shape[0]]


def read_cube(path: Path, wavelengths: tuple[float, ...] | list[float] | None = None,
              ) -> tuple[np.ndarray, np.ndarray]:
    """Cube ``[H, W, C]`` float32 and wavelengths ``[C]`` int32: ``wavelengths`` (the
    ``--wavelengths`` option) when given, as upstream's ``wavelengths_override`` wins over
    the file's tag, else the GDAL_METADATA tag."""
    tifffile = _tifffile()
    try:
        with tifffile.TiffFile(path) as tf:
            series = tf.series[0]
            _declared(series, path)  # before a pixel is decoded
            _segments_bounded(tf, series, path)
            arr, axes = series.asarray(), series.axes
            try:
                meta = str(tf.pages[0].tags["GDAL_METADATA"].value)
            except (KeyError, IndexError, AttributeError):
                meta = ""
    except DvcCuvisError:
        raise
    except Exception as exc:
        raise DvcCuvisError(f"{path}: not a readable TIFF cube ({exc})") from None
    if arr.ndim == 2:
        arr = arr[..., None]
    elif arr.ndim == 3 and axes != "YXS":
        arr = np.transpose(arr, (1, 2, 0))
    elif arr.ndim != 3:
        raise DvcCuvisError(f"{path}: unsupported TIFF axis layout {axes}")
    cube = np.ascontiguousarray(arr.astype(np.float32))
    given_by_option = wavelengths is not None
    if wavelengths is None:
        m = _WAVELENGTH_RE.search(meta)
        if m is None:
            raise DvcCuvisError(
                f"{path}: GDAL_METADATA has no <Item name='wavelength'> entry (TIFF tag 42112); "
                f"give the band wavelengths in nm with {WAVELENGTH_OPTION}"
            )
        try:
            wavelengths = [float(x) for x in m.group(1).split(",") if x.strip()]
        except ValueError:
            raise DvcCuvisError(
                f"{path}: GDAL_METADATA wavelength list {{{m.group(1)}}} is not a list of "
                f"numbers; fix the tag or give the wavelengths with {WAVELENGTH_OPTION}"
            ) from None
    wl = np.asarray(wavelengths, dtype=np.float32)
    if len(wl) != cube.shape[2]:
        given = (f"given by {WAVELENGTH_OPTION}" if given_by_option else
                 "from its GDAL_METADATA tag")
        raise DvcCuvisError(f"{path}: wavelength count {len(wl)} != band count "
                            f"{cube.shape[2]}; wavelengths {given}: give one per band")
    return cube, wl.astype(np.int32)


def _open_label(path: Path) -> Image:
    """The PNG at ``path``, opened lazily (header only), its declared size checked.

    Pillow's own guard (``Image.open``: a warning on stderr, then an error at a fixed pixel
    count) is replaced by ours: the decoded label against the ceiling named in
    :mod:`dvc_cuvis.limits`.
    """
    _pil()
    from PIL import PngImagePlugin

    im = PngImagePlugin.PngImageFile(path)
    w, h = im.size
    try:
        check_declared(f"{path}: PNG label {w}x{h} {im.mode}",
                       w * h * _MODE_BYTES.get(im.mode, 4), current().max_array_bytes,
                       Limits.env_name("max_array_bytes"))
    except LimitError:
        im.close()
        raise
    return im


def label_shape(path: Path) -> list[int]:
    """``[H, W]`` of a PNG label, read from its header (no pixel is decoded)."""
    try:
        with _open_label(path) as im:
            return [int(im.size[1]), int(im.size[0])]
    except DvcCuvisError:
        raise
    except Exception as exc:
        raise DvcCuvisError(f"{path}: not a readable PNG label map ({exc})") from None


def read_label_map(path: Path, shape: tuple[int, int] | None = None) -> np.ndarray:
    """PNG label map as ``[H, W]`` uint8 category ids; ``shape``: the cube's height and
    width, compared with the label's header before its pixels are decoded."""
    try:
        with _open_label(path) as im:
            if shape is not None and (im.size[1], im.size[0]) != tuple(shape):
                raise DvcCuvisError(
                    f"{path}: label shape {(im.size[1], im.size[0])} does not match the cube's "
                    f"{tuple(shape)} (height, width)")
            if im.mode not in ("L", "P", "1"):
                im = im.convert("L")
            return np.asarray(im, dtype=np.uint8)
    except (DvcCuvisError, PermissionError):  # a missing extra, no permission: not the bytes
        raise
    except Exception as exc:
        raise DvcCuvisError(f"{path}: not a readable PNG label map ({exc})") from None


def label_info(path: Path) -> dict[str, list[int]]:
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
            # its header first: a label of another size is never decoded
            info = {"shape": label_shape(png)}
            if info["shape"] == shape[:2]:
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
        if opts.wavelengths is not None:  # materialize reads the cube with these
            row["wavelengths"] = format_wavelengths(opts.wavelengths)
        return row

    records, bad = collect(scan_rows(cubes, one, opts, "tiff"))
    return Scan(records, bad=bad)


def verdict_key(wavelengths: tuple[float, ...] | None) -> str:
    """The memo key of the door's verdict: the bytes alone, or the bytes read with these
    ``--wavelengths`` (another list, another verdict)."""
    if wavelengths is None:
        return TIFF_VERDICT
    digest = hashlib.sha256(format_wavelengths(wavelengths).encode()).hexdigest()[:16]
    name, _, version = TIFF_VERDICT.rpartition("/v")
    return content_key(f"{name}-wl-{digest}", int(version), check=True)


def tiff_verdict(path: Path, wavelengths: tuple[float, ...] | None = None) -> list[str]:
    """What materialize would trip on in one TIFF cube ([] when nothing): its pixels and its
    wavelengths, read as :func:`read_cube` reads them (no path: a function of the bytes).

    What depends on the environment is raised, never returned (a verdict is kept by md5): a
    missing extra (:class:`MissingExtraError`) and a file that cannot be opened (OSError)."""
    with open(path, "rb"):  # unreadable (permissions): raised here, before tifffile wraps it
        pass
    try:
        read_cube(Path(path), wavelengths)
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
    wl = opts.wavelengths
    verdict = tiff_verdict if wl is None else lambda p: tiff_verdict(p, wl)
    problems = remembered(opts.cache, f.abs, verdict_key(wl), verdict, f.st, cached_only)
    cube = os.path.join(opts.root, opts.images, f.rel)
    if problems:
        return {REFUSED: problems, "path": cube}
    png = labels_dir / f"{Path(f.rel).stem}.png" if labels_dir is not None else None
    if png is None or not png.is_file():
        return None
    shape = opts.cache.get(f.abs, "tiff_shape", cube_shape, f.st, cached_only=cached_only)
    try:  # the label's header first: one of another size is never decoded
        info: dict[str, list[int]] = {"shape": label_shape(Path(os.path.abspath(png)))}
        if info["shape"] == shape[:2]:
            info = opts.cache.get(png, "label", label_info, cached_only=cached_only)
    except MissingExtraError:  # this environment lacks Pillow: the label is not at fault
        raise
    except DvcCuvisError as exc:
        return {REFUSED: [str(exc).removeprefix(f"{os.path.abspath(png)}: ")],
                "path": str(png)}
    if info["shape"] != shape[:2]:
        return {REFUSED: [f"label shape {tuple(info['shape'])} does not match cube "
                          f"{cube} {tuple(shape[:2])} (height, width)"], "path": str(png)}
    return None
