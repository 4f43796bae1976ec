"""``dvc-cuvis lineage`` on saved dataset records: current or stale, compared, refused inputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dvc_cuvis._io import write_json
from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.model.compare import diff_versions
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import load_splits, save_splits
from dvc_cuvis.model.universe_io import read_universe
from dvc_cuvis.train.lineage import take_record
from dvc_cuvis.train.lineage_compare import record_version


def _dataset(d: Path, seed: int) -> tuple[Path, Path]:
    """12 sessions of 3 frames, baked with ``seed`` (no repository)."""
    d.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"day{k:02d}.cu3s,0-2\n" for k in range(12))
    (d / "universe.csv").write_text("source,index\n" + rows)
    (baked,) = bake(read_universe(d / "universe.csv"), BakeOptions(seed=seed))
    save_splits(baked.config, d / "splits.json")
    return d / "splits.json", d / "universe.csv"


def _record(d: Path, seed: int) -> Path:
    splits, universe = _dataset(d, seed)
    record = take_record(splits, universe, module="test", mode="strict", report=None)
    write_json(d / "model.json", record)
    return d / "model.json"


def _uids(d: Path) -> dict[str, set[str]]:
    res = resolve(load_splits(d / "splits.json"), read_universe(d / "universe.csv"))
    return {s: set(res.uids(s)) for s in ("train", "val", "test")}


def test_a_saved_record_is_current_then_stale_with_diffs_counts(cli: Any,
                                                                tmp_path: Path) -> None:
    saved = _record(tmp_path / "ds", seed=0)
    before = record_version(json.loads(saved.read_text()), None, "a")
    run = cli("lineage", str(saved), "--fail-on-stale")
    assert run.code == 0 and "current (the same split, universe.csv and data)" in run.out
    assert "samples: train " in run.out and "check: strict, not checked" in run.out
    (model,) = json.loads(cli("lineage", str(saved), "--repo", str(tmp_path / "ds"),
                              "--json").out)["models"]
    assert model["current"] is True and model["rev"] == "workspace"
    _dataset(tmp_path / "ds", seed=5)  # re-baked in place
    run = cli("lineage", str(saved), "--json")
    assert run.code == 0, run.err
    (model,) = json.loads(run.out)["models"]
    uni = read_universe(tmp_path / "ds/universe.csv")
    res = resolve(load_splits(tmp_path / "ds/splits.json"), uni)
    from dvc_cuvis.model.compare import Version

    d = diff_versions(before[0], Version("b", uni, res.stages, None, []))
    assert model["current"] is False and model["changes"]["moved"] == d.moved > 0
    assert model["changes"]["transitions"] == d.transitions
    assert model["changes"]["modified_files"] is None  # no md5 column: content unknown
    stale = cli("lineage", str(saved), "--fail-on-stale")
    assert stale.code == 1 and f"STALE: {d.moved} sample(s) moved (" in stale.out


def test_compare_two_records_finds_the_overlap_of_their_splits(cli: Any,
                                                               tmp_path: Path) -> None:
    a, b = _record(tmp_path / "a", seed=0), _record(tmp_path / "b", seed=1)
    ua, ub = _uids(tmp_path / "a"), _uids(tmp_path / "b")
    run = cli("lineage", "--compare", str(a), str(b), "--json")
    assert run.code == 0, run.err
    out = json.loads(run.out)
    b_in_a = sorted((ub["train"] | ub["val"]) & ua["test"])
    a_in_b = sorted((ua["train"] | ua["val"]) & ub["test"])
    assert b_in_a and out["b_fit_in_a_test"] == {"count": len(b_in_a), "first": b_in_a[:5]}
    assert out["a_fit_in_b_test"] == {"count": len(a_in_b), "first": a_in_b[:5]}
    assert out["test_sets_identical"] is False and out["comparable"] is False
    text = cli("lineage", "--compare", str(a), str(b)).out
    assert f"B's train/val samples in A's test set: {len(b_in_a)} ({b_in_a[0]}, " in text
    assert text.rstrip().endswith("test set")
    same = json.loads(cli("lineage", "--compare", str(a), str(a), "--json").out)
    assert same["test_sets_identical"] is True and same["comparable"] is True


def test_missing_and_foreign_files_are_bad_input(cli: Any, tmp_path: Path) -> None:
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"hello": 1}')
    for path in (tmp_path / "missing.ckpt", foreign, tmp_path):
        run = cli("lineage", str(path))
        assert run.code == 2 and str(path) in run.err and "Traceback" not in run.err
    broken = tmp_path / "model.ckpt"
    broken.write_bytes(b"not a zip")
    run = cli("lineage", str(broken))
    assert run.code == 2 and f"{broken}: not a torch checkpoint (not a zip" in run.err
    assert cli("lineage").code == 2
    assert cli("lineage", str(foreign), "--compare", str(foreign), str(foreign)).code == 2
