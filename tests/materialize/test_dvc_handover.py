"""The md5s we compute are handed to DVC's state: DVC's commit of our outputs reads none of
their bytes, and the state reader falls back to DVC's ``Repo`` on a schema it does not know."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dvc_cuvis.digests import dvc_state
from dvc_cuvis.digests.dvc_hashes import DvcKnownHashes
from dvc_cuvis.digests.hashing import dir_md5, list_tree
from dvc_cuvis.digests.stat_cache import StatCache
from tests.helpers.shell import ENV, sh

pytestmark = [pytest.mark.slow, pytest.mark.lowest_dvc]  # dvc repro in each test, ~14 s

#: runs DVC's CLI in-process, counting the files DVC's tree builder reads to hash
COUNTING = """
import sys
import dvc_data.hashfile.build as b
seen = []
orig = b.hash_file
def counting(path, *a, **k):
    seen.append(path)
    return orig(path, *a, **k)
b.hash_file = counting
from dvc.cli import main
rc = main(sys.argv[2:])
open(sys.argv[1], "w").write("\\n".join(seen))
sys.exit(rc)
"""


def dvc_hashed(repo: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    """Run ``dvc ARGS`` in ``repo``; the paths DVC read to hash them."""
    out = repo.parent / "hashed.txt"
    proc = subprocess.run([sys.executable, "-c", COUNTING, str(out), *args], cwd=repo,
                          env=env or ENV, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return [p for p in out.read_text().split("\n") if p]


@pytest.fixture
def repo(built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(built, copy, symlinks=True)
    return copy


def _state_md5s(repo: Path, paths: list[str]) -> dict[str, str | None]:
    from dvc.repo import Repo

    with Repo(os.fspath(repo)) as r:
        infos = {p: r.fs.info(p) for p in paths}
        return {p: (hi.value if hi is not None else None)
                for p, _, hi in r.state.get_many(paths, r.fs, infos)}


def test_dvc_reads_none_of_the_bytes_materialize_wrote(repo: Path) -> None:
    out = repo / "materialized"
    shutil.rmtree(out)
    sh("dvc-cuvis", "materialize", cwd=repo)
    files = [f"{os.path.realpath(out)}/{rel}" for rel, *_ in list_tree(str(out))]
    manifest = json.loads((out / "manifest.json").read_text())["frames"]
    state = _state_md5s(repo, files)
    assert all(state.values()), state  # DVC's state answers for every output file
    for name, entry in manifest.items():
        assert state[f"{os.path.realpath(out)}/{name}"] == entry["md5"]
    hashed = dvc_hashed(repo, "commit", "-f", "materialize")
    assert [p for p in hashed if "/materialized/" in p] == []
    lock = (repo / "dvc.lock").read_text()
    assert dir_md5(out, StatCache(None, dvc=None)) in lock  # DVC's folder hash is ours
    # the same stage without the hand-over: DVC reads every output file (the probe works)
    shutil.rmtree(out)
    sh("dvc-cuvis", "materialize", cwd=repo)
    off = {**ENV, "DVC_CUVIS_HAND_OVER": "off"}
    shutil.rmtree(out)
    subprocess.run(["dvc-cuvis", "materialize"], cwd=repo, env=off, check=True,
                   capture_output=True)
    hashed = dvc_hashed(repo, "commit", "-f", "materialize", env=off)
    assert len([p for p in hashed if "/materialized/" in p]) == len(files)


def test_a_repro_of_the_stage_hashes_no_output(repo: Path) -> None:
    hashed = dvc_hashed(repo, "repro", "-f", "-s", "materialize")
    assert [p for p in hashed if "/materialized/" in p] == []
    assert sh("dvc", "status", "materialize", cwd=repo).strip().endswith("up to date.")


def test_enumerate_hands_over_the_files_it_hashed(repo: Path) -> None:
    frame = sorted((repo / "data/npz").rglob("*.npz"))[0]
    data = bytearray(frame.read_bytes())
    data[-30] ^= 0x01
    frame.write_bytes(bytes(data))  # new bytes: DVC has no md5 for them
    sh("dvc-cuvis", "enumerate", cwd=repo)
    hashed = dvc_hashed(repo, "add", "data/npz")
    assert [p for p in hashed if p.endswith(".npz")] == []  # (the frames enumerate read)


def test_an_unavailable_state_api_falls_back_silently(repo: Path, monkeypatch,
                                                      caplog) -> None:
    from dvc_data.hashfile.state import State

    def changed(*args: object, **kwargs: object) -> None:
        raise TypeError("save_many() got an unexpected keyword argument")

    monkeypatch.setattr(State, "save_many", changed)
    f = repo / "universe.csv"
    st = f.stat()
    with caplog.at_level(logging.INFO, logger="dvc_cuvis.digests.dvc_state"):
        n = dvc_state.hand_over([(str(f), (st.st_ino, st.st_size, st.st_mtime_ns), "0" * 32)])
    assert n == 0 and "DVC will hash those files itself" in caplog.text
    monkeypatch.undo()
    n = dvc_state.hand_over([(str(f), (st.st_ino, st.st_size + 1, st.st_mtime_ns), "0" * 32)])
    assert n == 0  # a stamp that is not the file's: never recorded


def test_an_unknown_state_schema_falls_back_to_dvcs_repo(repo: Path, monkeypatch) -> None:
    sh("dvc", "status", cwd=repo)  # DVC hashed the copy's files into its state
    frames = sorted((repo / "data/npz").rglob("*.npz"))
    items = [(os.path.realpath(f), (s.st_ino, s.st_size, s.st_mtime_ns))
             for f in frames for s in [f.stat()]]
    direct = DvcKnownHashes()
    want = direct.md5_many(items)
    assert len(want) == len(items) and direct._dbs and None not in direct._dbs.values()
    direct.close()
    db = dvc_state.state_db(os.path.realpath(repo))
    assert db is not None
    monkeypatch.setitem(dvc_state.SCHEMA, "checksum_v2", "TEXT")  # a future DVC's table
    with pytest.raises(Exception, match="not the state schema"):
        dvc_state.StateDb(db)
    known = DvcKnownHashes()
    assert known.md5_many(items) == want  # answered by DVC's Repo instead
    assert list(known._dbs.values()) == [None]
    known.close()


def test_the_fallback_reason_shows_under_verbose(repo: Path, monkeypatch, capsys) -> None:
    from dvc_data.hashfile.state import State

    from dvc_cuvis.cli import main

    def changed(*args: object, **kwargs: object) -> None:
        raise TypeError("save_many() got an unexpected keyword argument")

    monkeypatch.setattr(State, "save_many", changed)
    monkeypatch.chdir(repo)
    assert main(["materialize"]) == 0
    quiet = capsys.readouterr().err
    assert "DVC will hash" not in quiet and "info:" not in quiet  # silent by default
    assert main(["-v", "materialize"]) == 0
    err = capsys.readouterr().err
    assert "dvc-cuvis: info: DVC's state was not given" in err, err
    assert "TypeError: save_many() got an unexpected keyword argument" in err
    assert logging.getLogger("dvc_cuvis").level == logging.NOTSET  # -v ends with the verb
    assert main(["--verbose", "materialize"]) == 0
    assert "DVC will hash those files itself" in capsys.readouterr().err


def _md5_of(path: str) -> str:
    import hashlib

    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "md5").hexdigest()


def _frame_objects(repo: Path) -> dict[str, tuple[str, str]]:
    """Per frame of ``materialized``: (its md5, its object's path in DVC's cache, DVC's API)."""
    from dvc.repo import Repo

    frames = json.loads((repo / "materialized/manifest.json").read_text())["frames"]
    with Repo(os.fspath(repo)) as r:
        return {name: (e["md5"], r.cache.local.oid_to_path(e["md5"]))
                for name, e in frames.items()}


def test_dvcs_hardlink_cache_links_our_outputs_and_materialize_never_writes_through(
        repo: Path, tmp_path: Path) -> None:
    # DVC's own option for no copy into its cache: the stage's commit links each frame
    sh("dvc", "config", "cache.type", "hardlink", cwd=repo)
    hashed = dvc_hashed(repo, "repro", "-f", "-s", "materialize")
    assert [p for p in hashed if "/materialized/" in p] == []  # the hand-over still holds
    old = _frame_objects(repo)
    for name, (_, obj) in old.items():
        assert os.stat(repo / "materialized" / name).st_ino == os.stat(obj).st_ino
    assert sh("dvc", "status", "materialize", cwd=repo).strip().endswith("up to date.")
    # new frame bytes (a materialize param): rewritten beside the links, never through them
    params = repo / "params.yaml"
    params.write_text(params.read_text().replace("compress: none", "compress: deflate:1"))
    hashed = dvc_hashed(repo, "repro", "-s", "materialize")
    assert [p for p in hashed if "/materialized/" in p] == []
    new = _frame_objects(repo)
    assert {md5 for md5, _ in new.values()}.isdisjoint(md5 for md5, _ in old.values())
    for md5, obj in old.values():  # DVC's old objects keep their bytes
        assert _md5_of(obj) == md5
    for name, (md5, obj) in new.items():
        assert os.stat(repo / "materialized" / name).st_ino == os.stat(obj).st_ino
        assert _md5_of(obj) == md5
    assert sh("dvc", "status", "materialize", cwd=repo).strip().endswith("up to date.")
    sh("dvc", "checkout", "materialize", cwd=repo)
    assert sh("dvc", "status", "materialize", cwd=repo).strip().endswith("up to date.")
    for name, (_, obj) in new.items():  # checkout kept the links
        assert os.stat(repo / "materialized" / name).st_ino == os.stat(obj).st_ino
    remote = tmp_path / "remote"
    sh("dvc", "remote", "add", "-d", "local", str(remote), cwd=repo)
    sh("dvc", "push", "-q", cwd=repo)
    sh("dvc", "gc", "-w", "-f", "-q", cwd=repo)  # the old objects go, the current stay
    assert all(os.path.exists(obj) for _, obj in new.values())
    assert not any(os.path.exists(obj) for _, obj in old.values())
    for md5, obj in new.values():  # what was pushed is the object's own bytes
        pushed = remote / os.path.relpath(obj, repo / ".dvc" / "cache")
        assert _md5_of(str(pushed)) == md5


def test_with_dvcs_default_cache_a_hard_link_into_the_cache_is_copied_back(repo: Path) -> None:
    """Why materialize places nothing in DVC's cache: with ``cache.type`` at its default
    (``reflink,copy``; ext4 has no reflinks), DVC's commit re-links a workspace file that
    shares its inode with the cache object -- it copies the object back -- so a hard link
    saves no copy (and would let an in-place edit change the cached object meanwhile)."""
    from dvc.repo import Repo

    out = repo / "materialized"
    shutil.rmtree(out)
    sh("dvc-cuvis", "materialize", cwd=repo)
    objects = _frame_objects(repo)
    with Repo(os.fspath(repo)) as r:
        assert r.cache.local.cache_types[0] != "hardlink"
        for name, (_, obj) in objects.items():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(obj)
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            os.link(out / name, obj)
            r.cache.local.protect(obj)  # as DVC's own objects are
    assert all(os.stat(out / name).st_nlink == 2 for name in objects)
    sh("dvc", "commit", "-f", "-q", "materialize", cwd=repo)
    for name, (md5, obj) in objects.items():
        st = os.stat(out / name)
        assert st.st_nlink == 1 and st.st_ino != os.stat(obj).st_ino  # a copy again
        assert _md5_of(obj) == md5
    assert sh("dvc", "status", "materialize", cwd=repo).strip().endswith("up to date.")
