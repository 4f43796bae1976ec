"""COCO annotation json: per-image category ids and the category name->id map.

Read with pycocotools (``COCO()`` + ``createIndex``) so the file is interpreted exactly as
cuvis-ai's labelers see it.  An image's ``category_ids`` are the distinct ``category_id``
values of its annotations; an image must be listed under ``images`` to have any.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import numpy as np

from dvc_cuvis._io import read_json
from dvc_cuvis.errors import DvcCuvisError, MissingExtraError


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


def coco_summary(path: Path) -> dict[str, Any]:
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
        try:
            m = coco.annToMask(ann)
        except Exception as exc:
            raise DvcCuvisError(
                f"{where}: annotation {ann.get('id')!r} of image {image_id} cannot be "
                f"rasterized ({exc})"
            ) from None
        out[m.astype(bool)] = int(ann["category_id"])
    return out
