"""An existing universe.csv as the input: validated, canonicalized and re-digested.

Paths in the input are relative to the input CSV; they are rewritten relative to the
output CSV.  The ``split`` column is kept (``dvc-cuvis bake --from-csv`` reads it) and so
is every extra column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.sources import EnumerateOptions, Scan, parallel_map, rel_to_out
from dvc_cuvis.universe import PATH_COLUMNS, read_universe


def scan_universe_csv(opts: EnumerateOptions) -> Scan:
    """Rows of the universe.csv at ``opts.root`` (a file) with paths re-based and md5 filled."""
    src_csv = opts.root
    if src_csv.is_dir():
        src_csv = src_csv / "universe.csv"
    uni = read_universe(src_csv)
    base = src_csv.parent
    names = [c for c in uni.columns]
    cols = {n: uni.column(n) for n in names}
    rows: list[dict[str, Any]] = [
        {n: cols[n][i] for n in names} for i in range(len(uni))
    ]
    for row in rows:
        row["index"] = int(row["index"])
        for name in PATH_COLUMNS:
            value = row.get(name)
            if value:
                p = Path(value)
                row[name] = rel_to_out(p if p.is_absolute() else base / p, opts.out_dir)

    if opts.hash_content and uni.has_column("materialized_path"):

        def digest(row: dict[str, Any]) -> str:
            rel = row.get("materialized_path") or ""
            if not rel:
                return str(row.get("md5", ""))
            path = opts.out_dir / rel
            if not path.is_file():
                raise DvcCuvisError(
                    f"{src_csv}: materialized_path {rel!r} of {row['source']}#{row['index']} "
                    "does not exist; fix the path or enumerate with --no-hash"
                )
            return opts.cache.md5(path)

        unique_paths: dict[str, dict[str, Any]] = {}
        for row in rows:
            unique_paths.setdefault(row.get("materialized_path") or "", row)
        keys = list(unique_paths)
        values = parallel_map(lambda k: digest(unique_paths[k]), keys, jobs=opts.jobs,
                              desc="md5", show=opts.progress)
        by_path = dict(zip(keys, values, strict=True))
        for row in rows:
            row["md5"] = by_path[row.get("materialized_path") or ""]
    return Scan(rows)
