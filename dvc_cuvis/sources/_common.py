"""Helpers shared by the per-format scanners: options, scan result, paths, listing, pools.

Private to :mod:`dvc_cuvis.sources`: the format modules (cu3s, tiff, npz, universe_csv)
import from here rather than from the package ``__init__``, which only dispatches and
re-exports the public names.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import stat
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from dvc_cuvis.config.specs import ENUMERATE, FORMATS
from dvc_cuvis.digests import dvcignore
from dvc_cuvis.digests.stat_cache import CacheMiss, StatCache
from dvc_cuvis.errors import DvcCuvisError, OptionError, and_more
from dvc_cuvis.paths.guard import PathGuard, is_within
from dvc_cuvis.paths.walk import walk_glob
from dvc_cuvis.progress import progress

if TYPE_CHECKING:
    from dvc_cuvis.config.settings import Settings
    from dvc_cuvis.sources.door import BadFrame

_T = TypeVar("_T")
_R = TypeVar("_R")

def _wavelengths(value: object) -> tuple[float, ...] | None:
    """The ``wavelengths`` setting parsed (:func:`dvc_cuvis.sources.tiff.parse_wavelengths`)."""
    if value is None:
        return None
    from dvc_cuvis.sources.wavelengths import parse_wavelengths

    return parse_wavelengths(value, "--wavelengths / enumerate.wavelengths")


@dataclass(frozen=True)
class EnumerateOptions:
    """What to scan and how; every path is explicit (nothing is parsed out of file names).

    Frozen: the stat cache ("auto") is opened once, when the value is built, and every later
    step reads the same choices. ``out`` and ``metrics`` are the files a full enumerate run
    (:func:`~dvc_cuvis.sources.enumeration.enumerate_dataset`) writes.
    """

    format: str
    root: Path
    out_dir: Path
    pattern: str | None = None
    images: str = ENUMERATE.default("images")
    labels: str | None = ENUMERATE.default("labels")
    annotations: str = ENUMERATE.default("annotations")
    categories: Path | None = None
    absolute_sources: bool = False
    group: str = ENUMERATE.default("group")
    hash_content: bool = True
    jobs: int = ENUMERATE.default("jobs")
    progress: bool = False
    executor: str = ENUMERATE.default("executor")  # "dask": cold hashing on a Dask cluster
    scheduler: str | None = None  # its address; None: an in-process cluster
    cache: StatCache = field(default_factory=lambda: StatCache(None))
    verify: bool = True  # the door (sources.door): refuse files materialize would trip on
    wavelengths: tuple[float, ...] | None = None  # tiff: --wavelengths, over each GDAL tag
    out: Path | None = None  # the universe.csv to write (None: out_dir / universe.csv)
    metrics: Path | None = None  # the universe metrics to write (None: none)

    def __post_init__(self) -> None:
        """Refuse a value no scan can use, naming the parameter."""
        for name, value, choices in (("format", self.format, FORMATS),
                                     ("executor", self.executor, ("local", "dask"))):
            if value not in choices:
                raise OptionError(f"{{{name}}} {value!r}: choose {', '.join(choices)}", name)
        if type(self.jobs) is not int or self.jobs < 1:
            raise OptionError(f"{{jobs}} {self.jobs!r}: expected a whole number >= 1", "jobs")

    @property
    def universe_csv(self) -> Path:
        """The universe.csv a run writes: ``out``, else ``universe.csv`` in ``out_dir``."""
        return self.out if self.out is not None else self.out_dir / "universe.csv"

    @classmethod
    def from_settings(cls, settings: Settings) -> EnumerateOptions:
        """The options of ``dvc-cuvis enumerate`` (flag > params section > default).

        A dataset root that is missing is named by where it was set: a params value the
        user did not type is blamed on its file and key, never on a flag.
        """
        opts = cls.from_values(ENUMERATE.values(settings.get))[0]
        if (opts.format != "universe" and not opts.root.is_dir()
                and not settings.typed("root")):
            raise DvcCuvisError(f"{opts.root}: dataset root not found or not a directory "
                                f"(named by {settings.origin('root')})")
        return opts

    @classmethod
    def from_values(cls, values: dict[str, Any], cache: StatCache | None = None,
                    ) -> tuple[EnumerateOptions, Path, str | None]:
        """Options, the universe.csv to write and the metrics path, from the ``ENUMERATE``
        values of a verb (flag > params section > default) or of a params section.

        ``cache``: a StatCache already loaded by the caller (check shares its own).
        """
        import sys

        from dvc_cuvis.digests.stat_cache import open_stat_cache

        if values.get("format") is None or values.get("root") is None:
            raise DvcCuvisError("enumerate needs --format and --root (or an 'enumerate' "
                                "section with format and root in params.yaml)")
        out = Path(values["out"])
        categories, progress = values.get("categories"), values.get("progress")
        metrics = values.get("metrics")
        opts = cls(
            format=str(values["format"]),
            root=Path(values["root"]),
            out_dir=out.parent if str(out.parent) else Path("."),
            pattern=values.get("pattern"),
            images=values["images"],
            labels=values["labels"],
            annotations=values["annotations"],
            categories=Path(categories) if categories else None,
            absolute_sources=bool(values["absolute_sources"]),
            group=values["group"],
            hash_content=not values["no_hash"],
            jobs=max(1, int(values["jobs"])),
            progress=progress if progress is not None else sys.stderr.isatty(),
            executor=str(values["executor"]),
            scheduler=values.get("scheduler"),
            wavelengths=_wavelengths(values.get("wavelengths")),
            cache=cache if cache is not None else open_stat_cache(
                values.get("stat_cache") or "auto"),
            out=out,
            metrics=Path(metrics) if metrics else None,
        )
        return opts, out, metrics

    @classmethod
    def for_rescan(cls, section: dict[str, Any], base: Path | str, universe: Path | str,
                   cache: StatCache, where: str = "params.yaml",
                   ) -> tuple[EnumerateOptions | None, str]:
        """How a check re-enumerates the data that made ``universe``: the options from the
        params ``section`` (paths relative to ``base``), or None and why not.

        Always local and silent (a check never depends on a running cluster); None when no
        section says how the universe was made, or when it writes another file.
        """
        if not section:
            return None, f"no 'enumerate' section in {where} says how universe.csv was made"
        opts, out, _ = cls.from_values(ENUMERATE.from_section(section, base, where), cache)
        if Path(os.path.abspath(out)) != Path(os.path.abspath(universe)):
            return None, f"{universe} is not what the enumerate section writes ({out})"
        # a check compares md5s; the door (verify) is enumerate's, not the check's
        return dataclasses.replace(opts, progress=False, executor="local", verify=False), ""


@dataclass
class Scan:
    """Rows found by one format scanner, plus the category name->id map it knows of."""

    records: list[dict[str, Any]]
    categories: dict[str, int] | None = None
    columns: dict[str, list[Any]] | None = None  # columnar rows (cu3s: one row per frame)
    bad: list[BadFrame] = field(default_factory=list)  # files the door refused

    def __len__(self) -> int:
        return len(self.columns["source"]) if self.columns is not None else len(self.records)

    @property
    def scanned(self) -> int:
        """Files or samples the scan saw: the rows plus the files the door refused."""
        return len(self) + len(self.bad)


def rel_to_out(path: Path | str, out_dir: Path) -> str:
    """Posix path of ``path`` relative to the universe.csv folder (must not need ``..``)."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(out_dir))
    rel = rel.replace(os.sep, "/")
    if rel == ".." or rel.startswith("../"):
        raise DvcCuvisError(
            f"{path}: lies outside the folder of the universe.csv ({out_dir}); paths in "
            "universe.csv are relative to it and may not contain '..' — write universe.csv "
            "into a folder that contains the data"
        )
    return "" if rel == "." else rel


def source_id(path: Path, root: Path, absolute: bool) -> str:
    """Logical source id: posix path relative to the dataset root (or absolute when asked)."""
    if absolute:
        return path.resolve().as_posix()
    return path.relative_to(root).as_posix()


def list_files(root: Path, pattern: str) -> list[str]:
    """Posix paths (relative to ``root``) matching ``pattern`` (``**`` recursive), sorted.

    Hidden files and folders are skipped; directories that match are dropped later, when
    the caller stats each file anyway.  A symlink to a folder is not descended
    (:func:`~dvc_cuvis.paths.walk.walk_glob`: each file is listed once, under its own path, and
    a loop of links ends): one inside the root is named in a warning, one leading out of it
    is refused.  Inside a DVC repository, what DVC's ignore rules
    leave out (``.dvcignore`` files, nested ones included; DVC's default patterns;
    subrepositories) is left out too, so a scan never lists a file DVC does not track
    (:mod:`dvc_cuvis.digests.dvcignore`).
    """
    if not root.is_dir():
        raise DvcCuvisError(f"{root}: dataset root not found or not a directory (check --root)")
    walk = walk_glob(root, pattern)
    found = walk.paths
    if walk.skipped_links:
        named = "; ".join(f"{rel!r} ({why})" for rel, why in walk.skipped_links[:3])
        logging.getLogger(__name__).warning(
            "%s: symlinked folders not followed: %s%s; their files are listed only where "
            "they really lie, each once", root, named, and_more(len(walk.skipped_links), 3))
    ignore = dvcignore.for_folder(os.fspath(root))
    if ignore is not None:
        seen = set(ignore.files(os.fspath(root)))
        found = [f for f in found if f in seen]
    return sorted(found)


class Located:
    """One file of a scan: its path under the root, absolute path, stat result, link flag."""

    __slots__ = ("abs", "link", "rel", "st")

    def __init__(self, root_abs: str, rel: str) -> None:
        """``lstat`` once (a second ``stat`` only for symlinks); ``st`` None if not a file."""
        self.rel = rel
        self.abs = f"{root_abs}/{rel}"
        st = os.lstat(self.abs)
        self.link = stat.S_ISLNK(st.st_mode)
        if self.link:
            st = os.stat(self.abs)
        self.st = st if stat.S_ISREG(st.st_mode) else None


def locate(root: Path, rels: list[str]) -> list[Located]:
    """Stat every listed file once; directories are dropped; symlinks out of ``root`` refused.

    Folders go through :class:`~dvc_cuvis.paths.guard.PathGuard` (one ``lstat`` per new folder)
    and every file is ``lstat``-ed anyway, so a symlink anywhere on the way that leaves the
    dataset root is caught without resolving every path.
    """
    guard = PathGuard(root)
    out = []
    for r in rels:
        f = Located(guard.base_abs, r)
        if f.st is None:
            continue
        if f.link or not guard.dir_ok(os.path.dirname(f.abs)):
            real = os.path.realpath(f.abs)
            if not is_within(guard.root_real, real):
                raise DvcCuvisError(
                    f"{f.abs}: leads outside the dataset root {root} (a symlink to {real}); "
                    "refusing to follow it"
                )
        out.append(f)
    return out


def scan_rows(
    items: list[_T], one: Callable[[_T, bool], _R], opts: EnumerateOptions, desc: str
) -> list[_R]:
    """``[one(x) for x in items]``: cache hits served serially, only misses on the pool.

    ``one(item, cached_only)`` must raise :class:`~dvc_cuvis.digests.stat_cache.CacheMiss` when it
    would have to read file contents while ``cached_only`` is true.
    """
    rows: list[Any] = [None] * len(items)
    misses: list[int] = []
    for i, item in enumerate(items):
        try:
            rows[i] = one(item, True)
        except CacheMiss:
            misses.append(i)
    todo = [items[i] for i in misses]
    computed = parallel_map(lambda x: one(x, False), todo, jobs=threads_for(todo, opts.jobs),
                            desc=desc, show=opts.progress, opts=opts)
    for i, row in zip(misses, computed, strict=True):
        rows[i] = row
    return rows


#: below this mean size, the files a scan reads go through one thread: reading one is then
#: mostly parsing (which holds the interpreter lock), not hashing (which releases it), and
#: threads only contend; on npz frames two threads lose to one on small files and win on
#: large ones, and this is where they cross (figures in docs/performance.md)
THREADS_FROM_MEAN_BYTES = 192 << 10


def threads_for(items: list[Any], jobs: int) -> int:
    """Hashing threads for reading ``items`` (``Located`` files): ``jobs``, or one when the
    files are small on average (:data:`THREADS_FROM_MEAN_BYTES`)."""
    sizes = [f.st.st_size for f in items if getattr(f, "st", None) is not None]
    if jobs > 1 and sizes and sum(sizes) < THREADS_FROM_MEAN_BYTES * len(sizes):
        return 1
    return jobs


def parallel_map(
    func: Callable[[_T], _R], items: list[_T], *, jobs: int, desc: str, show: bool,
    opts: EnumerateOptions | None = None,
) -> list[_R]:
    """``[func(x) for x in items]`` on a thread pool (hashing releases the GIL), in order.

    With ``opts.executor == "dask"`` the items go to the Dask cluster instead, and the
    stat cache entries ``func`` records there come back into ``opts.cache``.
    """
    if opts is not None and opts.executor == "dask" and items:
        from dvc_cuvis.digests.cluster import map_with_cache

        return map_with_cache(func, items, opts.cache, scheduler=opts.scheduler, desc=desc,
                              show=show)
    if jobs <= 1 or len(items) < 64:
        return [func(x) for x in progress(items, total=len(items), desc=desc, enabled=show)]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(progress(pool.map(func, items), total=len(items), desc=desc, enabled=show))
