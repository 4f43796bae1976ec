"""Category name -> id maps, for ``categories`` selectors and per-category stats.

Upstream's npz universes carry no category names, so a ``categories`` selector cannot
resolve there.  We accept the map from any of the files a user already has: a COCO json
(``categories: [{id, name}]``), the enumerate metrics (``categories: {name: id}``), or a
plain ``{name: id}`` object.
"""

from __future__ import annotations

from pathlib import Path

from dvc_cuvis._io import read_json
from dvc_cuvis.errors import DvcCuvisError


def parse_category_map(data: object, *, where: str = "categories") -> dict[str, int]:
    """Normalize a COCO/metrics/plain category structure into ``{name: id}``."""
    if isinstance(data, dict) and "categories" in data:
        data = data["categories"]
    out: dict[str, int] = {}
    if isinstance(data, list):
        for i, entry in enumerate(data):
            if not (isinstance(entry, dict) and isinstance(entry.get("name"), str)
                    and _is_id(entry.get("id"))):
                raise DvcCuvisError(
                    f"{where}: categories[{i}] must be an object with a string 'name' and an "
                    "integer 'id'"
                )
            _add(out, entry["name"], entry["id"], where)
    elif isinstance(data, dict):
        for name, cid in data.items():
            if not _is_id(cid):
                raise DvcCuvisError(f"{where}: category {name!r} has a non-integer id {cid!r}")
            _add(out, str(name), cid, where)
    else:
        raise DvcCuvisError(
            f"{where}: expected a COCO json, enumerate metrics, or a {{name: id}} object"
        )
    return dict(sorted(out.items()))


def load_category_map(path: Path | str) -> dict[str, int]:
    """Read a category map from a COCO json, enumerate metrics json, or ``{name: id}`` json."""
    p = Path(path)
    data = read_json(p, "category file")
    return parse_category_map(data, where=str(p))


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _add(out: dict[str, int], name: str, cid: int, where: str) -> None:
    if name in out and out[name] != cid:
        raise DvcCuvisError(
            f"{where}: category {name!r} is listed with two ids ({out[name]} and {cid})"
        )
    out[name] = cid
