"""COCO annotation json: per-image category ids and the category name->id map.

Read with pycocotools (``COCO()`` + ``createIndex``) so the file is interpreted exactly as
cuvis-ai's labelers see it.  An image's ``category_ids`` are the distinct ``category_id``
values of its annotations; an image must be listed under ``images`` to have any.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from dvc_cuvis._io import read_json
from dvc_cuvis.errors import DvcCuvisError, MissingExtraError
from dvc_cuvis.limits import Limits, check_declared, current


def _coco_class() -> Any:
    try:
        from pycocotools.coco import COCO
    except ImportError:
        raise MissingExtraError(
            "COCO annotations need pycocotools: pip install 'dvc-cuvis[coco]'"
        ) from None
    return COCO


def load_coco(path: Path) -> Any:
    """A pycocotools ``COCO`` index over ``path`` (errors name the file)."""
    data = read_json(path, "COCO annotation file")
    if not isinstance(data, dict):
        raise DvcCuvisError(f"{path}: COCO file does not contain a JSON object")
    for key in ("images", "annotations", "categories"):
        if key in data and not isinstance(data[key], list):
            raise DvcCuvisError(f"{path}: COCO field {key!r} must be a list")
    data.setdefault("images", [])
    data.setdefault("annotations", [])
    data.setdefault("categories", [])
    coco = _coco_class()()
    coco.dataset = data
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            coco.createIndex()
    except (KeyError, TypeError) as exc:
        raise DvcCuvisError(f"{path}: malformed COCO json (missing or bad field {exc})") from None
    return coco


class CocoSummary(TypedDict):
    """What enumerate keeps of a COCO file (in the stat cache, by the file's bytes)."""

    categories: dict[str, int]  # name -> id
    images: dict[str, list[int]]  # str(image id) -> its sorted category ids


def coco_summary(path: Path) -> CocoSummary:
    """``{"categories": {name: id}, "images": {str(image_id): [category ids]}}`` of a COCO file."""
    coco = load_coco(path)
    cats: dict[str, int] = {}
    for cid, cat in coco.cats.items():
        name = cat.get("name")
        if not isinstance(name, str) or not isinstance(cid, int):
            raise DvcCuvisError(f"{path}: category {cat!r} needs an integer id and a string name")
        cats[name] = cid
    per_image: dict[str, list[int]] = {}
    for image_id in coco.imgs:
        ids = set()
        for ann in coco.imgToAnns.get(image_id, []):
            try:
                ids.add(int(ann["category_id"]))
            except (KeyError, TypeError, ValueError):
                raise DvcCuvisError(
                    f"{path}: annotation {ann.get('id')!r} has no integer category_id"
                ) from None
        per_image[str(image_id)] = sorted(ids)
    return {"categories": cats, "images": per_image}


def class_mask(coco: Any, image_id: int, shape: tuple[int, int], *, where: Path) -> np.ndarray:
    """``[H, W]`` category-id map of one image (later annotations overwrite earlier ones).

    The canvas is the image's COCO size when given, else the cube's; ids above 255 are
    refused because ``class_mask`` is uint8 in the npz contract.
    """
    h, w = shape
    out = np.zeros((h, w), dtype=np.int64)
    if image_id not in coco.imgs:
        return out
    info = coco.imgs[image_id]
    ch, cw = int(info.get("height") or 0), int(info.get("width") or 0)
    canvas = (ch, cw) if ch > 0 and cw > 0 else (h, w)
    if canvas != (h, w):
        raise DvcCuvisError(
            f"{where}: image {image_id} is {canvas[0]}x{canvas[1]} in the COCO json but the cube "
            f"is {h}x{w}; fix the annotation's height/width"
        )
    info.setdefault("height", h)
    info.setdefault("width", w)
    for ann in coco.imgToAnns.get(image_id, []):
        _check_segmentation(ann.get("segmentation"), (h, w),
                            f"{where}: annotation {ann.get('id')!r} of image {image_id}")
        try:
            m = coco.annToMask(ann)
        except Exception as exc:
            raise DvcCuvisError(
                f"{where}: annotation {ann.get('id')!r} of image {image_id} cannot be "
                f"rasterized ({exc})"
            ) from None
        out[m.astype(bool)] = int(ann["category_id"])
    return out


def _check_segmentation(seg: object, shape: tuple[int, int], where: str) -> None:
    """What a segmentation declares, before pycocotools allocates for it: an RLE's
    ``size`` is the image's and its counts cover exactly its pixels (pycocotools writes
    every count into a buffer of ``size``); a polygon's outline stays within the ceiling."""
    h, w = shape
    if isinstance(seg, dict):
        if seg.get("size") != [h, w]:
            raise DvcCuvisError(f"{where}: RLE size {seg.get('size')!r} is not the image's "
                                f"[{h}, {w}]; fix the annotation's size")
        counts = seg.get("counts")
        total = _rle_total(counts) if isinstance(counts, (str, bytes)) else _list_total(counts)
        if total != h * w:
            raise DvcCuvisError(f"{where}: RLE counts cover {total:,} pixels, the image "
                                f"{h}x{w} has {h * w:,}; the run lengths are damaged")
    elif isinstance(seg, list):
        walk = 0  # the outline points pycocotools makes of the polygons (5 per pixel step)
        for poly in seg:
            xy = np.asarray(poly, dtype=np.float64).reshape(-1)
            if not np.isfinite(xy).all():
                raise DvcCuvisError(f"{where}: polygon has a coordinate that is not a number")
            x, y = xy[0::2][: len(xy) // 2], xy[1::2]
            steps = np.maximum(np.abs(np.diff(x, append=x[:1])),
                               np.abs(np.diff(y, append=y[:1]))) if len(x) else x
            walk += int(np.sum(steps * 5 + 1))
        check_declared(f"{where}: polygon outline (bytes)", walk * 8,
                       current().max_array_bytes, Limits.env_name("max_array_bytes"))


def _list_total(counts: object) -> int:
    """The pixels an uncompressed RLE's counts cover (-1 when a count is not one)."""
    if not isinstance(counts, list) or not all(
            type(c) is int and 0 <= c < 1 << 32 for c in counts):
        return -1
    return sum(counts)


def _rle_total(counts: str | bytes) -> int:
    """The pixels a compressed RLE string covers, read as pycocotools reads it (5 bits a
    character, each count after the second a difference), without decoding the mask."""
    text = counts.encode() if isinstance(counts, str) else counts
    cnts: list[int] = []
    p = 0
    while p < len(text) and text[p]:
        x = k = 0
        more = True
        while more:
            if p >= len(text):
                return -1  # ends inside a count
            c = text[p] - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and c & 0x10:
                x |= -1 << (5 * k)
        if len(cnts) > 2:
            x += cnts[-2]
        cnts.append(x & 0xFFFFFFFF)
    return sum(cnts)
