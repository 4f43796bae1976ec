"""The one DVC client: every use of DVC's Python API outside the state database.

A file DVC tracks read at a revision (:func:`read_at`), where the local cache keeps an
object (:func:`cache_path`), a granular pull of some paths (:func:`pull_paths`), and a
repository opened at a commit (:class:`DvcRevision`: read, fetch and find cache objects, as
``dvc.api`` and ``dvc get`` do).  Only this module and ``digests/`` (the state database)
import DVC (an import-linter contract keeps it so): a DVC upgrade that moves an API is
met in one place, and each DVC failure becomes one line here, said the same way for every
verb.  DVC is imported on first use only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from dvc_cuvis.errors import DvcCuvisError, RepoError, first_line

__all__ = ["CacheLocator", "DvcReadError", "DvcRevision", "cache_path", "cache_paths",
           "pull_paths", "read_at"]


class DvcReadError(RepoError):
    """A file DVC tracks that DVC cannot read at a revision; ``reason`` says why in one
    line (the data not at hand, a broken ``.dvc`` file, no remote, no DVC installed)."""

    def __init__(self, reason: str, *, missing_dvc: bool = False) -> None:
        """``reason`` in one line; ``missing_dvc`` when DVC itself is not installed."""
        super().__init__(reason)
        self.reason = reason
        self.missing_dvc = missing_dvc


def read_at(root: Path, path: str, rev: str) -> bytes:
    """The bytes of the DVC-tracked ``path`` (relative to ``root``) at ``rev``, through
    ``dvc.api.read``; :class:`DvcReadError` with DVC's reason in one line otherwise."""
    try:
        import dvc.api
        from dvc.exceptions import PathMissingError
    except ImportError:  # pragma: no cover - a runtime dependency
        raise DvcReadError("reading it needs dvc", missing_dvc=True) from None
    try:
        data: bytes = dvc.api.read(path, repo=str(root), rev=rev, mode="rb")
        return data
    except Exception as exc:  # dvc raises many kinds; each becomes one clear line
        if isinstance(exc, PathMissingError):  # dvc's wording for "no data" misleads
            reason = "its data is neither in the DVC cache nor on a remote"
        else:
            first = first_line(exc)
            reason = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        raise DvcReadError(reason) from None


def cache_path(root: Path, md5: str) -> Path:
    """Where the local DVC cache of the repository ``root`` keeps the object ``md5`` (its
    ``cache.dir``; DVC 3's default place when no DVC repository or config can be read)."""
    try:
        from dvc.repo import Repo

        with Repo(str(root)) as repo:
            return Path(repo.cache.local.oid_to_path(md5))
    except Exception:  # no DVC repository or an unreadable config: DVC's default place
        return root / ".dvc" / "cache" / "files" / "md5" / md5[:2] / md5[2:]


class CacheLocator:
    """Where the local DVC cache of the repository ``root`` keeps objects.

    An object is named by its md5, so one found in DVC's default place holds the right bytes
    whatever ``cache.dir`` says: it is taken without importing DVC.  Only for an object not
    there is the repository's configuration read (on the first such object, once).
    """

    def __init__(self, root: Path) -> None:
        """Locate objects of the repository at ``root`` (nothing is read yet)."""
        self.root = root
        self._where: Callable[[str], str] | None = None

    def __call__(self, md5: str) -> Path:
        """The path of the object ``md5``: the default place when it is there, else where
        the repository's DVC configuration puts it (as :func:`cache_path`)."""
        default = self.root / ".dvc" / "cache" / "files" / "md5" / md5[:2] / md5[2:]
        if default.is_file():
            return default
        if self._where is None:
            try:
                from dvc.repo import Repo

                with Repo(str(self.root)) as repo:
                    self._where = repo.cache.local.oid_to_path  # a pure path computation
            except Exception:  # no DVC repository or an unreadable config: the default
                self._where = lambda oid: str(default.parent.parent / oid[:2] / oid[2:])
        return Path(self._where(md5))


def cache_paths(root: Path, md5s: Sequence[str]) -> list[Path]:
    """Where the local DVC cache of ``root`` keeps each object of ``md5s``, with the
    repository's configuration read once for all of them (as :func:`cache_path`)."""
    locate = CacheLocator(root)
    return [locate(md5) for md5 in md5s]


def pull_paths(root: Path, paths: Sequence[str], remote: str | None, what: str) -> None:
    """``dvc pull`` of exactly ``paths`` (relative to ``root``); DVC's failure as one
    :class:`DvcCuvisError` line beginning ``what``."""
    from dvc.repo import Repo

    from dvc_cuvis.repo.pull import dvc_error, quiet_dvc

    with quiet_dvc() as log:
        try:
            with Repo(str(root)) as repo:
                repo.pull(targets=list(paths), remote=remote)
        except Exception as exc:
            raise dvc_error(exc, what, log) from None


class DvcRevision:
    """A DVC repository opened at one commit (DVC's own opener: a local repository read in
    place, a URL cloned into a temporary folder; no working tree is touched)."""

    def __init__(self, repo: str, commit: str, cache_dir: str | os.PathLike[str] | None,
                 *, local: bool) -> None:
        """Open ``repo`` at ``commit`` (a :class:`DvcCuvisError` naming both when DVC
        cannot); ``cache_dir`` replaces the repository's cache."""
        from dvc.repo.open_repo import open_repo

        config = {"cache": {"dir": os.fspath(Path(cache_dir).resolve())}} if cache_dir else None
        try:
            self._repo = open_repo(os.path.abspath(repo) if local else repo, rev=commit,
                                   config=config)
        except Exception as exc:
            first = first_line(exc, type(exc).__name__)
            raise DvcCuvisError(f"{repo}@{commit[:12]}: cannot open it as a DVC repository "
                                f"({first})") from None

    def read(self, path: str, where: str) -> bytes:
        """The bytes of ``path`` (git- or DVC-tracked) at the commit; one clear error
        naming ``where`` and the path otherwise."""
        try:
            with self._repo.dvcfs.open(path, "rb") as fh:
                data: bytes = fh.read()
                return data
        except FileNotFoundError:
            raise DvcCuvisError(f"{where}: {path} does not exist at that revision") from None
        except Exception as exc:
            first = first_line(exc, type(exc).__name__)
            raise DvcCuvisError(f"{where}: {path}: cannot read it ({first})") from None

    def isfile(self, path: str) -> bool:
        """True if ``path`` names a file at the commit (False when DVC cannot tell)."""
        with contextlib.suppress(Exception):
            return bool(self._repo.dvcfs.isfile(path))
        return False

    def fetch(self, paths: Sequence[str], where: str, remote: str | None,
              jobs: int | None) -> int:
        """DVC's granular fetch of ``paths`` into the cache; how many objects it downloaded."""
        from dvc_cuvis.repo.pull import dvc_error, granular_targets, quiet_dvc

        with quiet_dvc() as log, granular_targets(self._repo):
            try:
                return int(self._repo.fetch(targets=list(paths), remote=remote, jobs=jobs)
                           or 0)
            except Exception as exc:
                raise dvc_error(exc, f"{where}: fetch", log) from None

    def cache_objects(self, paths: Sequence[str], where: str, remote: str | None,
                      ) -> tuple[dict[str, Path], dict[str, str], int]:
        """Each path's object in the local DVC cache and its DVC md5, and how many objects
        were brought in besides the fetch: a granular fetch can skip entries of a ``.dir``
        it has seen before, so an object still missing is copied from the remote by md5."""
        odb = self._repo.cache.local
        local: dict[str, Path] = {}
        oids: dict[str, str] = {}
        for path in paths:
            try:
                info = self._repo.dvcfs.info(path)
            except FileNotFoundError:
                raise DvcCuvisError(f"{where}: {path} is not tracked at that revision "
                                    "(neither in git nor by DVC)") from None
            oid = (info.get("dvc_info") or {}).get("md5") or info.get("md5")
            if not oid:
                raise DvcCuvisError(f"{where}: {path} is not DVC-tracked at that revision")
            local[path], oids[path] = Path(odb.oid_to_path(oid)), oid
        missing = sorted({oids[p] for p in paths if not local[p].is_file()})
        return local, oids, self._copy_objects(missing, remote) if missing else 0

    def _copy_objects(self, oids: list[str], remote: str | None) -> int:
        """Copy the objects ``oids`` from the remote into the local DVC cache; how many came
        (a remote that cannot give them leaves them missing: the md5 check then says so)."""
        from dvc_data.hashfile.hash_info import HashInfo
        from dvc_data.hashfile.transfer import transfer

        from dvc_cuvis.repo.pull import quiet_dvc

        with quiet_dvc(), contextlib.suppress(Exception):
            rodb = self._repo.cloud.get_remote_odb(remote, hash_name="md5")
            done = transfer(rodb, self._repo.cache.local, {HashInfo("md5", o) for o in oids})
            return len(done.transferred)
        return 0

    def close(self) -> None:
        """Let DVC release the repository (and a URL's temporary clone)."""
        self._repo.close()

    def __enter__(self) -> DvcRevision:
        """This revision, closed at the end of the ``with`` block."""
        return self

    def __exit__(self, *exc: object) -> None:
        """:meth:`close`."""
        self.close()
