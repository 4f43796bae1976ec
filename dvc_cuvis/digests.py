"""Former home of hashing, the stat cache and the DVC bridge; their names, re-exported.

The code lives in three modules, as dvc-data splits it: :mod:`dvc_cuvis.hashing` (md5 of a
file, DVC's folder hash, the file listing), :mod:`dvc_cuvis.stat_cache` (the store, its
file format and the content memo) and :mod:`dvc_cuvis.dvc_hashes` (the md5s DVC's state
already holds).  This module defines nothing; it keeps ``from dvc_cuvis.digests import ...``
working for the modules still written against it.  New code imports from the three homes.
"""

from __future__ import annotations

from dvc_cuvis.dvc_hashes import DvcKnownHashes, dvc_hashes_enabled
from dvc_cuvis.hashing import (
    Stamp,
    content_fingerprint,
    dir_hash,
    dir_md5,
    file_md5,
    list_tree,
    read_md5,
    stamp_of,
)
from dvc_cuvis.stat_cache import (
    CacheMiss,
    StatCache,
    content_key,
    default_cache_path,
    hashing_line,
    open_stat_cache,
)

__all__ = [
    "CacheMiss",
    "DvcKnownHashes",
    "Stamp",
    "StatCache",
    "content_fingerprint",
    "content_key",
    "default_cache_path",
    "dir_hash",
    "dir_md5",
    "dvc_hashes_enabled",
    "file_md5",
    "hashing_line",
    "list_tree",
    "open_stat_cache",
    "read_md5",
    "stamp_of",
]
