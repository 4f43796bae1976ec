"""What a materialize run is asked to do: the frame recipe (:class:`ReaderParams`) and the
run's options (:class:`MaterializeOptions`), every ``"auto"`` resolved once.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dvc_cuvis import limits
from dvc_cuvis.config.specs import MATERIALIZE
from dvc_cuvis.digests.stat_cache import StatCache, open_stat_cache
from dvc_cuvis.errors import DvcCuvisError, OptionError
from dvc_cuvis.model.frames import Compression

if TYPE_CHECKING:
    from dvc_cuvis.config.settings import Settings


@dataclass(frozen=True)
class ReaderParams:
    """Everything that changes the bytes of a frame (part of every recipe key)."""

    crop: tuple[int, int, int, int] | None = None
    processing_mode: str | None = MATERIALIZE.default("processing_mode")
    white_ref: str | None = None
    dark_ref: str | None = None
    compress: Compression = field(default_factory=Compression)

    def key(self) -> dict[str, object]:
        """JSON-ready form for the recipe key."""
        d: dict[str, object] = asdict(self)
        d["crop"] = list(self.crop) if self.crop else None
        return d


def reader_params(values: dict[str, Any]) -> ReaderParams:
    """The frame recipe (:class:`ReaderParams`) from ``MATERIALIZE`` values."""
    mode = values["processing_mode"]
    return ReaderParams(
        crop=parse_crop(values["crop"]),
        processing_mode=None if str(mode).lower() == "none" else str(mode),
        white_ref=values["white_ref"],
        dark_ref=values["dark_ref"],
        compress=Compression.parse(values["compress"]),
    )


def parse_crop(spec: str | list[int] | tuple[int, ...] | None) -> tuple[int, int, int, int] | None:
    """``"T,B,L,R"`` (or a list of 4 ints) into a crop tuple; None/empty = no crop."""
    if spec is None or spec == "" or spec == []:
        return None
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    try:
        values = tuple(int(str(p).strip()) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 4 or any(v < 0 for v in values):
        raise DvcCuvisError(f"crop {spec!r}: expected TOP,BOTTOM,LEFT,RIGHT (4 ints >= 0)")
    return values[0], values[1], values[2], values[3]


@dataclass(frozen=True)
class OptionWarning:
    """A warning about one option's value, kept by the option's name so that the CLI can
    name it as the user gave it (the flag, or the params key)."""

    param: str
    text: str


@dataclass(frozen=True)
class MaterializeOptions:
    """One materialize run, as the CLI, a params section or a Python caller asks for it.

    Built by :meth:`from_settings` (flag > params section > default) or by keywords; the
    rules on values are checked here, once, and :meth:`resolved` turns every ``"auto"``
    (stat cache, progress bar, durability) into what the run uses, so nothing downstream
    decides it again.
    """

    out_dir: Path
    universe: Path = Path(MATERIALIZE.default("universe"))
    splits: Path | None = None
    select: str = MATERIALIZE.default("select")
    params: ReaderParams = field(default_factory=ReaderParams)
    jobs: int = MATERIALIZE.default("jobs")
    executor: str = MATERIALIZE.default("executor")
    scheduler: str | None = None
    stat_cache: str | Path | StatCache | None = "auto"
    lock_wait: float = MATERIALIZE.default("lock_wait")
    progress: bool | None = None
    summaries: bool = True
    sync: str = "auto"

    def __post_init__(self) -> None:
        """Refuse a value no run can use, naming the parameter."""
        for name, value, choices in (("select", self.select, ("splits", "all")),
                                     ("executor", self.executor, ("local", "dask")),
                                     ("sync", self.sync, ("auto", "fs", "file"))):
            if value not in choices:
                raise OptionError(f"{{{name}}} {value!r}: choose {', '.join(choices)}", name)
        if type(self.jobs) is not int or self.jobs < 1:
            raise OptionError(f"{{jobs}} {self.jobs!r}: expected a whole number >= 1", "jobs")

    @classmethod
    def from_settings(cls, s: Settings) -> MaterializeOptions:
        """The options of ``dvc-cuvis materialize``: flag > params section > default."""
        v = MATERIALIZE.values(s.get)
        out_dir = s.required("out_dir", "--out-dir DIR")
        params = reader_params(v)
        return cls(
            out_dir=Path(out_dir),
            universe=Path(v["universe"]),
            splits=Path(v["splits"]) if v["splits"] else None,
            select=v["select"],
            params=params,
            jobs=max(1, v["jobs"]),
            executor=v["executor"],
            scheduler=v["scheduler"],
            stat_cache=v["stat_cache"] or "auto",
            lock_wait=float(v["lock_wait"]),
            progress=v["progress"],
            summaries=not v["no_summaries"],
        ).resolved()

    def resolved(self) -> MaterializeOptions:
        """These options with every ``"auto"`` decided: the stat cache opened (``"auto"``:
        the repository's), the progress bar (when stderr is a terminal), and the durability
        scheme (``"fs"`` for the local executor, ``"file"`` for Dask, whose workers may
        write from other machines)."""
        cache = (self.stat_cache if isinstance(self.stat_cache, StatCache)
                 else open_stat_cache(self.stat_cache))
        progress = self.progress if self.progress is not None else sys.stderr.isatty()
        sync = self.sync if self.sync != "auto" else ("fs" if self.executor == "local"
                                                      else "file")
        return replace(self, stat_cache=cache, progress=progress, sync=sync)

    @property
    def cache(self) -> StatCache:
        """The stat cache of resolved options."""
        if not isinstance(self.stat_cache, StatCache):
            raise DvcCuvisError("stat_cache: not opened yet; call MaterializeOptions.resolved()")
        return self.stat_cache

    def warnings(self) -> tuple[OptionWarning, ...]:
        """What the user should know about these options before the run starts: ``jobs``
        above the CPUs this process may use (the pool is capped, ``limits.pool_size``)."""
        cpus = limits.cpus()
        if self.executor == "local" and self.jobs > cpus:
            return (OptionWarning("jobs", f"{self.jobs:,} is more than the {cpus} CPUs this "
                                  f"process may use: at most {cpus} worker processes run "
                                  "(never more than the frames to write)"),)
        return ()
