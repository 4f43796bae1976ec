"""No byte hashed twice: md5s DVC already vouches for are taken from DVC, on real git + DVC
repositories (a local remote, ``git clone`` + ``dvc pull``, ``dvc checkout``, a stage)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

from dvc_cuvis.digests import dvc_state
from dvc_cuvis.digests.dvc_hashes import DvcKnownHashes
from dvc_cuvis.digests.hashing import stamp_of
from dvc_cuvis.digests.stat_cache import StatCache, open_stat_cache
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import format_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from examples.generate import generate
from tests.helpers.repos import fresh_clone
from tests.helpers.shell import sh

pytestmark = [pytest.mark.usefixtures("_site_cache"),
              pytest.mark.slow]  # a repository pushed to a remote, then clones: ~7 s in all


def enumerate_npz(root: Path, cache: StatCache) -> tuple[Universe, dict]:
    opts = EnumerateOptions(format="npz", root=root / "data" / "npz", out_dir=root, cache=cache,
                            jobs=2)
    return enumerate_universe(opts)


def md5_stats(cache: StatCache) -> dict[str, int]:
    """Where the md5s came from (the counts of content values are test_content_memo's)."""
    return {k: v for k, v in cache.stats().items() if not k.startswith("derived_")}


def plain_md5s(uni: Universe, base: Path) -> list[str]:
    return [hashlib.md5((base / p).read_bytes()).hexdigest()
            for p in uni.column("materialized_path")]


@pytest.mark.lowest_dvc
def test_fresh_clone_pull_hashes_no_byte_and_matches_a_hashing_run(
    origin: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    clone = fresh_clone(origin, tmp_path, env)
    cache = open_stat_cache("auto", near=clone / "universe.csv")
    assert cache.path is not None and not cache.path.exists()  # our cache is cold
    uni, metrics = enumerate_npz(clone, cache)
    n = len(uni)
    assert n == 16
    assert md5_stats(cache) == {"bytes_hashed": 0, "md5_cached": 0, "md5_from_dvc": n,
                             "md5_hashed": 0}
    hashing = StatCache(None)  # no DVC: every byte read
    uni_h, metrics_h = enumerate_npz(clone, hashing)
    assert hashing.stats()["md5_hashed"] == n and hashing.stats()["bytes_hashed"] > 0
    assert format_universe(uni) == format_universe(uni_h)
    assert uni.column("md5") == plain_md5s(uni, clone)
    assert metrics == metrics_h  # the tracked metrics hold no run statistics
    assert not {"bytes_hashed", "md5_from_dvc"} & set(metrics)
    # DVC's md5s went into our cache: the next run does not even open DVC
    cache.save()
    again = open_stat_cache("auto", near=clone / "universe.csv")
    again.dvc = None
    enumerate_npz(clone, again)
    assert md5_stats(again) == {"bytes_hashed": 0, "md5_cached": n, "md5_from_dvc": 0,
                             "md5_hashed": 0}


@pytest.mark.lowest_dvc
def test_dvc_checkout_of_another_revision_hashes_no_byte(
    origin: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    clone = fresh_clone(origin, tmp_path, env)
    sh("dvc", "fetch", "-q", "-T", cwd=clone, env=env)  # every tagged revision's data in the cache
    warm = StatCache(tmp_path / "warm.bin", dvc=DvcKnownHashes())
    enumerate_npz(clone, warm)
    warm.save()
    for rev in ("v1", "v2", "v1"):
        sh("git", "checkout", "-q", rev, cwd=clone, env=env)
        sh("dvc", "checkout", "-q", cwd=clone, env=env)
        for cache in (StatCache(None, dvc=DvcKnownHashes()),  # cold
                      StatCache(tmp_path / "warm.bin", dvc=DvcKnownHashes())):  # warm
            uni, _ = enumerate_npz(clone, cache)
            s = cache.stats()
            assert s["bytes_hashed"] == 0 and s["md5_hashed"] == 0, (rev, s)
            assert s["md5_cached"] + s["md5_from_dvc"] == len(uni)
            assert uni.column("md5") == plain_md5s(uni, clone)
            cache.save()
        assert s["md5_from_dvc"] > 0  # checkout rewrote frames: new stamps DVC vouches for


@pytest.mark.lowest_dvc
def test_a_file_edited_after_pull_is_hashed_not_taken_from_dvc(
    origin: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    clone = fresh_clone(origin, tmp_path, env)
    uni, _ = enumerate_npz(clone, StatCache(None, dvc=DvcKnownHashes()))
    victim = clone / uni.column("materialized_path")[5]
    old_md5 = uni.column("md5")[5]
    data = victim.read_bytes()
    victim.chmod(0o644)  # DVC may have linked it read-only
    victim.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # same size, one bit flipped
    st = victim.stat()
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # mtime surely moves
    cache = StatCache(None, dvc=DvcKnownHashes())
    uni2, _ = enumerate_npz(clone, cache)
    assert md5_stats(cache) == {"bytes_hashed": len(data), "md5_cached": 0,
                             "md5_from_dvc": len(uni) - 1, "md5_hashed": 1}
    new_md5 = uni2.column("md5")[5]
    assert new_md5 != old_md5
    assert new_md5 == hashlib.md5(victim.read_bytes()).hexdigest()


def test_data_outside_dvc_uses_our_stat_cache_and_never_opens_dvc(
    origin: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    clone = fresh_clone(origin, tmp_path, env)
    # a folder of the repository that DVC does not track, and one outside any repository
    generate(clone / "untracked", sessions=1, frames=3, size=(8, 8), bands=4, seed=5)
    generate(tmp_path / "loose", sessions=1, frames=3, size=(8, 8), bands=4, seed=6)
    for root, opens in ((clone / "untracked", 1), (tmp_path / "loose", 0)):
        known = DvcKnownHashes()
        cache = StatCache(tmp_path / f"{root.name}.bin", dvc=known)
        opts = EnumerateOptions(format="npz", root=root / "npz", out_dir=root, cache=cache)
        enumerate_universe(opts)
        assert cache.stats()["md5_hashed"] == 3 and cache.stats()["md5_from_dvc"] == 0
        # DVC's state opened once (read directly, or through its Repo), or never
        assert sum(r is not None for r in (*known._dbs.values(), *known._repos.values())) == opens
        cache.save()
        cache = StatCache(tmp_path / f"{root.name}.bin", dvc=DvcKnownHashes())
        opts = EnumerateOptions(format="npz", root=root / "npz", out_dir=root, cache=cache)
        enumerate_universe(opts)
        assert md5_stats(cache) == {"bytes_hashed": 0, "md5_cached": 3, "md5_from_dvc": 0,
                                 "md5_hashed": 0}


def test_switched_off_every_byte_is_hashed(
    origin: Path, tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clone = fresh_clone(origin, tmp_path, env)
    monkeypatch.setenv("DVC_CUVIS_DVC_HASHES", "off")
    cache = open_stat_cache("none")
    uni, _ = enumerate_npz(clone, cache)
    assert cache.dvc is None and cache.stats()["md5_hashed"] == len(uni)


@pytest.mark.lowest_dvc
def test_check_and_materialize_on_a_fresh_clone_hash_no_input_byte(
    origin: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    from dvc_cuvis.baking.core import BakeOptions, bake
    from dvc_cuvis.check.drift import verify
    from dvc_cuvis.materialize import ReaderParams
    from dvc_cuvis.materialize import materialize_universe as materialize

    clone = fresh_clone(origin, tmp_path, env)
    uni, _ = enumerate_npz(clone, StatCache(None, dvc=DvcKnownHashes()))
    (clone / "universe.csv").write_text(format_universe(uni), encoding="utf-8")
    cfg = bake(uni, BakeOptions())[0].config
    cache = StatCache(None, dvc=DvcKnownHashes())
    report = verify(cfg, clone / "universe.csv", lock=None, cache=cache, checks=["content"])
    assert report.ok, report
    assert cache.stats()["bytes_hashed"] == 0 and cache.stats()["md5_from_dvc"] == len(uni)
    cache = StatCache(None, dvc=DvcKnownHashes())
    materialize(uni, None, tmp_path / "frames", ReaderParams(), select="all", cache=cache)
    assert cache.stats()["bytes_hashed"] == 0 and cache.stats()["md5_from_dvc"] == len(uni)


STAGE_SCRIPT = """\
import json, sys
from pathlib import Path
from dvc_cuvis.digests.stat_cache import open_stat_cache
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
cache = open_stat_cache("auto")
uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=Path("data/npz"),
                                             out_dir=Path("."), cache=cache))
Path("stats.json").write_text(json.dumps([len(uni), cache.stats()]))
"""


@pytest.mark.lowest_dvc
def test_inside_a_running_dvc_repro_stage_dvc_state_is_readable(
    origin: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    clone = fresh_clone(origin, tmp_path, env)
    (clone / "stage.py").write_text(STAGE_SCRIPT, encoding="utf-8")
    (clone / "dvc.yaml").write_text(
        f"stages:\n  scan:\n    cmd: {sys.executable} stage.py\n"
        "    deps: [data, stage.py]\n    outs: [stats.json]\n", encoding="utf-8")
    sh("dvc", "repro", "-q", cwd=clone, env=env)  # DVC holds its repository lock meanwhile
    n, stats = json.loads((clone / "stats.json").read_text())
    assert {k: v for k, v in stats.items() if not k.startswith("derived_")} == {
        "bytes_hashed": 0, "md5_cached": 0, "md5_from_dvc": n, "md5_hashed": 0}


@pytest.mark.lowest_dvc
def test_the_stamp_rebuilds_the_mtime_dvc_validates_with(tmp_path: Path) -> None:
    for i in range(50):
        f = tmp_path / f"f{i}"
        f.write_bytes(b"x" * i)
        os.utime(f, ns=(0, 1_700_000_000_123_456_789 + i * 987_654_321))
        st = os.stat(f)
        assert dvc_state.info(stamp_of(st))["mtime"] == st.st_mtime
    f = tmp_path / "now"
    f.write_bytes(b"now")
    assert dvc_state.info(stamp_of(f.stat()))["mtime"] == f.stat().st_mtime
