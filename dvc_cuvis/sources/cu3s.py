"""Cubert ``.cu3s`` sessions through the cuvis SDK (lazy import; untested against the real SDK).

One sample per measurement: ``source#i`` for ``i in range(len(SessionFile(path)))``.  A
sibling ``<stem>.json`` COCO file (the convention of cuvis-ai's cu3s module) annotates the
session, keyed by image id == measurement index.  Measurement counts are cached by file
stat, so an unchanged session is never reopened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.sources import (
    EnumerateOptions,
    Scan,
    list_files,
    parallel_map,
    rel_to_out,
    source_id,
)


def require_cuvis() -> Any:
    """The ``cuvis`` module, or a clear error naming the missing SDK."""
    try:
        import cuvis
    except Exception as exc:  # ImportError, or OSError when libcuvis.so is missing
        raise DvcCuvisError(
            "the cu3s format needs Cubert's cuvis SDK: install the native SDK (libcuvis) and "
            f"`pip install 'dvc-cuvis[cu3s]'` (import cuvis failed: {exc})"
        ) from None
    return cuvis


def count_measurements(path: Path) -> int:
    """Number of measurements in a session (``len(cuvis.SessionFile(path))``)."""
    cuvis = require_cuvis()
    try:
        return len(cuvis.SessionFile(str(path)))
    except Exception as exc:
        raise DvcCuvisError(f"{path}: cannot open cu3s session ({exc})") from None


def scan_cu3s(opts: EnumerateOptions) -> Scan:
    """Rows for every measurement of every session under the root."""
    if opts.root.is_file():
        sessions, root = [opts.root], opts.root.parent
    else:
        sessions, root = list_files(opts.root, opts.pattern or "**/*.cu3s"), opts.root
    require_cuvis()
    from dvc_cuvis.sources.coco import coco_summary

    def one(p: Path) -> list[dict[str, Any]]:
        st = p.stat()
        n = opts.cache.get(p, "cu3s_count", count_measurements, st)
        ann = p.with_suffix(".json") if opts.annotations == "sibling" else None
        summary = opts.cache.get(ann, "coco", coco_summary) if ann and ann.is_file() else None
        src = source_id(p, root, opts.absolute_sources)
        common: dict[str, Any] = {
            "materialized_path": rel_to_out(p, opts.out_dir),
            "format": "cu3s",
            "annotation": rel_to_out(ann, opts.out_dir) if summary and ann else "",
        }
        if opts.hash_content:
            common["md5"] = opts.cache.md5(p, st)
            common["annotation_md5"] = opts.cache.md5(ann) if summary and ann else ""
        if opts.group == "parent":
            common["group"] = Path(src).parent.as_posix()
        rows = []
        for i in range(n):
            row = {"source": src, "index": i, **common}
            if summary is not None:
                ids = summary["images"].get(str(i), [])
                row["category_ids"] = ";".join(map(str, ids))
                row["tags"] = "anomalous" if any(c != 0 for c in ids) else "normal"
            else:
                row["category_ids"] = ""
                row["tags"] = "unlabeled"
            rows.append(row)
        return rows

    per_session = parallel_map(one, sessions, jobs=opts.jobs, desc="cu3s", show=opts.progress)
    categories: dict[str, int] = {}
    for p in sessions:
        ann = p.with_suffix(".json")
        if opts.annotations == "sibling" and ann.is_file():
            for name, cid in opts.cache.get(ann, "coco", coco_summary)["categories"].items():
                if categories.setdefault(name, cid) != cid:
                    raise DvcCuvisError(
                        f"{ann}: category {name!r} has id {cid} here but {categories[name]} in "
                        "another session's json; category ids must agree across sessions"
                    )
    return Scan([r for rows in per_session for r in rows], categories or None)
