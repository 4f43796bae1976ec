"""The train stage's spectra at a base revision against now (``report --base REV``).

The base's summaries are read from the local DVC cache alone, without a checkout: dvc.lock at
REV (from git) names the materialized folder's ``.dir`` object, which lists each shard's md5,
and each shard is a cache file. When any of that is not in the local cache, the comparison is
left out and the report says so: ``--base`` otherwise reads git alone, never a remote.
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from dvc_cuvis._io import parse_yaml
from dvc_cuvis.digests.hashing import is_folder_hash
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.materialize.summaries import RECIPE
from dvc_cuvis.materialize.summary_store import SUMMARIES_DIR, read_shard
from dvc_cuvis.model.compare import Version
from dvc_cuvis.repo.dvc_client import cache_path
from dvc_cuvis.review.history import GitTree
from dvc_cuvis.review.spectra import Balance, read_index, shifted_ranges, smd, stage_spectrum


def _dir_md5(lock_text: bytes, folder: str, where: str) -> str | None:
    """The ``.dir`` md5 dvc.lock records for the output ``folder`` (None: no such output)."""
    lock = parse_yaml(lock_text, where)
    for stage in (lock.get("stages") or {}).values() if isinstance(lock, dict) else ():
        for out in stage.get("outs") or [] if isinstance(stage, dict) else []:
            path = out.get("path") if isinstance(out, dict) else None
            if (isinstance(path, str) and posixpath.normpath(path) == folder
                    and is_folder_hash(out.get("md5"))):
                return str(out["md5"])
    return None


def base_entries(tree: GitTree, rev: str, folder: str) -> tuple[dict[str, dict[str, Any]], str]:
    """The summaries entries of ``folder`` (repository-relative) at ``rev`` from the local
    cache, or why they are not at hand."""
    try:
        dir_md5 = _dir_md5(tree.read(rev, "dvc.lock"), folder, f"{rev}:dvc.lock")
    except DvcCuvisError as exc:
        return {}, f"dvc.lock at {rev} cannot be read ({exc})"
    if dir_md5 is None:
        return {}, f"dvc.lock at {rev} records no output {folder}"
    listing = cache_path(tree.root, dir_md5)  # DVC keeps a folder's listing as <md5>.dir
    if not listing.is_file():
        return {}, (f"{folder} at {rev} is not in the local DVC cache (`dvc fetch` at that "
                    "revision brings it)")
    where = f"{folder} at {rev}: its listing in the local DVC cache"
    try:
        items = json.loads(listing.read_bytes())  # JSON is UTF-8
    except (OSError, ValueError) as exc:
        return {}, f"{where} cannot be read ({exc})"
    if not isinstance(items, list):
        return {}, f"{where} is not a list of files"
    entries: dict[str, dict[str, Any]] = {}
    for item in items:
        rel, md5 = (item.get("relpath"), item.get("md5")) if isinstance(item, dict) else (
            None, None)
        if not (isinstance(rel, str) and rel.startswith(SUMMARIES_DIR + "/")):
            continue
        shard = cache_path(tree.root, str(md5))
        if not shard.is_file():
            return {}, f"{folder}/{rel} at {rev} is not in the local DVC cache"
        try:  # a shard of another recipe holds nothing comparable: it reads as empty
            entries.update(read_shard(shard))
        except DvcCuvisError as exc:
            return {}, f"{folder}/{rel} at {rev} cannot be read from the local DVC cache ({exc})"
    if not entries:
        return {}, f"{folder} at {rev} holds no spectral summaries (of recipe {RECIPE})"
    return entries, ""


def train_shift(base: Version, entries: dict[str, dict[str, Any]],
                now: dict[tuple[float, ...], list[dict[str, Any]]], threshold: float
                ) -> tuple[list[Balance], str]:
    """The balance of train at the base against train now, per shared wavelength grid."""
    from dvc_cuvis.model.frame_names import frame_name

    uni = base.universe
    by_grid: dict[tuple[float, ...], list[dict[str, Any]]] = {}
    for pos in base.stages["train"].tolist():
        entry = entries.get(frame_name(uni.source(pos), read_index(uni, pos)))
        if entry is not None:
            by_grid.setdefault(tuple(entry["wavelengths"]), []).append(entry)
    out: list[Balance] = []
    for grid, rows in sorted(by_grid.items()):
        a, b = stage_spectrum(rows), stage_spectrum(now.get(grid, []))
        values = smd(a, b) if a is not None and b is not None else None
        if values is not None:
            ranges = shifted_ranges(values, grid, threshold)
            out.append(Balance(f"train at {base.label}", "train", values, ranges, bool(ranges)))
    return out, "" if out else f"no train frames at {base.label} share a grid with train now"
