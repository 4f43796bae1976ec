"""The train stage's spectra at a base revision against now (``report --base REV``).

The base's summaries are read from the local DVC cache alone, without a checkout: dvc.lock at
REV (from git) names the materialized folder's ``.dir`` object, which lists each shard's md5,
and each shard is a cache file. When any of that is not in the local cache, the comparison is
left out and the report says so: ``--base`` otherwise reads git alone, never a remote.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

from dvc_cuvis._io import parse_yaml
from dvc_cuvis.digests.hashing import is_folder_hash
from dvc_cuvis.errors import DvcCuvisError, first_line
from dvc_cuvis.leakage.shift import Shift, recording_means, shift_test
from dvc_cuvis.limits import loads_json
from dvc_cuvis.materialize.summaries import RECIPE
from dvc_cuvis.materialize.summary_store import SUMMARIES_DIR, read_shard, spectral_problem
from dvc_cuvis.model.compare import Version
from dvc_cuvis.repo.dvc_client import CacheLocator
from dvc_cuvis.review.history import GitTree
from dvc_cuvis.review.spectra import Balance, read_index, shifted_ranges, smd, stage_spectrum


def _dir_md5(lock_text: bytes, folder: str, where: str) -> str | None:
    """The ``.dir`` md5 dvc.lock records for the output ``folder`` (None: no such output);
    a pushed dvc.lock is read within the alias and nesting budget."""
    from dvc_cuvis.config.bounded_yaml import check_yaml_budget

    check_yaml_budget(lock_text, where)
    lock = parse_yaml(lock_text, where)
    for stage in (lock.get("stages") or {}).values() if isinstance(lock, dict) else ():
        for out in stage.get("outs") or [] if isinstance(stage, dict) else []:
            path = out.get("path") if isinstance(out, dict) else None
            if (isinstance(path, str) and posixpath.normpath(path) == folder
                    and is_folder_hash(out.get("md5"))):
                return str(out["md5"])
    return None


_MD5 = re.compile(r"[0-9a-f]{32}")
#: The fields of an entry the spectra compute with.
_SPECTRAL = {"wavelengths", "mean", "std"}
#: A frame's stored summary entry, and the entries of a folder by frame name.
Entry = dict[str, Any]
Entries = dict[str, Entry]


@dataclass(frozen=True)
class AtRevision:
    """A materialized folder's summaries at a revision, or why they are not at hand."""

    entries: Entries
    why: str = ""
    #: what is not in the local cache: "listing" (the folder's ``.dir``), "shard", or ""
    missing: str = ""


def summaries_at(tree: GitTree, rev: str, folder: str,
                 shards: Collection[str] | None = None,
                 locate: CacheLocator | None = None) -> AtRevision:
    """The summaries entries of ``folder`` (repository-relative) at ``rev`` from the local
    DVC cache (only the ``shards`` named, relative to the folder, when given; ``locate``:
    the cache's place, found once for several revisions), or why not."""
    locate = locate or CacheLocator(tree.root)
    try:
        dir_md5 = _dir_md5(tree.read(rev, "dvc.lock"), folder, f"{rev}:dvc.lock")
    except DvcCuvisError as exc:
        return AtRevision({}, f"dvc.lock at {rev} cannot be read ({exc})")
    if dir_md5 is None:
        return AtRevision({}, f"dvc.lock at {rev} records no output {folder}")
    listing = locate(dir_md5)  # a folder's listing: <md5>.dir
    if not listing.is_file():
        return AtRevision({}, f"{folder} at {rev} is not in the local DVC cache", "listing")
    where = f"{folder} at {rev}: its listing in the local DVC cache"
    try:
        items = loads_json(listing.read_bytes(), where)
    except (OSError, ValueError, DvcCuvisError) as exc:
        return AtRevision({}, f"{where} cannot be read ({first_line(exc)})")
    if not isinstance(items, list):
        return AtRevision({}, f"{where} is not a list of files")
    wanted: list[tuple[str, str]] = []
    for item in items:
        rel, md5 = (item.get("relpath"), item.get("md5")) if isinstance(item, dict) else (
            None, None)
        if not (isinstance(rel, str) and rel.startswith(SUMMARIES_DIR + "/")):
            continue
        if shards is not None and rel not in shards:
            continue
        if not (isinstance(md5, str) and _MD5.fullmatch(md5)):  # no object by that name
            return AtRevision({}, f"{folder}/{rel} at {rev} is not in the local DVC cache",
                              "shard")
        wanted.append((rel, md5))
    entries: Entries = {}
    for rel, md5 in wanted:
        shard = locate(md5)
        if not shard.is_file():
            return AtRevision({}, f"{folder}/{rel} at {rev} is not in the local DVC cache",
                              "shard")
        try:  # a shard of another recipe holds nothing comparable: it reads as empty
            stored = read_shard(shard)
        except DvcCuvisError as exc:
            return AtRevision({}, f"{folder}/{rel} at {rev} cannot be read from the local "
                              f"DVC cache ({exc})")
        for name, entry in stored.items():  # pushed data: computed with only when plain
            if not _SPECTRAL & entry.keys():
                continue  # a frame without a summary (a signature alone): nothing to compare
            why = spectral_problem(entry)
            if why:
                return AtRevision({}, f"{folder}/{rel} at {rev} cannot be read from the "
                                  f"local DVC cache (the entry of {name[:80]!r}: {why})")
            entries[name] = entry
    if not entries and shards is None:
        return AtRevision({}, f"{folder} at {rev} holds no spectral summaries (of recipe "
                          f"{RECIPE})")
    return AtRevision(entries)


def base_entries(tree: GitTree, rev: str, folder: str) -> tuple[Entries, str]:
    """The summaries entries of ``folder`` (repository-relative) at ``rev`` from the local
    cache, or why they are not at hand."""
    got = summaries_at(tree, rev, folder)
    if got.missing == "listing":
        return {}, got.why + " (`dvc fetch` at that revision brings it)"
    return got.entries, got.why


def train_shift(base: Version, entries: Entries,
                now: dict[tuple[float, ...], list[Entry]], threshold: float
                ) -> tuple[list[Balance], str]:
    """The balance of train at the base against train now, per shared wavelength grid: the
    per-band SMD, and the shift test over recordings (the unit a stage is drawn in, as
    between stages), whose verdict decides where it can run."""
    from dvc_cuvis.model.frame_names import frame_name

    uni = base.universe
    by_grid: dict[tuple[float, ...], list[Entry]] = {}
    for pos in base.stages["train"].tolist():
        entry = entries.get(frame_name(uni.source(pos), read_index(uni, pos)))
        if entry is not None:
            by_grid.setdefault(tuple(entry["wavelengths"]), []).append(entry)
    out: list[Balance] = []
    for grid, rows in sorted(by_grid.items()):
        now_rows = now.get(grid, [])
        a, b = stage_spectrum(rows), stage_spectrum(now_rows)
        values = smd(a, b) if a is not None and b is not None else None
        if values is None:
            continue
        ranges = shifted_ranges(values, grid, threshold)
        test = _base_test(rows, now_rows, grid, base.label)
        flagged = test.flagged if test is not None and test.p_value is not None else bool(ranges)
        out.append(Balance(f"train at {base.label}", "train", values, ranges, flagged, test))
    return out, "" if out else f"no train frames at {base.label} share a grid with train now"


def _recording_spectra(rows: list[Entry]) -> np.ndarray | None:
    """Per recording (by the universe's rule, from each entry's source) the mean spectrum of
    its frames (None: an entry without its source or a finite mean)."""
    from dvc_cuvis.model.universe import Universe

    if any(not isinstance(e.get("source"), str) or type(e.get("index", 0)) is not int
           or any(v is None for v in e["mean"]) for e in rows):
        return None  # a shard pushed by anyone: what it does not say plainly is not guessed
    try:
        uni = Universe.from_records([{"source": e["source"], "index": e.get("index", 0)}
                                     for e in rows])
    except DvcCuvisError:  # a source no universe would hold (absolute, "..", a control)
        return None
    codes = uni.recordings()[1]
    return recording_means(np.array([e["mean"] for e in rows], dtype=np.float64),
                           [int(c) for c in codes])[1]


def _base_test(then: list[Entry], now: list[Entry],
               grid: tuple[float, ...], label: str) -> Shift | None:
    """The shift test of train at the base against train now over their recordings (None:
    an entry that cannot say its recording or mean)."""
    a, b = _recording_spectra(then), _recording_spectra(now)
    if a is None or b is None:
        return None
    return shift_test(a, b, grid, stage_a=f"train at {label}", stage_b="train")
