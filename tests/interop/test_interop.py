"""GloViTa / soma / index-array export and import: round trips, folds, checksums, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.interop import Folds
from dvc_cuvis.interop.glovita import export_glovita, import_glovita, labels_json
from dvc_cuvis.interop.indices import indices_bytes, read_indices
from dvc_cuvis.interop.soma import export_soma, original_id, read_soma, sample_id
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe, write_universe

STAGES3 = ("train", "val", "test")


def universe() -> Universe:
    return Universe.from_records(
        {"source": f"d{s % 3}/s{s:02d}.cu3s", "index": i,
         "materialized_path": f"frames/s{s:02d}_{i}.npz",
         "category_ids": "2" if (s + i) % 5 == 0 else "", "group": f"g{s % 6}"}
        for s in range(18) for i in range(3))


def folds_of(uni: Universe, k: int = 0) -> Folds:
    baked = bake(uni, BakeOptions(strategy="random", seed=5, folds=k, test_ratio=0.25))
    return Folds(uni, [{**b.stages, "predict": np.zeros(0, dtype=np.int64)} for b in baked])


def same(a: Folds, b: Folds) -> None:
    assert a.k == b.k
    for sa, sb in zip(a.splits, b.splits, strict=True):
        for stage in STAGES3:
            assert np.array_equal(np.sort(sa[stage]), np.sort(sb[stage])), stage


@pytest.mark.parametrize("k", [0, 4])
@pytest.mark.parametrize("id_column", ["uid", "materialized_path"])
def test_glovita_round_trip(k: int, id_column: str) -> None:
    uni = universe()
    folds = folds_of(uni, k)
    data = json.loads(json.dumps(export_glovita(folds, id_column=id_column)))
    if k:
        assert sorted(data) == ["0", "1", "2", "3", "test"]
    else:
        assert sorted(data) == ["test", "train", "val"]
    same(folds, import_glovita(data, uni, id_column=id_column))


def test_glovita_labels_and_errors() -> None:
    uni = universe()
    labels = labels_json(uni)
    assert labels["d0/s00.cu3s#0"] == 1 and labels["d0/s00.cu3s#1"] == 0
    assert labels_json(uni, mode="categories")["d0/s00.cu3s#0"] == [2]
    with pytest.raises(DvcCuvisError, match="id column 'source' is not unique"):
        export_glovita(folds_of(uni), id_column="source")
    bad = {"train": ["d0/s00.cu3s#0", "nope#1"], "val": [], "test": []}
    with pytest.raises(DvcCuvisError, match=r"train: 1 id\(s\) not in the universe: 'nope#1'"):
        import_glovita(bad, uni)
    with pytest.raises(DvcCuvisError, match=r"duplicate id 'd0/s00\.cu3s#0'"):
        import_glovita({"train": ["d0/s00.cu3s#0", "d0/s00.cu3s#0"]}, uni)
    with pytest.raises(DvcCuvisError, match=r"unknown split name\(s\) \['holdout'\]"):
        import_glovita({"holdout": []}, uni)
    with pytest.raises(DvcCuvisError, match="is in both train and test"):
        import_glovita({"train": ["d0/s00.cu3s#0"], "test": ["d0/s00.cu3s#0"]}, uni)
    with pytest.raises(DvcCuvisError, match=r"fold keys must be 0\.\.K-1"):
        import_glovita({"0": [], "2": []}, uni)
    with pytest.raises(DvcCuvisError, match="both fold keys and train/val"):
        import_glovita({"0": [], "train": []}, uni)


@pytest.mark.parametrize("k", [0, 3])
def test_soma_round_trip_and_ids(tmp_path: Path, k: int) -> None:
    uni = universe()
    folds = folds_of(uni, k)
    dataset_csv, splits_csv, identity = export_soma(folds)
    (tmp_path / "splits.csv").write_text(splits_csv)
    header = splits_csv.splitlines()[0]
    assert header == ("sample_id,split,fold" if k else "sample_id,split")
    assert all("/" not in line.split(",")[0] for line in splits_csv.splitlines()[1:])
    assert {line.split(",")[1] for line in splits_csv.splitlines()[1:]} <= {"train", "tune", "test"}
    same(folds, read_soma(tmp_path / "splits.csv", uni))
    assert dataset_csv.splitlines()[0].startswith("sample_id,image_path,label,patient_id,uid")
    assert set(identity) >= {"dataset_checksum", "test_checksum", "split_checksum"}
    for raw in ["a/b\\c%20#1", "x y/z", "100%/x"]:
        sid = sample_id(raw)
        assert "/" not in sid and "\\" not in sid and original_id(sid) == raw


def test_soma_identity_rules() -> None:
    uni = universe()
    folds = folds_of(uni)
    _, _, base = export_soma(folds)
    moved = Universe.from_records(
        {**{"source": s.source, "index": s.index}, **s.extra,
         "materialized_path": "elsewhere/" + s.extra["materialized_path"]} for s in uni)
    _, _, relocated = export_soma(Folds(moved, folds.splits))
    assert relocated["dataset_checksum"] == base["dataset_checksum"]  # storage location only
    test_pos = int(folds.splits[0]["test"][0])
    relabeled = Universe.from_records(
        {**{"source": s.source, "index": s.index}, **s.extra,
         "category_ids": "7" if s.position == test_pos else s.extra["category_ids"]}
        for s in uni)
    _, _, changed_test = export_soma(Folds(relabeled, folds.splits))
    assert changed_test["dataset_checksum"] == base["dataset_checksum"]
    assert changed_test["test_checksum"] != base["test_checksum"]
    swapped = [{**folds.splits[0], "train": folds.splits[0]["val"],
                "val": folds.splits[0]["train"]}]
    _, _, reassigned = export_soma(Folds(uni, swapped))
    assert reassigned["split_checksum"] != base["split_checksum"]


def test_soma_bad_inputs(tmp_path: Path) -> None:
    uni = universe()
    p = tmp_path / "splits.csv"
    cases = {
        "sample_id,split\nd0%2Fs00.cu3s#0,validation\n": "unknown split 'validation'",
        "sample_id,split,fold\nd0%2Fs00.cu3s#0,train,0\n": "fold 0 has no test split",
        "sample_id,split\nd0/s00.cu3s#0,test\n": "contains a path separator",
        "sample_id,split\nghost,test\n": "not in the universe: 'ghost'",
        "sample_id,split\nd0%2Fs00.cu3s#0,test\nd0%2Fs00.cu3s#0,test\n": "appears twice",
        "sample_id\nx\n": r"missing column\(s\) \['split'\]",
        "sample_id,split,fold\nd0%2Fs00.cu3s#0,test,x\n": "fold 'x' is not",
    }
    for text, message in cases.items():
        p.write_text(text)
        with pytest.raises(DvcCuvisError, match=message):
            read_soma(p, uni)
    p.write_text("sample_id,split\nd0%2Fs00.cu3s#0,test\nd0%2Fs00.cu3s#1,test_external\n")
    got = read_soma(p, uni)
    assert uni.uids(got.splits[0]["test"]) == ["d0/s00.cu3s#0", "d0/s00.cu3s#1"]
    no_test = Folds(uni, [{**folds_of(uni).splits[0], "test": np.zeros(0, dtype=np.int64)}])
    with pytest.raises(DvcCuvisError, match="soma requires a test split"):
        export_soma(no_test)


def test_index_arrays(tmp_path: Path) -> None:
    uni = universe()
    folds = folds_of(uni)
    (tmp_path / "i.npz").write_bytes(indices_bytes(folds.splits[0], uni))
    with np.load(tmp_path / "i.npz") as z:
        x = np.arange(len(uni)) * 10
        assert np.array_equal(x[z["train"]], np.sort(folds.splits[0]["train"]) * 10)
        assert str(z["universe_hash"]) == uni.hash
    same(folds, read_indices(tmp_path / "i.npz", uni))
    other = uni.take(np.arange(1, len(uni)))
    with pytest.raises(DvcCuvisError, match="positions were written for universe"):
        read_indices(tmp_path / "i.npz", other)


def test_index_arrays_round_trip_every_stage_and_a_tiff_universe(tmp_path: Path) -> None:
    tiff = Universe.from_records({"source": f"images/c{k}.tif", "index": None}
                                 for k in range(6))
    for uni in (universe(), tiff):
        n = len(uni)
        stages = {"train": np.arange(0, n, 3), "val": np.arange(1, n, 3),
                  "test": np.arange(2, n, 3), "predict": np.arange(n)[::-1]}
        (tmp_path / "i.npz").write_bytes(indices_bytes(stages, uni))
        back = read_indices(tmp_path / "i.npz", uni)
        for k, pos in stages.items():
            assert back.splits[0][k].tolist() == sorted(pos.tolist()), k
        # same bytes for the same positions in any order: deterministic file
        shuffled = {k: v[::-1].copy() for k, v in stages.items()}
        assert indices_bytes(shuffled, uni) == (tmp_path / "i.npz").read_bytes()


def write_npz(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize(("arrays", "message"), [
    ({"train": np.array([0, 1]), "trian": np.array([2])}, r"unexpected array\(s\) \['trian'\]"),
    ({"universe_hash": np.array("x")}, "no stage array"),
    ({"train": np.array([0.0, 1.7])}, "train must be a 1-d integer array.*float64"),
    ({"train": np.array([True, False])}, "train must be a 1-d integer array.*bool"),
    ({"val": np.array([[0, 1]])}, r"val must be a 1-d integer array.*\(1, 2\)"),
    ({"test": np.array(["0", "1"])}, "test must be a 1-d integer array"),
    ({"train": np.array([0, 54])}, r"train has positions outside 0\.\.53"),
    ({"train": np.array([-1])}, r"train has positions outside 0\.\.53"),
    ({"train": np.array([2**63], dtype=np.uint64)}, "train has positions outside"),
    ({"val": np.array([3, 3])}, "val repeats a position"),
    ({"train": np.array([0, 1]), "test": np.array([1, 2])}, "is in both train and test"),
    ({"train": np.array([0]), "universe_hash": np.array([1, 2])},
     "universe_hash must be a 0-d string"),
])
def test_index_arrays_bad_files(tmp_path: Path, arrays: dict, message: str) -> None:
    uni = universe()
    path = write_npz(tmp_path / "bad.npz", **arrays)
    with pytest.raises(DvcCuvisError, match=message) as info:
        read_indices(path, uni)
    assert str(info.value).startswith(str(path))


def test_index_arrays_unreadable_and_missing(tmp_path: Path) -> None:
    uni = universe()
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(DvcCuvisError, match=r"junk\.npz: not a readable indices npz"):
        read_indices(tmp_path / "junk.npz", uni)
    with pytest.raises(FileNotFoundError, match=r"gone\.npz: indices file not found"):
        read_indices(tmp_path / "gone.npz", uni)
    pickled = tmp_path / "obj.npz"
    np.savez(pickled, train=np.array([object()], dtype=object))
    with pytest.raises(DvcCuvisError, match=r"obj\.npz: not a readable indices npz"):
        read_indices(pickled, uni)


def test_cli_bake_from_bad_indices_is_one_line_exit_2(tmp_path: Path) -> None:
    from tests.helpers.cli import run_subprocess

    write_universe(universe(), tmp_path / "universe.csv")
    write_npz(tmp_path / "i.npz", train=np.array([0.5, 1.5]))
    r = run_subprocess("bake", "--universe", tmp_path / "universe.csv", "--from-indices",
                       tmp_path / "i.npz", "--out", tmp_path / "s.json", "--no-params")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "i.npz: train must be a 1-d integer array" in r.err
    assert not (tmp_path / "s.json").exists()


def test_cli_export_import_every_format_and_fold(tmp_path: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    uni = universe()
    write_universe(uni, tmp_path / "universe.csv")
    uni = read_universe(tmp_path / "universe.csv")
    assert cli("bake", "--universe", "universe.csv", "--strategy", "random", "--folds", "3",
               "--out-dir", "folds", "--test-ratio", "0.25").code == 0
    for fmt, flag, name in [("glovita", "--from-glovita", "splits.json"),
                            ("soma", "--from-soma", "splits.csv")]:
        r = cli("export", "--to", fmt, "--universe", "universe.csv", "--folds-dir", "folds",
                "--out-dir", fmt)
        assert r.code == 0, r.err
        r = cli("bake", "--universe", "universe.csv", flag, f"{fmt}/{name}",
                "--out-dir", f"back-{fmt}")
        assert r.code == 0, r.err
        for k in range(3):
            a = resolve(load_splits(tmp_path / f"folds/fold-{k}.json"), uni)
            b = resolve(load_splits(tmp_path / f"back-{fmt}/fold-{k}.json"), uni)
            for stage in STAGES3:
                assert a.uids(stage) == b.uids(stage), (fmt, k, stage)
            assert load_splits(tmp_path / f"back-{fmt}/fold-{k}.json").universe_hash == uni.hash
    assert cli("bake", "--universe", "universe.csv", "--out", "one.json").code == 0
    assert cli("export", "--to", "indices", "--universe", "universe.csv", "--splits", "one.json",
               "--out-dir", "idx").code == 0
    r = cli("bake", "--universe", "universe.csv", "--from-indices", "idx/indices.npz",
            "--out", "back.json")
    assert r.code == 0, r.err
    assert (tmp_path / "back.json").read_text() == (tmp_path / "one.json").read_text()
    r = cli("bake", "--universe", "universe.csv", "--from-soma", "soma/splits.csv")
    assert r.code == 2 and "has 3 folds: give --out-dir" in r.err
    r = cli("export", "--universe", "universe.csv")
    assert r.code == 2 and "--to" in r.err
    assert all(fmt in r.err for fmt in ("glovita", "soma", "indices")), r.err
