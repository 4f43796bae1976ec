"""materialize's summary steps, each called on its own: a frame's stored summary
(``_summary``), which frames keep a thumbnail (``_thumbnails``), the manifest and summaries
of the frames a run wrote (``_record_results``, its checkpoints and its failure path), and
the shards brought in step with the manifest (``_refresh_summaries``).

Inputs are a few small npz files in a temporary folder, planned by the real ``plan``; the
expected summaries are computed from the inputs read with ``np.load``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dvc_cuvis.materialize.core as core
import dvc_cuvis.materialize.summary_store as store
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.leakage.signatures import signature
from dvc_cuvis.leakage.signatures import to_record as signature_record
from dvc_cuvis.materialize.options import ReaderParams
from dvc_cuvis.materialize.planning import plan
from dvc_cuvis.materialize.summaries import summarize, to_record
from dvc_cuvis.materialize.tasks import Task, _summary
from dvc_cuvis.model.universe_io import read_universe

WL = np.array([450, 550, 650, 750])


def _cube(seed: int, h: int = 6, w: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).random((h, w, len(WL)), dtype=np.float32)


def _project(root: Path, n: int = 4) -> Any:
    """``n`` npz inputs in two folders (the odd ones with a class mask; the third a uint16
    cube with saturated pixels); their plan."""
    for i in range(n):
        d = root / f"rec{i % 2}"
        d.mkdir(parents=True, exist_ok=True)
        extra = {"class_mask": (np.arange(30).reshape(6, 5) % 3).astype(np.uint8)} if i % 2 else {}
        cube = _cube(i)
        if i == 2:
            cube = (cube * 1000).astype(np.uint16)
            cube[1, 1, 0] = cube[4, 2, 3] = 65535
        np.savez(d / f"f{i}.npz", cube=cube, wavelengths=WL, **extra)
    (root / "universe.csv").write_text(
        "source,index,format\n" + "".join(f"rec{i % 2}/f{i}.npz,0,npz\n" for i in range(n)))
    uni = read_universe(root / "universe.csv")
    (root / "out").mkdir()
    return uni, plan(uni, list(range(len(uni))), root / "out", ReaderParams(), StatCache(None))


def _expected(path: Path, thumbnail: bool) -> dict[str, Any]:
    """The summary of an input, its integer cube's maximum taken as saturated."""
    with np.load(path) as z:
        mask = z["class_mask"] if "class_mask" in z.files else None
        cube = z["cube"]
        ceiling = float(np.iinfo(cube.dtype).max) if cube.dtype.kind == "u" else None
        rec = to_record(summarize(cube, z["wavelengths"], mask, ceiling=ceiling,
                                  with_thumbnail=thumbnail, signed=False))
        # the signature is of the frame as written (float32), as the npz holds it
        return {**rec, "signature": signature_record(signature(cube.astype(np.float32)))}


def _shards(out: Path) -> dict[str, dict[str, Any]]:
    """Every stored entry, by frame name."""
    entries: dict[str, dict[str, Any]] = {}
    for p in sorted((out / "summaries").rglob("%summary.json")):
        entries.update(json.loads(p.read_text())["frames"])
    return entries


# -- _summary ------------------------------------------------------------------------------


def _task(**kw: Any) -> Task:
    return Task("npz", "x.npz", None, "x.npz", ((0, "frames/x.npz.000000.npz"),), "out",
                ReaderParams(), **kw)


def test_a_frames_summary_is_none_when_summaries_are_off() -> None:
    arrays = {"cube": _cube(0), "wavelengths": WL}
    assert _summary(_task(summaries=False), "frames/x.npz.000000.npz", arrays, None) is None
    assert _summary(_task(), "frames/x.npz.000000.npz", arrays, None) is not None


def test_a_frames_summary_is_the_stored_record_of_its_cube_mask_and_ceiling() -> None:
    cube = (_cube(1) * 1000).astype(np.uint16)
    cube[0, 0, 0] = cube[2, 3, 1] = 65535  # two saturated pixels
    mask = np.zeros((6, 5), np.uint8)
    mask[:2] = 4
    name = "frames/x.npz.000000.npz"
    arrays = {"cube": cube, "wavelengths": WL, "class_mask": mask}
    rec = _summary(_task(), name, arrays, 65535.0)
    assert rec == to_record(summarize(cube, WL, mask, ceiling=65535.0))
    assert rec is not None and rec["saturated"] == 2 and "thumbnail" not in rec
    assert {k: c["pixels"] for k, c in rec["categories"].items()} == {"0": 20, "4": 10}
    plain = _summary(_task(), name, {"cube": cube, "wavelengths": WL}, None)
    assert plain is not None and plain["saturated"] is None and plain["categories"] == {}
    thumbed = _summary(_task(thumbs=frozenset({name})), name, arrays, 65535.0)
    assert thumbed is not None and thumbed["thumbnail"] == to_record(
        summarize(cube, WL, mask, ceiling=65535.0, with_thumbnail=True))["thumbnail"]
    other = _summary(_task(thumbs=frozenset({"frames/y.npz.000000.npz"})), name, arrays,
                          65535.0)
    assert other is not None and "thumbnail" not in other


# -- _thumbnails ---------------------------------------------------------------------------


def test_the_thumbnails_are_the_capped_frames_of_the_smallest_uid_hashes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uni, p = _project(tmp_path, 6)
    assert core._thumbnails(uni, p) == frozenset(p.names.values())  # 6 frames, cap 512
    monkeypatch.setattr(core, "THUMBNAIL_CAP", 2)
    p.rows = [0, 2, 3, 5]  # a run's selection: the other rows are not candidates
    ranked = sorted((hashlib.sha256(uni.uid(pos).encode()).hexdigest(), p.names[pos])
                    for pos in p.rows)
    got = core._thumbnails(uni, p)
    assert got == {name for _, name in ranked[:2]} and len(got) == 2


# -- _record_results -----------------------------------------------------------------------


def _written(out: Path, names: list[str]) -> None:
    for n in names:
        (out / n).parent.mkdir(parents=True, exist_ok=True)
        (out / n).write_bytes(n.encode())


NAMES = [f"frames/s{k}.npz.000000.npz" for k in range(4)]
RECIPES = {n: f"recipe-{k}" for k, n in enumerate(NAMES)}


def _on_disk(out: Path) -> list[str]:
    path = out / "manifest.json"
    return sorted(json.loads(path.read_text())["frames"]) if path.exists() else []


def test_each_written_frame_enters_the_manifest_its_summary_and_the_cache(
        tmp_path: Path) -> None:
    _written(tmp_path, NAMES[:3])
    cache = StatCache(None)
    manifest: dict[str, dict[str, Any]] = {NAMES[3]: {"recipe": "kept"}}
    fresh: dict[str, dict[str, Any]] = {}
    summary = {"mean": [1.0]}
    results = [[(NAMES[0], "md5-0", 10, summary), (NAMES[1], "md5-1", 11, None)],
               [(NAMES[2], "md5-2", 12, {"mean": [2.0]})]]
    assert core._record_results(results, RECIPES, tmp_path, manifest, cache, fresh) == 3
    assert manifest == {NAMES[3]: {"recipe": "kept"},
                        **{NAMES[k]: {"recipe": f"recipe-{k}", "md5": f"md5-{k}", "size": 10 + k}
                           for k in range(3)}}
    assert fresh == {NAMES[0]: summary, NAMES[2]: {"mean": [2.0]}}
    for k in range(3):  # the md5 taken while writing, never read from the file again
        assert cache.md5(tmp_path / NAMES[k], cached_only=True) == f"md5-{k}"
    assert not (tmp_path / "manifest.json").exists()  # within 5 s: the caller writes it


def test_the_manifest_is_checkpointed_once_more_than_five_seconds_passed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _written(tmp_path, NAMES)
    clock = {"t": 0.0}
    monkeypatch.setattr(core.time, "monotonic", lambda: clock["t"])
    seen: list[list[str]] = []

    def results() -> Iterator[list[Any]]:
        clock["t"] = 6.0  # the first batch ends 6 s after the start: a checkpoint
        yield [(NAMES[0], "a", 1, None)]
        seen.append(_on_disk(tmp_path))
        clock["t"] = 11.0  # exactly 5 s after that checkpoint: not yet
        yield [(NAMES[1], "b", 1, None)]
        seen.append(_on_disk(tmp_path))
        clock["t"] = 11.5  # 5.5 s after it: the next checkpoint
        yield [(NAMES[2], "c", 1, None)]
        seen.append(_on_disk(tmp_path))
        clock["t"] = 12.0
        yield [(NAMES[3], "d", 1, None)]

    manifest: dict[str, dict[str, Any]] = {}
    assert core._record_results(results(), RECIPES, tmp_path, manifest, StatCache(None), {}) == 4
    assert seen == [NAMES[:1], NAMES[:1], NAMES[:3]]
    assert _on_disk(tmp_path) == NAMES[:3]  # the last batch: the caller writes the manifest


@pytest.mark.parametrize("error", [RuntimeError("worker died"), KeyboardInterrupt()])
def test_a_failure_keeps_the_frames_finished_before_it(tmp_path: Path,
                                                       error: BaseException) -> None:
    out = tmp_path / "out"
    _written(out, NAMES)
    cache = StatCache(tmp_path / "cache.bin")

    def results() -> Iterator[list[Any]]:
        yield [(NAMES[0], "md5-0", 1, None), (NAMES[1], "md5-1", 1, None)]
        raise error

    with pytest.raises(type(error)):
        core._record_results(results(), RECIPES, out, {}, cache, {})
    assert _on_disk(out) == NAMES[:2]
    again = StatCache(tmp_path / "cache.bin")  # saved: the rerun need not hash them
    assert again.md5(out / NAMES[1], cached_only=True) == "md5-1"


def test_a_manifest_that_cannot_be_written_does_not_hide_the_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _written(tmp_path, NAMES[:1])
    saved: list[bool] = []
    cache = StatCache(None)
    monkeypatch.setattr(cache, "save", lambda: saved.append(True))

    def broken(out: Path, frames: dict[str, Any]) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(core, "_write_manifest", broken)

    def results() -> Iterator[list[Any]]:
        yield [(NAMES[0], "md5-0", 1, None)]
        raise RuntimeError("worker died")

    with pytest.raises(RuntimeError, match="worker died"):
        core._record_results(results(), RECIPES, tmp_path, {}, cache, {})
    assert saved == []  # the cache is saved after the manifest only


# -- _refresh_summaries --------------------------------------------------------------------


def test_frames_without_a_fresh_summary_are_summarized_from_their_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uni, p = _project(tmp_path)
    out = tmp_path / "out"
    syncs: list[Path] = []
    monkeypatch.setattr(store, "sync_file_system", syncs.append)
    names = [p.names[pos] for pos in range(len(uni))]
    manifest = {n: {"md5": f"md5-{k}"} for k, n in enumerate(names)}
    manifest["frames/gone.npz.000000.npz"] = {"md5": "x"}  # not a frame of this plan
    fresh = {names[0]: {"mean": "written this run"}}
    thumbs = frozenset({names[1], names[2]})
    core._refresh_summaries(out, p, manifest, fresh, thumbs, True)
    got = _shards(out)
    assert sorted(got) == sorted(names)
    assert got[names[0]] == {"mean": "written this run", "source": uni.source(0), "index": 0,
                             "md5": "md5-0"}
    for k in range(1, len(names)):
        source = uni.source(k)
        want = _expected(tmp_path / source, names[k] in thumbs)
        assert got[names[k]] == {**want, "source": source, "index": 0, "md5": f"md5-{k}"}
    assert "thumbnail" in got[names[1]] and "thumbnail" not in got[names[3]]
    by_source = {uni.source(k): got[n] for k, n in enumerate(names)}
    assert by_source["rec0/f2.npz"]["saturated"] == 2  # the uint16 cube: its ceiling counts
    assert by_source["rec1/f3.npz"]["saturated"] is None  # a float cube has no ceiling
    assert set(by_source["rec1/f3.npz"]["categories"]) == {"0", "1", "2"}  # its class mask
    assert syncs == []  # the manifest's write syncs the file system once, after


def test_with_summaries_off_only_fresh_summaries_are_stored(tmp_path: Path) -> None:
    uni, p = _project(tmp_path)
    out = tmp_path / "out"
    names = [p.names[pos] for pos in range(len(uni))]
    manifest = {n: {"md5": f"md5-{k}"} for k, n in enumerate(names)}
    core._refresh_summaries(out, p, manifest, {names[2]: {"mean": "fresh"}}, frozenset(), False)
    assert _shards(out) == {names[2]: {"mean": "fresh", "source": uni.source(2), "index": 0,
                                       "md5": "md5-2"}}
