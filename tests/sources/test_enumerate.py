"""enumerate: tiff/npz/universe/cu3s scanners, digests and stat cache, metrics, bad input."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.digests.hashing import file_md5
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.universe_io import read_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from examples.generate import generate
from tests.helpers.files import write_session


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ds")
    generate(root / "data", sessions=4, frames=3, size=(8, 8), bands=4, seed=1)
    return root


def opts(root: Path, fmt: str, out_dir: Path, **kw) -> EnumerateOptions:
    return EnumerateOptions(format=fmt, root=root, out_dir=out_dir, **kw)


def test_file_md5_is_dvc_md5(tmp_path: Path) -> None:
    p = tmp_path / "f.bin"
    p.write_bytes(b"a\r\nb" * 1000)
    assert file_md5(p) == hashlib.md5(p.read_bytes()).hexdigest()


def test_tiff_scan(dataset: Path) -> None:
    uni, metrics = enumerate_universe(opts(dataset / "data/tiff", "tiff", dataset,
                                           categories=dataset / "data/tiff/categories.json"))
    assert len(uni) == 12 and uni.source_names[0] == "images/day1_line-a_s01_f000.tif"
    assert uni.value("materialized_path", 0) == "data/tiff/images/day1_line-a_s01_f000.tif"
    assert uni.value("annotation", 0) == "data/tiff/labels/day1_line-a_s01_f000.png"
    assert uni.value("md5", 0) == file_md5(dataset / uni.value("materialized_path", 0))
    assert metrics["samples"] == 12 and metrics["universe_hash"] == uni.hash
    assert metrics["categories"] == {"scratch": 1, "dent": 2, "stain": 3}
    assert metrics["anomalous"] + metrics["normal"] == 12
    from PIL import Image

    for p in range(len(uni)):
        png = np.asarray(Image.open(dataset / uni.value("annotation", p)))
        assert list(uni.category_ids[p]) == sorted(int(v) for v in np.unique(png) if v)


def test_npz_scan_groups_frames_by_recording(dataset: Path) -> None:
    uni, metrics = enumerate_universe(opts(dataset / "data/npz", "npz", dataset))
    assert len(uni) == 12 and metrics["groups"] == 4
    assert uni.value("group", 0) == "npz/day1_line-a_s01"
    assert uni.source(0) == "day1_line-a_s01/frame_0000.npz"
    with np.load(dataset / uni.value("materialized_path", 5)) as z:
        ids = sorted(int(v) for v in np.unique(z["class_mask"]) if v)
    assert list(uni.category_ids[5]) == ids
    assert metrics["categories"] == {"scratch": 1, "dent": 2, "stain": 3}


def test_stat_cache_skips_unchanged_files(dataset: Path, tmp_path: Path) -> None:
    cache_path = tmp_path / "cache.json"
    o = opts(dataset / "data/npz", "npz", dataset, cache=StatCache(cache_path))
    first, _ = enumerate_universe(o)
    assert o.cache.misses > 0 and cache_path.is_file()
    warm = StatCache(cache_path)
    again, _ = enumerate_universe(opts(dataset / "data/npz", "npz", dataset, cache=warm))
    assert warm.misses == 0 and warm.hits == 36  # md5 + frame info + verdict for 12 files
    assert again.column("md5") == first.column("md5")


def test_stat_cache_notices_changed_content(tmp_path: Path) -> None:
    src = tmp_path / "d"
    src.mkdir()
    f = src / "x.npz"
    np.savez(f, cube=np.zeros((2, 2, 2), np.float32), wavelengths=np.arange(2, dtype=np.int32))
    cache = StatCache(tmp_path / "c.json")
    u1, _ = enumerate_universe(opts(src, "npz", tmp_path, cache=cache))
    np.savez(f, cube=np.ones((2, 2, 2), np.float32), wavelengths=np.arange(2, dtype=np.int32))
    u2, _ = enumerate_universe(opts(src, "npz", tmp_path, cache=StatCache(tmp_path / "c.json")))
    assert u1.value("md5", 0) != u2.value("md5", 0) == file_md5(f)


def test_universe_format_rebases_paths(dataset: Path, tmp_path: Path) -> None:
    csv = dataset / "in.csv"
    csv.write_text("source,index,materialized_path,split,camera\n"
                   "rec/a.cu3s,1,data/npz/day1_line-a_s01/frame_0001.npz,val,c1\n"
                   "rec/a.cu3s,0,data/npz/day1_line-a_s01/frame_0000.npz,train,c1\n")
    out = dataset / "sub"
    out.mkdir(exist_ok=True)
    with pytest.raises(DvcCuvisError, match=r"outside the folder of the universe\.csv"):
        enumerate_universe(opts(csv, "universe", out))
    uni, _ = enumerate_universe(opts(csv, "universe", dataset))
    assert uni.uids() == ["rec/a.cu3s#0", "rec/a.cu3s#1"]
    assert uni.column("split") == ["train", "val"] and uni.column("camera") == ["c1", "c1"]
    assert uni.value("md5", 0) == file_md5(dataset / "data/npz/day1_line-a_s01/frame_0000.npz")



def test_cu3s_scan_with_sdk_double_and_sibling_coco(sdk, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    write_session(root / "day1/a.cu3s", 3)
    write_session(root / "day2/a.cu3s", 2)  # same name, other folder: distinct source
    (root / "day1/a.json").write_text(json.dumps({
        "images": [{"id": 0, "file_name": "0", "height": 4, "width": 5},
                   {"id": 2, "file_name": "2", "height": 4, "width": 5}],
        "annotations": [{"id": 1, "image_id": 2, "category_id": 7, "bbox": [0, 0, 1, 1],
                         "area": 1, "iscrowd": 0, "segmentation": [[0, 0, 1, 0, 1, 1]]}],
        "categories": [{"id": 7, "name": "scratch"}],
    }))
    cache = StatCache(tmp_path / "c.json")
    uni, metrics = enumerate_universe(opts(root, "cu3s", tmp_path, cache=cache))
    assert uni.uids() == [f"day1/a.cu3s#{i}" for i in range(3)] + ["day2/a.cu3s#0",
                                                                    "day2/a.cu3s#1"]
    assert uni.category_ids[2] == (7,) and uni.category_ids[0] == ()
    assert uni.value("annotation", 0) == "sessions/day1/a.json"
    assert uni.value("annotation", 3) == "" and uni.value("tags", 3) == "unlabeled"
    assert metrics["categories"] == {"scratch": 7}
    opened = [c for c in sdk.CALLS if c[0] == "SessionFile"]
    assert len(opened) == 2
    sdk.CALLS.clear()
    enumerate_universe(opts(root, "cu3s", tmp_path, cache=StatCache(tmp_path / "c.json")))
    assert not [c for c in sdk.CALLS if c[0] == "SessionFile"]  # counts came from the cache
    abs_uni, _ = enumerate_universe(opts(root, "cu3s", tmp_path, absolute_sources=True))
    assert abs_uni.source_names[0] == (root / "day1/a.cu3s").resolve().as_posix()


def test_cu3s_without_sdk_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "cuvis", None)  # import fails, as without libcuvis
    write_session(tmp_path / "s/a.cu3s", 1)
    with pytest.raises(DvcCuvisError, match=r"needs Cubert's cuvis SDK.*dvc-cuvis\[cu3s\]"):
        enumerate_universe(opts(tmp_path / "s", "cu3s", tmp_path))


def test_all_npz_run_never_imports_cuvis(dataset: Path) -> None:
    import subprocess

    code = (
        "import sys; from pathlib import Path; from dvc_cuvis.sources import EnumerateOptions, "
        "enumerate_universe; "
        f"enumerate_universe(EnumerateOptions(format='npz', root=Path({str(dataset)!r})/'data/npz',"
        f" out_dir=Path({str(dataset)!r}))); "
        "print('cuvis' in sys.modules, 'tifffile' in sys.modules, 'pycocotools' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False False"


def test_bad_inputs(dataset: Path, tmp_path: Path) -> None:
    with pytest.raises(DvcCuvisError, match="dataset root not found"):
        enumerate_universe(opts(tmp_path / "nope", "npz", tmp_path))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DvcCuvisError, match="no samples found"):
        enumerate_universe(opts(empty, "npz", tmp_path))
    bad = tmp_path / "bad"
    shutil.copytree(dataset / "data/tiff", bad)
    from PIL import Image

    Image.fromarray(np.zeros((3, 3), np.uint8)).save(bad / "labels/day1_line-a_s01_f000.png")
    with pytest.raises(DvcCuvisError, match=r"label shape \(3, 3\) does not match cube"):
        enumerate_universe(opts(bad, "tiff", tmp_path))
    shutil.copy(bad / "images/day1_line-a_s01_f001.tif", bad / "images/day1_line-a_s01_f001.tiff")
    with pytest.raises(DvcCuvisError, match="duplicate TIFF stem 'day1_line-a_s01_f001'"):
        enumerate_universe(opts(bad, "tiff", tmp_path))
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "x.npz").write_bytes(b"not a zip")
    with pytest.raises(DvcCuvisError, match=r"x\.npz: not a readable npz frame"):
        enumerate_universe(opts(junk, "npz", tmp_path))


def test_unreadable_coco_is_named(sdk, tmp_path: Path) -> None:
    root = tmp_path / "s"
    write_session(root / "a.cu3s", 1)
    (root / "a.json").write_text("{broken")
    with pytest.raises(DvcCuvisError, match=r"a.json:1:2: not valid JSON"):
        enumerate_universe(opts(root, "cu3s", tmp_path))


def test_enumerate_cli_writes_csv_and_metrics(dataset: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(dataset)
    r = cli("enumerate", "--format", "npz", "--root", "data/npz", "--out", "u.csv",
            "--metrics", "m/u.json", "--stat-cache", "none")
    assert r.code == 0, r.err
    uni = read_universe(dataset / "u.csv")
    assert json.loads((dataset / "m/u.json").read_text())["universe_hash"] == uni.hash
    data = (dataset / "u.csv").read_bytes()
    assert b"\r" not in data and str(dataset).encode() not in data
    r = cli("enumerate", "--format", "npz", "--root", "missing", "--stat-cache", "none")
    assert r.code == 2 and "dataset root not found" in r.err
    r = cli("enumerate", "--root", "data/npz")
    assert r.code == 2 and "needs --format and --root" in r.err


@pytest.mark.parametrize("pad, threaded", [(0, False), (256 << 10, True)],
                         ids=["small files: one thread", "large files: threads"])
def test_small_files_are_read_on_one_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            pad: int, threaded: bool) -> None:
    """Reading a small frame is mostly parsing (interpreter lock held): threads only contend
    there, so the scan uses one; large frames are mostly hashing, which threads overlap."""
    import dvc_cuvis.sources._common as common

    rng = np.random.default_rng(7)
    root = tmp_path / "npz"
    root.mkdir()
    for i in range(80):  # more than the 64 misses from which a pool is used at all
        np.savez(root / f"f{i:03d}.npz", cube=rng.random((2, 2, 3)).astype(np.float32),
                 wavelengths=np.arange(3, dtype=np.int32), source=np.array(f"s{i // 10}"),
                 pad=np.zeros(pad, np.uint8) + i)
    pools: list[int] = []
    real = common.ThreadPoolExecutor

    def spy(max_workers: int) -> object:
        pools.append(max_workers)
        return real(max_workers=max_workers)

    monkeypatch.setattr(common, "ThreadPoolExecutor", spy)
    uni, _ = enumerate_universe(opts(root, "npz", tmp_path, cache=StatCache(None), jobs=4))
    assert pools == ([4] if threaded else [])
    assert len(uni) == 80
    assert uni.column("md5") == [file_md5(root / f"f{i:03d}.npz") for i in range(80)]
