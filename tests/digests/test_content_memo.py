"""No frame parsed twice for the same bytes: the content memo of the stat cache (values keyed
by md5 as well as by stamp), on real git + DVC repositories (``dvc checkout`` back and forth,
moved files, an edited frame) and on the cache file itself (versions, bounds, damage)."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import dvc_cuvis.sources.npz as npz_source
from dvc_cuvis.digests import stat_cache
from dvc_cuvis.digests.dvc_hashes import DvcKnownHashes
from dvc_cuvis.digests.stat_cache import StatCache, _read, content_key
from tests.helpers.memo import enumerate_text as run
from tests.helpers.memo import plain
from tests.helpers.repos import fresh_clone
from tests.helpers.shell import sh

pytestmark = [pytest.mark.usefixtures("_site_cache"),
              pytest.mark.slow]  # a repository pushed to a remote, then clones: ~6 s in all


def checkout(clone: Path, env: dict[str, str], rev: str) -> None:
    sh("git", "checkout", "-q", rev, cwd=clone, env=env)
    sh("dvc", "checkout", "-q", cwd=clone, env=env)


def test_checkout_back_to_a_revision_seen_before_reads_no_frame(
    origin: Path, tmp_path: Path, env: dict[str, str], reads: list[str]
) -> None:
    clone = fresh_clone(origin, tmp_path, env)
    sh("dvc", "fetch", "-q", "-T", cwd=clone, env=env)
    cache_file = tmp_path / "sc.bin"
    first = StatCache(cache_file, dvc=DvcKnownHashes())
    run(clone, first)  # v2: every frame read once (a fresh clone has no values of ours)
    n2 = first.stats()["derived_computed"]
    assert n2 == len(reads) > 0
    first.save()
    checkout(clone, env, "v1")  # every frame's bytes differ in v1: all read once
    reads.clear()
    c1 = StatCache(cache_file, dvc=DvcKnownHashes())
    out1 = run(clone, c1)
    c1.save()
    assert c1.stats()["derived_computed"] == len(reads) > 0
    for rev in ("v2", "v1", "v2"):  # both revisions' bytes are in the memo now
        checkout(clone, env, rev)
        reads.clear()
        cache = StatCache(cache_file, dvc=DvcKnownHashes())
        out = run(clone, cache)
        cache.save()
        s = cache.stats()
        assert reads == [], rev  # not one frame opened
        assert s["derived_computed"] == 0 and s["bytes_hashed"] == 0, (rev, s)
        assert s["derived_from_memo"] == s["md5_from_dvc"] > 0, (rev, s)  # new stamps
        assert out == plain(clone), rev  # universe.csv and metrics, byte for byte
    checkout(clone, env, "v1")
    assert run(clone, StatCache(cache_file, dvc=DvcKnownHashes())) == out1


def test_moved_frames_are_hashed_but_not_parsed_again(
    origin: Path, tmp_path: Path, env: dict[str, str], reads: list[str]
) -> None:
    clone = fresh_clone(origin, tmp_path, env)
    cache_file = tmp_path / "sc.bin"
    cache = StatCache(cache_file, dvc=DvcKnownHashes())
    run(clone, cache)
    cache.save()
    # a copy DVC knows nothing of (outside the repository): md5s are read, frames are not
    shutil.copytree(clone / "data" / "npz", tmp_path / "moved" / "npz")
    reads.clear()
    cache = StatCache(cache_file, dvc=DvcKnownHashes())
    out = run(tmp_path / "moved", cache, "npz")
    s = cache.stats()
    assert reads == []
    assert s["md5_hashed"] == s["derived_from_memo"] == len(out[0].splitlines()) - 1
    assert out == plain(tmp_path / "moved", "npz")


def frame(source: str, ids: list[int]) -> bytes:
    buf = io.BytesIO()
    mask = np.zeros((8, 8), np.uint8)
    for i, c in enumerate(ids):
        mask[i, i] = c
    np.savez(buf, cube=np.ones((8, 8, 4), np.float32), wavelengths=np.arange(4, dtype=np.int32),
             class_mask=mask, source=np.array(source))
    return buf.getvalue()


def test_an_edited_frame_is_read_and_a_tampered_universe_csv_in_git_is_not_trusted(
    origin: Path, tmp_path: Path, env: dict[str, str], reads: list[str]
) -> None:
    clone = fresh_clone(origin, tmp_path, env)
    cache_file = tmp_path / "sc.bin"
    cache = StatCache(cache_file, dvc=DvcKnownHashes())
    text, _ = run(clone, cache)
    cache.save()
    # the universe.csv committed at HEAD, one row tampered: other category ids, same md5
    lines = text.splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    cats, tags = header.index("category_ids"), header.index("tags")
    row = lines[1].rstrip("\n").split(",")
    row[cats], row[tags] = "7", "anomalous"
    lines[1] = ",".join(row) + "\n"
    (clone / "universe.csv").write_text("".join(lines), encoding="utf-8")
    sh("git", "add", "universe.csv", cwd=clone, env=env)
    sh("git", "commit", "-qm", "tampered universe", cwd=clone, env=env)
    # one frame edited after the pull: new bytes (new md5), so it alone is read
    victim = sorted((clone / "data" / "npz").rglob("*.npz"))[2]
    victim.chmod(0o644)
    victim.write_bytes(frame("npz/edited", [3, 5]))
    reads.clear()
    fresh = StatCache(None, dvc=DvcKnownHashes())  # no values of ours: all parsed
    assert run(clone, fresh) == plain(clone)
    reads.clear()
    cache = StatCache(cache_file, dvc=DvcKnownHashes())
    out = run(clone, cache)
    assert len(reads) == 1 and reads[0].endswith(victim.relative_to(clone).as_posix())
    # its md5 was hashed once, by the run above, which handed it to DVC's state (same
    # stamp): now DVC's state answers for it; its values are parsed from the one read
    st = cache.stats()
    assert st["derived_computed"] == 1 and st["md5_hashed"] == 0 and st["bytes_hashed"] == 0
    assert st["md5_from_dvc"] >= 1
    assert out == plain(clone)
    assert ",npz/edited," in out[0] and "3;5" in out[0]
    assert out[0] != "".join(lines)


def test_a_changed_parser_version_never_reuses_old_values(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "d"
    data.mkdir()
    for i in range(3):
        (data / f"f{i}.npz").write_bytes(frame(f"rec{i}", [i + 1]))
    cache = StatCache(tmp_path / "sc.bin")
    run(tmp_path, cache, "d")
    cache.save()
    moved = tmp_path / "m" / "d"
    shutil.copytree(data, moved)
    reads.clear()
    cache = StatCache(tmp_path / "sc.bin")
    run(tmp_path / "m", cache, "d")
    assert reads == [] and cache.stats()["derived_from_memo"] == 3
    # the same bytes under the next version of frame_info: parsed again, at every path
    monkeypatch.setattr(npz_source, "FRAME_INFO", content_key("npz-frame", 999))
    cache = StatCache(tmp_path / "sc.bin")
    run(tmp_path / "m", cache, "d")
    assert len(reads) == 3 and cache.stats()["derived_from_memo"] == 0


def test_memo_survives_replacement_is_bounded_and_a_damaged_section_is_a_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = content_key("test-kind", 1)
    f = tmp_path / "f"
    path = tmp_path / "sc.bin"
    monkeypatch.setattr(stat_cache, "MEMO_MIN_KEEP", 3)
    md5s = []
    for i in range(6):  # six contents, one after the other, at the same path
        f.write_bytes(b"content %d" % i)
        os.utime(f, ns=(0, 10**9 * (i + 1)))
        cache = StatCache(path)
        md5s.append(cache.md5(f))
        assert cache.get(f, key, lambda p: p.read_bytes().decode()) == f"content {i}"
        cache.save()
    stored = _read(path)
    assert stored is not None
    memo = stored.memo(key)
    # the current bytes, and the three most recent others (the oldest two dropped)
    assert list(memo) == md5s[2:]
    assert memo[md5s[5]] == "content 5"
    # an earlier content back at the path (new stamp): from the memo, not computed
    f.write_bytes(b"content 3")
    cache = StatCache(path)
    assert cache.md5(f) == md5s[3]
    assert cache.get(f, key, lambda p: pytest.fail("recomputed")) == "content 3"
    assert cache.stats()["derived_from_memo"] == 1
    # a damaged memo section is a miss, never a wrong value
    data = path.read_bytes()
    assert data.count(b'"content 2"') == 1
    path.write_bytes(data.replace(b'"content 2"', b'"content 2\x00'))  # same length, bad JSON
    f.write_bytes(b"content 2")
    cache = StatCache(path)
    cache.md5(f)
    assert cache.get(f, key, lambda p: "computed") == "computed"
    # a key not registered as content is never taken from another file's entry
    other = tmp_path / "g"
    other.write_bytes(b"content 2")
    cache.md5(other)
    assert cache.get(other, "plain-key", lambda p: "plain") == "plain"
