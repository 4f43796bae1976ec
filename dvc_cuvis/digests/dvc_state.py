"""DVC's state database, read directly: what DVC vouches for, without opening a ``Repo``.

DVC keeps, per repository, a sqlite database (``hashes/local/cache.db`` under the folder
``Repo.site_cache_dir`` names) mapping each file it hashed, added, pulled or checked out to
``{"version": 1, "checksum": <token of inode, mtime, size>, "size": n, "hash_info": {"md5":
...}}``.  :class:`~dvc_cuvis.digests.dvc_hashes.DvcKnownHashes` trusts an entry exactly as DVC's
``State.get_many`` does: only while the file's current inode, mtime and size give the
recorded token.

Opening DVC's ``Repo`` to reach that database costs imports, config and scm set-up on every call and
``State.get_many`` builds a ``Meta`` per file; on a fresh clone of 20k frames that was most
of what enumerate spent beyond a warm run.  This module does the same three things with
less: it names the database as ``Repo.site_cache_dir`` does (DVC's own
``dvc.dirs.site_cache_dir``, the repository's ``.dvc/tmp/btime``, user and DVC major
version; DVC's ``Config`` is loaded only when a config file mentions ``site_cache_dir``),
reads it read-only with the query dvc-data's ``HashesCache.get_many`` runs, and checks
each entry with DVC's rule (:func:`checksum`, dvc-data's ``_checksum``).  Anything it
cannot do exactly -- a database that is not where it should be, an entry in another form,
an unreadable file -- returns None, and the caller asks DVC through its own API instead.
``tests/digests/test_dvc_state.py`` compares every answer with ``State.get_many`` on real
repositories, and the location with ``Repo.site_cache_dir``.

Only reads: the database is opened with ``mode=ro``, so DVC's settings and entries are
never changed (sqlite may create its ``-wal``/``-shm`` side files, as any reader does), and
a ``dvc`` process running at the same time (``dvc repro`` runs us as a stage) is not
blocked.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from dvc_cuvis.limits import loads_json

logger = logging.getLogger(__name__)

#: the stamp of a file as the stat cache keeps it: inode, size, mtime in ns
Stamp = tuple[int, int, int]

#: the columns of diskcache's ``Cache`` table (with the types dvc-data's ``HashesCache``
#: declares) that the query rests on; a table without one of them: DVC's ``Repo`` answers
SCHEMA = {"key": "BLOB", "raw": "INTEGER", "value": "BLOB"}
# dvc-data's HashesCache reads in chunks of this many keys (sqlite's old variable limit)
_CHUNK = 999
# the entry DVC 3 writes for a file's plain md5 (compact JSON, keys in this order)
_ENTRY = re.compile(r'\{"version":1,"checksum":"([0-9]+)","size":([0-9]+),'
                    r'"hash_info":\{"md5":"([0-9a-f]{32})"\}\}')
_MD5 = re.compile(r"[0-9a-f]{32}")


def info(stamp: Stamp) -> dict[str, object]:
    """The ``fs.info`` fields DVC's state validates an entry with, rebuilt from a stamp."""
    ino, size, mtime_ns = stamp
    return {"type": "file", "ino": ino, "size": size, "mtime": _mtime(mtime_ns)}


def checksum(stamp: Stamp) -> str:
    """DVC's state token of a file at ``stamp`` (dvc-data's ``_checksum`` of :func:`info`):
    ``tokenize([ino, mtime, size])``, the md5 of the text of the argument tuple."""
    ino, size, mtime_ns = stamp  # (not through info(): this runs once per file)
    text = f"([{ino}, {_mtime(mtime_ns)!r}, {size}],)"
    return str(int.from_bytes(hashlib.md5(text.encode()).digest(), "big"))


def _mtime(mtime_ns: int) -> float:
    """The float ``os.stat`` gives as ``st_mtime`` (``sec + nsec * 1e-9``, as CPython
    computes it), so a token DVC derives from it equals the one DVC stored."""
    sec, nsec = divmod(mtime_ns, 1_000_000_000)
    return sec + nsec * 1e-9


def state_db(root: str) -> str | None:
    """The state database DVC uses for the repository at ``root`` (None: cannot be told
    without opening DVC's ``Repo``, or DVC has none yet)."""
    site = site_dir(root)
    if site is None:
        return None
    db = os.path.join(site, "hashes", "local", "cache.db")
    return db if os.path.isfile(db) else None


def site_dir(root: str) -> str | None:
    """``Repo.site_cache_dir`` of the repository at ``root``: the folder of DVC's state
    (None: cannot be told without opening DVC's ``Repo``)."""
    try:
        from dvc.dirs import global_config_dir, site_cache_dir, system_config_dir
        from dvc.version import version_tuple
    except Exception:  # DVC missing or broken: the caller falls back (and fails there too)
        return None
    dvc_dir = os.path.join(root, ".dvc")
    try:
        # Repo._btime: DVC's own marker file, created when DVC first opens the repository
        btime: float | None = os.path.getmtime(os.path.join(dvc_dir, "tmp", "btime"))
        btime = btime or getattr(os.stat(root), "st_birthtime", None)  # as DVC does
    except OSError:
        return None
    configs = [os.path.join(system_config_dir(), "config"),
               os.path.join(global_config_dir(), "config"),
               os.path.join(dvc_dir, "config"), os.path.join(dvc_dir, "config.local")]
    configured: str | None = None
    if any(_mentions(p, b"site_cache_dir") for p in configs):
        try:
            from dvc.config import Config

            configured = Config(dvc_dir=dvc_dir)["core"].get("site_cache_dir")
        except Exception:
            return None
    try:
        user = getpass.getuser()
    except Exception:
        return None
    token = hashlib.md5(str((root, None, btime, user, version_tuple[0], 0)).encode(),
                        usedforsecurity=False).hexdigest()
    try:
        base = site_cache_dir(configured)
    except TypeError:  # DVC < 3.61: no argument; Repo takes the configured folder first
        base = configured or site_cache_dir()
    return os.path.join(base, "repo", token)


def _mentions(path: str, word: bytes) -> bool:
    """True if the file at ``path`` exists and contains ``word``."""
    try:
        with open(path, "rb") as fh:
            return word in fh.read()
    except OSError:
        return False


class StateDb:
    """One repository's state database, open read-only (see the module docstring)."""

    def __init__(self, path: str) -> None:
        """Open ``path`` read-only; raises ``sqlite3.Error`` when it cannot be read."""
        uri = Path(path).resolve().as_uri() + "?mode=ro"
        self._con = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._lock = threading.Lock()  # one query at a time on the shared connection
        columns = {row[1]: str(row[2]).upper() for row in
                   self._con.execute("PRAGMA table_info(Cache)").fetchall()}
        if any(c not in columns for c in SCHEMA):
            self._con.close()
            raise sqlite3.DatabaseError(
                f"{path}: not the state schema this reader knows ({sorted(columns.items())})")

    def md5s(self, items: list[tuple[str, Stamp]]) -> dict[str, str] | None:
        """The md5 DVC vouches for, per ``(abs_path, stamp)`` whose entry matches ``stamp``;
        None when the database cannot be read (the caller asks DVC's API instead)."""
        try:
            raw = self._entries([p for p, _ in items])
        except sqlite3.Error:
            return None
        found: dict[str, str] = {}
        for path, stamp in items:
            entry = raw.get(path)
            if not isinstance(entry, str):
                continue
            parsed = _parse(entry)
            if parsed is None:
                continue
            token, size, md5 = parsed
            if size == stamp[1] and token == checksum(stamp):  # DVC compares the text
                found[path] = md5
        return found

    def _entries(self, paths: list[str]) -> dict[str, str]:
        """``{key: value}`` of the entries for ``paths``, in dvc-data's chunked ``IN`` query
        (measured: faster than one range query over the dataset folder)."""
        raw: dict[str, str] = {}
        with self._lock:
            for i in range(0, len(paths), _CHUNK):
                chunk = paths[i:i + _CHUNK]
                marks = ", ".join("?" * len(chunk))
                raw.update(self._con.execute(
                    f"SELECT key, value FROM Cache WHERE key IN ({marks}) and raw = 1",
                    chunk).fetchall())
        return raw

    def close(self) -> None:
        """Close the connection."""
        with contextlib.suppress(sqlite3.Error):
            self._con.close()


def _parse(entry: str) -> tuple[str, int, str] | None:
    """``(checksum, size, md5)`` of an entry that records a file's plain md5 (DVC 3), else
    None: DVC 2 entries (no version: ``md5-dos2unix``), folders (``.dir``), other hashes."""
    m = _ENTRY.fullmatch(entry)
    if m is not None:
        return m.group(1), int(m.group(2)), m.group(3)
    try:  # the same entry written with other spacing or key order (another JSON library)
        d: object = loads_json(entry, "DVC's state")
    except ValueError:  # a NestingError too
        return None
    if not isinstance(d, dict) or d.get("version") != 1:
        return None
    info, token, size = d.get("hash_info"), d.get("checksum"), d.get("size")
    if not (isinstance(info, dict) and list(info) == ["md5"] and isinstance(token, str)
            and token.isascii() and token.isdigit() and isinstance(size, int)):
        return None
    md5 = info["md5"]
    return (token, size, md5) if isinstance(md5, str) and _MD5.fullmatch(md5) else None


def hand_over_enabled() -> bool:
    """False when ``DVC_CUVIS_HAND_OVER=off`` (or 0/no/false): DVC hashes our files itself."""
    return os.environ.get("DVC_CUVIS_HAND_OVER", "on").strip().lower() not in (
        "off", "0", "no", "false")


def hand_over(files: Iterable[tuple[str, Stamp, str]]) -> int:
    """Record in DVC's state the md5 of each ``(abs_path, stamp, md5)`` -- files we wrote or
    hashed, the md5 of the bytes at ``stamp`` -- so that DVC never reads them again.

    Written through DVC's own API (dvc-data's ``State.save_many``, the entries DVC itself
    writes after hashing: keyed by the physical path, validated by inode, mtime and size),
    into the state of the repository each file lies in (its site cache folder, as
    ``Repo.site_cache_dir`` names it; DVC's ``Repo`` where that cannot be told).  A file
    whose stamp changed since it was hashed is left out.  Files outside a DVC repository
    are skipped.  Nothing here can fail a run: when DVC's API is missing or refuses, DVC
    simply hashes the files (logged at INFO).  Returns the number of entries recorded.
    """
    if not hand_over_enabled():
        return 0
    from dvc_cuvis.paths.roots import dvc_root_of

    by_root: dict[str, list[tuple[str, Stamp, str]]] = {}
    roots: dict[str, str | None] = {}
    for path, stamp, md5 in files:
        folder = os.path.dirname(path)
        if folder not in roots:
            roots[folder] = dvc_root_of(os.path.abspath(folder))
        root = roots[folder]
        if root is not None:
            by_root.setdefault(root, []).append((path, stamp, md5))
    done = 0
    for root, group in sorted(by_root.items()):
        try:
            done += _save(root, group)
        except Exception as exc:  # DVC's API missing or changed: DVC re-hashes instead
            logger.info("DVC's state was not given %d md5(s) under %s (%s: %s); DVC will "
                        "hash those files itself", len(group), root, type(exc).__name__, exc)
    return done


def _save(root: str, group: list[tuple[str, Stamp, str]]) -> int:
    """:func:`hand_over` for the files of one repository."""
    from dvc_data.hashfile.hash_info import HashInfo
    from dvc_data.hashfile.state import State
    from dvc_objects.fs.local import LocalFileSystem

    real = os.path.realpath(root)
    items = []
    for path, stamp, md5 in group:
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_ino, st.st_size, st.st_mtime_ns) != stamp or not _MD5.fullmatch(md5):
            continue  # changed since it was hashed (or not an md5): DVC must read it
        key = path if real == root else real + path[len(root):]
        items.append((key, HashInfo("md5", md5), info(stamp)))
    if not items:
        return 0
    site = site_dir(real)
    if site is None:
        from dvc.repo import Repo

        with Repo(real) as repo:
            repo.state.save_many(items, repo.fs)
        return len(items)
    os.makedirs(site, exist_ok=True)
    state = State(real, site)
    try:
        state.save_many(items, LocalFileSystem())
    finally:
        state.close()
    return len(items)
