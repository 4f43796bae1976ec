"""Each documented flag, passed on the command line, does what docs/cli.md says.

The library behind most of these is tested elsewhere; these tests close the gap between a flag
and its library option (a flag wired to the wrong option, or not at all, fails here).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe_io import read_universe
from tests.helpers.files import write_session
from tests.helpers.tiff import write_cube, write_label


def _universe(path: Path, sessions: int = 12, frames: int = 3) -> Path:
    rows = "".join(f"day{k:02d}.cu3s,0-{frames - 1}\n" for k in range(sessions))
    path.write_text("source,index\n" + rows)
    return path



def test_enumerate_tiff_images_and_labels_folders(cli, tmp_path: Path) -> None:
    root = tmp_path / "tiff"
    for stem in ("a", "b"):
        write_cube(root / "cubes" / f"{stem}.tif")
        write_label(root / "masks" / f"{stem}.png", value=1 if stem == "b" else 0)
    out = tmp_path / "universe.csv"
    r = cli("enumerate", "--no-params", "--format", "tiff", "--root", root, "--images", "cubes",
            "--labels", "masks", "--out", out)
    assert r.code == 0, r.err
    uni = read_universe(out)
    assert [s.split("/")[-1] for s in uni.source_names] == ["a.tif", "b.tif"]
    assert uni.category_ids[1] == (1,) and uni.category_ids[0] == ()
    # the default folder names (images/, labels/) do not exist here: a clear error, exit 2
    r = cli("enumerate", "--no-params", "--format", "tiff", "--root", root, "--out", out)
    assert r.code == 2 and "images" in r.err


def test_enumerate_cu3s_pattern_and_absolute_sources(cli, sdk, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    write_session(root / "day1/a.cu3s", 2)
    write_session(root / "day2/b.cu3s", 1)
    out = tmp_path / "u.csv"
    r = cli("enumerate", "--no-params", "--format", "cu3s", "--root", root,
            "--pattern", "day2/*.cu3s", "--out", out)
    assert r.code == 0, r.err
    assert read_universe(out).uids() == ["day2/b.cu3s#0"]
    r = cli("enumerate", "--no-params", "--format", "cu3s", "--root", root,
            "--absolute-sources", "--out", out)
    assert r.code == 0, r.err
    assert read_universe(out).source_names == [
        (root / "day1/a.cu3s").resolve().as_posix(), (root / "day2/b.cu3s").resolve().as_posix()]


def test_bake_predict_and_no_ranges(cli, tmp_path: Path) -> None:
    uni = _universe(tmp_path / "universe.csv")
    out = tmp_path / "s.json"
    r = cli("bake", "--no-params", "--universe", uni, "--out", out, "--predict", "test")
    assert r.code == 0, r.err
    cfg = load_splits(out)
    assert cfg.predict == cfg.test and cfg.predict
    text = out.read_text()
    assert '"0-2"' in text  # ids compacted by default
    r = cli("bake", "--no-params", "--universe", uni, "--out", out, "--no-ranges")
    assert r.code == 0, r.err
    assert '"0-2"' not in out.read_text() and not load_splits(out).predict


def test_bake_from_csv_takes_the_split_column(cli, tmp_path: Path) -> None:
    csv = tmp_path / "universe.csv"
    csv.write_text("source,index,split\n" + "".join(
        f"s{k}.cu3s,0,{('train', 'val', 'test')[k % 3]}\n" for k in range(6)))
    out = tmp_path / "s.json"
    r = cli("bake", "--no-params", "--universe", csv, "--out", out, "--from-csv")
    assert r.code == 0, r.err
    cfg = load_splits(out)
    sources = {name: sorted(sel.source for sel in getattr(cfg, name)) for name in
               ("train", "val", "test")}
    assert sources == {"train": ["s0.cu3s", "s3.cu3s"], "val": ["s1.cu3s", "s4.cu3s"],
                       "test": ["s2.cu3s", "s5.cu3s"]}


def test_bake_rule_freezes_live_selectors(cli, tmp_path: Path) -> None:
    uni = _universe(tmp_path / "universe.csv", sessions=4)
    rule = tmp_path / "rule.json"
    rule.write_text(json.dumps({
        "train": [{"kind": "files", "paths": ["day00.cu3s", "day01.cu3s"]}],
        "val": [{"kind": "files", "paths": ["day02.cu3s"]}],
        "test": [{"kind": "files", "paths": ["day03.cu3s"]}],
    }))
    out = tmp_path / "s.json"
    r = cli("bake", "--no-params", "--universe", uni, "--out", out, "--rule", rule)
    assert r.code == 0, r.err
    cfg = load_splits(out)
    assert {sel.kind.value for sel in cfg.train} == {"file_indices"}
    assert sorted(sel.source for sel in cfg.train) == ["day00.cu3s", "day01.cu3s"]
    assert cfg.universe_hash == read_universe(uni).hash


def test_bake_base_allow_removed(cli, tmp_path: Path) -> None:
    uni = _universe(tmp_path / "universe.csv")
    base = tmp_path / "base.json"
    assert cli("bake", "--no-params", "--universe", uni, "--out", base).code == 0
    _universe(uni, sessions=11)  # a session was removed from the data
    out = tmp_path / "s.json"
    r = cli("bake", "--no-params", "--universe", uni, "--out", out, "--base", base)
    assert r.code != 0 and "--allow-removed" in r.err and not out.exists()
    r = cli("bake", "--no-params", "--universe", uni, "--out", out, "--base", base,
            "--allow-removed")
    assert r.code == 0, r.err
    assert "day11.cu3s" not in out.read_text()


def test_materialize_processing_mode_and_references(cli, sdk, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "c").mkdir(parents=True)
    (root / "c/noref.cu3s").write_text(json.dumps({"measurements": 1, "height": 2, "width": 2,
                                                  "bands": 2, "seed": 3, "references": []}))
    uni = tmp_path / "universe.csv"
    assert cli("enumerate", "--no-params", "--format", "cu3s", "--root", root,
               "--out", uni).code == 0
    args = ("materialize", "--no-params", "--universe", uni, "--select", "all")
    r = cli(*args, "--out-dir", tmp_path / "o1")
    assert r.code == 2 and "Reflectance needs White and Dark references" in r.err
    white, dark = tmp_path / "white.cu3s", tmp_path / "dark.cu3s"
    write_session(white, 1)
    write_session(dark, 1)
    r = cli(*args, "--out-dir", tmp_path / "o2", "--white-ref", f"{white}:0", "--dark-ref", dark)
    assert r.code == 0, r.err
    r = cli(*args, "--out-dir", tmp_path / "o3", "--processing-mode", "none")
    assert r.code == 0, r.err
    (frame,) = (tmp_path / "o3/frames").rglob("*.npz")
    counts = np.random.default_rng([3, 0]).integers(0, 4096, size=(2, 2, 2))
    with np.load(frame) as z:
        assert np.array_equal(z["cube"], counts.astype(np.float32))  # raw counts, unscaled
    (refl,) = (tmp_path / "o2/frames").rglob("*.npz")
    with np.load(refl) as z:
        assert z["cube"].max() <= 1.0


def test_check_lock_and_data_dir(cli, tmp_path: Path) -> None:
    uni = _universe(tmp_path / "universe.csv", sessions=6)
    splits = tmp_path / "splits.json"
    assert cli("bake", "--no-params", "--universe", uni, "--out", splits).code == 0
    lock = tmp_path / "dvc.lock"
    lock.write_text("schema: '2.0'\nstages: {bake: {cmd: x\n")  # not YAML
    r = cli("check", "--no-params", "--universe", uni, "--splits", splits, "--lock", lock)
    assert r.code != 0 and "dvc.lock" in (r.out + r.err)
    r = cli("check", "--no-params", "--universe", uni, "--splits", splits, "--no-lock")
    assert r.code == 0, r.out + r.err
    # a {DATA_DIR}-tokenized split (as the GUI writes it) checks against --data-dir
    doc = json.loads(splits.read_text())
    for stage in ("train", "val", "test"):
        for sel in doc[stage]:
            sel["source"] = "{DATA_DIR}/" + sel["source"]
    absolute = tmp_path / "abs.csv"
    absolute.write_text("source,index\n" + "".join(
        f"/data/day{k:02d}.cu3s,0-2\n" for k in range(6)))
    doc["universe_hash"] = None
    tokenized = tmp_path / "tok.json"
    tokenized.write_text(json.dumps(doc))
    r = cli("check", "--no-params", "--universe", absolute, "--splits", tokenized, "--no-lock",
            "--allow-unpinned", "--data-dir", "/data")
    assert r.code == 0, r.out + r.err
    r = cli("check", "--no-params", "--universe", absolute, "--splits", tokenized, "--no-lock",
            "--allow-unpinned", "--data-dir", "/elsewhere")
    assert r.code != 0


def test_export_labels_choice(cli, tmp_path: Path) -> None:
    csv = tmp_path / "universe.csv"
    csv.write_text("source,index,category_ids\n" + "".join(
        f"s{k:02d}.cu3s,0,{k % 3}\n" for k in range(12)))
    splits = tmp_path / "s.json"
    assert cli("bake", "--no-params", "--universe", csv, "--out", splits).code == 0
    r = cli("export", "--no-params", "--to", "glovita", "--universe", csv, "--splits", splits,
            "--out-dir", tmp_path / "gv", "--labels", "categories")
    assert r.code == 0, r.err
    labels = json.loads((tmp_path / "gv/labels.json").read_text())
    assert labels["s02.cu3s#0"] == [2] and labels["s03.cu3s#0"] == [0]  # ids, not 0/1
    r = cli("export", "--no-params", "--to", "glovita", "--universe", csv, "--splits", splits,
            "--out-dir", tmp_path / "gv2", "--labels", "none")
    assert r.code == 0, r.err
    assert not (tmp_path / "gv2/labels.json").exists()


def test_report_title(cli, tmp_path: Path) -> None:
    uni = _universe(tmp_path / "universe.csv", sessions=6)
    splits = tmp_path / "s.json"
    assert cli("bake", "--no-params", "--universe", uni, "--out", splits).code == 0
    out = tmp_path / "r.html"
    r = cli("report", "--no-params", "--universe", uni, "--splits", splits, "--out", out,
            "--title", "Spectra <day 3>", "--no-check")
    assert r.code == 0, r.err
    html = out.read_text()
    assert "Spectra &lt;day 3&gt;" in html and "Spectra <day 3>" not in html
