"""Caches we wrote ourselves (the stat cache) and DVC's state entries, damaged or nested
beyond the ceiling: read as a miss, silently, and rebuilt; never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dvc_cuvis.digests.dvc_state import _parse
from dvc_cuvis.digests.hashing import file_md5
from dvc_cuvis.digests.stat_cache import MAGIC, StatCache

DEEP = b"[" * 100_000


def _cache_file(path: Path, sections: list[tuple[str, bytes]], n: int) -> None:
    head = json.dumps({"n": n, "sections": [[k, len(b)] for k, b in sections]}).encode()
    path.write_bytes(b"".join([MAGIC, head, b"\n", *(b for _, b in sections)]))


def test_a_nested_stat_cache_is_rebuilt_silently(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x")
    st = f.stat()
    stamp = [np.array([v], dtype=d).tobytes()
             for v, d in ((st.st_ino, "<u8"), (st.st_size, "<i8"), (st.st_mtime_ns, "<i8"))]
    whole = [("paths", str(f).encode()), *zip(("ino", "size", "mtime"), stamp, strict=True)]
    nested_head = tmp_path / "head.bin"
    nested_head.write_bytes(MAGIC + DEEP + b"\n")
    nested_values = tmp_path / "values.bin"
    _cache_file(nested_values, [*whole, ("key:md5", b"[" + DEEP)], 1)
    for path in (nested_head, nested_values):
        cache = StatCache(path)
        assert cache.md5(f) == file_md5(f) and cache.md5_hashed == 1  # a miss, read again
        cache.save()
        again = StatCache(path)
        assert again.md5(f, cached_only=True) == file_md5(f)


def test_a_nested_dvc_state_entry_is_not_an_answer() -> None:
    assert _parse('{"version": 1, "checksum": ' + "[" * 100_000) is None
