"""The synthetic example-dataset generator: determinism, idempotence, formats, CLI."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from examples.generate import CATEGORIES, generate, main, session_names

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "generate.py"
WAVELENGTH_RE = re.compile(r'<Item name="wavelength"[^>]*>\{([^}]+)\}')
SMALL = {"sessions": 4, "frames": 4, "size": (12, 10), "bands": 5, "seed": 3}


def digests(root: Path) -> list[tuple[str, str]]:
    """Sorted (posix relpath, sha256) of every file under ``root``."""
    return sorted(
        (p.relative_to(root).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
        for p in root.rglob("*") if p.is_file()
    )


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("ds") / "out"
    summary = generate(out, sessions=6, frames=8, size=(16, 16), bands=16, seed=0)
    return out, summary


def test_default_layout_and_size(dataset: tuple[Path, dict]) -> None:
    out, summary = dataset
    names = session_names(6)
    assert names[:3] == ["day1_line-a_s01", "day1_line-b_s02", "day2_line-a_s03"]
    assert summary["sessions"] == names and summary["frames"] == 48
    files = {rel for rel, _ in digests(out)}
    assert len(files) == summary["files"] == 2 + 6 * (3 * 8 + 1)
    for s in names:
        assert f"tiff/images/{s}_f007.tif" in files
        assert f"tiff/labels/{s}_f000.png" in files
        assert f"npz/{s}/frame_0007.npz" in files
        assert f"npz/annotations/{s}.json" in files
    for rel in ("tiff/categories.json", "npz/categories.json"):
        assert json.loads((out / rel).read_text()) == {"categories": CATEGORIES}
    assert summary["bytes"] == sum((out / f).stat().st_size for f in files) < 3_000_000
    # about a third of the sessions are fully normal, the others mixed
    anomalous = {s: 0 for s in names}
    for s in names:
        coco = json.loads((out / f"npz/annotations/{s}.json").read_text())
        anomalous[s] = len({a["image_id"] for a in coco["annotations"]})
    normal = [s for s, n in anomalous.items() if n == 0]
    assert len(normal) == 2 and all(0 < n < 8 for s, n in anomalous.items() if s not in normal)
    # every category occurs
    cats = set()
    for s in names:
        cats |= {a["category_id"] for a in
                 json.loads((out / f"npz/annotations/{s}.json").read_text())["annotations"]}
    assert cats == {1, 2, 3}


def test_deterministic_across_output_paths(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "deeper" / "b"
    generate(a, **SMALL)
    generate(b, **SMALL)
    assert digests(a) == digests(b)
    for p in a.rglob("*"):
        if p.is_file():
            assert str(tmp_path).encode() not in p.read_bytes()
    # the seed matters
    generate(tmp_path / "c", **{**SMALL, "seed": 4})
    assert digests(tmp_path / "c") != digests(a)


def test_idempotent_and_removes_stale_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = generate(out, **SMALL)
    before = digests(out)
    (out / "npz" / "stray.npz").write_bytes(b"x")
    (out / "tiff" / "images" / ".half.tif.tmp").write_bytes(b"x")
    (out / "keep.txt").write_text("user file\n")
    again = generate(out, **SMALL)
    assert again["written"] == 0 and again["unchanged"] == first["files"]
    assert again["removed"] == 2
    assert digests(out) == sorted([*before, ("keep.txt", digests(out)[0][1])])
    # fewer sessions: the dropped sessions' files and folders disappear
    fewer = generate(out, **{**SMALL, "sessions": 2})
    assert fewer["removed"] > 0
    kept = {rel for rel, _ in digests(out)}
    dropped = session_names(4)[2:]
    assert not any(s in rel for rel in kept for s in dropped)
    assert not any((out / "npz" / s).exists() for s in dropped)
    assert "keep.txt" in kept
    fresh = tmp_path / "fresh"
    generate(fresh, **{**SMALL, "sessions": 2})
    assert [d for d in digests(out) if d[0] != "keep.txt"] == digests(fresh)


def test_extra_sessions_keep_base_bytes(tmp_path: Path) -> None:
    base, more = tmp_path / "base", tmp_path / "more"
    generate(base, **{**SMALL, "sessions": 3})
    summary = generate(more, **{**SMALL, "sessions": 3}, extra_sessions=3)
    base_d, more_d = dict(digests(base)), dict(digests(more))
    assert all(more_d.get(rel) == h for rel, h in base_d.items())
    names = summary["sessions"]
    assert names[:3] == session_names(3)
    assert names[3:] == ["day3_line-a_s04", "day3_line-b_s05", "day4_line-a_s06"]
    base_days = {n.split("_")[0] for n in names[:3]}
    assert not base_days & {n.split("_")[0] for n in names[3:]}
    new = set(more_d) - set(base_d)
    assert new and all(any(n in rel for n in names[3:]) for rel in new)


def test_tiff_cube_and_png_labels(dataset: tuple[Path, dict]) -> None:
    tifffile = pytest.importorskip("tifffile")
    from PIL import Image

    out, _ = dataset
    s = "day1_line-b_s02"
    expected_wl = np.linspace(450, 900, 16)
    seen: set[int] = set()
    for k in range(8):
        with tifffile.TiffFile(out / f"tiff/images/{s}_f{k:03d}.tif") as tf:
            series = tf.series[0]
            raw = series.asarray()
            assert series.axes == "SYX"
            page = tf.pages[0]
            gdal = page.tags["GDAL_METADATA"].value
            assert "Software" not in page.tags and "DateTime" not in page.tags
        assert raw.shape == (16, 16, 16) and raw.dtype == np.float32
        m = WAVELENGTH_RE.search(gdal)
        assert m is not None
        wl = np.array([float(v) for v in m.group(1).split(",")])
        np.testing.assert_array_equal(wl, expected_wl)
        cube = np.transpose(raw, (1, 2, 0))
        assert cube.min() >= 0.0 and cube.max() <= 1.0
        with Image.open(out / f"tiff/labels/{s}_f{k:03d}.png") as img:
            assert img.mode == "L" and img.size == (16, 16)
            assert not ({"tIME"} & set(getattr(img, "info", {})))
            label = np.asarray(img)
        ids = set(np.unique(label).tolist())
        assert ids <= {0, 1, 2, 3}
        seen |= ids
        # the same frame in the npz layout holds the same data
        z = np.load(out / f"npz/{s}/frame_{k:04d}.npz", allow_pickle=False)
        np.testing.assert_array_equal(z["cube"], cube)
        np.testing.assert_array_equal(z["class_mask"], label)
        # defect pixels carry a visibly different spectrum
        background = cube[label == 0].mean(0)
        for cat in set(np.unique(label).tolist()) - {0}:
            assert np.abs(cube[label == cat].mean(0) - background).max() > 0.1
    assert seen > {0}


def test_npz_frames(dataset: tuple[Path, dict]) -> None:
    out, _ = dataset
    for s in session_names(6):
        for k in range(8):
            with np.load(out / f"npz/{s}/frame_{k:04d}.npz", allow_pickle=False) as z:
                assert z.files == ["cube", "wavelengths", "mask", "class_mask", "source"]
                cube, cm = z["cube"], z["class_mask"]
                assert cube.shape == (16, 16, 16) and cube.dtype == np.float32
                assert z["wavelengths"].dtype == np.int32
                assert z["wavelengths"].tolist() == list(range(450, 901, 30))
                assert cm.shape == (16, 16) and cm.dtype == np.uint8
                assert z["mask"].dtype == np.int32
                np.testing.assert_array_equal(z["mask"], (cm > 0).astype(np.int32))
                assert z["source"].shape == () and str(z["source"]) == f"npz/{s}"


@pytest.mark.filterwarnings("ignore::DeprecationWarning:pycocotools")
def test_coco_matches_class_masks(dataset: tuple[Path, dict]) -> None:
    pytest.importorskip("pycocotools")
    from pycocotools.coco import COCO

    out, _ = dataset
    for s in session_names(6):
        data = json.loads((out / f"npz/annotations/{s}.json").read_text())
        coco = COCO()
        coco.dataset = data
        coco.createIndex()
        assert sorted(coco.getCatIds()) == [1, 2, 3]
        assert [im["file_name"] for im in data["images"]] == [f"frame_{k:04d}" for k in
                                                              range(8)]
        for img in data["images"]:
            cm = np.load(out / f"npz/{s}/{img['file_name']}.npz")["class_mask"]
            assert (img["height"], img["width"]) == cm.shape
            rebuilt = np.zeros_like(cm)
            for ann in coco.loadAnns(coco.getAnnIds(imgIds=[img["id"]])):
                m = coco.annToMask(ann).astype(bool)
                assert ann["iscrowd"] == 0 and ann["area"] == m.sum()
                x, y, w, h = ann["bbox"]
                assert m[y:y + h, x:x + w].all() and m.sum() == w * h
                assert not rebuilt[m].any()  # defects do not overlap
                rebuilt[m] = ann["category_id"]
            np.testing.assert_array_equal(rebuilt, cm)


@pytest.mark.parametrize(
    "args",
    [
        ["--sessions", "-1"],
        ["--sessions", "0"],
        ["--frames", "-2"],
        ["--extra-sessions", "-1"],
        ["--bands", "1"],
        ["--size", "4", "16"],
        ["--seed", "-1"],
        ["--bands", "x"],
    ],
)
def test_cli_bad_args_exit_2(tmp_path: Path, args: list[str],
                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        sys.exit(main(["--out", str(out), *args]))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err
    assert not out.exists()


def test_cli_subprocess(tmp_path: Path) -> None:
    bad = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "x"),
                          "--bands", "1"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    ok = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "y"),
                         "--sessions", "2", "--frames", "2", "--size", "8", "8",
                         "--bands", "3"], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "y/npz/day1_line-b_s02/frame_0001.npz").is_file()
    # --help works without tifffile / Pillow installed
    code = (
        "import runpy, sys\n"
        "sys.modules['tifffile'] = None; sys.modules['PIL'] = None\n"
        f"sys.argv = ['generate.py', '--help']\n"
        f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')\n"
    )
    helped = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=False)
    assert helped.returncode == 0 and "--extra-sessions" in helped.stdout
