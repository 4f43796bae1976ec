"""A folder of the older layout (materialize/v1_names.py) is migrated by a rerun, not
rewritten (materialize/planning.py and core.py)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.materialize import core, planning, v1_names
from dvc_cuvis.materialize.core import materialize_universe as materialize
from dvc_cuvis.materialize.options import ReaderParams
from dvc_cuvis.materialize.planning import FORMAT_VERSION
from dvc_cuvis.model.frame_bytes import npz_bytes
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.frames import Compression
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe, write_universe
from tests.helpers.files import write_session


def _dataset(root: Path, rows: list[tuple[str, int]], seed: int = 0) -> Universe:
    """``.cu3s`` sessions (SDK double) and single-frame npz files under ``root/data``."""
    rng = np.random.default_rng(seed)
    for k, source in enumerate(sorted({s for s, _ in rows})):
        path = root / "data" / source
        if source.endswith(".cu3s"):
            write_session(path, 1 + max(i for s, i in rows if s == source), seed=k)
            continue
        cube = rng.random((3, 4, 2), dtype=np.float32)
        classes = rng.integers(0, 3, size=(3, 4))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(npz_bytes({"cube": cube, "wavelengths": np.array([450, 550]),
                                    "class_mask": classes.astype(np.uint8)}, Compression()))
    uni = Universe.from_records(
        [{"source": s, "index": i, "materialized_path": f"data/{s}",
          "format": "cu3s" if s.endswith(".cu3s") else "npz"} for s, i in rows],
        path=root / "universe.csv")
    write_universe(uni, root / "universe.csv")
    return read_universe(root / "universe.csv")


ROWS = [("day1/frame_0000.npz", 0), ("day1/frame_0001.npz", 0), ("day1/a.cu3s", 0),
        ("day1/a.cu3s", 1), ("day1/a.cu3s", 2), ("day2/x.npz", 0), ("day2/X.npz", 0),
        ("day2/x", 0), ("day2/x.000000.npz", 0)]  # the last two: a new file, an old folder


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".materialize.lock"}


def _build_v1(monkeypatch: pytest.MonkeyPatch, uni: Universe, out: Path, cache: StatCache
              ) -> None:
    """A folder as format version 1 wrote it: the same code with its names and version."""
    with monkeypatch.context() as m:
        m.setattr(planning, "FORMAT_VERSION", 1)
        m.setattr(core, "FORMAT_VERSION", 1)
        m.setattr(planning, "frame_name", v1_names._v1_frame_name)
        materialize(uni, None, out, ReaderParams(), cache=cache)
    assert json.loads((out / "manifest.json").read_text())["version"] == 1


def test_a_version_1_folder_is_migrated_not_rewritten(
        sdk: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uni = _dataset(tmp_path, ROWS)
    clean = materialize(uni, None, tmp_path / "clean", ReaderParams())
    assert clean.written == len(ROWS) and clean.migrated == 0
    out = tmp_path / "out"
    cache = StatCache(tmp_path / "stat-cache")
    _build_v1(monkeypatch, uni, out, cache)
    assert (out / "frames/day1/frame_0000.npz/000000.npz").is_file()  # the old layout
    old = {name: (out / name).stat().st_ino for name in
           json.loads((out / "manifest.json").read_text())["frames"]}
    assert len(old) == len(ROWS)
    warm = StatCache(tmp_path / "stat-cache")
    res = materialize(uni, None, out, ReaderParams(), cache=warm)
    assert (res.written, res.migrated, res.kept, res.deleted) == (0, len(ROWS), 0, 0)
    assert _tree(out) == _tree(tmp_path / "clean")  # byte-identical to a clean run
    v1_to_ref = {v1_names._v1_frame_name(*r): r for r in ROWS}
    for name, ino in old.items():  # renamed, never rewritten
        assert (out / frame_name(*v1_to_ref[name])).stat().st_ino == ino
    dirs = [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_dir()
            and not p.relative_to(out).as_posix().startswith("summaries")]
    assert sorted(dirs) == ["frames", "frames/day1", "frames/day2"]  # old folders pruned
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["version"] == FORMAT_VERSION == 2
    assert sorted(manifest["frames"]) == sorted(frame_name(*r) for r in ROWS)
    assert read_universe(out / "universe.csv").column("materialized_path") == sorted(
        frame_name(*r) for r in ROWS)
    assert warm.stats()["md5_hashed"] == 0  # the stat cache vouched for every old frame
    warm = StatCache(tmp_path / "stat-cache")
    again = materialize(uni, None, out, ReaderParams(), cache=warm)
    assert (again.written, again.migrated, again.kept) == (0, 0, len(ROWS))
    assert warm.stats()["md5_hashed"] == 0  # the moved frames were recorded under new names


def test_migration_rewrites_only_what_changed(
        sdk: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uni = _dataset(tmp_path, ROWS)
    out = tmp_path / "out"
    _build_v1(monkeypatch, uni, out, StatCache(None))
    (tmp_path / "data/day1/frame_0001.npz").write_bytes(
        (tmp_path / "data/day1/frame_0000.npz").read_bytes())  # changed content
    (out / "frames/day2/x.npz/000000.npz").write_bytes(b"damaged")  # not what the manifest says
    smaller = uni.take([p for p, u in enumerate(uni.uids()) if u != "day1/a.cu3s#2"])
    res = materialize(smaller, None, out, ReaderParams())
    # the two rewritten frames leave their old-layout files behind, deleted with a.cu3s#2
    assert (res.written, res.migrated, res.deleted) == (2, len(ROWS) - 3, 3)
    write_universe(smaller, tmp_path / "u2.csv")
    materialize(read_universe(tmp_path / "u2.csv"), None, tmp_path / "clean", ReaderParams())
    assert _tree(out) == _tree(tmp_path / "clean")


def test_an_interrupted_migration_resumes_to_a_clean_folder(
        sdk: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uni = _dataset(tmp_path, ROWS)
    materialize(uni, None, tmp_path / "clean", ReaderParams())
    out = tmp_path / "out"
    _build_v1(monkeypatch, uni, out, StatCache(None))
    calls = []
    real_replace = os.replace

    def dying_replace(src: object, dst: object) -> None:
        calls.append(src)
        if len(calls) == len(ROWS) + 2:  # in the second pass, after one frame landed
            raise KeyboardInterrupt
        real_replace(src, dst)  # type: ignore[arg-type]

    with monkeypatch.context() as m:
        m.setattr(core.os, "replace", dying_replace)
        with pytest.raises(KeyboardInterrupt):
            materialize(uni, None, out, ReaderParams())
    assert any(p.name.endswith(".tmp") for p in out.rglob("*"))  # a partial state, for real
    res = materialize(uni, None, out, ReaderParams())
    assert res.written == len(ROWS)  # staged and landed frames are rewritten, none lost
    assert _tree(out) == _tree(tmp_path / "clean")
