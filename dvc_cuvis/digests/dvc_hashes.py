"""The md5s DVC already knows: the bridge from our stat cache to DVC's state database.

What we read of DVC's internals sits behind two small modules, a pair:

- :mod:`dvc_cuvis.digests.dvc_state` -- *how* DVC's state database is read (and given our md5s):
  where ``Repo.site_cache_dir`` puts it, its schema, dvc-data's query and DVC's token rule;
- this module -- *what* is trusted of it and for which file: the repository a file lies in
  (:func:`dvc_cuvis.paths.roots.dvc_root_of`), DVC's physical keys, only DVC 3 ``md5`` entries, and
  DVC's own ``Repo().state`` where the direct reader cannot answer.

The stat cache (:class:`dvc_cuvis.digests.stat_cache.StatCache`) asks :class:`DvcKnownHashes` before
it reads a file for its md5; hashing itself (:mod:`dvc_cuvis.digests.hashing`) knows neither.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import TYPE_CHECKING, Any

from dvc_cuvis.digests.hashing import Stamp, is_folder_hash
from dvc_cuvis.paths.roots import dvc_root_of

if TYPE_CHECKING:
    from dvc_cuvis.digests.dvc_state import StateDb


class DvcKnownHashes:
    """The md5 that DVC already holds for a file, trusted exactly as far as DVC trusts it.

    **What is trusted.**  Only an entry of DVC's *state database* (``repo.state``, kept in
    DVC's site cache folder), accepted by DVC's own rule (``State.get``): DVC records there the
    md5 it computed for a path together with the file's inode, mtime and size, whenever it
    hashes a file (``dvc add``, ``dvc commit``, a stage's outputs) and whenever it links a
    file out of its cache (``dvc pull``, ``dvc checkout``).  The entry is used only while
    the file's current inode, mtime and size (the stamp the caller took) equal the recorded
    ones — DVC's own rule, so a file edited after a pull, touched or replaced is hashed.
    Only DVC 3 ``md5`` entries count (DVC 2's ``md5-dos2unix`` of a text file is not the
    plain md5 of its bytes).

    **What is not.**  The ``.dir`` objects in DVC's cache are not consulted: a listing says
    what a folder held when it was committed, not what the files hold now.  The only thing
    that ties a listed md5 to today's bytes is a matching stamp vouched for by DVC's state
    (then the state entry already is the answer) or by our stat cache (then our entry is);
    a ``.dir`` alone would let an edited file pass, so it adds nothing sound.

    **Which repository.**  A file's is the nearest folder above it that holds ``.dvc``
    (subrepositories included); files outside any DVC repository are never looked up.  Each
    repository's state is opened lazily, on the first file that our own cache does not
    know, and never written to: first read directly (:mod:`dvc_cuvis.digests.dvc_state`: the same
    database, query and rule, without the start-up cost of opening ``Repo`` and a ``Meta`` per
    file), else through DVC's ``Repo().state``.  Neither takes a lock, which also works
    while ``dvc repro`` runs us as one of its stages.  A repository that cannot be opened
    (broken config, DVC missing) only means its files are hashed.
    """

    def __init__(self) -> None:
        """An empty set of repositories; nothing is opened until a lookup needs it."""
        self._lock = threading.Lock()
        self._root_of_dir: dict[str, str | None] = {}  # folder -> root (repo.dvc_root_of)
        self._repos: dict[str, Any] = {}  # root -> dvc Repo, or None when it cannot be opened
        self._dbs: dict[str, StateDb | None] = {}  # root -> state database; None: the Repo
        #: root -> its realpath, resolved once for this object's lifetime (as its Repo and
        #: state database are): a later object sees a link retargeted since.
        self._reals: dict[str, str] = {}

    def _real_root(self, root: str) -> str:
        """``os.path.realpath`` of a repository root, once for this object."""
        real = self._reals.get(root)
        if real is None:
            real = self._reals[root] = os.path.realpath(root)
        return real

    def _repo(self, root: str) -> Any:
        """DVC's ``Repo`` at ``root``, opened once; None when it cannot be opened."""
        if root in self._repos:
            return self._repos[root]
        with self._lock:
            if root not in self._repos:
                try:
                    from dvc.repo import Repo

                    self._repos[root] = Repo(self._real_root(root))
                except Exception:  # any failure only means "hash the file"
                    self._repos[root] = None
        return self._repos[root]

    def _db(self, root: str) -> StateDb | None:
        """The state database of ``root`` read directly (:mod:`dvc_cuvis.digests.dvc_state`), opened
        once; None when it cannot be (then DVC's ``Repo`` answers)."""
        if root in self._dbs:
            return self._dbs[root]
        with self._lock:
            if root not in self._dbs:
                from dvc_cuvis.digests import dvc_state  # (sqlite3: only when DVC is asked)

                db = None
                path = dvc_state.state_db(self._real_root(root))
                if path is not None:
                    with contextlib.suppress(Exception):
                        db = dvc_state.StateDb(path)
                self._dbs[root] = db
        return self._dbs[root]

    def md5(self, abs_path: str, stamp: Stamp) -> str | None:
        """DVC's md5 of ``abs_path`` if its state vouches for the bytes at ``stamp``."""
        with self._lock:
            root = dvc_root_of(os.path.dirname(abs_path), self._root_of_dir)
        if root is None:
            return None
        real = self._real_root(root)
        key = abs_path if real == root else real + abs_path[len(root):]
        db = self._db(root)
        if db is not None:
            found = db.md5s([(key, stamp)])
            if found is not None:
                return found.get(key)
        repo = self._repo(root)
        if repo is None:
            return None
        try:
            from dvc_cuvis.digests.dvc_state import info

            _, hash_info = repo.state.get(key, repo.fs, info(stamp))
        except Exception:  # a damaged or busy state db: hash instead
            return None
        return _plain_md5(hash_info)

    def md5_many(self, items: list[tuple[str, Stamp]]) -> dict[str, str]:
        """DVC's md5 of each ``(abs_path, stamp)`` its state vouches for, in one query per
        repository (``State.get_many``: about half the cost of one ``get`` per file)."""
        by_root: dict[str, list[tuple[str, Stamp]]] = {}
        with self._lock:
            for abs_path, stamp in items:
                root = dvc_root_of(abs_path.rpartition(os.sep)[0] or os.sep, self._root_of_dir)
                if root is not None:
                    by_root.setdefault(root, []).append((abs_path, stamp))
        found: dict[str, str] = {}
        for root, group in sorted(by_root.items()):
            # DVC keys its entries by the path under its root as the OS names it (the
            # physical cwd of a ``dvc`` command): a root reached through a link is mapped
            real = self._real_root(root)
            if real != root:
                logical = {real + p[len(root):]: p for p, _ in group}
                group = [(real + p[len(root):], s) for p, s in group]
            else:
                logical = None
            answers: dict[str, str] = {}
            db = self._db(root)
            direct = db.md5s(group) if db is not None else None
            if direct is not None:
                answers = direct
            elif (repo := self._repo(root)) is not None:
                from dvc_cuvis.digests.dvc_state import info

                infos = {p: info(s) for p, s in group}
                try:
                    for path, _, hash_info in repo.state.get_many([p for p, _ in group],
                                                                   repo.fs, infos):
                        value = _plain_md5(hash_info) if hash_info is not None else None
                        if value is not None:
                            answers[path] = value
                except Exception:  # a damaged or busy state db: hash instead
                    answers = {}
            if logical is None:
                found.update(answers)
            else:
                found.update((logical[p], md5) for p, md5 in answers.items())
        return found

    def close(self) -> None:
        """Close the repositories opened so far (their state databases)."""
        with self._lock:
            repos, self._repos = self._repos, {}
            dbs, self._dbs = self._dbs, {}
        for db in dbs.values():
            if db is not None:
                db.close()
        for repo in repos.values():
            if repo is not None:
                with contextlib.suppress(Exception):
                    repo.close()


def _plain_md5(hash_info: Any) -> str | None:
    """The plain md5 of a file's bytes in a DVC ``HashInfo``, else None."""
    if hash_info is None or hash_info.name != "md5" or not hash_info.value:
        return None
    value = str(hash_info.value)
    return value if len(value) == 32 and not is_folder_hash(value) else None


def dvc_hashes_enabled() -> bool:
    """False when ``DVC_CUVIS_DVC_HASHES=off`` (or 0/no/false): hash every file ourselves."""
    return os.environ.get("DVC_CUVIS_DVC_HASHES", "on").strip().lower() not in (
        "off", "0", "no", "false")
