"""Enumerate runs for the content-memo tests: what a run wrote and how it got its values."""

from __future__ import annotations

from pathlib import Path

from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.model.universe_io import format_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe


def enumerate_text(root: Path, cache: StatCache, data: str = "data/npz") -> tuple[str, dict]:
    """enumerate (npz) of ``root/data`` into ``root``: universe.csv text and metrics."""
    opts = EnumerateOptions(format="npz", root=root / data, out_dir=root, cache=cache, jobs=2)
    uni, metrics = enumerate_universe(opts)
    return format_universe(uni), metrics


def plain(root: Path, data: str = "data/npz") -> tuple[str, dict]:
    """The reference: no cache file, no DVC, every frame read and hashed."""
    cache = StatCache(None)
    out = enumerate_text(root, cache, data)
    assert cache.stats()["derived_from_memo"] == 0 and cache.stats()["md5_cached"] == 0
    return out
