"""TIFF cubes without a GDAL wavelength tag: ``--wavelengths`` / params ``enumerate.wavelengths``
(upstream's ``wavelengths_override``), from the flag and the params file to the npz frame,
checked at the door, and agreeing with upstream on upstream's own TIFF fixture."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.model.universe_io import read_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from tests.helpers.tiff import write_cube

tifffile = pytest.importorskip("tifffile")
Image = pytest.importorskip("PIL.Image")
upstream_tiff = pytest.importorskip("cuvis_ai_dataloader.data.datamodule_tiff_paired")
from cuvis_ai_core.data.splits_io import universe_hash as upstream_hash  # noqa: E402
from cuvis_ai_dataloader.data.readers.tiff_reader import TiffCubeReader  # noqa: E402

UPSTREAM_WL = [400.0, 410.0, 420.0, 430.0]


def upstream_fixture(root: Path) -> Path:
    """cuvis-ai-dataloader's ``tiff_dataset_dir`` fixture (tests/conftest.py), built the same
    way: two planar float32 cubes (4 x 8 x 6) with no GDAL tag, and RGB PNGs beside them."""
    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir()
    for stem in ("scrap_01", "scrap_02"):
        cube = (np.random.default_rng(0).random((4, 8, 6)) * 255).astype(np.float32)
        tifffile.imwrite(root / "images" / f"{stem}.tif", cube, photometric="minisblack",
                         planarconfig="separate")
        png = np.random.default_rng(1).integers(0, 255, (8, 6, 3)).astype(np.uint8)
        Image.fromarray(png, mode="RGB").save(root / "labels" / f"{stem}.png")
    return root


def one_error_line(r, *needles: str) -> str:
    assert r.code == 2, (r.code, r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.err, r.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_upstream_fixture_enumerates_and_materializes_as_upstream_reads_it(
        tmp_path: Path, cli, monkeypatch) -> None:
    root = upstream_fixture(tmp_path / "ds")
    out = ["--format", "tiff", "--root", root, "--out", root / "universe.csv", "--no-params",
           "--stat-cache", "none"]
    # without the option the door lists each cube, naming the flag and the params key
    r = cli("enumerate", *out)
    assert r.code == 2 and "Traceback" not in r.err, r.err
    for stem in ("scrap_01", "scrap_02"):
        line = next(x for x in r.err.splitlines() if f"{stem}.tif" in x)
        assert "--wavelengths" in line and "enumerate.wavelengths" in line, line
    r = cli("enumerate", *out, "--wavelengths", "400:430:4")  # START:STOP:COUNT
    assert r.code == 0, r.err
    uni = read_universe(root / "universe.csv")
    assert uni.column("wavelengths") == ["400;410;420;430"] * 2
    monkeypatch.chdir(root)  # upstream's source is str(images_dir / name): relative to cwd
    refs = upstream_tiff.TiffPairedDataModule(
        images_dir="images", labels_dir="labels", wavelengths="400,410,420,430").enumerate()
    assert uni.uids() == [r.uid for r in refs] == ["images/scrap_01.tif", "images/scrap_02.tif"]
    assert uni.hash == upstream_hash(refs)
    r = cli("materialize", "--universe", root / "universe.csv", "--out-dir", root / "npz",
            "--select", "all", "--no-params")
    assert r.code == 0, r.err
    npz = read_universe(root / "npz/universe.csv")
    theirs = TiffCubeReader(wavelengths_override=UPSTREAM_WL).read(root / "images/scrap_01.tif")
    with np.load(root / "npz" / npz.value("materialized_path", 0)) as z:
        assert z["wavelengths"].dtype == np.int32
        assert z["wavelengths"].tolist() == theirs["wavelengths"].tolist() == [400, 410, 420, 430]
        assert np.array_equal(z["cube"], theirs["cube"])


def test_params_list_and_comma_flag_give_the_same_universe(tmp_path: Path, cli,
                                                           monkeypatch) -> None:
    root = upstream_fixture(tmp_path / "ds")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(
        "enumerate:\n  format: tiff\n  root: ds\n  out: ds/universe.csv\n"
        "  stat_cache: none\n  wavelengths: [400, 410, 420.5, 430]\n")
    r = cli("enumerate")
    assert r.code == 0, r.err
    from_params = (root / "universe.csv").read_bytes()
    assert b",400;410;420.5;430\n" in from_params
    r = cli("enumerate", "--wavelengths", "400, 410,420.5,430")  # the flag wins over params
    assert r.code == 0, r.err
    assert (root / "universe.csv").read_bytes() == from_params
    # another list, another universe.csv: the stage downstream (materialize) reruns
    r = cli("enumerate", "--wavelengths", "500:530:4")
    assert r.code == 0, r.err
    assert (root / "universe.csv").read_bytes() != from_params


def test_option_wins_over_the_gdal_tag_as_upstream(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write_cube(root / "images/tagged.tif")  # GDAL tag 500..800
    opts = EnumerateOptions(format="tiff", root=root, out_dir=root,
                            wavelengths=(401.0, 402.0, 403.0, 404.0))
    uni, _ = enumerate_universe(opts)
    assert uni.column("wavelengths") == ["401;402;403;404"]
    from dvc_cuvis.sources.tiff import read_cube

    _, ours = read_cube(root / "images/tagged.tif", opts.wavelengths)
    theirs = TiffCubeReader(wavelengths_override=[401.0, 402.0, 403.0, 404.0]).read(
        root / "images/tagged.tif")["wavelengths"]
    assert ours.tolist() == theirs.tolist() == [401, 402, 403, 404]


@pytest.mark.parametrize(("value", "needles"), [
    ("400,nan,420,430", ("--wavelengths", "enumerate.wavelengths", "nan", "finite")),
    ("400,390,420,430", ("--wavelengths", "strictly increasing", "390")),
    ("0:1:4", ("--wavelengths", "outside")),
    ("400:430:x", ("--wavelengths", "COUNT")),
    ("400:430:0", ("--wavelengths", "COUNT")),
    ("400,abc", ("--wavelengths", "'abc'")),
    ("1:2:200001", ("--wavelengths", "over the ceiling", "DVC_CUVIS_MAX_BANDS")),
])
def test_bad_values_exit_2_naming_the_option(tmp_path: Path, cli, value: str,
                                             needles: tuple[str, ...]) -> None:
    root = upstream_fixture(tmp_path / "ds")
    r = cli("enumerate", "--format", "tiff", "--root", root, "--out", root / "u.csv",
            "--no-params", "--stat-cache", "none", "--wavelengths", value)
    one_error_line(r, *needles)
    assert not (root / "u.csv").exists()


def test_wrong_count_names_file_band_count_and_option(tmp_path: Path, cli) -> None:
    root = tmp_path / "ds"
    write_cube(root / "images/one.tif", wl=None)
    r = cli("enumerate", "--format", "tiff", "--root", root, "--out", root / "u.csv",
            "--no-params", "--stat-cache", "none", "--wavelengths", "400,410,420")
    one_error_line(r, "one.tif", "wavelength count 3 != band count 4", "--wavelengths",
                   "enumerate.wavelengths")


def test_params_value_that_is_not_a_list_of_numbers_is_refused(tmp_path: Path, cli,
                                                               monkeypatch) -> None:
    upstream_fixture(tmp_path / "ds")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(
        "enumerate:\n  format: tiff\n  root: ds\n  stat_cache: none\n"
        "  wavelengths: [400, true, 420, 430]\n")
    one_error_line(cli("enumerate"), "enumerate.wavelengths", "True")
