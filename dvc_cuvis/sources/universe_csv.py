"""An existing universe.csv as the input: validated, canonicalized and re-digested.

Paths in the input are relative to the input CSV; they are rewritten relative to the
output CSV.  The ``split`` column is kept (``dvc-cuvis bake --from-csv`` reads it) and so
is every extra column.
"""

from __future__ import annotations

from typing import Any

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.universe import PATH_COLUMNS
from dvc_cuvis.model.universe_io import read_universe
from dvc_cuvis.sources._common import EnumerateOptions, Scan, parallel_map, rel_to_out


def scan_universe_csv(opts: EnumerateOptions) -> Scan:
    """Columns of the universe.csv at ``opts.root`` with paths re-based and md5 filled."""
    src_csv = opts.root
    if src_csv.is_dir():
        src_csv = src_csv / "universe.csv"
    uni = read_universe(src_csv)
    base = src_csv.parent
    columns: dict[str, list[Any]] = {n: uni.column(n) for n in uni.columns}
    columns["index"] = uni.indices.tolist() if uni.indexless is None else uni.ref_indices()
    rebased: dict[str, str] = {"": ""}
    for name in PATH_COLUMNS:
        if name in columns:  # paths were relative to the input CSV (absolute ones are refused)
            columns[name] = [rebased.setdefault(v, rel_to_out(base / v, opts.out_dir))
                             for v in columns[name]]
    if opts.hash_content and "materialized_path" in columns:
        recorded = columns.get("md5", [""] * len(uni))

        def digest(rel: str) -> str:
            path = opts.out_dir / rel
            if not path.is_file():
                raise DvcCuvisError(
                    f"{src_csv}: materialized_path {rel!r} does not exist; fix the path or "
                    "enumerate with --no-hash"
                )
            return opts.cache.md5(path)

        paths = sorted(set(columns["materialized_path"]) - {""})
        by_path = dict(zip(paths, parallel_map(digest, paths, jobs=opts.jobs, desc="md5",
                                               show=opts.progress, opts=opts), strict=True))
        columns["md5"] = [by_path.get(rel, old)
                          for rel, old in zip(columns["materialized_path"], recorded, strict=True)]
    return Scan([], columns=columns)
