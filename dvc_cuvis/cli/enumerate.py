"""``dvc-cuvis enumerate``: a dataset scanned into a canonical universe.csv plus metrics."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._settings import EXIT_OK, Settings, register, verb_parser
from dvc_cuvis.errors import DvcCuvisError

FORMATS = ["cu3s", "tiff", "npz", "universe"]


def add_parser(sub: Any) -> None:
    """The ``enumerate`` verb's flags."""
    p = verb_parser(sub, "enumerate", "scan a dataset into a canonical universe.csv",
                    paths=("root", "out", "metrics", "categories", "stat_cache"))
    p.add_argument("--format", choices=FORMATS,
                   help="what the data is: cu3s sessions (+COCO json), tiff cubes (+PNG labels), "
                   "npz frames, or universe (an existing universe.csv) (required)")
    p.add_argument("--root", metavar="PATH",
                   help="dataset root folder; for --format universe the universe.csv (required)")
    p.add_argument("--out", metavar="PATH", help="universe.csv to write (default: universe.csv)")
    p.add_argument("--metrics", metavar="PATH",
                   help="universe metrics json: counts, hash, categories (default: none)")
    p.add_argument("--pattern", help="glob under the root (default per format: **/*.cu3s, "
                   "**/*.npz, *.tif*)")
    p.add_argument("--images", help="tiff: cube folder under the root (default: images)")
    p.add_argument("--labels", help="tiff: PNG label folder under the root (default: labels)")
    p.add_argument("--annotations", choices=["sibling", "none"],
                   help="cu3s: COCO json next to each session (<stem>.json) or none "
                   "(default: sibling)")
    p.add_argument("--categories", metavar="PATH",
                   help="category name->id map: COCO json or {name: id} json (default: none)")
    p.add_argument("--absolute-sources", dest="absolute_sources", action="store_true",
                   default=None, help="absolute posix paths as source ids, as the Cuvis.AI GUI "
                   "writes them (default: paths relative to the universe.csv)")
    p.add_argument("--group", choices=["auto", "parent", "none"],
                   help="group column: auto (npz: the frame's recording), parent (folder), none "
                   "(default: auto)")
    p.add_argument("--no-hash", dest="no_hash", action="store_true", default=None,
                   help="skip content md5s; drift checks then cannot see edits (default: hash)")
    p.add_argument("--jobs", type=int, help="hashing threads (default: 4; files under 192 KiB "
                   "on average are read on one thread, where threads only contend)")
    p.add_argument("--executor", choices=["local", "dask"],
                   help="where files not in the stat cache are read and hashed: local threads "
                   "or a Dask cluster (default: local)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="Dask scheduler address, with --executor dask (default: none, an "
                   "in-process cluster)")
    p.add_argument("--stat-cache", dest="stat_cache", metavar="PATH",
                   help="stat cache file, or 'none' for memory only "
                   "(default: .dvc/tmp/dvc-cuvis/stat-cache.bin)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    p.set_defaults(func=run)
    register("enumerate", p)


def open_cache(setting: str | None) -> Any:
    """The stat cache a verb uses: a path, ``none`` (in memory only); unset = the default."""
    from dvc_cuvis.digests import open_stat_cache

    return open_stat_cache(setting or "auto")


def options(get: Callable[..., Any], cache: Any = None) -> tuple[Any, Path, str | None]:
    """EnumerateOptions, output path and metrics path from settings (``get(name, default)``).

    ``cache``: a StatCache already loaded by the caller (check shares its own).
    """
    from dvc_cuvis.sources import EnumerateOptions

    fmt, root = get("format", None), get("root", None)
    if fmt is None or root is None:
        raise DvcCuvisError("enumerate needs --format and --root (or an 'enumerate' section "
                            "with format and root in params.yaml)")
    out = Path(get("out", "universe.csv"))
    if cache is None:
        cache = open_cache(get("stat_cache", None))
    categories = get("categories", None)
    progress = get("progress", None)
    opts = EnumerateOptions(
        format=str(fmt),
        root=Path(root),
        out_dir=out.parent if str(out.parent) else Path("."),
        pattern=get("pattern", None),
        images=get("images", "images"),
        labels=get("labels", "labels"),
        annotations=get("annotations", "sibling"),
        categories=Path(categories) if categories else None,
        absolute_sources=bool(get("absolute_sources", False)),
        group=get("group", "auto"),
        hash_content=not get("no_hash", False),
        jobs=max(1, int(get("jobs", 4))),
        progress=progress if progress is not None else sys.stderr.isatty(),
        executor=str(get("executor", "local")),
        scheduler=get("scheduler", None),
        cache=cache,
    )
    return opts, out, get("metrics", None)


def hashing_line(cache: Any) -> str:
    """One line saying where the md5s came from and how many bytes were read to hash."""
    st = cache.stats()
    line = (f"hashing: {st['bytes_hashed']} bytes read; md5 from DVC {st['md5_from_dvc']}, "
            f"from the stat cache {st['md5_cached']}, hashed {st['md5_hashed']}")
    if st["derived_computed"] or st["derived_from_memo"]:  # files parsed (npz frames)
        line += (f"; frames parsed {st['derived_computed']}, "
                 f"from the memo {st['derived_from_memo']}")
    return line


def run(args: argparse.Namespace) -> int:
    """Scan a dataset into a canonical universe.csv plus universe metrics."""
    from dvc_cuvis._io import atomic_write_text, write_json
    from dvc_cuvis.sources import enumerate_universe
    from dvc_cuvis.universe import format_universe

    s = Settings(args)
    opts, out, metrics = options(s.get)
    from dvc_cuvis.seed import attach  # HEAD's run, if DVC vouches for it (dvc_cuvis.seed)

    attach(opts.cache, opts.format, out, metrics)
    uni, info = enumerate_universe(opts)
    atomic_write_text(out, format_universe(uni))
    if metrics:
        write_json(metrics, info)
    print(f"enumerated {info['samples']} samples from {info['sources']} sources "
          f"({info['format']}) -> {out}; universe_hash {info['universe_hash'][:12]}")
    if opts.cache is not None and opts.hash_content:
        # run statistics go to stderr: the tracked metrics stay the same cold or warm
        print(f"dvc-cuvis: {hashing_line(opts.cache)}", file=sys.stderr)
    return EXIT_OK
