"""Content digests of physical files, with a stat cache so unchanged files are never re-read.

The digest is DVC's: the plain md5 of the file's bytes (DVC 3 ``md5`` hash), so a value in
universe.csv's ``md5`` column can be compared with what ``dvc.lock`` / ``.dir`` listings hold.

The cache maps an absolute path to ``(inode, size, mtime_ns)`` plus whatever was derived
from the file's bytes (its md5, the category ids in a label map, a measurement count).
A file whose stat triple is unchanged is trusted; anything else is recomputed.  The cache
is a local convenience, never an output: it lives in ``.dvc/tmp/dvc-cuvis/`` of the
enclosing DVC repository (git-ignored by DVC) or in the user's cache directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dvc_cuvis._io import atomic_write_text

_BLOCK = 1 << 20
_VERSION = 1


def file_md5(path: Path | str) -> str:
    """DVC-compatible md5 (plain md5 of the bytes) of one file."""
    h = hashlib.md5()
    with open(path, "rb") as fh:
        while block := fh.read(_BLOCK):
            h.update(block)
    return h.hexdigest()


def default_cache_path(start: Path | None = None) -> Path:
    """``<dvc repo>/.dvc/tmp/dvc-cuvis/stat-cache.json``, else ``~/.cache/dvc-cuvis/...``."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / ".dvc").is_dir():
            return d / ".dvc" / "tmp" / "dvc-cuvis" / "stat-cache.json"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "dvc-cuvis" / "stat-cache.json"


class CacheMiss(Exception):
    """Raised by a ``cached_only`` lookup that would have to read the file."""


class StatCache:
    """Values derived from file contents, valid while the file's stat triple is unchanged."""

    def __init__(self, path: Path | None) -> None:
        """Load the cache at ``path`` (None: an in-memory cache that is never saved)."""
        self.path = path
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, Any]] = {}
        self._dirty = False
        self.hits = 0
        self.misses = 0
        if path is not None and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if data.get("version") == _VERSION and isinstance(data.get("entries"), dict):
                    self._entries = data["entries"]
            except (OSError, ValueError, AttributeError):
                self._entries = {}  # a corrupt cache is only a slower run

    @staticmethod
    def _stamp(st: os.stat_result) -> list[int]:
        return [st.st_ino, st.st_size, st.st_mtime_ns]

    def get(
        self,
        path: Path | str,
        key: str,
        compute: Callable[[Path], Any],
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
        stamp = self._stamp(st or os.stat(abs_path))
        entry = self._entries.get(abs_path)
        if entry is not None and entry.get("st") == stamp and key in entry:
            self.hits += 1
            return entry[key]
        if cached_only:
            raise CacheMiss(abs_path)
        value = compute(Path(abs_path))
        with self._lock:
            self.misses += 1
            entry = self._entries.get(abs_path)
            if entry is None or entry.get("st") != stamp:
                entry = {"st": stamp}
                self._entries[abs_path] = entry
            entry[key] = value
            self._dirty = True
        return value

    def put(self, path: Path | str, key: str, value: Any) -> None:
        """Record ``value`` for a file this process just wrote (so it is never re-read)."""
        abs_path = os.path.abspath(path)
        stamp = self._stamp(os.stat(abs_path))
        with self._lock:
            entry = self._entries.get(abs_path)
            if entry is None or entry.get("st") != stamp:
                entry = self._entries[abs_path] = {"st": stamp}
            entry[key] = value
            self._dirty = True

    def md5(
        self, path: Path | str, st: os.stat_result | None = None, *, cached_only: bool = False
    ) -> str:
        """md5 of ``path``, from the cache when the file is unchanged."""
        value: str = self.get(path, "md5", file_md5, st, cached_only=cached_only)
        return value

    def save(self) -> None:
        """Write the cache back (atomically) if anything changed; failures are ignored."""
        if self.path is None or not self._dirty:
            return
        try:
            text = json.dumps({"version": _VERSION, "entries": self._entries},
                              separators=(",", ":"), sort_keys=True)
            atomic_write_text(self.path, text)
            self._dirty = False
        except OSError:
            pass


def content_fingerprint(uids: list[str], md5s: list[str]) -> str:
    """sha256 over ``uid\\tmd5\\n`` lines in canonical order: one value for all content."""
    h = hashlib.sha256()
    for u, m in zip(uids, md5s, strict=True):
        h.update(f"{u}\t{m}\n".encode())
    return h.hexdigest()
