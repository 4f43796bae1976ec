"""The verdict memo: a clean drift verdict, remembered until any file it rests on changes.

``guard()`` and the DataModules check before every ``setup()``; when universe.csv, the
split, the options and every content file's stamp are what they were at the last clean
check, its findings stand without re-reading anything: the cost is one ``stat`` per file
and one folder listing per folder of folders.  Kept in the stat cache, under
universe.csv's own entry (a few slots: one per split), with a key of its own
(:func:`~dvc_cuvis.digests.stat_cache.stamp_key`: it holds for that file at that stamp only, and
the content memo, which shares values between files with the same md5, never sees it: a
verdict rests on other files than universe.csv); a failed check is never remembered (it is
re-run in full, so its details are current).

Findings are stored and returned as plain records (``check, status, summary, details,
fix``); :mod:`dvc_cuvis.check.drift` owns what they mean.
"""

from __future__ import annotations

import array
import functools
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis._version import __version__
from dvc_cuvis.digests.hashing import Stamp, stamp_of
from dvc_cuvis.digests.stat_cache import StatCache, stamp_key
from dvc_cuvis.model.universe import Universe

#: One remembered finding: ``{"check", "status", "summary", "details", "fix"}``.
Record = dict[str, Any]

#: A slot's stamp columns (one value per content file, in ``names`` order) and their
#: ``array`` type codes: 8-byte integers in this machine's byte order, as hex text in the
#: cache's JSON (30k JSON numbers take 1.8 ms to decode, base64 1.1 ms, hex 0.9 ms; the
#: cache never leaves the machine, and a column that does not decode is a miss).
STAMP_COLUMNS: tuple[tuple[str, str], ...] = (("ino", "Q"), ("size", "q"), ("mtime", "q"))

#: (No thread pool for the stats: two threads were 0.84x the time of one on a quiet 2-core
#: machine but 1.5x when the other core was busy, as during training; see bench_check.)

_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class VerdictMemo:
    """The memo slot of one (universe.csv, split, options) at their current stamps.

    Soundness: the stamps stored are those of the bytes the full check read (taken on the
    descriptors read, so a file swapped meanwhile is never remembered under the wrong
    stamp); files are compared without following a final symlink, and every folder on
    the way to them must still be the same real folder (not a symlink put in its place),
    so a reused verdict never covers a path the full check would refuse.
    """

    KEY = stamp_key("verdict")  # its own name, never a content key (no memo by md5)
    SLOTS = 4  # a universe checked against a few splits (a path, an in-memory config, folds)

    def __init__(self, cache: StatCache, uni_abs: str, stamp: Stamp, split_id: str,
                 options: Sequence[object]) -> None:
        """The slot keyed by ``split_id`` and ``options`` under universe.csv's entry."""
        self.cache, self.uni_abs, self.stamp = cache, uni_abs, stamp
        self.split_id, self.key = split_id, self._key(split_id, options)
        self.base = os.path.dirname(uni_abs)

    @staticmethod
    def _key(split_id: str, options: Sequence[object]) -> str:
        text = json.dumps([code_id(), split_id, options], separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    @staticmethod
    def _split_id(splits: Path | str | DataSplitConfig, stamp: Stamp | None) -> str | None:
        if isinstance(splits, DataSplitConfig):
            return "config:" + hashlib.sha256(splits.model_dump_json().encode()).hexdigest()
        return None if stamp is None else f"{os.path.abspath(splits)}:{list(stamp)}"

    @classmethod
    def before_reading(
        cls, cache: StatCache, splits: Path | str | DataSplitConfig,
        universe: Path | str | Universe, options: Sequence[object],
    ) -> VerdictMemo | None:
        """The slot for the files as they are now (None if one is missing or unstamped)."""
        try:
            if isinstance(universe, Universe):  # keyed by the bytes it was read from
                if universe.path is None or universe.file_stamp is None:
                    return None
                uni_abs, uni_stamp = os.path.abspath(universe.path), universe.file_stamp
            else:
                uni_abs = os.path.abspath(universe)
                uni_stamp = stamp_of(os.stat(uni_abs))
            split_stamp = None if isinstance(splits, DataSplitConfig) else stamp_of(
                os.stat(splits))
        except OSError:
            return None
        split_id = cls._split_id(splits, split_stamp)
        if split_id is None:
            return None
        return cls(cache, uni_abs, uni_stamp, split_id, options)

    def _slots(self, stamp: Stamp) -> list[dict[str, Any]]:
        found, value = self.cache.lookup(self.uni_abs, self.KEY, stamp)
        slots = value.get("slots") if found and isinstance(value, dict) else None
        return [v for v in slots if isinstance(v, dict)] if isinstance(slots, list) else []

    def records(self) -> list[Record] | None:
        """The remembered findings, if every file and folder is unchanged; else None."""
        slot = next((v for v in self._slots(self.stamp) if v.get("key") == self.key), None)
        if slot is None:
            return None
        try:
            names = slot["names"].split("\0") if slot["names"] else []
            folders = [(str(d), int(n)) for d, n in slot["folders"]]
            cols = [_ints(slot[c], dt) for c, dt in STAMP_COLUMNS]
            if (any(len(c) != len(names) for c in cols) or
                    sum(n for _, n in folders) != len(names)):
                return None
            fd = os.open(self.base, os.O_RDONLY | _O_DIRECTORY)
            try:
                for parent, children in slot["dirs"].items():
                    # one listing per folder of folders: each must still be a real folder
                    with os.scandir(os.path.join(self.base, parent)) as it:
                        here = {e.name: e for e in it}
                    for name, ino in children:
                        e = here.get(name)
                        if (e is None or e.is_symlink() or not e.is_dir(follow_symlinks=False)
                                or e.inode() != ino):
                            return None
                if not stamps_unchanged(fd, folders, names, cols):
                    return None
            finally:
                os.close(fd)
            return [{k: f[k] for k in ("check", "status", "summary", "details", "fix")}
                    for f in slot["findings"]]
        except (OSError, KeyError, TypeError, AttributeError, ValueError,
                NotImplementedError):
            return None

    def store(
        self, records: list[Record], witness: list[tuple[str, Stamp | None]], uni: Universe,
        splits: Path | str | DataSplitConfig, split_stamp: Stamp | None, options: Sequence[object],
    ) -> None:
        """Remember clean findings and the stamps of the bytes they rest on."""
        # an in-memory config is the same object as before reading: its content id stands
        split_id = (self.split_id if isinstance(splits, DataSplitConfig)
                    else self._split_id(splits, split_stamp))
        if (uni.file_stamp is None or split_id is None or uni.path is None
                or os.path.abspath(uni.path) != self.uni_abs):
            return  # read from something without a stable stamp: nothing to key it by
        prefix = self.base.rstrip("/") + "/"
        stamps: list[Stamp] = []
        rels: list[str] = []
        for path, stamp in witness:
            if stamp is None or not path.startswith(prefix):
                return  # a file changed while it was hashed (or lies elsewhere)
            rels.append(path[len(prefix):])
            stamps.append(stamp)
        dirs: dict[str, list[tuple[str, int]]] = {}
        try:
            for d in sorted({a for r in rels for a in _ancestors(r)}):
                parent, _, name = d.rpartition("/")
                st = os.lstat(os.path.join(self.base, d))
                dirs.setdefault(parent, []).append((name, st.st_ino))
        except OSError:
            return
        by_folder: dict[str, list[tuple[str, Stamp]]] = {}
        for rel, file_stamp in zip(rels, stamps, strict=True):
            folder, _, name = rel.rpartition("/")
            by_folder.setdefault(folder, []).append((name, file_stamp))
        files = [f for d in sorted(by_folder) for f in by_folder[d]]
        try:
            packed = {c: _packed([fs[k] for _, fs in files], code)
                      for k, (c, code) in enumerate(STAMP_COLUMNS)}
        except OverflowError:
            return  # a stamp outside 8 bytes (no such file system seen): not remembered
        slot = {"key": self._key(split_id, options), "dirs": dirs,
                "folders": [[d, len(by_folder[d])] for d in sorted(by_folder)],
                "names": "\0".join(name for name, _ in files), **packed, "findings": records}
        stamp = uni.file_stamp
        others = [v for v in self._slots(stamp) if v.get("key") != slot["key"]]
        self.cache.record(self.uni_abs, self.KEY, stamp, {"slots": [slot, *others][:self.SLOTS]})


def code_id(package: Path | None = None) -> str:
    """The version plus a digest of every module of the package (``package``: its folder).

    A remembered verdict is never reused by different checking code (a development
    checkout, an upgrade).  Every ``.py`` below the package folder counts, in sorted
    order with its relative path, so no list of "the modules that decide a verdict" can
    go stale: a new module, or an edit anywhere, changes the id (at worst a verdict is
    re-checked once after an edit that could not have changed it).
    """
    if package is None:
        return _installed_code_id()
    h = hashlib.sha256(__version__.encode())
    try:
        files = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py"))
        for rel in files:
            data = (package / rel).read_bytes()
            h.update(f"\0{rel}\0{len(data)}\0".encode())
            h.update(data)
    except OSError:
        h.update(b"\0unreadable")  # not readable (e.g. a zip import): the version decides
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def _installed_code_id() -> str:
    return code_id(Path(__file__).parents[1])  # the dvc_cuvis folder, not check/


def same_stamps(fd: int, names: Sequence[str], inos: Sequence[int], sizes: Sequence[int],
                mtimes: Sequence[int]) -> bool:
    """True if every file ``names[i]`` below the folder ``fd`` has the stamp given for it.

    A final symlink is not followed (a link put in a file's place is a change).  The
    loop is the reused verdict's whole per-file cost: one ``lstat`` and three integer
    comparisons, nothing built per file.
    """
    lstat = os.lstat
    for name, ino, size, mtime in zip(names, inos, sizes, mtimes, strict=True):
        st = lstat(name, dir_fd=fd)
        if st.st_mtime_ns != mtime or st.st_ino != ino or st.st_size != size:
            return False
    return True


def stamps_unchanged(fd: int, folders: list[tuple[str, int]], names: list[str],
                     cols: list[array.array[int]]) -> bool:
    """:func:`same_stamps` over every file, folder by folder.

    ``folders`` lists ``(folder below fd, how many of names are in it)`` in order; each
    folder is opened once (not through a final symlink) and its files are stat'ed by
    name, so the kernel resolves one path component per file.  A folder or file that
    cannot be opened or stat'ed (missing, unreadable) counts as changed.
    """
    lo = 0
    try:
        for folder, count in folders:
            hi = lo + count
            dfd = fd if not folder else os.open(
                folder, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW, dir_fd=fd)
            try:
                if not same_stamps(dfd, names[lo:hi], *(c[lo:hi] for c in cols)):
                    return False
            finally:
                if dfd != fd:
                    os.close(dfd)
            lo = hi
    except (OSError, ValueError, TypeError, NotImplementedError):
        return False  # missing, unreadable or malformed: the full check decides
    return lo == len(names)


def _packed(values: list[int], code: str) -> str:
    return array.array(code, values).tobytes().hex()


def _ints(text: str, code: str) -> array.array[int]:
    """A packed column back (ValueError for a length that is no whole number of items)."""
    out = array.array(code)
    if out.itemsize != 8:
        raise ValueError("no 8-byte integer type")  # nothing stored can match: a miss
    out.frombytes(bytes.fromhex(text))
    return out


def _ancestors(rel: str) -> list[str]:
    """``a/b/c.npz`` -> ``["a", "a/b"]``: every folder on the way to a file."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
