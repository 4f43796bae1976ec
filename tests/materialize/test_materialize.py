"""materialize: deterministic bytes, incremental reruns, crash and lock safety, readers."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.materialize.core import materialize_universe as materialize
from dvc_cuvis.materialize.lock import output_lock
from dvc_cuvis.materialize.options import ReaderParams
from dvc_cuvis.model.frame_bytes import npz_bytes
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.frames import Compression
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe_io import read_universe, write_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from examples.generate import generate
from tests.helpers.files import tiff_project, tree, write_session


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small dataset with an enumerated universe.csv and a baked splits.json."""
    return tiff_project(tmp_path)


def run(project: Path, out: str = "out", **kw) -> object:
    uni = read_universe(project / "universe.csv")
    cfg = load_splits(project / "splits.json")
    params = kw.pop("params", ReaderParams())
    return materialize(uni, cfg, project / out, params, **kw)


def test_frames_follow_the_npz_contract(project: Path) -> None:
    res = run(project, params=ReaderParams(crop=(1, 2, 3, 1)))
    out = project / "out"
    uni = read_universe(out / "universe.csv")
    assert len(uni) == 12 and uni.columns[:5] == ["source", "index", "materialized_path",
                                                  "format", "md5"]
    raw = read_universe(project / "universe.csv")
    # a TIFF cube is a whole-file sample (uid = source, as upstream's TiffPairedDataModule);
    # its frame is npz_multi row (source, 0): same sources, the read position as index
    assert uni.source_names == raw.source_names and raw.indexless is not None
    assert uni.uids() == [f"{s}#0" for s in raw.source_names]
    p = 1
    path = out / uni.value("materialized_path", p)
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        assert [i.filename for i in infos] == sorted(i.filename for i in infos)
        assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    with np.load(path, allow_pickle=False) as z:
        assert z["cube"].dtype == np.float32 and z["cube"].shape == (5, 6, 4)
        assert z["wavelengths"].dtype == np.int32 and z["mask"].dtype == np.int32
        assert z["class_mask"].dtype == np.uint8 and z["class_mask"].shape == (5, 6)
        assert str(z["source"]) == raw.source(p)
        np.testing.assert_array_equal(z["mask"], (z["class_mask"] > 0).astype(np.int32))
    from dvc_cuvis.sources.tiff import read_cube, read_label_map

    cube, _ = read_cube(project / raw.value("materialized_path", p))
    label = read_label_map(project / raw.value("annotation", p))
    with np.load(path) as z:
        np.testing.assert_array_equal(z["cube"], cube[1:-2, 3:-1])
        np.testing.assert_array_equal(z["class_mask"], label[1:-2, 3:-1])
    assert uni.value("md5", p) == hashlib.md5(path.read_bytes()).hexdigest()
    assert res.written == 12


def test_bytes_do_not_depend_on_checkout_path_or_jobs(project: Path, tmp_path_factory) -> None:
    run(project, "a")
    other = tmp_path_factory.mktemp("elsewhere") / "deep" / "copy"
    import shutil

    shutil.copytree(project, other, ignore=shutil.ignore_patterns("a"))
    run(other, "b", jobs=2)
    assert tree(project / "a") == tree(other / "b")
    assert str(project).encode() not in b"".join((project / "a" / n).read_bytes()
                                                 for n in tree(project / "a"))


def test_rerun_is_incremental(project: Path) -> None:
    cache = StatCache(project / "cache.json")
    first = run(project, cache=cache)
    assert first.written == 12
    clean = tree(project / "out")
    again = run(project, cache=StatCache(project / "cache.json"))
    assert (again.written, again.kept, again.deleted) == (0, 12, 0)
    assert tree(project / "out") == clean
    # change one source file: exactly its frame is rewritten
    uni = read_universe(project / "universe.csv")
    victim = project / uni.value("materialized_path", 4)
    from dvc_cuvis.sources.tiff import read_cube

    cube, wl = read_cube(victim)
    import tifffile

    tifffile.imwrite(victim, np.transpose(cube * 0.5, (2, 0, 1)), software=False,
                     photometric="minisblack",
                     metadata=None, extratags=[(42112, "s", 0,
                                                "<GDALMetadata><Item name=\"wavelength\">{"
                                                + ",".join(map(str, wl)) + "}</Item>"
                                                "</GDALMetadata>", True)])
    name = frame_name(uni.source(4), 0)
    others = {n: (project / "out" / n).stat().st_ino for n in clean if n.startswith("frames/")
              and n != name}
    third = run(project, cache=StatCache(project / "cache.json"))
    assert (third.written, third.kept) == (1, 11)
    assert {n: (project / "out" / n).stat().st_ino for n in others} == others


def test_params_change_rewrites_and_selection_change_deletes(project: Path) -> None:
    run(project)
    changed = run(project, params=ReaderParams(crop=(0, 0, 1, 0)))
    assert changed.written == 12
    uni = read_universe(project / "universe.csv")
    sub = uni.take(np.arange(0, 9))
    (b,) = bake(sub, BakeOptions(seed=1))
    res = materialize(sub, b.config, project / "out", ReaderParams(crop=(0, 0, 1, 0)))
    assert (res.written, res.kept, res.deleted) == (0, 9, 3)
    assert len(list((project / "out/frames").rglob("*.npz"))) == 9


def test_stale_or_corrupt_frames_are_never_reused(project: Path) -> None:
    run(project)
    uni = read_universe(project / "out" / "universe.csv")
    frame = project / "out" / uni.value("materialized_path", 0)
    good = frame.read_bytes()
    frame.write_bytes(good[:-10])  # truncated (e.g. an upstream-style half-written file)
    res = run(project)
    assert res.written == 1 and frame.read_bytes() == good
    frame.unlink()
    assert run(project).written == 1 and frame.read_bytes() == good


def test_names_are_collision_free() -> None:
    a = frame_name("day1/raw/s.cu3s", 3)
    b = frame_name("day2/raw/s.cu3s", 3)
    assert a != b and a == "frames/day1/raw/s.cu3s.000003.npz"
    assert frame_name("a_b/c.cu3s", 0) != frame_name("a/b_c.cu3s", 0)
    assert frame_name("/abs/x.cu3s", 1) == "frames/%2F/abs/x.cu3s.000001.npz"
    escaped = frame_name("../../etc/x", 0)
    assert ".." not in escaped.split("/") and escaped.startswith("frames/%2E%2E/")
    assert frame_name("C:/Data/x y#1.cu3s", 0) == "frames/C%3A/Data/x y%231.cu3s.000000.npz"


def test_npz_writer_compression_modes_load_back() -> None:
    arrays = {"cube": np.zeros((4, 4, 3), np.float32), "class_mask": np.zeros((4, 4), np.uint8)}
    stored = npz_bytes(arrays, Compression.parse("none"))
    masks = npz_bytes(arrays, Compression.parse("masks:9"))
    deflate = npz_bytes(arrays, Compression.parse("deflate:1"))
    assert len(deflate) < len(masks) < len(stored)
    for data in (stored, masks, deflate):
        with np.load(__import__("io").BytesIO(data)) as z:
            assert z["cube"].shape == (4, 4, 3)
    with pytest.raises(DvcCuvisError, match="level must be an integer 0-9"):
        Compression.parse("deflate:12")
    with pytest.raises(DvcCuvisError, match="choose none"):
        Compression.parse("zstd")


def test_category_ids_above_255_are_refused(tmp_path: Path) -> None:
    from dvc_cuvis.model.frames import frame_arrays

    cube = np.zeros((2, 2, 2), np.float32)
    with pytest.raises(DvcCuvisError, match="category id 300 exceeds the uint8 range"):
        frame_arrays(cube, np.arange(2), "s", np.full((2, 2), 300), None, "x.tif")
    with pytest.raises(DvcCuvisError, match=r"crop .* too large"):
        frame_arrays(cube, np.arange(2), "s", None, (1, 1, 0, 0), "x.tif")


def test_lock_refuses_a_concurrent_run(project: Path, cli) -> None:
    with output_lock(project / "out"):
        r = cli("materialize", "--universe", project / "universe.csv", "--splits",
                project / "splits.json", "--out-dir", project / "out", "--stat-cache", "none")
    assert r.code == 2 and "another `dvc-cuvis materialize` is writing this folder" in r.err
    r = cli("materialize", "--universe", project / "universe.csv", "--splits",
            project / "splits.json", "--out-dir", project / "out", "--stat-cache", "none")
    assert r.code == 0 and "12 written" in r.out


@pytest.mark.slow  # ~8 s
def test_kill_9_then_rerun_gives_clean_bytes(tmp_path: Path) -> None:
    generate(tmp_path / "data", sessions=3, frames=10, size=(48, 48), bands=32, seed=5)
    uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=tmp_path / "data/npz",
                                                 out_dir=tmp_path))
    write_universe(uni, tmp_path / "universe.csv")
    args = [sys.executable, "-m", "dvc_cuvis", "materialize", "--universe",
            str(tmp_path / "universe.csv"), "--stat-cache", "none", "--compress", "deflate:9"]
    clean = tmp_path / "clean"
    subprocess.run([*args, "--out-dir", str(clean)], check=True, capture_output=True)
    victim = tmp_path / "victim"
    for delay in (0.35, 0.5, 0.7):
        proc = subprocess.Popen([*args, "--out-dir", str(victim)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        for p in (q for q in victim.rglob("*.npz") if q.is_file()):  # complete frames only
            with np.load(p) as z:
                assert z["cube"].dtype == np.float32
    subprocess.run([*args, "--out-dir", str(victim)], check=True, capture_output=True)
    assert tree(victim) == tree(clean)



def test_cu3s_frames_via_sdk_double(sdk, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    write_session(root / "a/s.cu3s", 3, seed=4)
    write_session(root / "b/s.cu3s", 2, seed=5)
    (root / "a/s.json").write_text(json.dumps({
        "images": [{"id": 1, "file_name": "1", "height": 4, "width": 5}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 3, "iscrowd": 0, "area": 4,
                         "bbox": [1, 1, 2, 2], "segmentation": [[1, 1, 3, 1, 3, 3, 1, 3]]}],
        "categories": [{"id": 3, "name": "dent"}],
    }))
    uni, _ = enumerate_universe(EnumerateOptions(format="cu3s", root=root, out_dir=tmp_path))
    write_universe(uni, tmp_path / "universe.csv")
    uni = read_universe(tmp_path / "universe.csv")
    res = materialize(uni, None, tmp_path / "out", ReaderParams(processing_mode="Reflectance"))
    assert res.written == 5
    out = read_universe(tmp_path / "out/universe.csv")
    assert out.uids() == uni.uids()
    with np.load(tmp_path / "out" / out.value("materialized_path", 1)) as z:
        assert z["cube"].dtype == np.float32 and z["cube"].shape == (4, 5, 3)
        assert str(z["source"]) == "a/s.cu3s"
        assert int(z["class_mask"].max()) == 3 and int(z["mask"].sum()) > 0
        # independent of the double's classes: its documented raw counts (seed, index) over
        # a 12-bit range, reflectance = counts / 4096, wavelengths 450 + k*(450 // (C-1))
        counts = np.random.default_rng([4, 1]).integers(0, 4096, size=(4, 5, 3))
        assert np.array_equal(z["cube"], (counts.astype(np.float32) / np.float32(4096.0)))
        assert z["cube"].max() <= 1.0 and not np.array_equal(z["cube"], counts)
        assert z["wavelengths"].tolist() == [450, 675, 900]
    with np.load(tmp_path / "out" / out.value("materialized_path", 3)) as z:
        assert "class_mask" not in z.files  # no annotation for b/s.cu3s
    raw = materialize(uni, None, tmp_path / "raw", ReaderParams(processing_mode=None))
    assert raw.written == 5
    with np.load(tmp_path / "raw" / out.value("materialized_path", 1)) as z:
        assert np.array_equal(z["cube"], counts.astype(np.float32))  # raw counts, unscaled
    write_session(root / "c/noref.cu3s", 1)
    (root / "c/noref.cu3s").write_text(json.dumps({"measurements": 1, "height": 2, "width": 2,
                                                  "bands": 2, "seed": 0, "references": []}))
    uni2, _ = enumerate_universe(EnumerateOptions(format="cu3s", root=root / "c",
                                                  out_dir=tmp_path))
    write_universe(uni2, tmp_path / "u2.csv")
    with pytest.raises(DvcCuvisError, match="Reflectance needs White and Dark references"):
        materialize(read_universe(tmp_path / "u2.csv"), None, tmp_path / "o2", ReaderParams())
    white = tmp_path / "white.cu3s"
    write_session(white, 1)
    dark = tmp_path / "dark.cu3s"
    write_session(dark, 1)
    ok = materialize(read_universe(tmp_path / "u2.csv"), None, tmp_path / "o3",
                     ReaderParams(white_ref=f"{white}:0", dark_ref=str(dark)))
    assert ok.written == 1


def test_npz_output_loads_in_multinpzdatamodule(project: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("pytorch_lightning")
    from cuvis_ai_dataloader.data.datamodule_npz_multi import MultiNpzDataModule

    run(project)
    out = project / "out"
    cfg = load_splits(out / "splits.json")
    dm = MultiNpzDataModule(universe_csv=str(out / "universe.csv"), splits=cfg, batch_size=3)
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    assert set(batch) == {"cube", "mask", "class_mask", "wavelengths", "mesu_index", "frame_id"}
    assert str(batch["cube"].dtype) == "torch.float32" and batch["cube"].shape[1:] == (8, 10, 4)
    ours = resolve(cfg, read_universe(out / "universe.csv"))
    assert len(dm.train_dataloader().dataset) == len(ours.stages["train"])


def test_dask_executor_gives_the_same_bytes(project: Path) -> None:
    pytest.importorskip("dask.distributed")
    run(project, "local")
    run(project, "dask", executor="dask")
    assert tree(project / "local") == tree(project / "dask")


def test_a_shard_universe_selects_its_part_of_a_whole_split(project: Path) -> None:
    uni = read_universe(project / "universe.csv")
    cfg = load_splits(project / "splits.json")
    cfg = cfg.model_copy(update={"predict": cfg.test})  # predict = test, not everything
    shard = uni.take(np.arange(0, 6))
    res = materialize(shard, cfg.model_copy(update={"universe_hash": None}), project / "shard",
                      ReaderParams())
    whole = resolve(cfg, uni)
    in_split = {u for s in ("train", "val", "test") for u in whole.uids(s)}
    assert set(res.universe.source_names) == in_split & set(shard.uids())  # whole-file uids


def test_first_rerun_does_not_rehash_outputs(project: Path, monkeypatch) -> None:
    import dvc_cuvis.digests.hashing as hashing

    run(project, cache=StatCache(project / "c.json"))
    hashed: list[str] = []
    real = hashing.hash_file  # every md5 the stat cache reads a file for
    monkeypatch.setattr(hashing, "hash_file", lambda p: hashed.append(str(p)) or real(p))
    again = run(project, cache=StatCache(project / "c.json"))
    assert again.written == 0 and hashed == []


# -- a task that fails in a worker ---------------------------------------------------------


def _raise_for(bad: str, how: str):
    """A ``frame_arrays`` that fails for source ``bad`` (inherited by forked workers)."""
    from dvc_cuvis.materialize import tasks as mat

    real = mat.frame_arrays

    def failing(cube, wl, source, *rest):  # type: ignore[no-untyped-def]
        if source == bad:
            if how == "died":
                os._exit(3)  # the worker process dies abruptly (killed, out of memory)
            raise RuntimeError("boom")  # a bug, not a bad input
        return real(cube, wl, source, *rest)

    return failing


def test_a_failing_task_keeps_what_its_group_and_the_running_groups_finished(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker processes take tasks in groups: a task that fails must not take its finished
    group-mates (or the groups running beside it) out of the manifest, or the rerun would
    write them again."""
    import multiprocessing

    from dvc_cuvis.materialize import executors
    from dvc_cuvis.materialize import tasks as mat

    if multiprocessing.get_start_method() != "fork":
        pytest.skip("injecting a failure into workers needs forked workers")
    generate(tmp_path / "data", sessions=4, frames=4, size=(8, 10), bands=4, seed=3)
    uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=tmp_path / "data/npz",
                                                 out_dir=tmp_path))
    from types import SimpleNamespace

    one_frame = [SimpleNamespace(frames=[0], i=i) for i in range(len(uni))]
    groups = [[t.i for t in g] for g in executors._groups(one_frame, 2)]  # one task per frame file
    assert all(len(g) >= 2 for g in groups)
    bad = uni.source(groups[1][-1])  # the last task of a group: its group-mates finish first
    monkeypatch.setattr(mat, "frame_arrays", _raise_for(bad, "bug"))
    real_groups = executors._groups
    seen: list[list[str]] = []
    monkeypatch.setattr(executors, "_groups", lambda tasks, jobs: [
        seen.append([t.source for t in g]) or g for g in real_groups(tasks, jobs)])
    out = tmp_path / "out"
    with pytest.raises(DvcCuvisError, match="RuntimeError: boom"):
        materialize(uni, None, out, ReaderParams(), jobs=2)
    monkeypatch.undo()
    assert seen[1][-1] == bad and len(seen[1]) >= 2  # the grouping assumed above
    claimed = set(json.loads((out / "manifest.json").read_text())["frames"])
    on_disk = {p.relative_to(out).as_posix() for p in (out / "frames").rglob("*.npz")}
    assert frame_name(bad, 0) not in on_disk | claimed
    assert claimed == on_disk  # every whole frame is claimed: none is written twice
    assert {frame_name(src, 0) for src in seen[1][:-1]} <= claimed  # the failed one's mates
    res = materialize(uni, None, out, ReaderParams(), jobs=2)
    assert res.written == len(uni) - len(claimed)  # the rerun writes only what was missing


@pytest.mark.parametrize("how", ["truncated", "bug", "died"])
def test_a_failing_worker_is_one_clean_error_and_leaves_no_partial_frame(
        tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    import multiprocessing

    from dvc_cuvis.materialize import tasks as mat

    if how != "truncated" and multiprocessing.get_start_method() != "fork":
        pytest.skip("injecting a failure into workers needs forked workers")
    generate(tmp_path / "data", sessions=4, frames=3, size=(8, 10), bands=4, seed=2)
    uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=tmp_path / "data/npz",
                                                 out_dir=tmp_path))
    write_universe(uni, tmp_path / "universe.csv")
    clean = materialize(uni, None, tmp_path / "clean", ReaderParams())
    pos = 5
    source, rel = uni.source(pos), uni.value("materialized_path", pos)
    bad, good = tmp_path / rel, (tmp_path / rel).read_bytes()
    if how == "truncated":  # a bad input: the file changed after enumerate
        bad.write_bytes(good[: len(good) // 2])
    else:
        monkeypatch.setattr(mat, "frame_arrays", _raise_for(source, how))
    out = tmp_path / "out"
    with pytest.raises(DvcCuvisError) as exc:
        materialize(read_universe(tmp_path / "universe.csv"), None, out, ReaderParams(), jobs=2)
    msg = str(exc.value)
    assert "\n" not in msg, msg
    if how == "died":  # which task the dead worker held is unknown: an unfinished file is named
        assert "worker process died" in msg and str(tmp_path / "data/npz") in msg, msg
    else:
        assert str(bad) in msg, msg
    if how == "bug":
        assert "RuntimeError: boom" in msg and source in msg
    assert not (out / frame_name(source, 0)).exists()  # no frame of the failed task
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]  # no temp file left
    done = json.loads((out / "manifest.json").read_text())["frames"]
    assert frame_name(source, 0) not in done  # and no manifest claims it
    whole = tree(clean.out_dir)
    for name, digest in tree(out).items():
        if name.startswith("frames/"):  # whatever exists under a final name is whole
            assert digest == whole[name], name
    for name, entry in done.items():
        assert hashlib.md5((out / name).read_bytes()).hexdigest() == entry["md5"]
    r = cli("materialize", "--universe", tmp_path / "universe.csv", "--out-dir", out,
            "--jobs", "2", "--stat-cache", "none", "--no-params")
    assert r.code == 2 and r.err.count("\n") == 1 and "internal error" not in r.err, r.err
    assert (str(bad) if how != "died" else "data/npz/") in r.err, r.err
    if how == "truncated":
        bad.write_bytes(good)  # the input fixed
    else:
        monkeypatch.undo()
    res = materialize(read_universe(tmp_path / "universe.csv"), None, out, ReaderParams(),
                      jobs=2)
    assert res.written >= 1 and tree(out) == whole
