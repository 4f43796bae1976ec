"""Fetch only what a stage needs: the split's stages mapped to files DVC can pull granularly.

A trainer needs the frames of one stage, not the whole dataset.  :func:`plan_fetch`
resolves the split's stages (the selector rules of :func:`dvc_cuvis.model.resolution.resolve`) and
lists the files those samples need — the frame (``materialized_path``, else the source)
and its annotation, each with the md5 universe.csv records (the columns the drift check
reads, :data:`dvc_cuvis.model.universe.DIGEST_COLUMNS`).  :func:`fetch` hands exactly those paths
to DVC's own granular pull (``Repo.pull(targets=...)``: fetch into the cache from the
remote, then check out into the workspace), and :func:`verify_files` hashes each file and
compares it with universe.csv.  Nothing outside those paths is downloaded.

:func:`not_pulled` tells the drift check which missing files are merely not pulled yet
(DVC tracks them), so the check can say ``dvc pull`` instead of "content drift".
DVC is imported lazily, only by the functions that ask it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dvc_cuvis.errors import DvcCuvisError, first_line
from dvc_cuvis.model.universe import DIGEST_COLUMNS, Universe
from dvc_cuvis.paths.roots import require_dvc_root

if TYPE_CHECKING:
    from dvc.repo import Repo

__all__ = ["FetchFile", "FetchPlan", "FetchResult", "dvc_error", "fetch", "not_pulled",
           "plan_fetch", "pull_command", "remote_sizes", "restorable", "rows_files",
           "verify_files"]


@dataclass(frozen=True)
class FetchFile:
    """One file a stage needs: its path (posix, relative to the repository root), the md5
    universe.csv records for it, and how many samples read it."""

    path: str
    md5: str
    samples: int


@dataclass
class FetchPlan:
    """What a fetch of some stages needs."""

    root: Path
    stages: tuple[str, ...]
    samples: dict[str, int]
    files: list[FetchFile]
    universe: Path
    sizes: dict[str, int | None] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int | None:
        """Sum of the known sizes (None when no size is known)."""
        known = [s for s in self.sizes.values() if s is not None]
        return sum(known) if known else None


@dataclass
class FetchResult:
    """What a fetch did: files DVC downloaded, files verified, bytes on disk."""

    plan: FetchPlan
    downloaded: int
    verified: int
    bytes: int


class _DvcLog(logging.Handler):
    """Collects DVC's own error lines while it runs for us (we print one line instead)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = first_line(record.getMessage())
        if record.exc_info and record.exc_info[1] is not None:
            line += f" - {record.exc_info[1]}"
        self.lines.append(line)


@contextlib.contextmanager
def quiet_dvc() -> Iterator[_DvcLog]:
    """DVC's log records go to the returned collector instead of stderr, for the call."""
    logs = [logging.getLogger(name) for name in ("dvc", "dvc_data", "dvc_objects")]
    saved = [(log.handlers[:], log.propagate) for log in logs]
    collector = _DvcLog()
    for log in logs:
        log.handlers, log.propagate = [collector], False
    try:
        yield collector
    finally:
        for log, (handlers, propagate) in zip(logs, saved, strict=True):
            log.handlers, log.propagate = handlers, propagate


@contextlib.contextmanager
def granular_targets(repo: Repo) -> Iterator[None]:
    """Resolve each target inside a tracked folder once, from DVC's own output index.

    DVC resolves every granular target separately (``collect_granular``: it re-parses
    dvc.yaml, dvc.lock and the .dvc files for each path), so a stage of
    a few hundred frames would spend minutes before any byte moves.  A path strictly
    inside one output resolves to what DVC itself returns for it — ``(output's stage,
    the path)`` via ``find_outs_by_path`` — so for such paths we answer from the index
    built once; anything else (a .dvc file, a stage name, a whole output) goes to DVC.

    The fetch and the checkout also each first try the targets as stage names
    (``index_from_targets`` asks ``stage.collect``, which parses dvc.yaml and dvc.lock,
    fails, and falls back to the whole index).  A path with a ``/`` inside an output
    cannot be a stage name (DVC refuses punctuation in names), so for such a path the
    answer "no such stage" is given without the parse.
    """
    from dvc.exceptions import OutputNotFoundError
    from dvc.repo.stage import StageInfo
    from dvc.stage.exceptions import StageFileDoesNotExistError

    stage_loader = repo.stage
    original = stage_loader.collect_granular
    original_collect = stage_loader.collect

    def inside_output(target: str | None) -> Any:
        """The one output strictly holding ``target`` (a plain path), else None."""
        if (not target or target.endswith(".dvc") or ":" in target
                or os.path.basename(target) in ("dvc.yaml", "dvc.lock")):
            return None
        path = stage_loader.fs.abspath(target)
        try:
            (out,) = repo.find_outs_by_path(path, strict=False)
        except (OutputNotFoundError, ValueError):
            return None
        return out if out.fs_path != path else None

    def collect_granular(target: str | None = None, with_deps: bool = False,
                         recursive: bool = False, graph: Any = None) -> Any:
        out = None if with_deps or recursive else inside_output(target)
        if out is not None:
            return [StageInfo(out.stage, stage_loader.fs.abspath(target))]
        return original(target, with_deps=with_deps, recursive=recursive, graph=graph)

    def collect(target: str | None = None, with_deps: bool = False, recursive: bool = False,
                graph: Any = None, glob: bool = False) -> Any:
        if (target and "/" in target.replace(os.sep, "/")
                and not (with_deps or recursive or glob)
                and inside_output(target) is not None):
            raise StageFileDoesNotExistError(target)
        return original_collect(target, with_deps=with_deps, recursive=recursive,
                                graph=graph, glob=glob)

    stage_loader.collect_granular = collect_granular
    stage_loader.collect = collect
    try:
        yield
    finally:
        stage_loader.collect_granular = original
        stage_loader.collect = original_collect


def dvc_error(exc: Exception, what: str, log: _DvcLog | None = None) -> DvcCuvisError:
    """One clear line for a DVC failure (no remote, object missing there, unreachable)."""
    name = type(exc).__name__
    text = first_line(exc, name)
    said = [ln for ln in dict.fromkeys(log.lines if log else []) if ln and ln not in text]
    if said:
        text = f"{'; '.join(said[:3])}; {text}"
    hint = ""
    if name == "NoRemoteError":
        hint = "; add one: `dvc remote add -d NAME URL`"
    elif name in ("DownloadError", "CheckoutError", "FileMissingError"):
        hint = ("; is it pushed (`dvc push` in the repository that made it) and the remote "
                "reachable?")
    return DvcCuvisError(f"{what}: {text}{hint}")


def rows_files(uni: Universe, positions: Iterable[int], base: Path, root: Path) -> list[FetchFile]:
    """The files universe rows need (frame and annotation, with their recorded md5), as
    repository-relative posix paths; rows naming the same file share one entry."""
    from dvc_cuvis.paths.guard import resolve_inside

    found: dict[str, str] = {}  # file -> the digest its first row records
    samples: Counter[str] = Counter()
    pos = list(positions)
    for column, digest_col in DIGEST_COLUMNS:
        digests = uni.column(digest_col) if uni.has_column(digest_col) else None
        paths = uni.files_in(column)
        for p in pos:
            rel = paths[p]
            if not rel:
                continue
            full = resolve_inside(base, rel, what=f"{column} of row {p + 1}")
            key = Path(os.path.relpath(full, root)).as_posix()
            if key.startswith("../"):
                raise DvcCuvisError(f"{rel}: {column} lies outside the repository {root}")
            digest = digests[p] if digests is not None else ""
            found.setdefault(key, digest)
            samples[key] += 1
    return [FetchFile(k, found[k], samples[k]) for k in sorted(found)]


def plan_fetch(
    splits: Path, universe: Path, stages: Sequence[str], *,
    materialized: Path | None = None, name_to_id: dict[str, int] | None = None,
    root: Path | None = None,
) -> FetchPlan:
    """The files ``stages`` of ``splits`` need: the raw files of ``universe``'s rows, or
    with ``materialized`` (the materialized universe.csv), those rows' npz frames.

    The stages are resolved against ``universe``; a materialized universe is matched to
    them by uid.  Every path must lie inside the repository ``root`` (default: the DVC
    repository holding ``universe``).
    """
    from dvc_cuvis.model.resolution import resolve
    from dvc_cuvis.model.splits import STAGES, load_splits
    from dvc_cuvis.model.universe_io import read_universe

    bad = [s for s in stages if s not in STAGES]
    if bad or not stages:
        raise DvcCuvisError(f"--stage {', '.join(bad) or '(none)'}: choose from "
                            f"{', '.join(STAGES)}")
    root = (root or require_dvc_root(universe.parent)).resolve()
    uni = read_universe(universe)
    res = resolve(load_splits(splits), uni, name_to_id=name_to_id, where=str(splits))
    wanted: list[int] = []
    seen: set[int] = set()
    samples = {}
    for stage in dict.fromkeys(stages):
        pos = [int(p) for p in res.stages[stage]]
        samples[stage] = len(pos)
        wanted += [p for p in pos if p not in seen]
        seen.update(pos)
    source, base = uni, universe.parent
    if materialized is not None:
        source = read_universe(materialized)
        at = {u: k for k, u in enumerate(source.uids())}
        uids = uni.uids(wanted)
        lost = [u for u in uids if u not in at]
        if lost:
            raise DvcCuvisError(f"{materialized}: {len(lost)} sample(s) of the stage are not "
                                f"materialized (first: {lost[0]}); run `dvc repro`")
        wanted = [at[u] for u in uids]
        base = materialized.parent
    files = rows_files(source, wanted, base.resolve(), root)
    return FetchPlan(root, tuple(dict.fromkeys(stages)), samples, files,
                     materialized or universe)


def _open_repo(root: Path) -> Repo:
    from dvc.repo import Repo

    return Repo(str(root))


def remote_sizes(root: Path, files: Sequence[FetchFile], remote: str | None = None,
                 repo: Repo | None = None) -> dict[str, int | None]:
    """Each file's size: from the workspace or the local cache, else asked of the remote
    (one stat per object, nothing downloaded); None where nobody knows it."""
    repo = repo or _open_repo(root)
    odb = repo.cache.local
    sizes: dict[str, int | None] = {}
    ask: list[FetchFile] = []
    for f in files:
        for where in (root / f.path, Path(odb.oid_to_path(f.md5)) if f.md5 else None):
            if where is not None and where.is_file():
                sizes[f.path] = where.stat().st_size
                break
        else:
            ask.append(f)
    if ask:
        try:
            rodb = repo.cloud.get_remote_odb(remote, hash_name="md5")
        except Exception as exc:
            raise dvc_error(exc, "the remote") from None
        for f in ask:
            try:
                sizes[f.path] = int(rodb.fs.size(rodb.oid_to_path(f.md5))) if f.md5 else None
            except (OSError, FileNotFoundError):
                sizes[f.path] = None
    return sizes


def verify_files(root: Path, files: Sequence[FetchFile], *, progress: bool = False,
                 where: str = "universe.csv",
                 path_of: Callable[[FetchFile], Path] | None = None,
                 refuse: Callable[[FetchFile, Path, str | None], DvcCuvisError] | None = None,
                 ) -> int:
    """md5 of every file against what ``where`` records; bytes hashed.

    Raises :class:`DvcCuvisError` naming the first file that is missing or differs: the
    one ``refuse(file, path, actual md5 or None when unreadable)`` returns, when given.
    """
    from dvc_cuvis.digests.hashing import file_md5
    from dvc_cuvis.progress import progress as bar

    total = 0
    for f in bar(files, total=len(files), desc="verify md5", enabled=progress):
        path = path_of(f) if path_of else root / f.path
        if not f.md5:
            continue
        try:
            actual = file_md5(path)
            total += path.stat().st_size
        except OSError:
            if refuse is not None:
                raise refuse(f, path, None) from None
            raise DvcCuvisError(f"{f.path}: not on disk after the fetch") from None
        if actual != f.md5:
            if refuse is not None:
                raise refuse(f, path, actual)
            raise DvcCuvisError(f"{f.path}: md5 {actual} differs from {f.md5} recorded in "
                                f"{where}; the remote holds other bytes than were enumerated "
                                "(re-push them, or re-enumerate)")
    return total


def fetch(plan: FetchPlan, *, jobs: int | None = None, remote: str | None = None,
          progress: bool = False, chunk: int = 2000) -> FetchResult:
    """Pull exactly ``plan.files`` through DVC (granular fetch + checkout), then verify them.

    Files already in the workspace with the recorded md5 are not asked for again.
    """
    from dvc_cuvis.digests.hashing import file_md5
    from dvc_cuvis.progress import progress as bar

    todo, present = [], 0
    for f in plan.files:
        path = plan.root / f.path
        if f.md5 and path.is_file() and file_md5(path) == f.md5:
            present += path.stat().st_size
        else:
            todo.append(f)
    downloaded = 0
    if todo:
        repo = _open_repo(plan.root)
        batches = [todo[k:k + chunk] for k in range(0, len(todo), chunk)]
        with quiet_dvc() as log, granular_targets(repo):
            try:
                for batch in bar(batches, total=len(batches), desc="dvc pull",
                                 enabled=progress):
                    result = repo.pull(targets=[f.path for f in batch], jobs=jobs,
                                       remote=remote)
                    downloaded += int(result.get("stats", {}).get("fetched", 0))
            except Exception as exc:
                if isinstance(exc, DvcCuvisError):
                    raise
                raise dvc_error(exc, "dvc pull", log) from None
            finally:
                repo.close()
    hashed = verify_files(plan.root, todo, progress=progress, where=str(plan.universe))
    return FetchResult(plan, downloaded, len(plan.files), hashed + present)


def not_pulled(root: Path, paths: Iterable[str]) -> list[str]:
    """Of ``paths`` (repository-relative, missing from the workspace), those DVC tracks and
    whose content is not in the local DVC cache: they are not pulled yet (``dvc pull``),
    rather than deleted from the workspace (``dvc checkout`` restores those) or lost.

    DVC's own log lines (a missing cache file, say) are kept off the user's stderr: the
    check words the finding itself."""
    paths = list(paths)
    if not paths:
        return []
    with quiet_dvc():
        return _not_pulled(root, paths)


def _not_pulled(root: Path, paths: list[str]) -> list[str]:
    try:
        repo = _open_repo(root)
    except Exception:
        return []
    from dvc_data.index.index import DataIndexDirError

    try:
        fs = repo.dvcfs
        odb = repo.cache.local
        out = []
        for rel in paths:
            at = "/" + rel  # from the root: DVC's fs reads a relative path from the cwd
            try:
                if not fs.isdvc(at):
                    continue
                info = fs.info(at).get("dvc_info") or {}
                oid = info.get("md5")
                if oid and info.get("type") != "directory" and odb.exists(oid):
                    continue  # in the local cache: `dvc checkout` brings it back
                out.append(rel)
            except DataIndexDirError:
                # inside a tracked folder whose listing is in neither the cache nor a
                # reachable remote: tracked, and not pulled (DVC names the remote problem)
                out.append(rel)
            except (OSError, ValueError):
                continue
        return out
    finally:
        repo.close()


def pending_files(uni: Universe, rels: Iterable[str]) -> tuple[Path | None, set[str]]:
    """The repository of ``uni`` and which of ``rels`` (relative to universe.csv) DVC tracks."""
    base = (uni.path.parent if uni.path is not None else Path(".")).resolve()
    try:
        root = require_dvc_root(base).resolve()
    except DvcCuvisError:
        return None, set()
    by_repo = {m: Path(os.path.relpath(base / m, root)).as_posix() for m in rels}
    tracked = set(not_pulled(root, sorted(set(by_repo.values()))))
    return root, {m for m, r in by_repo.items() if r in tracked}


def data_not_pulled(uni: Universe) -> bool:
    """True when files universe.csv names are missing and DVC tracks them (not pulled)."""
    if uni.path is None:
        return False
    base = uni.path.parent
    missing = [f.path for f in rows_files(uni, range(len(uni)), base.resolve(),
                                           base.resolve())
               if not (base / f.path).exists()]
    return bool(missing) and bool(pending_files(uni, missing[:1000])[1])


def restorable(root: Path, paths: Iterable[str]) -> bool:
    """True when DVC tracks every one of ``paths`` (repository-relative) and holds its
    content in the local cache: ``dvc checkout`` brings each back as DVC recorded it."""
    paths = list(paths)
    if not paths:
        return False
    try:
        repo = _open_repo(root)
    except Exception:
        return False
    try:
        fs, odb = repo.dvcfs, repo.cache.local
        for rel in paths:
            at = "/" + rel  # from the root: DVC's fs reads a relative path from the cwd
            info = fs.info(at).get("dvc_info") or {} if fs.isdvc(at) else {}
            oid = info.get("md5")
            if not oid or info.get("type") == "directory" or not odb.exists(oid):
                return False
        return True
    except Exception:  # a listing DVC cannot read: nothing to restore from here
        return False
    finally:
        repo.close()


def pull_command(root: Path) -> str | None:
    """The ``dvc pull`` that works here: plain with a default remote, ``-r NAME`` with one
    remote and no default; None when no remote (or several, none default) is configured.
    Reads DVC's configuration (repository, local, user, system), asks no remote."""
    try:
        from dvc.config import Config

        config = Config(dvc_dir=os.fspath(root / ".dvc"))
        remotes = sorted(config.get("remote") or {})
        default = (config.get("core") or {}).get("remote")
    except Exception:  # an unreadable configuration: DVC's own pull would fail alike
        return None
    if default and default in remotes:
        return "dvc pull"
    return f"dvc pull -r {remotes[0]}" if len(remotes) == 1 else None
