"""Train at a base revision against now (``report --base``): the base's summaries read from the
local DVC cache alone, through dvc.lock at the revision and the folder's ``.dir`` listing,
and each way that can fall short said in words."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.materialize.summaries import RECIPE, summarize, to_record
from dvc_cuvis.model.compare import Version
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.review.spectra_base import base_entries, train_shift

WL = np.arange(400.0, 600.0, 50.0)  # 4 bands


class Tree:
    """A repository's files at revisions, as ``report`` reads them (no checkout)."""

    def __init__(self, root: Path, files: dict[str, bytes]) -> None:
        self.root = root
        self.files = files

    def read(self, rev: str, rel: str) -> bytes:
        assert rev == "v1"
        return self.files[rel]


def _cache(root: Path, md5: str, data: object) -> None:
    """An object in DVC's default cache layout (``.dvc/cache/files/md5/ab/cdef...``)."""
    path = root / ".dvc" / "cache" / "files" / "md5" / md5[:2] / md5[2:]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def _lock(folder: str = "materialized", md5: str = "d1" * 16 + ".dir") -> bytes:
    return (f"schema: '2.0'\nstages:\n  bake:\n    cmd: dvc-cuvis bake\n    outs:\n"
            f"    - path: splits.json\n      md5: {'aa' * 16}\n"
            f"  materialize:\n    cmd: dvc-cuvis materialize\n    outs:\n"
            f"    - path: {folder}\n      md5: {md5}\n").encode()


def _entry(level: float) -> dict[str, object]:
    return {"md5": "m", **to_record(summarize(np.full((4, 4, len(WL)), level, np.float32)
                                              + np.linspace(0, 0.1, 16, dtype=np.float32)
                                              .reshape(4, 4, 1), WL))}


def _repo(tmp: Path, shards: dict[str, dict[str, object]], *, missing: str = "") -> Tree:
    listing = [{"relpath": "frames/a/x.npz", "md5": "f0" * 16}]  # a frame: not a summary
    for k, (rel, frames) in enumerate(sorted(shards.items())):
        md5 = f"{k:02d}" * 16
        listing.append({"relpath": f"summaries/{rel}", "md5": md5})
        if rel != missing:
            _cache(tmp, md5, {"recipe": RECIPE, "frames": frames})
    _cache(tmp, "d1" * 16 + ".dir", listing)
    return Tree(tmp, {"dvc.lock": _lock()})


def test_the_base_entries_come_from_the_local_cache_through_the_dir_listing(
        tmp_path: Path) -> None:
    tree = _repo(tmp_path, {"a%summary.json": {"a/x.npz": _entry(1.0)},
                            "b%summary.json": {"b/y.npz": _entry(2.0), "b/z.npz": _entry(3.0)}})
    entries, why = base_entries(tree, "v1", "materialized")
    assert why == "" and sorted(entries) == ["a/x.npz", "b/y.npz", "b/z.npz"]
    assert entries["b/z.npz"]["mean"] == _entry(3.0)["mean"]
    assert base_entries(tree, "v1", "./materialized/")[0] == {}  # (repository-relative names)


@pytest.mark.parametrize(("lock", "why"), [
    (b"stages: [unclosed\n", "dvc.lock at v1 cannot be read (v1:dvc.lock"),
    (_lock(folder="elsewhere"), "dvc.lock at v1 records no output materialized"),
    (_lock(md5="e3" * 16), "dvc.lock at v1 records no output materialized"),  # a file's md5
    (b"- a list\n", "dvc.lock at v1 records no output materialized"),
    (b"stages:\n  x: [1]\n", "dvc.lock at v1 records no output materialized"),
    (b"stages:\n  x:\n    outs: [just-a-name]\n", "dvc.lock at v1 records no output"),
])
def test_a_lock_without_the_folder_says_so(tmp_path: Path, lock: bytes, why: str) -> None:
    tree = _repo(tmp_path, {"a%summary.json": {"a/x.npz": _entry(1.0)}})
    tree.files["dvc.lock"] = lock
    entries, said = base_entries(tree, "v1", "materialized")
    assert entries == {} and said.startswith(why), said


def test_a_listing_or_shard_not_in_the_cache_and_a_folder_without_summaries(
        tmp_path: Path) -> None:
    tree = Tree(tmp_path, {"dvc.lock": _lock()})
    assert base_entries(tree, "v1", "materialized") == (
        {}, "materialized at v1 is not in the local DVC cache (`dvc fetch` at that revision "
            "brings it)")
    tree = _repo(tmp_path, {"a%summary.json": {"a/x.npz": _entry(1.0)},
                            "b%summary.json": {"b/y.npz": _entry(2.0)}},
                 missing="b%summary.json")
    assert base_entries(tree, "v1", "materialized") == (
        {}, "materialized/summaries/b%summary.json at v1 is not in the local DVC cache")
    empty = _repo(tmp_path / "empty", {})
    assert base_entries(empty, "v1", "materialized") == (
        {}, f"materialized at v1 holds no spectral summaries (of recipe {RECIPE})")


def _version(sources: list[tuple[str, int | None]], train: list[int]) -> Version:
    """A base version whose train stage is ``sources[k]`` for each k of ``train`` (the
    universe sorts its rows, so positions are looked up by sample)."""
    uni = Universe.from_records([{"source": s, "index": i} for s, i in sources])
    rows = {(uni.source(p), None if uni.indexless is not None and uni.indexless[p]
             else int(uni.indices[p])): p for p in range(len(uni))}
    stages = {s: np.zeros(0, dtype=np.int64) for s in ("val", "test", "predict")}
    stages["train"] = np.asarray(sorted(rows[sources[k]] for k in train), dtype=np.int64)
    return Version("v1", uni, stages, None, [])


def test_train_at_the_base_against_train_now_per_shared_grid() -> None:
    base = _version([("a.npz", 0), ("a.npz", 1), ("whole.tif", None), ("val.npz", 0)],
                    train=[0, 1, 2])
    entries = {frame_name("a.npz", 0): _entry(1.0), frame_name("a.npz", 1): _entry(1.2),
               frame_name("whole.tif", 0): _entry(1.6),  # a whole-file sample: read index 0
               frame_name("val.npz", 0): _entry(9.0)}  # not train at the base
    now = {tuple(WL.tolist()): [_entry(1.0), _entry(1.2), _entry(1.6)]}
    (same,), why = train_shift(base, entries, now, 1.0)
    assert why == "" and same.stage_a == "train at v1" and same.stage_b == "train"
    assert not same.flagged and float(same.smd.max()) < 1e-3  # the same three spectra
    brighter = {tuple(WL.tolist()): [_entry(3.0), _entry(3.2), _entry(3.6)]}
    (moved,), _ = train_shift(base, entries, brighter, 1.0)
    assert moved.flagged and moved.ranges == [(400.0, 550.0)]
    assert moved.smd.shape == (len(WL),) and float(moved.smd.min()) > 1.0


def test_no_shared_grid_or_no_base_frame_says_so() -> None:
    base = _version([("a.npz", 0), ("a.npz", 1)], train=[0, 1])
    entries = {frame_name("a.npz", 0): _entry(1.0), frame_name("a.npz", 1): _entry(1.2)}
    other_grid = {(900.0, 950.0): [_entry(1.0)]}
    assert train_shift(base, entries, other_grid, 1.0) == (
        [], "no train frames at v1 share a grid with train now")
    one_each = {tuple(WL.tolist()): []}  # nothing now on the grid: nothing to compare
    assert train_shift(base, entries, one_each, 1.0)[0] == []
    assert train_shift(base, {}, {tuple(WL.tolist()): [_entry(1.0)]}, 1.0)[0] == []


def test_the_cache_is_where_the_repositorys_dvc_config_puts_it(tmp_path: Path) -> None:
    """A repository whose cache.dir is elsewhere: the objects are looked for there."""
    repo = tmp_path / "repo"
    (repo / ".dvc").mkdir(parents=True)  # what `dvc init --no-scm` makes, then cache.dir set
    shared = tmp_path / "shared-cache"
    (repo / ".dvc" / "config").write_text(
        f"[core]\n    no_scm = True\n[cache]\n    dir = {shared}\n")
    frames = {"a/x.npz": _entry(1.0)}
    for md5, data in (("00" * 16, {"recipe": RECIPE, "frames": frames}),
                      ("d1" * 16 + ".dir", [{"relpath": "summaries/a%summary.json",
                                             "md5": "00" * 16}])):
        path = shared / "files" / "md5" / md5[:2] / md5[2:]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")
    tree = Tree(repo, {"dvc.lock": _lock()})
    assert base_entries(tree, "v1", "materialized") == (frames, "")
    assert not (repo / ".dvc" / "cache" / "files").exists()  # not DVC's default place


def test_entries_without_a_path_or_md5_are_passed_over(tmp_path: Path) -> None:
    """A hand-edited lock or listing: an out or item lacking its keys names nothing."""
    tree = _repo(tmp_path, {"a%summary.json": {"a/x.npz": _entry(1.0)}})
    tree.files["dvc.lock"] = (b"stages:\n  m:\n    outs:\n    - md5: " + b"d1" * 16
                              + b".dir\n    - path: 7\n      md5: " + b"d1" * 16 + b".dir\n"
                              + _lock().split(b"stages:\n", 1)[1].replace(b"  bake:", b"  b:"))
    assert sorted(base_entries(tree, "v1", "materialized")[0]) == ["a/x.npz"]
    listing = tmp_path / ".dvc" / "cache" / "files" / "md5" / "d1" / ("d1" * 15 + ".dir")
    items = json.loads(listing.read_text())
    listing.write_text(json.dumps([{"md5": "00" * 16}, {"relpath": 5}, *items]))
    assert sorted(base_entries(tree, "v1", "materialized")[0]) == ["a/x.npz"]
    listing.write_text(json.dumps([{"relpath": "summaries/b%summary.json"}, *items]))
    assert base_entries(tree, "v1", "materialized") == (
        {}, "materialized/summaries/b%summary.json at v1 is not in the local DVC cache")


def test_a_damaged_listing_or_shard_and_a_shard_of_another_recipe_are_said(
        tmp_path: Path) -> None:
    tree = _repo(tmp_path, {"a%summary.json": {"a/x.npz": _entry(1.0)}})
    cache = tmp_path / ".dvc" / "cache" / "files" / "md5"
    listing = cache / "d1" / ("d1" * 15 + ".dir")
    items = listing.read_text()
    said = "materialized at v1: its listing in the local DVC cache"
    listing.write_text("[{")
    entries, why = base_entries(tree, "v1", "materialized")
    assert entries == {} and why.startswith(f"{said} cannot be read (Expecting"), why
    listing.write_text('{"relpath": "summaries/a"}')
    assert base_entries(tree, "v1", "materialized") == ({}, f"{said} is not a list of files")
    listing.write_text(json.dumps([7, *json.loads(items)]))  # a stray non-entry is passed over
    assert sorted(base_entries(tree, "v1", "materialized")[0]) == ["a/x.npz"]
    shard = cache / "00" / ("00" * 15)
    shard.write_text("{not json")
    entries, why = base_entries(tree, "v1", "materialized")
    assert entries == {} and why.startswith("materialized/summaries/a%summary.json at v1 "
                                            "cannot be read from the local DVC cache ("), why
    shard.write_text(json.dumps({"recipe": RECIPE - 1, "frames": {"a/x.npz": _entry(1.0)}}))
    assert base_entries(tree, "v1", "materialized") == (
        {}, f"materialized at v1 holds no spectral summaries (of recipe {RECIPE})")


def test_a_hostile_lock_or_listing_is_a_line_and_no_read_outside_the_cache(
        tmp_path: Path) -> None:
    """A pushed dvc.lock with an alias bomb, a listing nested past the ceiling and a shard
    named by a path instead of an md5: each is one line, never a crash or a read elsewhere."""
    tree = _repo(tmp_path, {"a%summary.json": {"a/x.npz": _entry(1.0)}})
    tree.files["dvc.lock"] = (b"a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                              + b"".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n".encode()
                                         for p, n in zip("abc", "bcd", strict=True))
                              + _lock())
    entries, why = base_entries(tree, "v1", "materialized")
    assert entries == {} and why.startswith("dvc.lock at v1 cannot be read (") \
        and "aliases" in why, why
    tree.files["dvc.lock"] = _lock()
    listing = tmp_path / ".dvc" / "cache" / "files" / "md5" / "d1" / ("d1" * 15 + ".dir")
    listing.write_text("[" * 5000 + "]" * 5000)
    entries, why = base_entries(tree, "v1", "materialized")
    assert entries == {} and "cannot be read" in why and "nest" in why, why
    outside = tmp_path / "elsewhere.json"  # a summaries shard anywhere but in the cache
    outside.write_text(json.dumps({"recipe": RECIPE, "frames": {"z/y.npz": _entry(5.0)}}))
    listing.write_text(json.dumps([{"relpath": "summaries/a%summary.json",
                                    "md5": "../../../../../elsewhere.json"}]))
    assert base_entries(tree, "v1", "materialized") == (
        {}, "materialized/summaries/a%summary.json at v1 is not in the local DVC cache")


def test_a_pushed_shard_whose_index_is_no_integer_leaves_the_shift_test_out() -> None:
    """A base revision's shard is data anyone could push: an index that is no integer makes
    the base row fall back to the SMD rule (no test), never an internal error."""
    from dvc_cuvis.review.spectra_base import _recording_spectra

    good = [{"source": "a/x.npz", "index": 0, "mean": [1.0, 2.0]},
            {"source": "b/y.npz", "index": 0, "mean": [1.0, 2.5]}]
    assert _recording_spectra(good) is not None
    for index in ("abc", 1.5, None, True):
        assert _recording_spectra([{**good[0], "index": index}, good[1]]) is None


def test_a_pushed_shard_whose_spectra_are_not_numbers_is_a_line_not_a_crash(
        tmp_path: Path) -> None:
    """The base revision's shards are data anyone could push: an entry whose wavelengths,
    mean or std are not one number (or null) per band makes the shard one line, never a
    traceback in the report; an entry without a summary (a signature alone) is passed over."""
    bad = [("wavelengths", "abc", "'wavelengths' is not a list of numbers"),
           ("mean", ["x"] * len(WL), "'mean' is not a list of numbers or nulls, one per "
            "wavelength"),
           ("std", [1.0], "'std' is not a list of numbers or nulls, one per wavelength")]
    for key, value, why in bad:
        tree = _repo(tmp_path / key, {"a%summary.json": {
            "a/x.npz": {**_entry(1.0), key: value}, "a/y.npz": _entry(2.0)}})
        assert base_entries(tree, "v1", "materialized") == ({}, (
            f"materialized/summaries/a%summary.json at v1 cannot be read from the local DVC "
            f"cache (the entry of 'a/x.npz': {why})"))
    tree = _repo(tmp_path / "signed", {"a%summary.json": {
        "a/x.npz": {"md5": "0" * 32, "signature": {}}, "a/y.npz": _entry(2.0)}})
    assert sorted(base_entries(tree, "v1", "materialized")[0]) == ["a/y.npz"]
