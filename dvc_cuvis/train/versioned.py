"""A stage of a dataset *version*: the frames a split's stage needs at a git revision.

The DVC "data registry" pattern: a trainrun names a dataset repository (a path or a git
URL) and a revision (tag, branch or commit) instead of "whatever is checked out".
:func:`stage_frames` opens that repository at the revision through DVC (``open_repo``:
a local repository is read in place, a URL is cloned by DVC into a temporary folder;
neither working tree is checked out or touched), reads ``splits_path`` and
``universe_csv`` *at that revision*, resolves the stage, fetches exactly its frames into
DVC's cache (the repository's own, or ``cache_dir``) from the cache or the remote, and
verifies each one against the md5 that revision's universe records.  The returned
paths are the cache objects themselves: nothing is copied into a workspace.

A frame whose bytes differ from its recorded md5 (a corrupted remote object) is refused,
naming the file, and its cache object is removed so a retry downloads it again.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dvc_cuvis.errors import DvcCuvisError, RepoError
from dvc_cuvis.paths.owned import owned_folder
from dvc_cuvis.train.stages import setup_stages

if TYPE_CHECKING:
    from cuvis_ai_schemas.training.data import DataSplitConfig

    from dvc_cuvis.model.universe import Universe
    from dvc_cuvis.repo.dvc_client import DvcRevision
    from dvc_cuvis.repo.pull import FetchFile

__all__ = ["StageFrames", "Version", "open_version", "resolve_commit", "stage_frames"]


@dataclass
class StageFrames:
    """One stage of a dataset version, ready to serve.

    ``paths[k]`` is the local (cache) file holding sample ``uids[k]``'s frame;
    ``files[k]`` the file's path inside the dataset repository.
    """

    repo: str
    rev: str
    commit: str
    stage: str
    uids: list[str]
    files: list[str]
    paths: list[Path]
    universe: Universe  # the stage's rows of that revision's universe
    fetched: int = 0

    def describe(self) -> str:
        """One line for a setup log: the repository, revision, commit and stage size."""
        return (f"{self.repo}@{self.rev} (commit {self.commit[:12]}): stage {self.stage}, "
                f"{len(self.uids)} samples, {len(set(self.files))} files")


def _is_local(repo: str) -> bool:
    return os.path.isdir(repo)


def resolve_commit(repo: str, rev: str) -> str:
    """The full commit id of ``rev`` in ``repo`` (a path or git URL); unknown = clear error."""
    from dvc_cuvis.repo.git import Git, remote_commit, unknown_revision

    if not rev or not isinstance(rev, str):
        raise DvcCuvisError(f"rev must name a git tag, branch or commit, got {rev!r}")
    if _is_local(repo):
        try:
            return Git(repo).commit(rev)
        except RepoError as exc:
            raise RepoError(f"{repo}: {exc}") from None
    commit = remote_commit(repo, rev)
    if commit is not None:
        return commit
    if len(rev) >= 7 and all(c in "0123456789abcdef" for c in rev.lower()):
        return rev  # a commit id: DVC's clone checks it
    raise RepoError(f"{repo}: {unknown_revision(rev)}")


def _open(repo: str, commit: str, cache_dir: str | os.PathLike[str] | None) -> DvcRevision:
    """The DVC repository at ``commit`` (the one DVC client: local in place, URL cloned)."""
    from dvc_cuvis.repo.dvc_client import DvcRevision

    return DvcRevision(repo, commit, cache_dir, local=_is_local(repo))


def _inside(folder: str, rel: str, where: str) -> str:
    """``folder/rel`` as a repository path; refuses absolute paths and ``..`` escapes."""
    if not rel or rel.startswith("/") or "\\" in rel or "\0" in rel:
        raise DvcCuvisError(f"{where}: {rel!r} is not a relative posix path")
    joined = posixpath.normpath(posixpath.join(folder, rel))
    if joined == ".." or joined.startswith("../"):
        raise DvcCuvisError(f"{where}: {rel!r} leads outside the repository")
    return joined


def stage_frames(
    rev: str, stage: str, *, repo: str | os.PathLike[str] = ".",
    splits_path: str = "splits.json", universe_csv: str = "universe.csv",
    cache_dir: str | os.PathLike[str] | None = None, remote: str | None = None,
    name_to_id: dict[str, int] | None = None, jobs: int | None = None,
    splits: DataSplitConfig | None = None,
) -> StageFrames:
    """Fetch and verify the frames of ``stage`` of the dataset at ``rev``.

    Parameters
    ----------
    rev : str
        A git tag, branch or commit of the dataset repository.
    stage : {"train", "val", "test", "predict"}
        The stage whose frames are needed.
    repo : str or path, default "."
        The dataset repository: a local path or a git URL.
    splits_path, universe_csv : str
        Paths *inside the repository* (posix), read at ``rev``; universe paths are
        relative to ``universe_csv``'s folder.
    cache_dir : path, optional
        DVC cache to fetch into (default: the repository's cache; for a URL, a
        temporary one that DVC manages).
    remote : str, optional
        The DVC remote to fetch from (default: the repository's default remote).
    name_to_id : dict, optional
        Category name to id for ``categories`` selectors.
    jobs : int, optional
        Parallel downloads.
    splits : DataSplitConfig, optional
        An inline split to use instead of reading ``splits_path``.

    Returns
    -------
    StageFrames
        The stage's uids, repository files and local cache paths, with the commit.

    Raises
    ------
    DvcCuvisError
        Unknown revision, unreadable files, a stage that selects nothing, a file DVC
        cannot fetch, or a fetched file whose md5 differs from the universe's record.
    """
    from dvc_cuvis.model.splits import STAGES
    from dvc_cuvis.repo.pull import verify_files

    if stage not in STAGES:
        raise DvcCuvisError(f"stage {stage!r}: choose from {', '.join(STAGES)}")
    repo_s = os.fspath(repo)
    commit = resolve_commit(repo_s, rev)
    where = f"{repo_s}@{rev}"
    dvc_repo = _open(repo_s, commit, cache_dir)
    try:
        cfg = splits if splits is not None else _read_splits(dvc_repo, splits_path, where)
        uni, positions, files, wanted = _stage_files(dvc_repo, cfg, stage, where, rev,
                                                     splits_path, universe_csv, name_to_id)
        fetched = dvc_repo.fetch([f.path for f in wanted], where, remote, jobs)
        local, oids, more = dvc_repo.cache_objects([f.path for f in wanted], where, remote)
        verify_files(Path("."), wanted, path_of=lambda f: local[f.path],
                     refuse=_refusal(where, f"{universe_csv} at {rev}", oids))
    finally:
        dvc_repo.close()
    return StageFrames(repo_s, rev, commit, stage, uni.uids(positions), files,
                       [local[f] for f in files], uni.take(positions), fetched + more)


def _read_splits(dvc_repo: DvcRevision, splits_path: str, where: str) -> DataSplitConfig:
    """The split file at the revision, parsed (its errors name ``where:splits_path``)."""
    from dvc_cuvis.model.splits import parse_splits

    text = dvc_repo.read(splits_path, where)
    return parse_splits(text.decode("utf-8-sig"), path=f"{where}:{splits_path}")


def _stage_files(dvc_repo: DvcRevision, cfg: DataSplitConfig, stage: str, where: str,
                 rev: str, splits_path: str, universe_csv: str,
                 name_to_id: dict[str, int] | None,
                 ) -> tuple[Universe, list[int], list[str], list[FetchFile]]:
    """The universe at the revision, the stage's rows in it, each row's frame file (a
    repository path) and the files with the md5 the universe records (each once, sorted)."""
    from dvc_cuvis.model.resolution import resolve
    from dvc_cuvis.model.universe_io import parse_universe_bytes
    from dvc_cuvis.repo.pull import FetchFile

    uni = parse_universe_bytes(dvc_repo.read(universe_csv, where),
                               path=Path(f"{rev}:{universe_csv}"))
    res = resolve(cfg, uni, name_to_id=name_to_id, where=f"{where}:{splits_path}")
    positions = [int(p) for p in res.stages[stage]]
    folder = posixpath.dirname(universe_csv)
    md5s, frames = uni.column("md5"), uni.frame_files()
    files, recorded = [], {}
    for p in positions:
        path = _inside(folder, frames[p], f"{where}:{universe_csv} row {p + 1}")
        if not md5s[p]:
            raise DvcCuvisError(f"{where}:{universe_csv}: row {p + 1} records no md5 for "
                                f"{path}; a version is served only verified (enumerate "
                                "with hashing)")
        files.append(path)
        recorded[path] = md5s[p]
    counts = Counter(files)
    return uni, positions, files, [FetchFile(f, recorded[f], counts[f]) for f in sorted(recorded)]


def _refusal(where: str, record: str, oids: dict[str, str],
             ) -> Callable[[FetchFile, Path, str | None], DvcCuvisError]:
    """How a served frame that fails its md5 is refused; a corrupt cache object (bytes
    that are not DVC's md5 either) is removed, so a retry downloads it again."""

    def refuse(f: FetchFile, obj: Path, actual: str | None) -> DvcCuvisError:
        if actual is None:
            return DvcCuvisError(f"{where}: {f.path} was not fetched into the DVC cache "
                                 f"({obj}); is it pushed to the remote?")
        if actual != oids[f.path]:
            with contextlib.suppress(OSError):
                os.chmod(obj, 0o644)
                os.unlink(obj)
        return DvcCuvisError(f"{where}: {f.path}: the fetched bytes have md5 {actual}, but "
                             f"{record} records {f.md5}; refusing to serve it (the remote's "
                             "copy is corrupt, or the universe is stale)")

    return refuse


# -- a version as a local view: what the plugin's DataModules load ----------------------


@dataclass
class Version:
    """A dataset version opened for a DataModule: the split and universe as they are at
    ``rev``, written byte for byte into ``folder`` (under the same repository paths), and
    each fetched stage's frames linked beside them from the DVC cache."""

    repo: str
    rev: str
    commit: str
    folder: Path
    splits_path: str | None
    universe_csv: str
    cache_dir: str | None
    fetched: dict[str, StageFrames]

    @property
    def universe_file(self) -> Path:
        """The version's universe.csv in the local view."""
        return self.folder / self.universe_csv

    @property
    def splits_file(self) -> Path | None:
        """The version's splits file in the local view (None for an inline split)."""
        return self.folder / self.splits_path if self.splits_path else None

    def fetch(self, stage: str, *, splits: DataSplitConfig | None = None) -> StageFrames:
        """Fetch, verify and link the frames of ``stage`` (once per stage)."""
        if stage in self.fetched:
            return self.fetched[stage]
        got = stage_frames(self.commit, stage, repo=self.repo,
                           splits_path=self.splits_path or "", universe_csv=self.universe_csv,
                           cache_dir=self.cache_dir, splits=splits)
        got.rev = self.rev
        for rel, src in zip(got.files, got.paths, strict=True):
            _link(src, self.folder / rel, self.folder)
        self.fetched[stage] = got
        return got

    def describe(self) -> str:
        """The revision and its commit, for a setup log."""
        return f"{self.repo}@{self.rev} (commit {self.commit})"


def _link(src: Path, dest: Path, view: Path) -> None:
    """``dest`` holds ``src``'s bytes: a hard link to the cache object, a copy across devices.

    The view is ours: a folder on the way to ``dest`` that is a link is refused, and an old
    ``dest`` is removed as the entry it is (a link itself, never what it leads to).
    """
    import shutil

    owned_folder(dest.parent, view)
    if os.path.lexists(dest):
        if not os.path.islink(dest) and os.path.samefile(src, dest):
            return
        os.unlink(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
    except OSError:
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)


def _view_folder(repo: str, commit: str, cache_dir: str | None) -> Path:
    """Where a version's view lives: under ``cache_dir``, the local repository's
    ``.dvc/tmp``, or a fresh temporary folder for a URL."""
    import tempfile

    if cache_dir:
        return Path(cache_dir).resolve() / "dvc-cuvis-versions" / commit
    if _is_local(repo):
        return Path(repo).resolve() / ".dvc" / "tmp" / "dvc-cuvis" / "versions" / commit
    return Path(tempfile.mkdtemp(prefix=f"dvc-cuvis-{commit[:12]}-"))


def open_version(
    rev: str, *, repo: str | os.PathLike[str] = ".", splits_path: str | None,
    universe_csv: str, cache_dir: str | os.PathLike[str] | None = None,
) -> Version:
    """Read ``splits_path`` and ``universe_csv`` at ``rev`` into a local view (no frames yet).

    Both name files inside the dataset repository (git- or DVC-tracked); nothing is
    checked out.  An absolute path is taken back to the repository path it stands for
    (:func:`repository_path`).  :meth:`Version.fetch` then brings each stage's frames.
    """
    from dvc_cuvis._io import atomic_write_bytes

    repo_s = os.fspath(repo)
    commit = resolve_commit(repo_s, rev)
    cache = os.fspath(Path(cache_dir).resolve()) if cache_dir else None
    folder = _view_folder(repo_s, commit, cache)
    where = f"{repo_s}@{rev}"
    dvc_repo = _open(repo_s, commit, cache)
    try:
        names = {key: repository_path(dvc_repo, repo_s, name, where, key)
                 for key, name in (("splits_path", splits_path), ("universe_csv", universe_csv))
                 if name}
        for name in names.values():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(folder / name, dvc_repo.read(name, where))
    finally:
        dvc_repo.close()
    return Version(repo_s, rev, commit, folder, names.get("splits_path"),
                   names["universe_csv"], cache, {})


def repository_path(dvc_repo: DvcRevision, repo: str, name: str, where: str, key: str) -> str:
    """The repository path ``name`` (a setting ``key``) stands for at the open revision.

    A relative path is one already.  An absolute one is what cuvis-ai's ``restore_trainrun``
    makes of a relative ``splits_path`` (it joins it to the trainrun's folder): inside a
    local dataset repository it is taken relative to it; a file that exists elsewhere is
    refused; otherwise it is the longest tail of it that names a file at the revision
    (``/runs/materialized/splits.json`` -> ``materialized/splits.json``), said in the log.
    """
    import logging

    if not os.path.isabs(name):
        return _inside("", name, where)
    path = Path(os.path.normpath(name))
    if _is_local(repo) and path.is_relative_to(Path(repo).resolve()):
        return _inside("", path.relative_to(Path(repo).resolve()).as_posix(), where)
    if path.exists():
        raise DvcCuvisError(f"{where}: {key} {name} is a file outside the dataset repository; "
                            f"with rev, {key} names a file inside it, as the repository "
                            "spells it (materialized/splits.json)")
    for k in range(1, len(path.parts)):
        rel = "/".join(path.parts[k:])
        if dvc_repo.isfile(rel):
            logging.getLogger(__name__).info(
                "%s: %s %s is read as %s of the dataset repository", where, key, name, rel)
            return rel
    raise DvcCuvisError(f"{where}: {key} {name} names no file of the dataset repository at "
                        f"that revision; with rev, {key} names a file inside it, as the "
                        "repository spells it (materialized/splits.json)")


# -- the plugin's DataModules (dvc_cuvis.plugin): ``rev``, ``repo``, ``cache_dir`` --

def plugin_pin(module: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Upstream kwargs for a module whose ``guard_settings`` name a ``rev``: ``splits``
    (its ``splits_path``) and ``universe_csv`` are read at that revision into a local view,
    which the upstream module then loads; ``module.version`` keeps it for ``setup``."""
    import logging

    from dvc_cuvis.model.splits import load_splits

    settings = module.guard_settings
    rev = settings.get("rev")
    module.version = None
    if not rev:
        extra = [k for k in ("repo", "cache_dir") if settings.get(k)]
        if extra:
            raise DvcCuvisError(f"{module.DATA_MODULE_NAME}: {' and '.join(extra)} given "
                                "without rev: name the dataset version to train on (rev: v1)")
        return kwargs
    splits = kwargs.get("splits")
    if isinstance(splits, str | os.PathLike):
        splits_path: str | None = os.fspath(splits)
    elif isinstance(splits, dict):
        splits_path = splits.get("splits_path")
    else:
        splits_path = getattr(splits, "splits_path", None)
    universe_csv = _versioned_universe(module.DATA_MODULE_NAME, rev, kwargs)
    version = open_version(rev, repo=settings.get("repo") or ".", splits_path=splits_path,
                           universe_csv=os.fspath(universe_csv),
                           cache_dir=settings.get("cache_dir"))
    kwargs = {**kwargs, "universe_csv": str(version.universe_file)}
    if version.splits_file is not None:
        kwargs["splits"] = load_splits(version.splits_file)
    module.version = version
    module.version_splits = None if splits_path else splits
    if settings.get("lock") == "auto":  # the working tree's dvc.lock is another version's
        settings["lock"] = None
    from dvc_cuvis.check.drift import CHECKS

    # Content: every frame served is md5-verified against this universe when its stage is
    # fetched (Version.fetch); the other stages' frames are deliberately not downloaded.
    module.version_checks = tuple(c for c in CHECKS if c != "content")
    logging.getLogger(__name__).info("dataset version %s", version.describe())
    return kwargs


def _versioned_universe(name: str, rev: str, params: dict[str, Any]) -> str | os.PathLike[str]:
    """The ``universe_csv`` a module at ``rev`` names (an error naming the module if none)."""
    universe_csv = params.get("universe_csv")
    if not universe_csv:
        raise DvcCuvisError(f"{name}: rev {rev!r} needs universe_csv (its path inside the "
                            "dataset repository)")
    return universe_csv


def plugin_validate(name: str, params: dict[str, Any], upstream: dict[str, Any],
                    ) -> dict[str, Any]:
    """``upstream`` (the upstream module's params) as its ``validate_params`` may check them
    for a module at ``params["rev"]``: ``universe_csv`` is read at that revision into the
    local view, so upstream's "does it exist" asks the view, not the current folder."""
    rev = params.get("rev")
    if not rev:
        return upstream
    universe_csv = _versioned_universe(name, rev, params)
    version = open_version(rev, repo=params.get("repo") or ".", splits_path=None,
                           universe_csv=os.fspath(universe_csv),
                           cache_dir=params.get("cache_dir"))
    return {**upstream, "universe_csv": str(version.universe_file)}


def plugin_fetch(module: object, stage: str | None) -> None:
    """``setup(stage)``'s pre-step: fetch, verify and link the frames the stage reads."""
    import logging

    version: Version | None = getattr(module, "version", None)
    if version is None:
        return
    log = logging.getLogger(__name__)
    for name in setup_stages(stage):
        got = version.fetch(name, splits=getattr(module, "version_splits", None))
        log.info("dataset %s: stage %s, %d samples (%d files fetched into the DVC cache)",
                 version.describe(), name, len(got.uids), got.fetched)
