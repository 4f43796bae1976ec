"""A folder of ``.npz`` frames (as written by cu3s-to-npz or by ``dvc-cuvis materialize``).

Each file is one sample, identified by its path under the dataset root (index 0): the
frame's own read position is not stored in the file, and nothing is parsed out of file
names.  The frame's ``source`` member (the logical recording it came from) becomes the
``group``, so frames of one recording stay together when splitting by group, and
``class_mask`` (when present) gives the sample's category ids.  Both are inside the file,
so they are a pure function of its bytes: the stat cache keeps them under the frame's md5
too (:data:`FRAME_INFO`), and a frame whose md5 is known without reading it (our cache,
DVC's state after a pull or checkout) is not opened when those bytes were read before.
When a folder already has the universe.csv that produced it, enumerate that file instead
(``--format universe``): it keeps the recordings' identities.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from dvc_cuvis.digests.hashing import stamp_of
from dvc_cuvis.digests.stat_cache import content_key
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.sources._common import (
    EnumerateOptions,
    Located,
    Scan,
    list_files,
    locate,
    rel_to_out,
    scan_rows,
)
from dvc_cuvis.sources.door import NPZ_VERDICT, REFUSED, collect, npz_verdict, remembered

# the cache key of frame_info's value; bump the version when frame_info's result changes
FRAME_INFO = content_key("npz-frame", 1)
#: written into the metrics as ``derived``: the version of each content key whose values the
#: universe's columns render, so a later run can tell whether it would derive the same
DERIVED: dict[str, int] = {"npz-frame": 1}
#: the ``group`` settings under which the group column is the frame's ``source`` member
SOURCE_GROUPS = ("auto", "source-member")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def frame_info(path: Path) -> dict[str, Any]:
    """Logical ``source`` and distinct non-zero ``class_mask`` ids of one npz frame."""
    from dvc_cuvis.model.frame_read import NpzInput
    from dvc_cuvis.model.npz_members import StoredMember, read_members

    try:
        data = Path(path).read_bytes()
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
        if "cube.npy" not in {zi.filename for zi in infos}:
            raise DvcCuvisError(f"{path}: npz frame has no 'cube' member")
        # only the members read here, each within its declared sizes (the cube is not read)
        stored: list[StoredMember] = []
        z = read_members(data, infos, where=f"{path}: ", names={"source", "class_mask"},
                         stored=stored)
        NpzInput(data, z, stored).verify()  # their CRCs, as np.load checks them
        src = str(z["source"]) if "source" in z else ""
        ids: list[int] | None = None
        if "class_mask" in z:
            ids = [int(v) for v in np.unique(z["class_mask"]) if v != 0]
    except DvcCuvisError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise DvcCuvisError(f"{path}: not a readable npz frame ({exc})") from None
    return {"source": src, "ids": ids}


def scan_npz(opts: EnumerateOptions) -> Scan:
    """Rows for every ``*.npz`` under the root (recursive)."""
    files = locate(opts.root, list_files(opts.root, opts.pattern or "**/*.npz"))
    prefix = rel_to_out(opts.root, opts.out_dir)
    prefix = f"{prefix}/" if prefix else ""
    cache = opts.cache
    # the md5s DVC knows, in one query: they give the md5 column and open the content memo
    stamped = [(f.abs, stamp_of(f.st)) for f in files if f.st is not None]
    keys = (FRAME_INFO, NPZ_VERDICT) if opts.verify else (FRAME_INFO,)
    cache.prefetch_dvc(stamped if opts.hash_content else
                       [(p, s) for p, s in stamped
                        if not all(cache.lookup(p, k, s)[0] for k in keys)])

    def one(f: Located, cached_only: bool) -> dict[str, Any]:
        # a file that must be read anyway is hashed first: its md5 may find its values in
        # the content memo (a moved or copied frame); served from the cache, the frame's
        # values are asked first, so a miss leaves no md5 counted twice
        md5 = (cache.md5(f.abs, f.st) if opts.hash_content and not cached_only else None)
        if opts.verify:  # the door: a frame materialize would trip on is refused here
            problems = remembered(cache, f.abs, NPZ_VERDICT, npz_verdict, f.st, cached_only)
            if problems:
                return {REFUSED: problems, "path": os.path.join(opts.root, f.rel)}
        info = cache.get(f.abs, FRAME_INFO, frame_info, f.st, cached_only=cached_only)
        ids = info["ids"]
        source = os.path.realpath(f.abs) if opts.absolute_sources else f.rel
        row: dict[str, Any] = {
            "source": source,
            "index": 0,
            "materialized_path": prefix + f.rel,
            "format": "npz",
            "group": info["source"] if opts.group in SOURCE_GROUPS else "",
        }
        if opts.group == "parent":
            row["group"] = posixpath.dirname(f.rel)
        if opts.hash_content:
            row["md5"] = md5 if md5 is not None else cache.md5(f.abs, f.st, cached_only=True)
        row["tags"] = "unlabeled" if ids is None else ("anomalous" if ids else "normal")
        row["category_ids"] = "" if ids is None else ";".join(map(str, ids))
        return row

    records, bad = collect(scan_rows(files, one, opts, "npz"))
    categories = None
    cat_file = opts.root / "categories.json"
    if cat_file.is_file():
        from dvc_cuvis.model.categories import load_category_map

        categories = load_category_map(cat_file)
    return Scan(records, categories, bad=bad)


def frame_info_from_row(row: dict[str, str]) -> dict[str, Any] | None:
    """The :func:`frame_info` value a universe row of ours renders, when the row gives it
    back exactly (else None): the inverse of the ``group``/``tags``/``category_ids`` cells
    above, for a run whose group setting was one of :data:`SOURCE_GROUPS`.

    Exact means: rendering the value again gives the same cells, and the group text survives
    the universe's own columns unchanged (no surrounding blanks, no control characters).
    """
    src, tags, cell = row.get("group"), row.get("tags"), row.get("category_ids")
    if src is None or tags is None or cell is None or src != src.strip():
        return None
    if _CONTROL.search(src):
        return None
    ids: list[int] | None
    if tags == "unlabeled":
        if cell != "":
            return None
        ids = None
    else:
        try:
            ids = [int(p) for p in cell.split(";")] if cell else []
        except ValueError:
            return None
        if ";".join(map(str, ids)) != cell or 0 in ids or ids != sorted(set(ids)):
            return None  # np.unique gives distinct ids in ascending order, 0 left out
        if tags != ("anomalous" if ids else "normal"):
            return None
    return {"source": src, "ids": ids}
