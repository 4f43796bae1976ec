"""Digests: md5 of physical files, DVC's folder hash, the stat cache, what DVC already knows
(its state database), and the ignore rules a folder hash honours.
"""

from __future__ import annotations

from dvc_cuvis.digests.dvc_hashes import (
    DvcKnownHashes,
    dvc_hashes_enabled,
)
from dvc_cuvis.digests.dvc_state import (
    StateDb,
    hand_over,
    hand_over_enabled,
)
from dvc_cuvis.digests.dvcignore import (
    DvcIgnore,
    for_folder,
)
from dvc_cuvis.digests.hashing import (
    content_fingerprint,
    dir_hash,
    file_md5,
    hash_file,
    stamp_of,
)
from dvc_cuvis.digests.stat_cache import (
    CacheMiss,
    StatCache,
    default_cache_path,
    open_stat_cache,
)

__all__ = [
    "CacheMiss",
    "DvcIgnore",
    "DvcKnownHashes",
    "StatCache",
    "StateDb",
    "content_fingerprint",
    "default_cache_path",
    "dir_hash",
    "dvc_hashes_enabled",
    "file_md5",
    "for_folder",
    "hand_over",
    "hand_over_enabled",
    "hash_file",
    "open_stat_cache",
    "stamp_of",
]
