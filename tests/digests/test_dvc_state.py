"""DVC's state database read directly (:mod:`dvc_cuvis.digests.dvc_state`) agrees with DVC's
own API:
the database ``Repo.site_cache_dir`` names, and every answer ``State.get_many`` gives, on
real repositories after ``dvc pull``, in-place edits, touches and replaced files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dvc_cuvis.digests import dvc_state
from dvc_cuvis.digests.dvc_hashes import DvcKnownHashes
from dvc_cuvis.digests.hashing import stamp_of
from tests.helpers.repos import fresh_clone
from tests.helpers.shell import sh

pytestmark = [pytest.mark.lowest_dvc,  # DVC's state database, read and written
              pytest.mark.slow]  # a repository pushed to a remote, then clones: ~5 s


@pytest.fixture(autouse=True)
def _site_cache(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process reads must see the state the ``dvc`` commands wrote."""
    monkeypatch.setenv("DVC_SITE_CACHE_DIR", env["DVC_SITE_CACHE_DIR"])


def dvc_answers(root: Path, items: list[tuple[str, tuple[int, int, int]]]) -> dict[str, str]:
    """What DVC's own ``State.get_many`` vouches for: path -> plain md5."""
    from dvc.repo import Repo

    repo = Repo(str(root))
    try:
        out = {}
        infos = {p: dvc_state.info(s) for p, s in items}
        for path, _, hash_info in repo.state.get_many([p for p, _ in items], repo.fs, infos):
            if hash_info is not None and hash_info.name == "md5":
                out[path] = str(hash_info.value)
        return out
    finally:
        repo.close()


def site_db(root: Path) -> str:
    from dvc.repo import Repo

    repo = Repo(str(root))
    try:
        return os.path.join(repo.site_cache_dir, "hashes", "local", "cache.db")
    finally:
        repo.close()


def stamped(root: Path) -> list[tuple[str, tuple[int, int, int]]]:
    files = sorted(p for p in (root / "data").rglob("*") if p.is_file())
    return [(str(p), stamp_of(os.stat(p))) for p in files]


def test_names_the_database_dvc_uses(origin: Path, tmp_path: Path,
                                     env: dict[str, str]) -> None:
    clone = fresh_clone(origin, tmp_path, env)
    root = os.path.realpath(clone)
    assert dvc_state.state_db(root) == site_db(clone)
    os.remove(os.path.join(root, ".dvc", "tmp", "btime"))  # DVC never opened it: no answer
    assert dvc_state.state_db(root) is None


def test_site_cache_dir_from_the_repository_config(
    tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DVC_SITE_CACHE_DIR")
    plain = {k: v for k, v in env.items() if k != "DVC_SITE_CACHE_DIR"}
    repo = tmp_path / "repo"
    repo.mkdir()
    sh("git", "init", "-q", cwd=repo, env=plain)
    sh("dvc", "init", "-q", cwd=repo, env=plain)
    site = tmp_path / "site cache"
    sh("dvc", "config", "--local", "core.site_cache_dir", str(site), cwd=repo, env=plain)
    (repo / "data").mkdir()
    (repo / "data" / "a.bin").write_bytes(b"abc")
    sh("dvc", "add", "-q", "data", cwd=repo, env=plain)
    db = dvc_state.state_db(os.path.realpath(repo))
    assert db is not None and db.startswith(str(site))
    assert db == site_db(repo)
    items = stamped(repo)
    assert dvc_state.StateDb(db).md5s(items) == dvc_answers(repo, items) != {}


def test_every_answer_equals_dvc_state_get_many(origin: Path, tmp_path: Path,
                                               env: dict[str, str]) -> None:
    clone = fresh_clone(origin, tmp_path, env)
    files = sorted((clone / "data").rglob("*.npz"))
    db = dvc_state.StateDb(str(dvc_state.state_db(os.path.realpath(clone))))
    items = stamped(clone)
    pulled = db.md5s(items)
    assert pulled == dvc_answers(clone, items)
    assert len(pulled) == len(items)  # a fresh pull: DVC vouches for every file
    edited, touched, replaced, copied = files[:4]
    data = bytearray(edited.read_bytes())
    data[-1] ^= 0xFF
    edited.write_bytes(bytes(data))  # same size, other bytes
    st0 = touched.stat()
    os.utime(touched, ns=(st0.st_atime_ns, st0.st_mtime_ns + 1_000_000_000))
    st1 = replaced.stat()
    tmp = replaced.with_suffix(".tmp")
    shutil.copyfile(replaced, tmp)
    os.replace(tmp, replaced)  # same bytes, new inode
    os.utime(replaced, ns=(st1.st_atime_ns, st1.st_mtime_ns))
    shutil.copyfile(copied, clone / "data" / "new.npz")  # a file DVC never saw
    items = stamped(clone)
    now = db.md5s(items)
    assert now == dvc_answers(clone, items)
    for f in (edited, touched, replaced, clone / "data" / "new.npz"):
        assert str(f) not in now
    assert len(now) == len(items) - 4


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 2**64 - 1), st.integers(0, 2**40),
       st.integers(0, 2**62) | st.sampled_from([1_700_000_000_123_456_789, 999_999_999, 0]))
def test_checksum_is_dvcs_token(ino: int, size: int, mtime_ns: int) -> None:
    from dvc_data.hashfile.state import _checksum

    stamp = (ino, size, mtime_ns)
    assert dvc_state.checksum(stamp) == _checksum(dvc_state.info(stamp))


@pytest.mark.parametrize("entry, expect", [
    ({"version": 1, "checksum": "12", "size": 3, "hash_info": {"md5": "a" * 32}},
     ("12", 3, "a" * 32)),
    ({"checksum": "12", "size": 3, "hash_info": {"md5": "a" * 32}}, None),  # DVC 2: dos2unix
    ({"version": 2, "checksum": "12", "size": 3, "hash_info": {"md5": "a" * 32}}, None),
    ({"version": 1, "checksum": "12", "size": 3, "hash_info": {"md5": "a" * 32 + ".dir"}},
     None),
    ({"version": 1, "checksum": "12", "size": 3, "hash_info": {"md5-dos2unix": "a" * 32}},
     None),
    ({"version": 1, "checksum": "x", "size": 3, "hash_info": {"md5": "a" * 32}}, None),
])
def test_parse_takes_only_plain_md5_entries(entry: dict, expect: tuple | None) -> None:
    assert dvc_state._parse(json.dumps(entry, separators=(",", ":"))) == expect
    assert dvc_state._parse(json.dumps(entry, indent=1)) == expect  # other spacing


def test_falls_back_to_dvcs_api_when_the_database_cannot_be_read(
    origin: Path, tmp_path: Path, env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clone = fresh_clone(origin, tmp_path, env)
    items = stamped(clone)
    expect = dvc_answers(clone, items)
    monkeypatch.setattr(dvc_state, "state_db", lambda root: None)
    assert DvcKnownHashes().md5_many(items) == expect
    bad = tmp_path / "not-a-db"
    bad.write_bytes(b"garbage" * 100)
    monkeypatch.setattr(dvc_state, "state_db", lambda root: str(bad))
    known = DvcKnownHashes()
    assert known.md5_many(items) == expect
    assert known.md5(*items[0]) == expect[items[0][0]]


def test_a_token_dvc_would_not_equal_is_refused(tmp_path: Path) -> None:
    """DVC compares the token as text: leading zeros or other digits are not the token."""
    f = tmp_path / "a.bin"
    f.write_bytes(b"abc")
    stamp = stamp_of(os.stat(f))
    token = dvc_state.checksum(stamp)
    db = tmp_path / "cache.db"
    import sqlite3

    con = sqlite3.connect(db)
    con.execute("CREATE TABLE Cache (key TEXT, raw INTEGER, value)")
    for i, t in enumerate((token, "0" + token, "".join(chr(0x660 + int(c)) for c in token))):
        entry = {"version": 1, "checksum": t, "size": 3, "hash_info": {"md5": f"{i:032x}"}}
        con.execute("INSERT INTO Cache VALUES (?, 1, ?)",
                    (f"{f}{i}", json.dumps(entry, separators=(",", ":"))))
    con.commit()
    con.close()
    state = dvc_state.StateDb(str(db))
    got = state.md5s([(f"{f}{i}", stamp) for i in range(3)])
    assert got == {f"{f}0": f"{0:032x}"}


def test_the_direct_read_is_used_and_follows_a_linked_root(
    origin: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    clone = fresh_clone(origin, tmp_path, env)
    items = stamped(clone)
    expect = dvc_answers(clone, items)
    known = DvcKnownHashes()
    assert known.md5_many(items) == expect
    assert known._repos == {} and list(known._dbs.values()) != [None]  # Repo never opened
    link = tmp_path / "linked"
    link.symlink_to(clone, target_is_directory=True)
    via_link = [(str(link) + p[len(str(clone)):], s) for p, s in items]
    known = DvcKnownHashes()
    got = known.md5_many(via_link)
    assert got == {str(link) + p[len(str(clone)):]: m for p, m in expect.items()}
    assert known.md5(*via_link[0]) == expect[items[0][0]]
    assert known._repos == {}
