"""``dvc-cuvis fetch`` as one call: the options, the plan, the pull and what it did.

:func:`fetch_stages` pulls exactly the files some stages of a split need (DVC's granular
pull, md5-verified) or, with ``dry_run``, only says which and how many bytes; the CLI prints
its :class:`Fetched`. The repository is opened here (:mod:`dvc_cuvis.repo.pull`), never by
a front end.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dvc_cuvis.errors import OptionError
from dvc_cuvis.repo.pull import FetchFile, FetchPlan, FetchResult

if TYPE_CHECKING:
    from dvc_cuvis.config.settings import Settings

__all__ = ["FetchOptions", "Fetched", "fetch_stages"]

JsonDoc = dict[str, object]


@dataclass(frozen=True)
class FetchOptions:
    """What ``fetch`` pulls: ``stages`` of ``splits`` resolved against ``universe``.

    ``materialized``: the materialize output folder whose npz frames to fetch instead of
    the raw files (None: raw). ``root``: the DVC repository (None: the one holding
    ``universe``, found once by :meth:`resolved`).
    """

    stages: tuple[str, ...]
    universe: Path = Path("universe.csv")
    splits: Path = Path("splits.json")
    materialized: Path | None = None
    categories: Path | None = None
    remote: str | None = None
    jobs: int | None = None
    progress: bool = False
    dry_run: bool = False
    root: Path | None = None

    def __post_init__(self) -> None:
        if not self.stages:
            raise OptionError("fetch needs {stages}: one or more of train, val, test, predict",
                              "stages")

    @classmethod
    def from_settings(cls, s: Settings) -> FetchOptions:
        """The options of ``dvc-cuvis fetch`` (flag > params section > default); the split's
        files must exist, and the materialized folder defaults to materialize's."""
        from dvc_cuvis.config.inputs import require_file, split_paths

        stages = s.get("stage") or s.required("stage", "--stage STAGE")
        universe, splits = split_paths(s)
        require_file(splits, "splits", s)
        require_file(universe, "universe", s)
        progress = s.get("progress")
        categories = s.get("categories")
        return cls(stages=(stages,) if isinstance(stages, str) else tuple(stages),
                   universe=universe, splits=splits,
                   materialized=_materialized_dir(s) if s.flag("materialized") else None,
                   categories=Path(categories) if categories else None,
                   remote=s.get("remote"), jobs=s.get("jobs"),
                   progress=progress if progress is not None else sys.stderr.isatty(),
                   dry_run=s.flag("dry_run")).resolved()

    def resolved(self) -> FetchOptions:
        """The options with the repository found (once: every later step reads ``root``)."""
        if self.root is not None:
            return self
        from dvc_cuvis.paths.roots import require_dvc_root

        return dataclasses.replace(
            self, root=require_dvc_root(self.universe.resolve().parent).resolve())


def _materialized_dir(s: Settings) -> Path:
    """The materialize output folder: the flag or key, else materialize's out_dir, else
    ``materialized``."""
    folder = s.get("materialized_dir")
    if folder is None:
        value = s.of("materialize").get("out_dir")
        folder = s.from_file("out_dir", value, "materialize") if value else "materialized"
    return Path(folder)


@dataclass(frozen=True)
class Fetched:
    """What a fetch planned and, unless a dry run, did (``result``); ``companions`` of the
    plan's files are the materialized folder's splits.json and manifest.json."""

    plan: FetchPlan
    result: FetchResult | None
    companions: int
    materialized: bool

    @property
    def what(self) -> str:
        """What the files are, as a line names them."""
        return "materialized frames" if self.materialized else "files"

    def lines(self) -> list[str]:
        """The lines the CLI prints: each file and its size and the total (dry run), or
        what was downloaded and verified."""
        plan = self.plan
        counts = ", ".join(f"{k}={v}" for k, v in plan.samples.items())
        if self.result is None:
            out = []
            for f in plan.files:
                size = plan.sizes.get(f.path)
                out.append(f"{size if size is not None else '?':>12}  {f.path}")
            total = plan.total_bytes
            out.append(f"would fetch {len(plan.files)} {self.what} "
                       f"({total if total is not None else '?'} bytes) for {counts}")
            return out
        r = self.result
        return [f"fetched {len(plan.files) - self.companions} {self.what} for {counts}: "
                f"{r.downloaded} downloaded, {r.verified} verified against {plan.universe} "
                f"({r.bytes} bytes)"]

    def as_json(self) -> JsonDoc:
        """The ``--json`` document: per file (dry run), or the counts a fetch made."""
        plan = self.plan
        if self.result is None:
            return {"stages": plan.samples, "files": [
                {"path": f.path, "md5": f.md5, "bytes": plan.sizes.get(f.path)}
                for f in plan.files], "bytes": plan.total_bytes}
        r = self.result
        return {"stages": plan.samples, "files": len(plan.files), "downloaded": r.downloaded,
                "bytes": r.bytes, "verified": r.verified}


def fetch_stages(options: FetchOptions) -> Fetched:
    """Pull exactly the files ``options.stages`` need, then verify their md5 (or, with
    ``dry_run``, size them): one call for the CLI and a notebook alike."""
    from dvc_cuvis.repo.pull import fetch, plan_fetch, remote_sizes

    opts = options.resolved()
    root = opts.root or Path(".")  # resolved() found it
    mat = (_materialized_universe(opts.materialized, root, opts.remote)
           if opts.materialized is not None else None)
    name_to_id = None
    if opts.categories is not None:
        from dvc_cuvis.model.categories import load_category_map

        name_to_id = load_category_map(opts.categories)
    plan = plan_fetch(opts.splits, opts.universe, list(opts.stages), materialized=mat,
                      name_to_id=name_to_id, root=root)
    extra = _companions(mat, root) if mat is not None else []
    # what a module over the materialized folder reads besides frames
    plan = dataclasses.replace(plan, files=[*extra, *plan.files])
    if opts.dry_run:
        plan.sizes = remote_sizes(root, plan.files, opts.remote)
        return Fetched(plan, None, len(extra), mat is not None)
    result = fetch(plan, jobs=opts.jobs, remote=opts.remote, progress=opts.progress)
    return Fetched(plan, result, len(extra), mat is not None)


def _materialized_universe(folder: Path, root: Path, remote: str | None) -> Path:
    """materialized/universe.csv, pulled on its own first when the folder is not pulled."""
    from dvc_cuvis.repo.dvc_client import pull_paths

    path = folder / "universe.csv"
    if not path.is_file():
        pull_paths(root, [path.resolve().relative_to(root).as_posix()], remote,
                   f"dvc pull {path.resolve().relative_to(root).as_posix()}")
    return path


def _companions(mat: Path, root: Path) -> list[FetchFile]:
    """materialized/splits.json and manifest.json beside the materialized universe.csv (a
    DataModule reads the split there), unless git tracks them and they are here already."""
    folder = mat.resolve().parent
    return [FetchFile((folder / name).relative_to(root).as_posix(), "", 0)
            for name in ("splits.json", "manifest.json") if not (folder / name).is_file()]
