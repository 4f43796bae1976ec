"""The stat cache's file format and the memoized DVC folder hash, on real files."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dvc_cuvis.digests.hashing import dir_hash, dir_md5, file_md5, list_tree
from dvc_cuvis.digests.stat_cache import MAGIC, StatCache
from dvc_cuvis.model.selectors import norm_source, norm_sources


def _bump(path: Path, data: bytes) -> None:
    before = path.stat().st_mtime_ns
    path.write_bytes(data)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_cache_round_trips_values_and_keeps_other_keys(tmp_path: Path) -> None:
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"alpha")
    b.write_bytes(b"beta")
    cache = StatCache(tmp_path / "c.bin")
    assert cache.md5(a) == hashlib.md5(b"alpha").hexdigest()
    cache.get(a, "npz", lambda p: {"ids": [1, 2], "source": "x"})
    cache.get(b, "npz", lambda p: {"ids": [], "source": "y"})
    cache.save()
    assert (tmp_path / "c.bin").read_bytes().startswith(MAGIC)

    again = StatCache(tmp_path / "c.bin")
    assert again.count() == 2
    boom = lambda p: (_ for _ in ()).throw(AssertionError("recomputed"))  # noqa: E731
    assert again.get(a, "npz", boom) == {"ids": [1, 2], "source": "x"}
    assert again.md5(a, cached_only=True) == hashlib.md5(b"alpha").hexdigest()
    assert again.hits == 2 and again.misses == 0
    # a new key for a file keeps what was known about the same bytes
    assert again.md5(b) == hashlib.md5(b"beta").hexdigest()
    again.save()
    third = StatCache(tmp_path / "c.bin")
    assert third.get(b, "npz", boom) == {"ids": [], "source": "y"}
    assert third.md5(b, cached_only=True) == hashlib.md5(b"beta").hexdigest()
    # a changed file is recomputed and its old values are dropped
    _bump(a, b"ALPHA")
    assert third.md5(a) == hashlib.md5(b"ALPHA").hexdigest() and third.misses == 1
    third.save()
    assert StatCache(tmp_path / "c.bin").get(a, "npz", lambda p: "fresh") == "fresh"


def test_unreadable_or_foreign_cache_files_are_only_a_slower_run(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x")
    for i, content in enumerate([b"", b"{\"version\": 1, \"entries\": {}}", MAGIC + b"{oops\n",
                                 MAGIC + b'{"n":2,"sections":[["paths",3]]}\nab',
                                 b"\x00\xff" * 50]):
        path = tmp_path / f"bad{i}.bin"
        path.write_bytes(content)
        cache = StatCache(path)
        assert cache.count() == 0
        assert cache.md5(f) == file_md5(f)
        cache.save()
        assert StatCache(path).md5(f, cached_only=True) == file_md5(f)


def test_the_old_json_cache_in_the_default_place_is_removed(tmp_path: Path) -> None:
    from dvc_cuvis.digests.stat_cache import open_stat_cache

    (tmp_path / ".dvc").mkdir()
    old = tmp_path / ".dvc/tmp/dvc-cuvis/stat-cache.json"
    old.parent.mkdir(parents=True)
    old.write_text('{"version": 1, "entries": {}}')
    cache = open_stat_cache("auto", near=tmp_path / "universe.csv")
    assert cache.path == old.with_name("stat-cache.bin") and not old.exists()
    keep = tmp_path / "mine" / "stat-cache.json"  # a file the user named is theirs
    keep.parent.mkdir()
    keep.write_text("{}")
    open_stat_cache(keep)
    assert keep.exists()


def test_odd_file_names_survive_the_format(tmp_path: Path) -> None:
    names = ["plain.npz", "with space.npz", "ünïcödé.npz", "line\nbreak.npz", "tab\t.npz"]
    raw = os.fsencode(tmp_path) + b"/undecodable-\xff.npz"
    paths = [tmp_path / n for n in names] + [Path(os.fsdecode(raw))]
    cache = StatCache(tmp_path / "c.bin")
    for i, p in enumerate(paths):
        p.write_bytes(bytes([i]) * (i + 1))
        cache.md5(p)
    cache.save()
    again = StatCache(tmp_path / "c.bin")
    for i, p in enumerate(paths):
        assert again.md5(p, cached_only=True) == hashlib.md5(bytes([i]) * (i + 1)).hexdigest()


def _dvc_dir_md5(root: Path) -> str:
    """DVC's folder hash, straight from its definition (no cache, os.walk)."""
    entries = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            full = Path(dirpath) / name
            entries.append({"md5": file_md5(full), "relpath": full.relative_to(root).as_posix()})
    entries.sort(key=lambda e: e["relpath"])
    return hashlib.md5(json.dumps(entries, sort_keys=True).encode()).hexdigest() + ".dir"


def test_folder_hash_memo_follows_every_kind_of_change(tmp_path: Path) -> None:
    root = tmp_path / "data"
    for rel in ("a/1.npz", "a/2.npz", "a.txt", "b/c/3.npz", "a-b/4.npz"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(rel.encode())
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/x.npz").write_bytes(b"x")
    os.symlink(tmp_path / "outside", root / "linked")  # a symlinked folder: not descended
    cache_path = tmp_path / "c.bin"

    def current() -> str:
        cache = StatCache(cache_path)
        value = dir_md5(root, cache)
        cache.save()
        return value

    def expected() -> str:
        os.unlink(root / "linked")
        try:
            return _dvc_dir_md5(root)
        finally:
            os.symlink(tmp_path / "outside", root / "linked")

    assert current() == expected()
    cache = StatCache(cache_path)
    value, files = dir_hash(root, cache)
    assert value == expected() and cache.misses == 0  # memo hit: no file re-read
    assert files == sorted(files) and "linked/x.npz" not in files and "a.txt" in files
    _bump(root / "a/1.npz", b"changed in place")
    assert current() == expected()
    (root / "b/c/5.npz").write_bytes(b"new")
    assert current() == expected()
    os.rename(root / "a/2.npz", root / "a/2b.npz")
    assert current() == expected()
    (root / "b/c/3.npz").unlink()
    assert current() == expected()
    assert [rel for rel, *_ in list_tree(str(root))] == sorted(
        ["a-b/4.npz", "a.txt", "a/1.npz", "a/2b.npz", "b/c/5.npz"])
    empty = tmp_path / "empty"
    empty.mkdir()
    assert dir_md5(empty, StatCache(None)) == _dvc_dir_md5(empty)


_segment = st.text(alphabet=st.sampled_from("ab./\\:C_ -"), min_size=0, max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(_segment, max_size=8))
def test_bulk_normalization_equals_one_by_one(paths: list[str]) -> None:
    assert norm_sources(paths) == [norm_source(p) for p in paths]


def test_a_damaged_value_list_is_a_miss_not_a_crash(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"payload")
    cache = StatCache(tmp_path / "c.bin")
    cache.md5(f)
    cache.save()
    data = (tmp_path / "c.bin").read_bytes()
    i = data.rindex(b'["')  # the md5 list: same length, no longer JSON
    (tmp_path / "c.bin").write_bytes(data[:i] + b"{" + data[i + 1:])
    damaged = StatCache(tmp_path / "c.bin")
    assert damaged.count() == 1
    assert damaged.md5(f) == file_md5(f) and damaged.misses == 1


def test_a_file_that_changes_while_hashed_is_not_cached(tmp_path: Path, monkeypatch) -> None:
    import dvc_cuvis.digests.hashing as hashing

    f = tmp_path / "f"
    f.write_bytes(b"one")
    real = hashing.hash_file

    def racing(path):
        value, _, n = real(path)
        return value, None, n  # what hash_file reports when the stamps before/after differ

    monkeypatch.setattr(hashing, "hash_file", racing)
    cache = StatCache(tmp_path / "c.bin")
    cache.md5(f)
    monkeypatch.setattr(hashing, "hash_file", real)
    assert cache.lookup(str(f), "md5", hashing.stamp_of(f.stat())) == (False, None)


@pytest.mark.parametrize("value", [
    {"source": "plain", "ids": [1, 2]},
    {"source": "Ünïcode ✓ 帧", "ids": None},
    {"source": "lone \udcff surrogate", "ids": []},  # orjson refuses: json writes it
    {"source": "huge", "ids": [2**70]},  # beyond 64 bits: orjson refuses, json writes it
    {"source": 'quote " and \\ backslash\n', "ids": [0]},
], ids=["plain", "unicode", "surrogate", "bigint", "escapes"])
def test_content_values_round_trip_through_the_cache_file(tmp_path: Path, value: dict) -> None:
    """Content values and their memo are written with orjson where it can (fast), else with
    json; either way the next run reads back exactly the value that was stored."""
    from dvc_cuvis.digests.stat_cache import content_key

    key = content_key("test-roundtrip", 1)
    f = tmp_path / "f.bin"
    f.write_bytes(b"frame")
    cache = StatCache(tmp_path / "c.bin")
    cache.md5(f)
    assert cache.get(f, key, lambda p: value) == value
    cache.save()
    again = StatCache(tmp_path / "c.bin")
    boom = lambda p: (_ for _ in ()).throw(AssertionError("recomputed"))  # noqa: E731
    assert again.get(f, key, boom) == value
    copy = tmp_path / "copy.bin"  # other bytes' stamp, same md5: served from the memo
    copy.write_bytes(b"frame")
    again.dvc = None
    assert again.md5(copy) == file_md5(f)
    assert again.get(copy, key, boom) == value


def test_stamp_keys_and_content_keys_never_share_a_name(tmp_path: Path) -> None:
    """The verdict memo has a key of its own (a stamp key): it never enters the content memo,
    which shares values between files with the same md5; a content value does."""
    from dvc_cuvis.check.verdicts import VerdictMemo
    from dvc_cuvis.digests import stat_cache
    from dvc_cuvis.digests.hashing import stamp_of
    from dvc_cuvis.sources.npz import FRAME_INFO

    verdict = VerdictMemo.KEY
    assert verdict in stat_cache.STAMP_KEYS and verdict not in stat_cache.CONTENT_KEYS
    for bad in (lambda: stat_cache.content_key(verdict, 1),
                lambda: stat_cache.content_key("md5", 1),
                lambda: stat_cache.stamp_key(FRAME_INFO.rpartition("/v")[0]),
                lambda: stat_cache.stamp_key("other/v1")):
        with pytest.raises(ValueError):
            bad()
    key = stat_cache.content_key("test-kinds", 1)
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"same bytes")
    b.write_bytes(b"same bytes")
    path = tmp_path / "c.bin"
    cache = StatCache(path)
    cache.md5(a)
    cache.md5(b)
    assert cache.get(a, key, lambda p: [1, 2]) == [1, 2]
    cache.record(str(a), verdict, stamp_of(a.stat()), {"slots": []})
    cache.save()
    data = path.read_bytes()
    assert f"memo:{key}".encode() in data and f"memo:{verdict}".encode() not in data
    again = StatCache(path)
    boom = lambda p: (_ for _ in ()).throw(AssertionError("recomputed"))  # noqa: E731
    assert again.get(b, key, boom) == [1, 2]  # same md5 elsewhere: taken from the memo
    assert again.lookup(str(a), verdict, stamp_of(a.stat()))[0]
    assert again.lookup(str(b), verdict, stamp_of(b.stat())) == (False, None)
