"""Drift check: a mutation matrix on a real pipeline output (git + dvc repro), GUI splits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from dvc_cuvis.check.drift import DriftError, ensure, verify
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe
from tests.helpers.files import FIXTURES, sneaky_edit


def check(repo: Path, cli, monkeypatch, *extra: str):
    monkeypatch.chdir(repo)
    r = cli("check", "--params", "params.yaml", "--stat-cache", "none", "--json", *extra)
    return r, (json.loads(r.out)["checks"] if r.out.strip() else {})


def statuses(checks: dict) -> dict[str, str]:
    return {k: v["status"] for k, v in checks.items()}


def test_clean_pipeline_passes(repo: Path, cli, monkeypatch) -> None:
    r, checks = check(repo, cli, monkeypatch)
    assert r.code == 0, r.out
    assert statuses(checks) == {"universe": "ok", "content": "ok", "selection": "ok",
                                "constraints": "ok", "staleness": "ok"}
    assert json.loads((repo / "metrics/check.json").read_text())["ok"] is True


def test_added_frame_is_universe_drift(repo: Path, cli, monkeypatch) -> None:
    src = repo / "data/npz/day1_line-a_s01/frame_0000.npz"
    shutil.copy(src, src.with_name("frame_0099.npz"))
    r, checks = check(repo, cli, monkeypatch)
    assert r.code == 1
    assert checks["universe"]["status"] == "drift"
    assert checks["universe"]["details"]["added_samples"] == 1
    assert checks["content"]["status"] == "ok" and checks["staleness"]["status"] == "drift"
    assert "dvc repro" in checks["universe"]["fix"]


def test_removed_frame(repo: Path, cli, monkeypatch) -> None:
    (repo / "data/npz/day2_line-a_s03/frame_0001.npz").unlink()
    r, checks = check(repo, cli, monkeypatch)
    assert r.code == 1
    assert checks["content"]["details"]["missing"] == ["data/npz/day2_line-a_s03/frame_0001.npz"]
    assert checks["universe"]["details"]["removed_samples"] == 1


def test_renamed_source_is_reported_as_a_rename(repo: Path, cli, monkeypatch) -> None:
    old = repo / "data/npz/day1_line-b_s02"
    old.rename(old.with_name("day1_line-b_s02_renamed"))
    r, checks = check(repo, cli, monkeypatch)
    assert r.code == 1
    renamed = checks["universe"]["details"]["renamed"]
    assert "day1_line-b_s02/frame_0000.npz -> day1_line-b_s02_renamed/frame_0000.npz" in renamed


def test_one_changed_byte_is_content_drift(repo: Path, cli, monkeypatch) -> None:
    f = repo / "data/npz/day3_line-a_s05/frame_0002.npz"
    data = bytearray(f.read_bytes())
    data[300] ^= 0xFF
    f.write_bytes(bytes(data))
    r, checks = check(repo, cli, monkeypatch, "--no-enumerate")
    assert r.code == 1
    assert statuses(checks)["content"] == "drift" and statuses(checks)["universe"] == "ok"
    d = checks["content"]["details"]
    assert d["modified"] == ["data/npz/day3_line-a_s05/frame_0002.npz"]
    assert d["affected_samples"] == 1 and sum(d["affected_stages"].values()) == 1
    r2 = cli("check", "--params", "params.yaml", "--stat-cache", "none", "--no-enumerate")
    assert r2.code == 1 and "[DRIFT] content: 1 file(s) modified" in r2.out


def test_reordered_universe_is_only_pipeline_staleness(repo: Path, cli, monkeypatch) -> None:
    lines = (repo / "universe.csv").read_text().splitlines(keepends=True)
    (repo / "universe.csv").write_text(lines[0] + "".join(reversed(lines[1:])))
    r, checks = check(repo, cli, monkeypatch)
    assert r.code == 1
    assert statuses(checks) == {"universe": "ok", "content": "ok", "selection": "ok",
                                "constraints": "ok", "staleness": "drift"}
    assert any("universe.csv" in c for c in checks["staleness"]["details"]["changed"])
    r, checks = check(repo, cli, monkeypatch, "--no-lock")
    assert r.code == 0 and checks["staleness"]["status"] == "skipped"


def test_hand_edited_splits(repo: Path, cli, monkeypatch) -> None:
    cfg = json.loads((repo / "splits.json").read_text())
    train_source = cfg["train"][0]["paths"][0]  # npz frames are baked as one files selector
    cfg["val"].append({"kind": "file_indices", "source": train_source,
                       "ids": [0, 12345]})  # 12345 does not exist; 0 is also in train
    (repo / "splits.json").write_text(json.dumps(cfg, indent=2))
    r, checks = check(repo, cli, monkeypatch)
    assert r.code == 1
    assert checks["selection"]["status"] == "violation"
    assert "12345" in checks["selection"]["details"]["partial"][0]
    assert checks["constraints"]["status"] == "violation"  # the moved sample is in two stages
    assert any("splits.json" in c for c in checks["staleness"]["details"]["changed"])


def test_edited_params_without_repro_is_stale(repo: Path, cli, monkeypatch) -> None:
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["bake"]["seed"] = 42
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    r, checks = check(repo, cli, monkeypatch)
    assert r.code == 1 and statuses(checks)["staleness"] == "drift"
    changed = checks["staleness"]["details"]["params_changed"]
    assert changed == ["params.yaml:bake.seed (stage bake)"]
    assert checks["staleness"]["fix"] == "run `dvc repro`"


def test_bad_input_exit_2(repo: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(repo)
    r = cli("check", "--splits", "nope.json")
    assert r.code == 2 and "nope.json: splits file not found" in r.err
    r = cli("check", "--checks", "universe,bogus")
    assert r.code == 2 and "unknown check(s) ['bogus']" in r.err


def test_gui_authored_split_is_verified_after_retokenizing(tmp_path: Path) -> None:
    data_dir = tmp_path.resolve().as_posix()
    cfg_path = tmp_path / "splits.json"
    cfg_path.write_text((FIXTURES / "gui_authored_splits.json").read_text())  # tokenized
    rows = [{"source": f"{data_dir}/{d}", "index": i} for d in ("day2/a.cu3s", "day3/b.cu3s")
            for i in range(7)]
    report = verify(cfg_path, Universe.from_records(rows), lock=None)
    assert report.ok, report.render()
    assert report.finding("universe").details["data_dir"] == data_dir
    assert report.finding("selection").summary.endswith("train=7 val=3 test=3 predict=14")
    grown = Universe.from_records([*rows, {"source": f"{data_dir}/day4/c.cu3s", "index": 0}])
    bad = verify(cfg_path, grown, lock=None)
    assert not bad.ok and bad.finding("universe").status == "drift"
    with pytest.raises(DriftError) as info:
        ensure(bad, "strict")
    assert info.value.exit_code == 1 and info.value.report is bad
    assert ensure(bad, "warn") is bad


def test_deep_rehashes_despite_a_warm_cache(repo: Path, tmp_path: Path) -> None:
    from dvc_cuvis.digests.stat_cache import StatCache

    cache_path = tmp_path / "c.json"
    uni = read_universe(repo / "universe.csv")
    assert verify(repo / "splits.json", uni, cache=StatCache(cache_path), lock=None).ok
    f = repo / uni.value("materialized_path", 0)
    st = f.stat()
    data = bytearray(f.read_bytes())
    data[-5] ^= 1
    f.write_bytes(bytes(data))
    import os

    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime: a sneaky edit
    warm = verify(repo / "splits.json", uni, cache=StatCache(cache_path), lock=None)
    deep = verify(repo / "splits.json", uni, cache=StatCache(cache_path), lock=None, deep=True)
    assert f.stat().st_ino == st.st_ino  # rewritten in place: the stat triple is unchanged
    assert warm.finding("content").status == "ok"  # what a stat cache cannot see ...
    assert deep.finding("content").status == "drift"  # ... is what --deep is for


def test_unchanged_enumerate_stage_is_vouched_for_by_dvc_lock(repo: Path, cli,
                                                              monkeypatch) -> None:
    import dvc_cuvis.sources as sources

    real = sources.enumerate_universe
    calls: list[int] = []

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(sources, "enumerate_universe", counting)
    r, checks = check(repo, cli, monkeypatch)
    assert r.code == 0, r.out
    assert calls == []  # the data is vouched for by dvc.lock: no re-scan
    assert "through dvc.lock's input hashes" in checks["content"]["summary"]
    assert "dvc.lock vouches" in checks["universe"]["summary"]
    r, checks = check(repo, cli, monkeypatch, "--deep")  # --deep trusts nothing
    assert r.code == 0 and calls == [1]
    assert "through dvc.lock" not in checks["content"]["summary"]


def _rewrite(path: Path, data: bytes) -> None:
    """Write ``data`` in place with an mtime one second on (file clocks can be coarse)."""
    import os

    before = path.stat().st_mtime_ns
    path.write_bytes(data)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def _flip_byte(path: Path) -> bytes:
    data = path.read_bytes()
    _rewrite(path, data[:-7] + bytes([data[-7] ^ 1]) + data[-6:])
    return data


def test_a_clean_verdict_is_reused_until_a_file_it_rests_on_changes(repo: Path) -> None:
    from dvc_cuvis.digests.stat_cache import StatCache
    from dvc_cuvis.model.splits import load_splits

    cache_path = repo / "cache.bin"
    sp, csv = repo / "splits.json", repo / "universe.csv"

    def run(splits=sp, **kw):
        return verify(splits, csv, lock=None, cache=StatCache(cache_path), **kw)

    first = run()
    assert first.ok and not first.reused_verdict
    again = run()
    assert again.ok and again.reused_verdict
    assert again.to_dict()["checks"] == first.to_dict()["checks"]  # the same, word for word
    assert again.to_dict()["reused_verdict"] is True
    assert "the last clean verdict" in again.render().splitlines()[0]

    # a content file changes: the memo is not trusted, the full check finds it
    frame = repo / read_universe(csv).value("materialized_path", 3)
    original = _flip_byte(frame)
    bad = run()
    assert not bad.ok and not bad.reused_verdict
    assert bad.finding("content").details["modified"] == [str(frame.relative_to(repo))]
    assert not run().reused_verdict  # a failed verdict is never remembered
    _rewrite(frame, original)  # restored (new mtime): checked again, then remembered
    restored = run()
    assert restored.ok and not restored.reused_verdict
    assert run().reused_verdict

    # other inputs and options are part of the memo's key
    assert not run(group_leakage="off").reused_verdict
    cfg = load_splits(sp)
    assert not run(cfg).reused_verdict  # an in-memory config is keyed by its content ...
    assert run(load_splits(sp)).reused_verdict  # ... so an equal one reuses the verdict
    assert run().reused_verdict  # a universe keeps a verdict per split (a few of them)
    moved = cfg.model_copy(update={"val": cfg.test, "test": cfg.val})
    assert not run(moved).reused_verdict
    _rewrite(csv, csv.read_bytes())  # rewritten, same bytes: checked again, still clean
    assert not run().reused_verdict and run().reused_verdict
    edited = json.loads(sp.read_text())
    edited["val"], edited["test"] = edited["test"], edited["val"]
    _rewrite(sp, (json.dumps(edited, indent=2) + "\n").encode())
    swapped = run()
    assert not swapped.reused_verdict and swapped.ok
    assert run(deep=True).reused_verdict is False  # --deep trusts nothing
    gone = repo / read_universe(csv).value("materialized_path", 0)
    gone.unlink()
    missing = run()
    assert not missing.ok and not missing.reused_verdict
    assert missing.finding("content").details["missing"] == [str(gone.relative_to(repo))]


@pytest.mark.slow  # 10k files, ~1.6 s
def test_the_stamp_check_sees_one_changed_file_among_10k(tmp_path: Path) -> None:
    """The reused verdict's stat pass, folder by folder: any one file of 10k, at the edge of
    a folder or inside one, edited, replaced, removed or linked, is a change."""
    import os

    import dvc_cuvis.check.verdicts as verdicts

    folders = [(f"s{d:02d}", 1000) for d in range(9)] + [("", 1000)]  # and the top folder
    names: list[str] = []
    rels: list[str] = []
    for d, count in folders:
        for _ in range(count):
            names.append(f"f{len(names):05d}.npz")
            rels.append(f"{d}/{names[-1]}" if d else names[-1])
    for d, _ in folders[:-1]:
        (tmp_path / d).mkdir()
    for r in rels:
        (tmp_path / r).write_bytes(b"abcd")

    def stamps() -> list:  # the memo's columns, packed and unpacked as a slot stores them
        sts = [os.lstat(tmp_path / r) for r in rels]
        return [verdicts._ints(verdicts._packed([getattr(st, attr) for st in sts], code), code)
                for attr, (_, code) in zip(("st_ino", "st_size", "st_mtime_ns"),
                                           verdicts.STAMP_COLUMNS, strict=True)]

    cols = stamps()
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        def unchanged() -> bool:
            return verdicts.stamps_unchanged(fd, folders, names, cols)

        assert unchanged()
        # first, last and middle files of folders, and of the top folder
        for k in (0, 3_333, 3_334, 4_999, 5_000, 6_666, 6_667, 9_999):
            f = tmp_path / rels[k]
            st = f.stat()
            f.write_bytes(b"abce")  # in place: same inode and size, a new mtime
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
            assert not unchanged(), k
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # the old stamp is back
            assert unchanged()
            f.with_name("new").write_bytes(b"abcd")
            os.utime(f.with_name("new"), ns=(st.st_atime_ns, st.st_mtime_ns))
            os.replace(f.with_name("new"), f)  # replaced: same size and mtime, a new inode
            assert not unchanged(), k
            f.unlink()
            assert not unchanged(), k  # missing: False, never raised
            f.symlink_to(tmp_path / rels[k - 1])  # a link in its place is not followed
            assert not unchanged(), k
            f.unlink()
            f.write_bytes(b"abcd")
            cols = stamps()
            assert unchanged()
        (tmp_path / "s05").rename(tmp_path / "elsewhere")
        (tmp_path / "s05").symlink_to(tmp_path / "elsewhere")  # same files, through a link
        assert not unchanged()
    finally:
        os.close(fd)


def test_a_data_folder_swapped_for_an_outside_symlink_is_refused(repo: Path,
                                                                 tmp_path: Path) -> None:
    """Neither a remembered verdict nor dvc.lock's vouching may cover a path the guard refuses
    (the files keep their inodes: a move on the same filesystem)."""
    from dvc_cuvis.digests.stat_cache import StatCache
    from dvc_cuvis.errors import DvcCuvisError

    for lock in (None, "auto"):
        work = tmp_path / f"w-{lock}"
        shutil.copytree(repo, work / "repo", symlinks=True)
        root = work / "repo"

        def run(root=root, lock=lock, work=work, **kw):
            return verify(root / "splits.json", root / "universe.csv", lock=lock,
                          cache=StatCache(work / "c.bin"), **kw)

        assert run().ok and (lock is None or "through dvc.lock" in
                             run().finding("content").summary)
        (root / "data").rename(work / "elsewhere")
        (root / "data").symlink_to(work / "elsewhere")
        for kw in ({}, {"deep": True}):
            with pytest.raises(DvcCuvisError, match="leads outside"):
                run(**kw)


def test_only_the_universe_writing_stage_own_hashes_vouch(repo: Path) -> None:
    from dvc_cuvis.check.staleness import check_staleness
    from dvc_cuvis.digests.hashing import dir_md5
    from dvc_cuvis.digests.stat_cache import StatCache

    lock = yaml.safe_load((repo / "dvc.lock").read_text())
    folder = dir_md5(repo / "data/npz", StatCache(None))
    for dep in lock["stages"]["enumerate"]["deps"]:
        if dep["path"] == "data/npz":
            dep.pop("md5")  # the stage that wrote universe.csv records no hash of its input
    lock["stages"]["aaa"] = {"cmd": "true", "deps": [{"path": "data/npz", "md5": folder}],
                             "outs": [{"path": "universe.csv", "md5": "0" * 32}]}
    (repo / "dvc.lock").write_text(yaml.safe_dump(lock))
    _, vouched = check_staleness(repo / "dvc.lock", [repo / "universe.csv"], StatCache(None),
                                  repo / "universe.csv")
    assert str(repo / "data/npz") not in vouched  # another stage's matching hash is no voucher


def test_a_folder_in_dvc_lock_that_is_now_a_file_is_stale(repo: Path, cli, monkeypatch) -> None:
    shutil.rmtree(repo / "data/npz")
    (repo / "data/npz").write_text("not a folder any more\n")
    r, checks = check(repo, cli, monkeypatch, "--no-enumerate")
    assert r.code == 1 and checks["staleness"]["status"] == "drift"
    assert any("now a file" in c for c in checks["staleness"]["details"]["changed"])


def test_a_split_swapped_while_it_is_checked_is_not_remembered(repo: Path, monkeypatch) -> None:
    """The verdict is keyed by the stamps of the bytes read, not those seen before reading."""
    import os

    import dvc_cuvis.check.drift as drift
    from dvc_cuvis.digests.stat_cache import StatCache

    sp, csv = repo / "splits.json", repo / "universe.csv"
    good = sp.read_text()
    bad = json.loads(good)
    bad["universe_hash"] = "0" * 64  # version A: its pin does not match
    (repo / "A.keep").write_text(json.dumps(bad, indent=2))
    (repo / "B.new").write_text(good)
    os.link(repo / "A.keep", repo / "A.tmp")
    os.replace(repo / "A.tmp", sp)
    real = drift.load_splits_stamped

    def racing(path):  # a writer swaps in B right after the files were stamped
        os.replace(repo / "B.new", sp)
        return real(path)

    monkeypatch.setattr(drift, "load_splits_stamped", racing)
    assert verify(sp, csv, lock=None, cache=StatCache(repo / "c.bin")).ok  # B is clean
    monkeypatch.setattr(drift, "load_splits_stamped", real)
    os.link(repo / "A.keep", repo / "A.tmp")
    os.replace(repo / "A.tmp", sp)  # A's inode is back
    again = verify(sp, csv, lock=None, cache=StatCache(repo / "c.bin"))
    assert not again.ok and not again.reused_verdict


def test_other_checking_code_does_not_reuse_a_verdict(repo: Path, monkeypatch) -> None:
    import dvc_cuvis.check.verdicts as verdicts
    from dvc_cuvis.digests.stat_cache import StatCache

    def run():
        return verify(repo / "splits.json", repo / "universe.csv", lock=None,
                      cache=StatCache(repo / "c.bin"))

    assert run().ok and run().reused_verdict
    monkeypatch.setattr(verdicts, "code_id", lambda: "an upgraded dvc-cuvis")
    assert not run().reused_verdict and run().reused_verdict


def test_deep_reaches_every_digest_and_hashes_each_file_once(repo: Path, monkeypatch) -> None:
    """``deep`` re-enumerates without the persistent cache: an edit that keeps the stat
    triple is seen by the universe part (re-digested) and the content part, and no file is
    hashed twice in the call (dvc.lock's folder hash, the re-scan and the content check
    share the digests)."""
    import dvc_cuvis.digests.hashing as hashing
    from dvc_cuvis.digests.stat_cache import StatCache
    from dvc_cuvis.sources import EnumerateOptions

    monkeypatch.chdir(repo)
    cache_path = repo / "c.bin"
    # the options carry the persistent cache, as the CLI builds them: deep must not use it
    opts = EnumerateOptions(format="npz", root=Path("data/npz"), out_dir=Path("."),
                            cache=StatCache(cache_path))

    def run(**kw):
        return verify(repo / "splits.json", repo / "universe.csv", current=opts,
                      cache=StatCache(cache_path), **kw)

    assert run(lock=None).ok  # warms the persistent stat cache
    f = repo / read_universe(repo / "universe.csv").value("materialized_path", 2)
    sneaky_edit(f, valid=True)  # a frame the door accepts: only its md5 changed
    plain = run(lock=None)
    assert plain.ok  # documented: a stat cache cannot see an edit that keeps the stamp

    real = hashing.hash_file
    hashed: list[str] = []

    def counting(path, *a, **k):
        hashed.append(str(path))
        return real(path, *a, **k)

    monkeypatch.setattr(hashing, "hash_file", counting)
    deep = run(deep=True)  # with dvc.lock: its folder hash reads every data file too
    assert deep.finding("universe").status == "drift"
    assert deep.finding("universe").details["redigested_samples"] == 1
    assert deep.finding("content").status == "drift"
    assert deep.finding("content").details["modified"] == [str(f.relative_to(repo))]
    assert deep.finding("staleness").status == "drift"  # the folder hash changed too
    frames = sorted(str(p) for p in (repo / "data/npz").rglob("*.npz"))
    assert sorted(set(hashed) & set(frames)) == frames  # every frame was read ...
    assert len(hashed) == len(set(hashed)), "a file was hashed twice"  # ... exactly once
    hashed.clear()
    no_lock = run(deep=True, lock=None)  # the re-scan hashes; the content check reuses it
    assert no_lock.finding("universe").status == "drift"
    assert no_lock.finding("content").status == "drift"
    assert sorted(hashed) == frames


def test_universe_check_reports_redigested_samples_from_the_rescan(repo: Path) -> None:
    from dvc_cuvis.digests.stat_cache import StatCache

    uni = read_universe(repo / "universe.csv")
    recs = [{"source": s.source, "index": s.index, **s.extra}
            for s in (uni.sample(p) for p in range(len(uni)))]
    recs[0]["md5"] = "0" * 32
    now = Universe.from_records(recs)
    report = verify(repo / "splits.json", uni, current=now, lock=None, cache=StatCache(None))
    f = report.finding("universe")
    assert f.status == "drift" and f.details["redigested_samples"] == 1
    assert f.details["redigested_sources"] == [uni.source(0)]
    assert "no longer have the md5" in report.render()


def test_samples_on_which_the_anomaly_notions_differ_are_named(tmp_path: Path) -> None:
    from dvc_cuvis.baking.core import BakeOptions, bake

    rows = [{"source": f"s{k}.cu3s", "index": 0, "category_ids": c}
            for k, c in enumerate(["", "0", "1", "0;0", "2;0"])]
    uni = Universe.from_records(rows)
    cfg = bake(uni, BakeOptions(seed=1, val_ratio=0.0, test_ratio=0.0))[0].config
    report = verify(cfg, uni, lock=None)
    note = report.finding("universe").details["anomaly_notions"]
    assert note.startswith("2 sample(s) carry only category id 0")
    assert "2 sample(s) carry only category id 0" in report.render()
    assert report.to_dict()["checks"]["universe"]["details"]["anomaly_notions"] == note
    plain = Universe.from_records([{**r, "category_ids": r["category_ids"].replace("0", "3")}
                                   for r in rows])
    assert "anomaly_notions" not in verify(cfg, plain, lock=None).finding("universe").details


def test_code_id_covers_every_module_of_the_package(tmp_path: Path) -> None:
    """No hand-kept list: an edit to any module, or a new one, changes the id."""
    import dvc_cuvis
    from dvc_cuvis.check.verdicts import code_id

    pkg = tmp_path / "dvc_cuvis"
    shutil.copytree(Path(dvc_cuvis.__file__).parent, pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))
    assert code_id(pkg) == code_id()  # the installed package's id is this copy's
    before = code_id(pkg)
    for name in ("model/selectors.py", "repo/lockfile.py", "sources/npz.py"):
        path = pkg / name
        text = path.read_text()
        path.write_text(text + "\n# edited\n")
        assert code_id(pkg) != before, name
        path.write_text(text)
        assert code_id(pkg) == before
    (pkg / "brand_new.py").write_text("X = 1\n")
    assert code_id(pkg) != before
