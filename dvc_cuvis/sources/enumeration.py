"""Per-format enumeration of a sample universe (cu3s, tiff, npz, universe.csv).

Each format module turns files on disk into universe rows (``source``, ``index``,
``materialized_path``, provenance).  This module's :func:`enumerate_universe` runs one of
them, fills the content digests through the stat cache, and builds the canonical
:class:`~dvc_cuvis.model.universe.Universe` plus the metrics that ``dvc metrics`` shows.

Format modules import their heavy dependency (cuvis, tifffile, pycocotools) lazily, so an
all-npz run never imports the SDK.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dvc_cuvis.config.specs import FORMATS
from dvc_cuvis.digests.hashing import content_fingerprint
from dvc_cuvis.errors import DvcCuvisError, and_more
from dvc_cuvis.limits import Limits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.sources._common import (
    EnumerateOptions,
    Scan,
)

__all__ = ["Enumerated", "enumerate_dataset", "enumerate_universe", "scan", "universe_metrics"]


@dataclass(frozen=True)
class Enumerated:
    """What an enumerate run made: the universe, its metrics document, the files written,
    and the run's notes (statistics that must not go into the tracked metrics)."""

    universe: Universe
    metrics: dict[str, Any]
    out: Path
    metrics_path: Path | None
    notes: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        """The one line a run reports: samples, sources, format, file and hash."""
        m = self.metrics
        return (f"enumerated {m['samples']} samples from {m['sources']} sources "
                f"({m['format']}) -> {self.out}; universe_hash {m['universe_hash'][:12]}")


def enumerate_dataset(opts: EnumerateOptions) -> Enumerated:
    """Scan a dataset and write its universe.csv (and metrics): ``dvc-cuvis enumerate`` as
    one call, so a notebook makes the same bytes as the pipeline's stage."""
    from dvc_cuvis._io import atomic_write_text, write_json
    from dvc_cuvis.digests.stat_cache import hashing_line
    from dvc_cuvis.model.universe_io import format_universe
    from dvc_cuvis.sources.seed import attach

    out = opts.universe_csv
    attach(opts.cache, opts.format, out, opts.metrics)  # HEAD's run, if DVC vouches for it
    uni, info = enumerate_universe(opts)
    atomic_write_text(out, format_universe(uni))
    if opts.metrics is not None:
        write_json(opts.metrics, info)
    # run statistics are notes: the tracked metrics stay the same cold or warm
    notes = ((hashing_line(opts.cache),)
             if opts.cache is not None and opts.hash_content else ())
    return Enumerated(uni, info, out, opts.metrics, notes)


def scan(opts: EnumerateOptions) -> Scan:
    """Run the scanner of ``opts.format``."""
    if opts.executor not in ("local", "dask"):
        raise DvcCuvisError(f"unknown executor {opts.executor!r}; choose local or dask")
    if opts.executor == "dask":  # workers have their own working folder: absolute paths only
        opts = dataclasses.replace(opts, root=Path(os.path.abspath(opts.root)),
                                   out_dir=Path(os.path.abspath(opts.out_dir)))
    if opts.format == "tiff":
        from dvc_cuvis.sources.tiff import scan_tiff

        return scan_tiff(opts)
    if opts.format == "npz":
        from dvc_cuvis.sources.npz import scan_npz

        return scan_npz(opts)
    if opts.format == "cu3s":
        from dvc_cuvis.sources.cu3s import scan_cu3s

        return scan_cu3s(opts)
    if opts.format == "universe":
        from dvc_cuvis.sources.universe_csv import scan_universe_csv

        return scan_universe_csv(opts)
    raise DvcCuvisError(f"unknown format {opts.format!r}; choose one of {', '.join(FORMATS)}")


def enumerate_universe(opts: EnumerateOptions) -> tuple[Universe, dict[str, object]]:
    """Scan, digest and canonicalize a universe; returns it with its metrics."""
    result = scan(opts)
    _refuse_long_names(result, opts)
    if result.bad:  # the door: keep the verdicts of the good frames, then refuse
        from dvc_cuvis.sources.door import refuse

        opts.cache.save()
        raise refuse(result.bad, result.scanned, opts.format, opts.root)
    if not len(result):
        raise DvcCuvisError(
            f"{opts.root}: no samples found for format {opts.format!r}"
            + (f" with pattern {opts.pattern!r}" if opts.pattern else "")
            + " (an empty universe cannot be split)"
        )
    if opts.categories is not None:
        from dvc_cuvis.model.categories import load_category_map

        result.categories = load_category_map(opts.categories)
    where = opts.out_dir / "universe.csv"
    uni = (Universe.from_columns(result.columns, path=where) if result.columns is not None
           else Universe.from_records(result.records, path=where))
    opts.cache.save()
    hashed = opts.cache.take_hashed()
    if hashed:  # files DVC had no md5 for: DVC need not read them again (dvc add, status)
        from dvc_cuvis.digests.dvc_state import hand_over

        hand_over(hashed)
    metrics = universe_metrics(uni, opts.format, result.categories)
    if opts.format == "npz":  # the code versions of the values its columns render
        from dvc_cuvis.sources.npz import DERIVED

        metrics["derived"] = dict(sorted(DERIVED.items()))
        if opts.verify:  # every row passed this door: a vouched copy may stand for its verdicts
            from dvc_cuvis.sources.door import NPZ_DOOR

            metrics["door"] = dict(sorted(NPZ_DOOR.items()))
    return uni, metrics


def _refuse_long_names(result: Scan, opts: EnumerateOptions) -> None:
    """Refuse files whose frame names materialize could not create (too many bytes once
    encoded, the temp file's included), naming each, before any stage builds on them."""
    from dvc_cuvis.limits import LimitError, current
    from dvc_cuvis.model.frame_names import frame_name, frame_name_problem

    pairs: Iterable[tuple[object, object]] = (
        zip(result.columns["source"], result.columns["index"], strict=True)
        if result.columns is not None
        else ((r.get("source"), r.get("index")) for r in result.records))
    longest: dict[str, int] = {}
    for source, index in pairs:
        if isinstance(source, str):  # the longest name of a source is its highest index's
            longest[source] = max(longest.get(source, 0), _int_or_zero(index))
    limit = current().max_name_bytes
    bad = [(s, p) for s in sorted(longest)
           if (p := frame_name_problem(frame_name(s, longest[s]), limit)) is not None]
    if bad:
        source, problem = bad[0]
        raise LimitError(
            f"{opts.root}: {source!r}: cannot be materialized: {problem}"
            f"{and_more(len(bad), 1)}; rename the file (shorter names), or raise "
            f"{Limits.env_name('max_name_bytes')} if the file system takes longer names")


def _int_or_zero(value: Any) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


def universe_metrics(
    uni: Universe, fmt: str, categories: dict[str, int] | None
) -> dict[str, object]:
    """Counts and fingerprints of a universe, for the enumerate metrics file."""
    group_names, _ = uni.groups()
    metrics: dict[str, object] = {
        "format": fmt,
        "universe_hash": uni.hash,
        "samples": len(uni),
        "sources": len(uni.source_names),
        "groups": len(group_names),
    }
    if uni.has_column("md5"):
        metrics["content_fingerprint"] = content_fingerprint(uni.uids(), uni.column("md5"))
    if uni.has_column("category_ids"):
        cats = uni.category_ids
        counts: dict[int, int] = {}
        for ids in cats:
            for c in set(ids):
                counts[c] = counts.get(c, 0) + 1
        anomalous = int(uni.anomalous().sum())  # the one rule: a category id != 0
        metrics["anomalous"] = anomalous
        metrics["normal"] = len(uni) - anomalous
        id_to_name = {v: k for k, v in (categories or {}).items()}
        metrics["category_counts"] = {
            id_to_name.get(c, str(c)): counts[c] for c in sorted(counts)
        }
    if categories is not None:
        metrics["categories"] = dict(sorted(categories.items(), key=lambda kv: (kv[1], kv[0])))
    return metrics
