"""DVC's folder hash and a file's md5 told apart in one place."""

from __future__ import annotations

import hashlib

from dvc_cuvis.digests.hashing import dir_hash, folder_hash, is_folder_hash
from dvc_cuvis.digests.stat_cache import StatCache


def test_a_folder_hash_is_the_listing_md5_marked_dir(tmp_path) -> None:
    empty = hashlib.md5(b"[]").hexdigest()
    assert folder_hash(empty) == empty + ".dir"
    assert dir_hash(tmp_path, StatCache(None)) == (empty + ".dir", [])
    assert is_folder_hash(folder_hash(empty)) and is_folder_hash(empty + ".dir")
    assert not is_folder_hash(empty) and not is_folder_hash("") and not is_folder_hash(None)
