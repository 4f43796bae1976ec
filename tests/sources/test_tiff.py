"""TIFF cubes: identity as upstream's ``TiffPairedDataModule`` (whole-file samples, uid =
source), the round trip through universe.csv / bake / materialize, and every bad-input path
through the real CLI (one line naming the file, exit 2)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from cuvis_ai_schemas.training.data import DataSplitConfig, SampleRef, Selector

from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import format_universe, parse_universe_bytes, read_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from examples.generate import generate
from tests.helpers.cli import Run, run_forked, run_subprocess

tifffile = pytest.importorskip("tifffile")
Image = pytest.importorskip("PIL.Image")
upstream_tiff = pytest.importorskip("cuvis_ai_dataloader.data.datamodule_tiff_paired")
from cuvis_ai_core.data.selectors import resolve_selectors  # noqa: E402
from cuvis_ai_core.data.splits_io import universe_hash as upstream_hash  # noqa: E402

from tests.helpers.tiff import WL, gdal_xml, scrap_folder, write_cube, write_label  # noqa: E402


def ours(root: Path, **kw) -> Universe:
    uni, _ = enumerate_universe(EnumerateOptions(format="tiff", root=root, out_dir=root, **kw))
    return uni


def upstream_refs(images_dir: str, labels_dir: str | None = None) -> list[SampleRef]:
    dm = upstream_tiff.TiffPairedDataModule(images_dir=images_dir, labels_dir=labels_dir)
    return dm.enumerate()


# -- identity as upstream ---------------------------------------------------------------------


def test_tiff_uids_and_hash_equal_upstream_tiff_paired(tmp_path: Path, monkeypatch) -> None:
    root = scrap_folder(tmp_path / "tiff_dataset_dir")
    monkeypatch.chdir(root)  # upstream's source is str(images_dir / name): relative to cwd
    refs = upstream_refs("images", "labels")
    uni = ours(root)
    assert [r.uid for r in refs] == uni.uids()
    assert uni.uids()[0] == "images/scrap 04.tif" and "#" not in "".join(uni.uids())
    assert uni.hash == upstream_hash(refs)
    assert [r.index for r in refs] == uni.ref_indices() == [None] * 5
    assert [r.stem for r in refs] == uni.stems
    # the annotation is set exactly where upstream pairs a PNG
    assert [bool(r.annotation) for r in refs] == [bool(a) for a in uni.column("annotation")]


def test_absolute_tiff_sources_equal_upstream(tmp_path: Path) -> None:
    root = scrap_folder(tmp_path.resolve() / "ds")
    refs = upstream_refs(str(root / "images"))
    uni = ours(root, absolute_sources=True)
    assert uni.uids() == [r.uid for r in refs]
    assert uni.uids()[1] == f"{root}/images/scrap_01.tif"
    assert uni.hash == upstream_hash(refs)


def test_tiff_universe_csv_writes_empty_index_and_round_trips(tmp_path: Path) -> None:
    root = scrap_folder(tmp_path / "ds")
    uni = ours(root)
    text = format_universe(uni)
    assert text.splitlines()[2].startswith("images/scrap_01.tif,,")
    again = parse_universe_bytes(text.encode())
    assert again.uids() == uni.uids() and again.hash == uni.hash
    assert format_universe(again) == text


def test_enumerate_cli_pins_upstream_hash(tmp_path: Path, monkeypatch) -> None:
    root = scrap_folder(tmp_path / "ds")
    r = run_subprocess("enumerate", "--format", "tiff", "--root", root, "--out",
                       root / "universe.csv", "--metrics", root / "m.json", "--no-params")
    assert r.code == 0, r.err
    monkeypatch.chdir(root)
    pinned = json.loads((root / "m.json").read_text())["universe_hash"]
    assert pinned == upstream_hash(upstream_refs("images"))


def test_bake_and_resolve_agree_with_upstream_on_tiff(tmp_path: Path, monkeypatch) -> None:
    root = scrap_folder(tmp_path / "ds")
    r = run_forked("enumerate", "--format", "tiff", "--root", root, "--out",
                       root / "universe.csv", "--no-params")
    assert r.code == 0, r.err
    r = run_forked("bake", "--universe", root / "universe.csv", "--out",
                       root / "splits.json", "--val-ratio", "0.2", "--test-ratio", "0.2",
                       "--no-params")
    assert r.code == 0, r.err
    cfg = load_splits(root / "splits.json")
    # a whole-file sample has no index: the split names it with a files selector
    kinds = {s.kind.value for st in (cfg.train, cfg.val, cfg.test) for s in st}
    assert kinds == {"files"}
    monkeypatch.chdir(root)
    refs = upstream_refs("images")
    assert cfg.universe_hash == upstream_hash(refs)
    res = resolve(cfg, read_universe(root / "universe.csv"))
    for stage in ("train", "val", "test"):
        theirs = [x.uid for x in resolve_selectors(getattr(cfg, stage), refs)]
        assert res.universe.uids(res.stages[stage]) == theirs


def test_file_indices_never_match_a_whole_file_sample(tmp_path: Path, monkeypatch) -> None:
    """Upstream compares ``ref.index in ids``: None is never in it, so zero match."""
    root = scrap_folder(tmp_path / "ds")
    uni = ours(root)
    monkeypatch.chdir(root)
    refs = upstream_refs("images")
    sel = Selector(kind="file_indices", source="images/scrap_01.tif", ids=[0])
    with pytest.raises(ValueError, match="matched 0"):
        resolve_selectors([sel], refs)
    cfg = DataSplitConfig(train=[sel])
    with pytest.raises(ValueError, match=r"0 samples|matched no|no sample"):
        resolve(cfg, uni)
    both = DataSplitConfig(train=[Selector(kind="dir_indices", ids=[1, 3])])
    res = resolve(both, uni)
    assert res.universe.uids(res.stages["train"]) == [
        x.uid for x in resolve_selectors(both.train, refs)]


def test_materialized_tiff_frames_load_in_npz_multi(tmp_path: Path) -> None:
    """The npz universe speaks npz_multi (an integer index per row: the cube's read position
    0); its sources — and so the split's files selectors — are the raw universe's."""
    root = scrap_folder(tmp_path / "ds")
    assert run_forked("enumerate", "--format", "tiff", "--root", root, "--out",
                          root / "universe.csv", "--no-params").code == 0
    assert run_forked("bake", "--universe", root / "universe.csv", "--out",
                          root / "splits.json", "--val-ratio", "0.2", "--test-ratio", "0.2",
                          "--no-params").code == 0
    r = run_forked("materialize", "--universe", root / "universe.csv", "--splits",
                       root / "splits.json", "--out-dir", root / "npz", "--no-params")
    assert r.code == 0, r.err
    raw, npz = read_universe(root / "universe.csv"), read_universe(root / "npz/universe.csv")
    assert npz.source_names == raw.source_names and npz.indexless is None
    assert npz.uids() == [f"{s}#0" for s in raw.source_names]
    cfg = load_splits(root / "npz/splits.json")
    assert cfg.universe_hash == npz.hash  # re-pinned to the universe it resolves against
    a, b = resolve(load_splits(root / "splits.json"), raw), resolve(cfg, npz)
    for stage in ("train", "val", "test"):
        assert [raw.source(p) for p in a.stages[stage]] == [npz.source(p) for p in b.stages[stage]]
    p = raw.uids().index("images/scrap_01.tif")
    with np.load(root / "npz" / npz.value("materialized_path", p)) as z:
        cube = tifffile.imread(root / "images/scrap_01.tif")
        assert np.array_equal(z["cube"], np.transpose(cube, (1, 2, 0)).astype(np.float32))
        assert z["wavelengths"].tolist() == list(WL)
        assert str(z["source"]) == "images/scrap_01.tif"
    pytest.importorskip("pytorch_lightning")
    from cuvis_ai_dataloader.data.datamodule_npz_multi import MultiNpzDataModule

    dm = MultiNpzDataModule(universe_csv=str(root / "npz/universe.csv"), splits=cfg)
    dm.setup("fit")
    assert len(dm.train_dataloader().dataset) == len(b.stages["train"])


def test_example_generator_tiffs_are_whole_file_samples(tmp_path: Path, monkeypatch) -> None:
    generate(tmp_path / "data", sessions=2, frames=2, size=(8, 8), bands=4, seed=3)
    root = tmp_path / "data/tiff"
    uni = ours(root)
    monkeypatch.chdir(root)
    refs = upstream_refs("images", "labels")
    assert uni.uids() == [r.uid for r in refs] and uni.hash == upstream_hash(refs)


# -- bad input through the real CLI -----------------------------------------------------------


def enumerate_cli(root: Path, *extra: str) -> Run:
    return run_forked("enumerate", "--format", "tiff", "--root", root, "--out",
                          root / "universe.csv", "--no-params", *extra)


def materialize_cli(root: Path) -> Run:
    return run_forked("materialize", "--universe", root / "universe.csv", "--out-dir",
                          root / "npz", "--select", "all", "--no-params")


def past_the_door(root: Path) -> None:
    """The universe.csv enumerate would write if its door let every cube in (as a universe
    written by hand or by an older version may): materialize's own errors still name them."""
    (root / "universe.csv").write_text(format_universe(ours(root, verify=False)))


def assert_one_line_error(r: Run, *needles: str) -> None:
    assert r.code == 2, (r.code, r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dvc-cuvis: error: "), r.err
    assert "Traceback" not in r.err and "internal error" not in r.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_corrupt_tiff_is_named(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write_cube(root / "images/good.tif")
    (root / "images/broken.tif").write_bytes(b"II*\x00" + b"\xff" * 40)
    write_label(root / "labels/broken.png", value=1)  # the label makes enumerate read the cube
    assert_one_line_error(enumerate_cli(root), "broken.tif", "not a readable TIFF")
    (root / "labels/broken.png").unlink()
    # unlabeled, it is read all the same: the door reads every cube once
    assert_one_line_error(enumerate_cli(root), "broken.tif", "not a readable TIFF")
    past_the_door(root)
    assert_one_line_error(materialize_cli(root), "broken.tif", "not a readable TIFF")
    assert not list((root / "npz").glob("frames/**/*.npz")) if (root / "npz").exists() else True


def test_truncated_tiff_is_named(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write_cube(root / "images/cut.tif", h=32, w=32)
    data = (root / "images/cut.tif").read_bytes()
    (root / "images/cut.tif").write_bytes(data[: len(data) // 2])
    assert_one_line_error(enumerate_cli(root), "cut.tif", "1 of 1 TIFF cubes")
    past_the_door(root)
    assert_one_line_error(materialize_cli(root), "cut.tif")


def test_label_shape_mismatch_names_both(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write_cube(root / "images/a.tif", h=6, w=5)
    write_label(root / "labels/a.png", h=5, w=6, value=2)
    assert_one_line_error(enumerate_cli(root), "a.png", "(5, 6)", "a.tif", "(6, 5)")


def test_label_without_cube_is_named(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write_cube(root / "images/a.tif")
    write_label(root / "labels/orphan.png")
    assert_one_line_error(enumerate_cli(root), "orphan.png", "no cube")


def test_missing_label_file_at_materialize_is_named(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write_cube(root / "images/a.tif")
    write_label(root / "labels/a.png", value=1)
    assert enumerate_cli(root).code == 0
    (root / "labels/a.png").unlink()
    assert_one_line_error(materialize_cli(root), "labels/a.png", "not found", "images/a.tif")


def test_unreadable_label_png_is_named(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write_cube(root / "images/a.tif")
    (root / "labels").mkdir()
    (root / "labels/a.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    assert_one_line_error(enumerate_cli(root), "a.png", "not a readable PNG")


def test_missing_wavelengths_are_named(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write_cube(root / "images/nowl.tif", wl=None)
    assert_one_line_error(enumerate_cli(root), "nowl.tif", "wavelength")
    past_the_door(root)
    assert_one_line_error(materialize_cli(root), "nowl.tif", "wavelength")


def test_wavelength_count_mismatch_is_named(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    path = root / "images/odd.tif"
    path.parent.mkdir(parents=True)
    cube = np.zeros((4, 6, 5), dtype=np.uint16)
    tifffile.imwrite(path, cube, photometric="minisblack", planarconfig="separate",
                     extratags=[(42112, "s", 0, gdal_xml((1, 2, 3)), True)])
    assert_one_line_error(enumerate_cli(root), "odd.tif", "wavelength count 3 != band count 4")
    past_the_door(root)
    assert_one_line_error(materialize_cli(root), "odd.tif", "wavelength count 3 != band count 4")


def test_unparsable_wavelengths_are_named(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    path = root / "images/text.tif"
    path.parent.mkdir(parents=True)
    tifffile.imwrite(path, np.zeros((2, 6, 5), dtype=np.uint16), photometric="minisblack",
                     planarconfig="separate",
                     extratags=[(42112, "s", 0, gdal_xml(()).replace("{}", "{red,green}"),
                                 True)])
    assert_one_line_error(enumerate_cli(root), "text.tif", "wavelength")
    past_the_door(root)
    assert_one_line_error(materialize_cli(root), "text.tif", "wavelength")


def test_missing_images_folder_is_named_and_a_file_not_found(tmp_path: Path) -> None:
    from dvc_cuvis.errors import DvcCuvisError

    (tmp_path / "ds").mkdir()
    assert_one_line_error(enumerate_cli(tmp_path / "ds"), "images", "not found")
    with pytest.raises(FileNotFoundError) as info:
        ours(tmp_path / "ds")
    assert isinstance(info.value, DvcCuvisError)


def test_duplicate_stem_across_extensions_is_named(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write_cube(root / "images/a.tif")
    write_cube(root / "images/a.tiff")
    assert_one_line_error(enumerate_cli(root), "duplicate TIFF stem", "a.tif", "a.tiff")


def test_no_partial_frame_after_a_bad_cube(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write_cube(root / "images/a.tif")
    write_cube(root / "images/b.tif", wl=None)
    assert_one_line_error(enumerate_cli(root), "b.tif")
    past_the_door(root)
    assert_one_line_error(materialize_cli(root), "b.tif")
    out = root / "npz"
    leftovers = sorted(p.name for p in out.rglob("*") if p.is_file()) if out.exists() else []
    assert not [n for n in leftovers if n.endswith(".tmp")]
    assert not (out / "universe.csv").exists()
    assert os.path.exists(root / "universe.csv")
