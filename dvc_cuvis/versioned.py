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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dvc_cuvis.errors import DvcCuvisError

__all__ = ["StageFrames", "resolve_commit", "stage_frames"]


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
    universe: Any  # the stage's rows of that revision's universe (Universe)
    fetched: int = 0

    def describe(self) -> str:
        """One line for a setup log: the repository, revision, commit and stage size."""
        return (f"{self.repo}@{self.rev} (commit {self.commit[:12]}): stage {self.stage}, "
                f"{len(self.uids)} samples, {len(set(self.files))} files")


def _is_local(repo: str) -> bool:
    return os.path.isdir(repo)


def resolve_commit(repo: str, rev: str) -> str:
    """The full commit id of ``rev`` in ``repo`` (a path or git URL); unknown = clear error."""
    import subprocess

    if not rev or not isinstance(rev, str):
        raise DvcCuvisError(f"rev must name a git tag, branch or commit, got {rev!r}")
    if _is_local(repo):
        from dvc_cuvis.history import GitTree

        try:
            commit: str = GitTree(repo).commit(rev).hexsha
        except DvcCuvisError as exc:
            raise DvcCuvisError(f"{repo}: {exc} (rev names a git tag, branch or commit of "
                                "the dataset repository)") from None
        return commit
    proc = subprocess.run(["git", "ls-remote", "--", repo, rev, f"{rev}^{{}}"],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["git ls-remote failed"])[-1]
        raise DvcCuvisError(f"{repo}: cannot read the repository ({why})")
    refs = [line.split("\t") for line in proc.stdout.splitlines() if "\t" in line]
    peeled = [sha for sha, ref in refs if ref.endswith("^{}")]
    if peeled or refs:
        return (peeled or [refs[0][0]])[0]
    if len(rev) >= 7 and all(c in "0123456789abcdef" for c in rev.lower()):
        return rev  # a commit id: DVC's clone checks it
    raise DvcCuvisError(f"{repo}: unknown revision {rev!r} (rev names a git tag, branch or "
                        "commit of the dataset repository)")


def _open(repo: str, commit: str, cache_dir: str | os.PathLike[str] | None) -> Any:
    """The DVC repository at ``commit`` (DVC's own opener: local in place, URL cloned)."""
    from dvc.repo.open_repo import open_repo

    config = {"cache": {"dir": os.fspath(Path(cache_dir).resolve())}} if cache_dir else None
    try:
        return open_repo(os.path.abspath(repo) if _is_local(repo) else repo, rev=commit,
                         config=config)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DvcCuvisError(f"{repo}@{commit[:12]}: cannot open it as a DVC repository "
                            f"({first})") from None


def _read(dvc_repo: Any, path: str, where: str) -> bytes:
    try:
        with dvc_repo.dvcfs.open(path, "rb") as fh:
            data: bytes = fh.read()
            return data
    except FileNotFoundError:
        raise DvcCuvisError(f"{where}: {path} does not exist at that revision") from None
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DvcCuvisError(f"{where}: {path}: cannot read it ({first})") from None


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
    from dvc_cuvis.digests import file_md5
    from dvc_cuvis.fetch import dvc_error, quiet_dvc
    from dvc_cuvis.splits import STAGES, parse_splits, resolve
    from dvc_cuvis.universe import parse_universe_bytes

    if stage not in STAGES:
        raise DvcCuvisError(f"stage {stage!r}: choose from {', '.join(STAGES)}")
    repo_s = os.fspath(repo)
    commit = resolve_commit(repo_s, rev)
    where = f"{repo_s}@{rev}"
    dvc_repo = _open(repo_s, commit, cache_dir)
    try:
        text = _read(dvc_repo, splits_path, where)
        cfg = parse_splits(text.decode("utf-8-sig"), path=f"{where}:{splits_path}")
        uni = parse_universe_bytes(_read(dvc_repo, universe_csv, where),
                                   path=Path(f"{rev}:{universe_csv}"))
        res = resolve(cfg, uni, name_to_id=name_to_id, where=f"{where}:{splits_path}")
        positions = [int(p) for p in res.stages[stage]]
        folder = posixpath.dirname(universe_csv)
        md5s = uni.column("md5") if uni.has_column("md5") else None
        paths_col = uni.column("materialized_path") if uni.has_column("materialized_path") \
            else None
        files, recorded = [], {}
        for p in positions:
            rel = (paths_col[p] if paths_col is not None else "") or uni.source(p)
            path = _inside(folder, rel, f"{where}:{universe_csv} row {p + 1}")
            files.append(path)
            if md5s is None or not md5s[p]:
                raise DvcCuvisError(f"{where}:{universe_csv}: row {p + 1} records no md5 for "
                                    f"{path}; a version is served only verified (enumerate "
                                    "with hashing)")
            recorded[path] = md5s[p]
        wanted = sorted(set(files))
        with quiet_dvc() as log:
            try:
                fetched = int(dvc_repo.fetch(targets=wanted, remote=remote, jobs=jobs) or 0)
            except Exception as exc:
                raise dvc_error(exc, f"{where}: fetch", log) from None
        odb = dvc_repo.cache.local
        local: dict[str, Path] = {}
        for path in wanted:
            try:
                info = dvc_repo.dvcfs.info(path)
            except FileNotFoundError:
                raise DvcCuvisError(f"{where}: {path} is not tracked at that revision "
                                    "(neither in git nor by DVC)") from None
            oid = (info.get("dvc_info") or {}).get("md5") or info.get("md5")
            if not oid:
                raise DvcCuvisError(f"{where}: {path} is not DVC-tracked at that revision")
            obj = Path(odb.oid_to_path(oid))
            try:
                actual = file_md5(obj)
            except OSError:
                raise DvcCuvisError(f"{where}: {path} was not fetched into the DVC cache "
                                    f"({obj}); is it pushed to the remote?") from None
            if actual != recorded[path]:
                if actual != oid:  # the object itself is corrupt: a retry must download it
                    with contextlib.suppress(OSError):
                        os.chmod(obj, 0o644)
                        os.unlink(obj)
                raise DvcCuvisError(
                    f"{where}: {path}: the fetched bytes have md5 {actual}, but "
                    f"{universe_csv} at {rev} records {recorded[path]}; refusing to serve "
                    "it (the remote's copy is corrupt, or the universe is stale)")
            local[path] = obj
    finally:
        dvc_repo.close()
    stage_uni = uni.take(positions)
    return StageFrames(repo_s, rev, commit, stage, uni.uids(positions), files,
                       [local[f] for f in files], stage_uni, fetched)
