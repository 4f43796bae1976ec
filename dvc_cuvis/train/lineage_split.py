"""The split of a dataset record: its JSON, its sha256, and its samples per stage counted
from the ids (a range is never expanded, no universe is read)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.limits import loads_json
from dvc_cuvis.model.ids import parse_id_range
from dvc_cuvis.model.splits import STAGES, dumps_splits, effective_splits
from dvc_cuvis.repo.git import FileMemo

__all__ = ["split_facts", "split_file", "split_samples", "stage_counts"]


def _read_split(path: Path) -> tuple[dict[str, Any], str, dict[str, int | None]]:
    """A splits file as plain JSON, the sha256 of its bytes, and its samples per stage."""
    try:
        data = path.read_bytes()
        doc = loads_json(data, path)
    except (OSError, ValueError) as exc:
        raise DvcCuvisError(f"{path}: cannot read the split for the dataset record "
                            f"({exc})") from None
    return doc, hashlib.sha256(data).hexdigest(), stage_counts(doc)


def split_facts(
    splits: Path | str | DataSplitConfig, files: FileMemo,
) -> tuple[dict[str, Any], str, dict[str, int | None], Path | None]:
    """The split as plain JSON, the sha256 of its bytes, its samples per stage and its file
    (None: inline); a file is read again only when its stamp changed (``files``)."""
    if isinstance(splits, DataSplitConfig):
        effective, _ = effective_splits(splits)
        if isinstance(effective, DataSplitConfig):
            text = dumps_splits(effective).encode("utf-8")
            doc = json.loads(text)
            return doc, hashlib.sha256(text).hexdigest(), stage_counts(doc), None
        splits = effective
    path = Path(splits)
    facts = files.parsed(path, _read_split)
    if facts is None:
        raise DvcCuvisError(f"{path}: cannot read the split for the dataset record")
    return (*facts, path)


def _selector_samples(sel: dict[str, Any]) -> set[tuple[str, int | None]] | None:
    """The (source, index) pairs a concrete selector names; None for a rule (a glob, ...)."""
    kind = sel.get("kind")
    if kind == "files":
        return {(str(p), None) for p in sel.get("paths") or []}
    if kind != "file_indices":
        return None
    out: set[tuple[str, int | None]] = set()
    source = str(sel.get("source"))
    for i in sel.get("ids") or []:
        run = parse_id_range(i) if isinstance(i, str) else None
        if run is not None:
            out.update((source, k) for k in run)
        else:
            out.add((source, int(i)))
    return out


def split_samples(doc: Mapping[str, Any]) -> dict[str, list[tuple[str, int | None]]] | None:
    """Per stage, the samples a baked split names, in file order (first occurrence kept);
    None when a stage holds a rule (its samples depend on the universe)."""
    stages: dict[str, list[tuple[str, int | None]]] = {}
    for stage in STAGES:
        seen: set[tuple[str, int | None]] = set()
        ordered: list[tuple[str, int | None]] = []
        for sel in doc.get(stage) or []:
            named = _selector_samples(sel) if isinstance(sel, dict) else None
            if named is None:
                return None
            for pair in sorted(named, key=lambda p: (p[0], -1 if p[1] is None else p[1])):
                if pair not in seen:
                    seen.add(pair)
                    ordered.append(pair)
        stages[stage] = ordered
    return stages


def _runs(ids: list[Any]) -> list[range]:
    """A selector's ids as ranges (an int is a range of one)."""
    runs = []
    for i in ids:
        run = parse_id_range(i) if isinstance(i, str) else None
        runs.append(run if run is not None else range(int(i), int(i) + 1))
    return runs


def _union_size(runs: list[range]) -> int:
    """How many distinct ids ``runs`` hold (intervals merged; stepped ones expanded)."""
    if any(r.step != 1 for r in runs):
        return len(set().union(*runs))
    total, end = 0, None
    for r in sorted(runs, key=lambda r: r.start):
        start = r.start if end is None else max(r.start, end)
        if r.stop > start:
            total += r.stop - start
            end = r.stop if end is None else max(end, r.stop)
    return total


def stage_counts(doc: dict[str, Any]) -> dict[str, int | None]:
    """Samples per stage of a baked split, counted from its ids without expanding a range
    (no universe is read); a rule stage, and an empty predict (the whole universe), count
    as None."""
    counts: dict[str, int | None] = {}
    for stage in STAGES:
        selectors = doc.get(stage) or []
        files: set[str] = set()
        by_source: dict[str, list[range]] = {}
        for sel in selectors:
            kind = sel.get("kind") if isinstance(sel, dict) else None
            if kind == "files":
                files.update(str(p) for p in sel.get("paths") or [])
            elif kind == "file_indices":
                by_source.setdefault(str(sel.get("source")), []).extend(
                    _runs(sel.get("ids") or []))
            else:
                break
        else:
            if selectors or stage != "predict":
                counts[stage] = len(files) + sum(_union_size(r) for r in by_source.values())
                continue
        counts[stage] = None
    return counts


def split_file(splits: Path | str | DataSplitConfig) -> Path | None:
    """The file a split is read from (None: an inline config), without reading it."""
    if isinstance(splits, DataSplitConfig):
        if not splits.splits_path or any(getattr(splits, s) for s in STAGES):
            return None
        return Path(splits.splits_path)
    return Path(splits)
