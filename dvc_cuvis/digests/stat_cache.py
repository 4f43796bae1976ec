"""The stat cache: what was derived from a file's bytes, kept while its stamp is unchanged.

Its three parts live here: the store (:class:`StatCache`), its file format (:func:`_read`,
:meth:`StatCache.to_bytes`) and the content memo.  The digests themselves are computed by
:mod:`dvc_cuvis.digests.hashing`, and the md5s DVC already knows come through
:mod:`dvc_cuvis.digests.dvc_hashes`.

The cache maps an absolute path to a stamp ``(inode, size, mtime_ns)`` plus whatever was
derived from the file's bytes (its md5, the category ids in a label map, a measurement
count).  A file whose stamp is unchanged is trusted; anything else is recomputed.  The
cache is a local convenience, never an output: it lives in ``.dvc/tmp/dvc-cuvis/`` of the
enclosing DVC repository (git-ignored by DVC) or in the user's cache directory.

It is read on every ``check`` and every guarded ``setup()``, so its file is columnar
rather than one JSON object per path: the paths, three integer arrays and, per value key,
one JSON list that is decoded only when that key is first asked for.  Loading the entries
of 100k files is a few tens of milliseconds instead of a 20 MiB JSON parse.

No byte is hashed twice: before a file is read for its md5, the cache asks DVC
(:class:`~dvc_cuvis.digests.dvc_hashes.DvcKnownHashes`), which already holds the md5 of every file
it added, pulled or checked out.  The cache counts what each md5 cost
(:meth:`StatCache.stats`): from its own entries, from DVC, or read and hashed (files and
bytes).

Every key has one of two kinds, and a name belongs to one kind only: a *stamp key*
(:func:`stamp_key`: the md5, a folder's hash, the verdict memo of
:mod:`dvc_cuvis.check.verdicts`) holds for one path at one stamp; a *content key*
(:func:`content_key`) is also remembered by md5, as follows.

No file is parsed twice for the same bytes either: a value registered with
:func:`content_key` (an npz frame's source and category ids, a label map's ids, ...) is a
pure function of the file's bytes and of the code that derives it, so besides its stamp it
is also remembered under the file's md5 (the *content memo*, one section per key).  When a
file's stamp is new (``dvc checkout`` rewrote it, it was moved or copied) but its md5 is
known without reading it -- our own entry at that stamp, or DVC's state db, both validated
by the stamp -- the value is taken from the memo.  Same md5 => same bytes => same value;
the code's version is part of the key (``npz-frame/v1``), so a changed parser never reuses what
an older one derived.  The memo keeps every value of the bytes currently at some path and,
besides them, up to as many of the most recent others (bytes checked out before), so a
checkout back to a revision seen before re-reads nothing.

A universe.csv committed in git is not a source of the memo by itself: its rows pair an md5
with the values enumerate derived, but a hand-edited row (same md5, other category ids)
cannot be told from a true one without reading the file, and the file names no version of
the code that wrote it.  It seeds the memo only where DVC vouches that it is exactly what
the enumerate stage wrote, by a code version that derives the same values
(:mod:`dvc_cuvis.sources.seed`, through :meth:`StatCache.add_seed`).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dvc_cuvis._io import atomic_write_bytes
from dvc_cuvis.digests import hashing
from dvc_cuvis.digests.dvc_hashes import DvcKnownHashes, dvc_hashes_enabled
from dvc_cuvis.digests.hashing import DIR_KEY, Stamp, stamp_of
from dvc_cuvis.limits import loads_json
from dvc_cuvis.paths.roots import dvc_root

MAGIC = b"dvc-cuvis stat cache 2\n"

#: Keys whose values are pure functions of the bytes (:func:`content_key`): also kept by md5
#: in the content memo, and taken from it for the same bytes at another path or stamp.
CONTENT_KEYS: set[str] = set()
#: Keys whose value holds for one path at one stamp only, never for the same md5 elsewhere
#: (:func:`stamp_key`): the md5 itself, a folder's hash, the verdict memo's slots (a verdict
#: rests on other files than the universe.csv it is recorded under).
STAMP_KEYS: set[str] = {"md5", DIR_KEY}
#: Content keys whose values are verdicts on the bytes (is this frame whole?), not values
#: derived for the universe: kept by md5 like any content key, counted apart (``checked_*``)
#: so that "frames parsed" keeps counting what enumerate derived.
CHECK_KEYS: set[str] = set()
MEMO_MIN_KEEP = 10_000  # values of bytes no longer at any path kept at least (per key)


def content_key(name: str, version: int, *, check: bool = False) -> str:
    """Register and return ``name/v<version>``: a cache key whose value is a pure function of
    the file's bytes (so it may be reused for the same md5 at another path or stamp).

    Bump ``version`` whenever the function that computes the value changes what it returns:
    values derived by another version are never looked up again.  A name that is a
    :func:`stamp_key` is refused (ValueError): the two kinds never share a name.
    ``check``: the value is a verdict on the bytes (:data:`CHECK_KEYS`), counted apart.
    """
    if name in STAMP_KEYS:
        raise ValueError(f"{name!r} is a stamp key; a content key needs a name of its own")
    key = f"{name}/v{version}"
    CONTENT_KEYS.add(key)
    if check:
        CHECK_KEYS.add(key)
    return key


def stamp_key(name: str) -> str:
    """Register and return ``name``: a cache key whose value holds only for the path and
    stamp it is recorded at (never put in, or taken from, the content memo).

    Refused (ValueError): a name with ``/`` (the form of a content key) or one that a
    content key already uses.
    """
    if "/" in name or any(k.rpartition("/v")[0] == name for k in CONTENT_KEYS):
        raise ValueError(f"{name!r} cannot be a stamp key (a content key's name, or a '/')")
    STAMP_KEYS.add(name)
    return name


def default_cache_path(start: Path | None = None) -> Path:
    """``<dvc repo>/.dvc/tmp/dvc-cuvis/stat-cache.bin``, else ``~/.cache/dvc-cuvis/...``."""
    root = dvc_root((start or Path.cwd()).resolve())
    if root is not None:
        return root / ".dvc" / "tmp" / "dvc-cuvis" / "stat-cache.bin"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "dvc-cuvis" / "stat-cache.bin"


def open_stat_cache(
    setting: str | Path | StatCache | None = "auto",
    near: Path | str | None = None,
    *,
    dvc: bool | None = None,
) -> StatCache:
    """A stat cache from a setting: ``"auto"`` (the repository of ``near``, a file whose
    folder is searched, else of the working folder), ``"none"``/None (in memory only), a
    cache file, or a cache already open.

    ``dvc``: also take the md5s DVC already knows (:class:`DvcKnownHashes`) before reading
    a file; None = yes unless ``DVC_CUVIS_DVC_HASHES=off``.  That is DVC's knowledge, not
    our cache, so it applies to an in-memory cache too.
    """
    if isinstance(setting, StatCache):
        return setting
    known = DvcKnownHashes() if (dvc_hashes_enabled() if dvc is None else dvc) else None
    if setting is None or setting == "none":
        return StatCache(None, dvc=known)
    if setting == "auto":
        path = default_cache_path(Path(near).parent if near is not None else None)
        with contextlib.suppress(OSError):  # the JSON cache that earlier versions kept there
            path.with_name("stat-cache.json").unlink(missing_ok=True)
        return StatCache(path, dvc=known)
    return StatCache(Path(setting), dvc=known)


class CacheMiss(Exception):
    """Raised by a ``cached_only`` lookup that would have to read the file."""


class _Stored:
    """The entries read from the cache file: columnar, value lists decoded on demand."""

    def __init__(self, paths: list[str], ints: list[list[int]], raw: dict[str, memoryview],
                 memo_raw: dict[str, memoryview] | None = None) -> None:
        self.paths = paths
        self._memo_raw = memo_raw or {}
        self._memo: dict[str, dict[str, object]] = {}
        self._ino, self._size, self._mtime = ints
        self.index = dict(zip(paths, range(len(paths)), strict=True))
        self._raw: dict[str, memoryview] = raw
        self._values: dict[str, list[object]] = {}

    def stamp(self, row: int) -> Stamp:
        return (self._ino[row], self._size[row], self._mtime[row])

    def key_names(self) -> list[str]:
        return sorted(self._raw)

    def memo_names(self) -> list[str]:
        return sorted(self._memo_raw)

    def memo(self, key: str) -> dict[str, object]:
        """The content memo of ``key``: md5 -> value (oldest first), decoded on first use."""
        memo = self._memo.get(key)
        if memo is None:
            try:
                memo = loads_json(bytes(self._memo_raw.get(key, b"{}")), "stat cache")
            except ValueError:  # a NestingError too
                memo = None
            if not isinstance(memo, dict):
                memo = {}  # a damaged section: every lookup is a miss
            self._memo[key] = memo
        return memo

    def values(self, key: str) -> list[object] | None:
        vals = self._values.get(key)
        if vals is None:
            raw = self._raw.get(key)
            if raw is None:
                return None
            try:
                vals = loads_json(bytes(raw), "stat cache")
            except ValueError:  # a NestingError too
                vals = None
            if not isinstance(vals, list) or len(vals) != len(self.paths):
                vals = [None] * len(self.paths)  # a damaged list: every value is a miss
            self._values[key] = vals
        return vals


def _read(path: Path) -> _Stored | None:
    """The stored entries, or None for a missing, foreign or corrupt file."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(MAGIC):
        return None  # an older (JSON) cache or something else: start afresh
    try:
        head_end = data.index(b"\n", len(MAGIC))
        head = loads_json(data[len(MAGIC):head_end], path)
        n = int(head["n"])
        pos = head_end + 1
        view = memoryview(data)
        sections: dict[str, memoryview] = {}
        for name, size in head["sections"]:
            sections[name] = view[pos:pos + size]
            pos += size
            if len(sections[name]) != size:
                return None
        blob = str(sections.pop("paths"), "utf-8", "surrogateescape")
        paths = blob.split("\0") if n else []
        ints = [np.frombuffer(sections.pop(c), dtype=d).tolist()
                for c, d in (("ino", "<u8"), ("size", "<i8"), ("mtime", "<i8"))]
        if len(paths) != n or any(len(c) != n for c in ints):
            return None
        raw = {name[len("key:"):]: body for name, body in sections.items()
               if name.startswith("key:")}
        memo_raw = {name[len("memo:"):]: body for name, body in sections.items()
                    if name.startswith("memo:")}
        return _Stored(paths, ints, raw, memo_raw)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


class StatCache:
    """Values derived from file contents, valid while the file's stamp is unchanged."""

    def __init__(self, path: Path | None, *, dvc: DvcKnownHashes | None = None) -> None:
        """Load the cache at ``path`` (None: an in-memory cache that is never saved);
        ``dvc``: where to ask for an md5 before reading a file (None: nowhere)."""
        self.path = path
        self.dvc = dvc
        self._lock = threading.Lock()
        self._stored = _read(path) if path is not None else None
        # entries added or replaced in this process: path -> {"st": stamp, key: value}
        self._new: dict[str, dict[str, Any]] = {}
        self._dirty = False
        self.hits = 0
        self.misses = 0
        # what each md5 asked for cost: our entry, DVC's state, or reading the bytes
        self.md5_cached = 0
        self.md5_from_dvc = 0
        self.md5_hashed = 0
        self.bytes_hashed = 0
        # content values (keys of CONTENT_KEYS) read from files vs taken from the memo
        self.derived_computed = 0
        self.derived_from_memo = 0
        # verdicts (keys of CHECK_KEYS) read from files vs taken from the memo
        self.checked_computed = 0
        self.checked_from_memo = 0
        self._memo_new: dict[str, dict[str, object]] = {}  # key -> md5 -> value, this process
        self._hashed: list[tuple[str, Stamp, str]] = []  # files read for their md5, this process
        self._dvc_asked: dict[str, tuple[Stamp, str | None]] = {}  # prefetched DVC answers
        # vouched values by md5 (dvc_cuvis.sources.seed), loaded on the first memo miss, not saved
        self._seed_loaders: list[Callable[[], dict[str, dict[str, object]]]] = []
        self._seeded: dict[str, dict[str, object]] = {}
        self.seeded = 0  # entries the loaders gave (a count for tests and benchmarks)

    def stats(self) -> dict[str, int]:
        """Where this process's md5s came from, how many bytes were read to hash, and how
        many content values (:func:`content_key`) were read from files or taken from memo.

        Run statistics, not results: a cold and a warm run over the same files differ, so
        they belong on stderr or in ``--json``, never in a DVC-tracked metrics file.
        """
        return {"bytes_hashed": self.bytes_hashed, "derived_computed": self.derived_computed,
                "derived_from_memo": self.derived_from_memo, "md5_cached": self.md5_cached,
                "md5_from_dvc": self.md5_from_dvc, "md5_hashed": self.md5_hashed}

    def prefetch_dvc(self, items: list[tuple[str, Stamp]]) -> None:
        """Ask DVC at once for the md5 of every ``(abs_path, stamp)`` our entries do not know.

        One batched query instead of one per file; the answers are used (and counted) only
        when an md5 of that path at that stamp is asked for.  DVC is not opened when our
        own entries know every file.
        """
        if self.dvc is None:
            return
        ask = [(p, s) for p, s in items
               if p not in self._dvc_asked and not self.lookup(p, "md5", s)[0]]
        if not ask:
            return
        found = self.dvc.md5_many(ask)
        with self._lock:
            for p, s in ask:
                self._dvc_asked[p] = (s, found.get(p))

    def _dvc_md5(self, abs_path: str, stamp: Stamp) -> str | None:
        """DVC's answer for the bytes at ``stamp``: prefetched, else asked now."""
        if self.dvc is None:
            return None
        asked = self._dvc_asked.get(abs_path)
        if asked is not None and asked[0] == stamp:
            return asked[1]
        return self.dvc.md5(abs_path, stamp)

    def known_md5(self, abs_path: str, stamp: Stamp) -> str | None:
        """The md5 of the bytes at ``stamp`` if known without reading them (our entry, or a
        DVC answer already fetched); neither counted nor recorded (the caller's own md5
        request does that)."""
        found, value = self.lookup(abs_path, "md5", stamp)
        if found:
            return str(value)
        asked = self._dvc_asked.get(abs_path)
        return asked[1] if asked is not None and asked[0] == stamp else None

    def memo_lookup(self, key: str, md5: str) -> tuple[bool, object]:
        """``(True, value)`` if the content memo of ``key`` knows the bytes with ``md5``."""
        new = self._memo_new.get(key)
        if new is not None and md5 in new:
            return True, new[md5]
        if self._stored is not None and md5 in (memo := self._stored.memo(key)):
            return True, memo[md5]
        if self._seed_loaders:
            self._load_seeds()
        seeded = self._seeded.get(key)
        if seeded is not None and md5 in seeded:
            return True, seeded[md5]
        return False, None

    def add_seed(self, loader: Callable[[], dict[str, dict[str, object]]]) -> None:
        """Values some vouched record gives by md5 (``{key: {md5: value}}``), asked for only
        on the first content-memo miss (a warm run never loads them).

        Used only as the memo is: for a file whose md5 is known without reading it, so bytes
        that changed are read as usual.  Only values used are saved (as this run's entries);
        a loader that fails gives nothing (see :mod:`dvc_cuvis.sources.seed`).
        """
        with self._lock:
            self._seed_loaders.append(loader)

    def _load_seeds(self) -> None:
        """Run the pending seed loaders once (under the lock: threads wait for the first)."""
        with self._lock:
            loaders, self._seed_loaders = self._seed_loaders, []
            for load in loaders:
                try:
                    found = load()
                except Exception:  # a seed is an optimization: without it, files are read
                    continue
                for key, values in found.items():
                    if key in CONTENT_KEYS:  # only values that are pure functions of bytes
                        self._seeded.setdefault(key, {}).update(values)
                        self.seeded += len(values)

    def _from_dvc(self, abs_path: str, stamp: Stamp) -> str | None:
        """DVC's md5 for the bytes at ``stamp`` (recorded here, so the next run asks us)."""
        if self.dvc is None:
            return None
        value = self._dvc_md5(abs_path, stamp)
        if value is not None:
            self.record(abs_path, "md5", stamp, value)
            with self._lock:
                self.md5_from_dvc += 1
        return value

    def take_hashed(self) -> list[tuple[str, Stamp, str]]:
        """``(abs_path, stamp, md5)`` of every file this process read to hash since the last
        call (what DVC may not know yet: :func:`dvc_cuvis.digests.dvc_state.hand_over`)."""
        with self._lock:
            out, self._hashed = self._hashed, []
        return out

    def recorded(self) -> dict[str, dict[str, object]]:
        """The entries this process recorded (path -> values), e.g. to merge elsewhere."""
        return dict(self._new)

    def count(self) -> int:
        """Number of paths with an entry."""
        stored = self._stored.index if self._stored else {}
        return len(stored) + sum(1 for p in self._new if p not in stored)

    def lookup(self, abs_path: str, key: str, stamp: Stamp) -> tuple[bool, object]:
        """``(True, value)`` if ``key`` is recorded for ``abs_path`` at ``stamp``."""
        entry = self._new.get(abs_path)
        if entry is not None:
            if entry["st"] != stamp:
                return False, None
            if key in entry:
                return True, entry[key]
            # same bytes, another key: what was stored for them still holds
        stored = self._stored
        if stored is None:
            return False, None
        row = stored.index.get(abs_path)
        if row is None or stored.stamp(row) != stamp:
            return False, None
        vals = stored.values(key)
        if vals is None or vals[row] is None:
            return False, None
        return True, vals[row]

    def record(self, abs_path: str, key: str, stamp: Stamp, value: object) -> None:
        """Remember ``value`` under ``key`` for ``abs_path`` at ``stamp``."""
        with self._lock:
            entry = self._new.get(abs_path)
            if entry is None or entry["st"] != stamp:
                entry = self._new[abs_path] = {"st": stamp}
            entry[key] = value  # other keys of the same bytes stay in the stored columns
            self._dirty = True

    def get(
        self,
        path: Path | str,
        key: str,
        compute: Callable[[Path], object],
        st: os.stat_result | None = None,
        *,
        cached_only: bool = False,
    ) -> Any:
        """Cached ``compute(path)`` under ``key``; recomputed when the file changed.

        With ``cached_only`` a miss raises :class:`CacheMiss` instead of reading the file,
        so callers can serve hits serially and send only misses to a worker pool.
        """
        abs_path = os.fspath(path)
        if not abs_path.startswith("/"):
            abs_path = os.path.abspath(abs_path)
        stamp = stamp_of(st or os.stat(abs_path))
        found, value = self.lookup(abs_path, key, stamp)
        if found:
            self.hits += 1
            return value
        content = key in CONTENT_KEYS
        md5 = self.known_md5(abs_path, stamp) if content else None
        if md5 is not None:
            found, value = self.memo_lookup(key, md5)
            if found:  # the same bytes were read before (elsewhere, or at another stamp)
                self.record(abs_path, key, stamp, value)
                with self._lock:
                    self.hits += 1
                    if key in CHECK_KEYS:
                        self.checked_from_memo += 1
                    else:
                        self.derived_from_memo += 1
                return value
        if cached_only:
            raise CacheMiss(abs_path)
        value = compute(Path(abs_path))
        try:
            unchanged = stamp_of(os.stat(abs_path)) == stamp
        except OSError:
            unchanged = False
        if unchanged:  # a file that changed while it was read is not cached
            self.record(abs_path, key, stamp, value)
            if content and md5 is None:  # hashed meanwhile (by another thread)?
                md5 = self.known_md5(abs_path, stamp)
            if md5 is not None:  # other files with these bytes need not be read
                with self._lock:
                    self._memo_new.setdefault(key, {})[md5] = value
        with self._lock:
            self.misses += 1
            if key in CHECK_KEYS:
                self.checked_computed += 1
            elif content:
                self.derived_computed += 1
        return value

    def put(self, path: Path | str, key: str, value: object) -> None:
        """Record ``value`` for a file this process just wrote (so it is never re-read)."""
        abs_path = os.path.abspath(path)
        self.record(abs_path, key, stamp_of(os.stat(abs_path)), value)

    def md5(
        self, path: Path | str, st: os.stat_result | None = None, *, cached_only: bool = False
    ) -> str:
        """md5 of ``path``, from the cache when the file is unchanged."""
        abs_path = os.fspath(path)
        if not abs_path.startswith("/"):
            abs_path = os.path.abspath(abs_path)
        stamp = stamp_of(st or os.stat(abs_path))
        if cached_only:
            found, value = self.lookup(abs_path, "md5", stamp)
            if found:
                self.hits += 1
                self.md5_cached += 1
                return str(value)
            known = self._from_dvc(abs_path, stamp)
            if known is None:
                raise CacheMiss(abs_path)
            return known
        return self.md5_stamped(abs_path, stamp)[0]

    def md5_stamped(self, abs_path: str, stamp: Stamp) -> tuple[str, Stamp | None]:
        """md5 of ``abs_path`` whose stamp the caller just took, and the stamp it belongs to.

        The second value is ``stamp`` on a cache hit, the stamp of the bytes actually hashed
        on a miss, or None when the file changed while it was read (nothing is cached then).
        A miss asks DVC (:class:`~dvc_cuvis.digests.dvc_hashes.DvcKnownHashes`) before
        reading the file.
        """
        found, value = self.lookup(abs_path, "md5", stamp)
        if found:
            with self._lock:
                self.hits += 1
                self.md5_cached += 1
            return str(value), stamp
        known = self._from_dvc(abs_path, stamp)
        if known is not None:
            return known, stamp
        digest, read_stamp, nbytes = hashing.hash_file(abs_path)
        if read_stamp is not None:
            self.record(abs_path, "md5", read_stamp, digest)
            with self._lock:
                self._hashed.append((abs_path, read_stamp, digest))
        with self._lock:
            self.misses += 1
            self.md5_hashed += 1
            self.bytes_hashed += nbytes
        return digest, read_stamp

    def _merged(self) -> tuple[list[str], list[Stamp], dict[str, list[object]]]:
        stored, new = self._stored, self._new
        paths: list[str] = []
        stamps: list[Stamp] = []
        keys = set(stored.key_names() if stored else ())
        for entry in new.values():
            keys.update(entry)
        keys.discard("st")
        values: dict[str, list[object]] = {k: [] for k in sorted(keys)}
        if stored is not None:
            keep = [r for r, p in enumerate(stored.paths) if p not in new]
            paths += [stored.paths[r] for r in keep]
            stamps += [stored.stamp(r) for r in keep]
            for k in values:
                vals = stored.values(k)
                values[k] += [vals[r] for r in keep] if vals is not None else [None] * len(keep)
        entries = list(new.values())
        paths += new
        stamps += [e["st"] for e in entries]
        if stored is None:
            for k, vals in values.items():
                vals += [e.get(k) for e in entries]
            return paths, stamps, values
        # the same bytes keep what the stored columns knew about them (other keys)
        rows = [stored.index.get(p) for p in new]
        same = [r if r is not None and stored.stamp(r) == e["st"] else None
                for r, e in zip(rows, entries, strict=True)]
        for k, vals in values.items():
            old = stored.values(k)
            if old is None:
                vals += [e.get(k) for e in entries]
            else:
                vals += [e[k] if k in e else (old[r] if r is not None else None)
                         for e, r in zip(entries, same, strict=True)]
        return paths, stamps, values

    def _memo_merged(self, values: dict[str, list[object]]) -> dict[str, dict[str, object]]:
        """The content memo to save: per content key, md5 -> value, oldest first.

        Harvested from every entry that holds the md5 and the value at one stamp (stored
        ones too, including those this run replaced: the bytes a checkout took away), plus
        the memo read and the values of this run.  Kept: all md5s at a current path, and of
        the others the most recent ``max(MEMO_MIN_KEEP, number of paths)``.
        """
        stored = self._stored
        keys = {k for k in values if k in CONTENT_KEYS} | set(self._memo_new)
        if stored is not None:
            keys |= {k for k in stored.memo_names() if k in CONTENT_KEYS}
        out: dict[str, dict[str, object]] = {}
        live = {m for m in values.get("md5", ()) if m is not None}
        for key in sorted(keys):
            memo: dict[str, object] = dict(stored.memo(key)) if stored is not None else {}

            def put(md5: object, value: object, memo: dict[str, object] = memo) -> None:
                if isinstance(md5, str) and value is not None:
                    memo.pop(md5, None)
                    memo[md5] = value  # the most recent last

            if stored is not None:  # every stored row, replaced ones included
                md5s, vals = stored.values("md5"), stored.values(key)
                if md5s is not None and vals is not None:
                    for m, v in zip(md5s, vals, strict=True):
                        put(m, v)
            for m, v in (self._memo_new.get(key) or {}).items():
                put(m, v)
            if "md5" in values and key in values:
                for m, v in zip(values["md5"], values[key], strict=True):
                    put(m, v)
            orphans = [m for m in memo if m not in live]
            extra = len(orphans) - max(MEMO_MIN_KEEP, len(values.get("md5", ())))
            for m in orphans[:max(0, extra)]:
                del memo[m]
            if memo:
                out[key] = memo
        return out

    def to_bytes(self) -> bytes:
        """The cache file's content (columnar; see the module docstring)."""
        paths, stamps, values = self._merged()
        memo = self._memo_merged(values)
        cols = list(zip(*stamps, strict=True)) if stamps else [(), (), ()]
        sections = [("paths", "\0".join(paths).encode("utf-8", "surrogateescape"))]
        sections += [(name, np.asarray(col, dtype=dt).tobytes())
                     for name, col, dt in zip(("ino", "size", "mtime"), cols,
                                              ("<u8", "<i8", "<i8"), strict=True)]
        sections += [(f"key:{k}", _dump(v, plain=k == "md5" or k in CONTENT_KEYS))
                     for k, v in values.items()]
        sections += [(f"memo:{k}", _dump(v, plain=True)) for k, v in memo.items()]
        head = json.dumps({"n": len(paths), "sections": [[n, len(b)] for n, b in sections]},
                          separators=(",", ":")).encode("utf-8")
        return b"".join([MAGIC, head, b"\n", *(b for _, b in sections)])

    def save(self) -> None:
        """Write the cache back (atomically) if anything changed; failures are ignored."""
        if self.path is None or not self._dirty:
            return
        try:
            with self._lock:
                data = self.to_bytes()
            atomic_write_bytes(self.path, data)
            self._dirty = False
        except (OSError, TypeError, ValueError):
            pass  # a cache that cannot be written is only a slower next run


def _dump(value: object, *, plain: bool) -> bytes:
    """Compact JSON of a cache section.

    ``plain``: the value holds only strings, integers, lists, dicts and None (md5s, content
    values), so orjson -- a dependency of dvc-data, much faster on a large cache -- writes
    what ``json.loads`` reads back unchanged; it refuses what it cannot (an integer beyond
    64 bits, a lone surrogate), and then ``json`` writes it, as it writes every other value
    (a float could be NaN, which orjson would turn into null).
    """
    if plain:
        try:
            import orjson

            return bytes(orjson.dumps(value))
        except (ImportError, TypeError):  # orjson.JSONEncodeError is a TypeError
            pass
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def hashing_line(cache: StatCache) -> str:
    """One line saying where the md5s came from and how many bytes were read to hash."""
    st = cache.stats()
    line = (f"hashing: {st['bytes_hashed']} bytes read; md5 from DVC {st['md5_from_dvc']}, "
            f"from the stat cache {st['md5_cached']}, hashed {st['md5_hashed']}")
    if st["derived_computed"] or st["derived_from_memo"]:  # files parsed (npz frames)
        line += (f"; frames parsed {st['derived_computed']}, "
                 f"from the memo {st['derived_from_memo']}")
    return line
