"""Recordings are groups, neighbouring frames are found, and bake's block and buffer remedies
leave a split whose check passes: real npz frames enumerated, baked and checked in-process."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.check.drift import DriftError, verify
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.leakage.adjacent import (
    MAX_K,
    Pairs,
    adjacent_pairs,
    buffer_rows,
    check_k,
    check_severity,
)
from dvc_cuvis.leakage.recordings import frame_positions
from dvc_cuvis.model.frame_bytes import npz_bytes
from dvc_cuvis.model.frames import Compression
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES, save_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe, write_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from dvc_cuvis.train.datamodule import guard

RECORDINGS, FRAMES = 5, 6


def frames(root: Path, recordings: int = RECORDINGS, per: int = FRAMES) -> Path:
    """``data/npz/<recording>/<frame>.npz`` without the ``source`` member, as a new user lays
    them out (frame names 2 and 10 apart: natural order, not text order)."""
    for r in range(recordings):
        for f in range(per):
            path = root / "data" / "npz" / f"rec{r}" / f"f{f * 2 if f < 5 else 10 + f}.npz"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(npz_bytes({"cube": np.full((2, 2, 3), r + f / 10, np.float32),
                                        "wavelengths": np.array([1, 2, 3], np.int32)},
                                       Compression()))
    return root / "data" / "npz"


def enumerated(root: Path, recordings: int = RECORDINGS, per: int = FRAMES
               ) -> tuple[Universe, dict]:
    """Enumerate the frames into ``root/universe.csv`` and read it back."""
    uni, info = enumerate_universe(EnumerateOptions(
        format="npz", root=frames(root, recordings, per), out_dir=root, jobs=1))
    write_universe(uni, root / "universe.csv")
    return read_universe(root / "universe.csv"), info


def recording_stages(uni: Universe, stages: dict) -> dict[str, set[str]]:
    """Per recording folder, the stages its frames sit in."""
    out: dict[str, set[str]] = {}
    for s in EXCLUSIVE_STAGES:
        for p in stages[s].tolist():
            out.setdefault(uni.source(p).rpartition("/")[0], set()).add(s)
    return out


def constraints(root: Path, **kw) -> dict:
    """The constraints finding of ``check`` on ``root``'s split, as a record."""
    report = verify(root / "splits.json", root / "universe.csv", lock=None, **kw)
    return report.finding("constraints").record()


def test_npz_frames_in_folders_are_grouped_by_recording(tmp_path: Path) -> None:
    uni, info = enumerated(tmp_path)
    assert info["groups"] == RECORDINGS  # was one group per frame (30 for 5 folders)
    (auto,) = bake(uni, BakeOptions(seed=0))
    spans = recording_stages(uni, auto.stages)
    assert all(len(s) == 1 for s in spans.values()) and len(spans) == RECORDINGS, spans
    assert auto.stats["train"]["groups"] + auto.stats["val"]["groups"] \
        + auto.stats["test"]["groups"] == RECORDINGS
    save_splits(auto.config, tmp_path / "splits.json")
    assert constraints(tmp_path)["status"] == "ok"
    # a per-sample split (upstream's default) straddles recordings: check now sees it
    (per_sample,) = bake(uni, BakeOptions(seed=0, group_by="sample"))
    save_splits(per_sample.config, tmp_path / "splits.json")
    found = constraints(tmp_path, adjacent_frames="off")
    assert found["status"] == "ok" and "group_leakage violated (warn)" in found["summary"]
    # the frame's position in its folder is natural order: f8 before f10 (text order: after)
    _names, _codes, pos = frame_positions(uni)
    rows = {uni.source(p): int(pos[p]) for p in range(len(uni))}
    assert rows["rec0/f8.npz"] == 4 and rows["rec0/f15.npz"] == 5 and rows["rec0/f0.npz"] == 0


def test_a_flat_folder_is_said_to_have_no_recordings_once(tmp_path: Path) -> None:
    (tmp_path / "universe.csv").write_text(
        "source,index\n" + "".join(f"frames/f{k}.npz,0\n" for k in range(12)))
    uni = read_universe(tmp_path / "universe.csv")
    folds = bake(uni, BakeOptions(seed=0, folds=2, test_ratio=0.25))
    said = [w for b in folds for w in b.warnings if "no recording is known" in w]
    assert len(said) == 1 and said[0].startswith("the frame files lie in one folder")
    assert read_universe(tmp_path / "universe.csv").groups()[0][:2] == ["frames/f0.npz",
                                                                       "frames/f1.npz"]


def test_a_planted_neighbour_is_found_by_check_and_by_the_guard(tmp_path: Path) -> None:
    uni, _ = enumerated(tmp_path)
    (b,) = bake(uni, BakeOptions(seed=0, group_by="sample"))  # upstream parity: per frame
    save_splits(b.config, tmp_path / "splits.json")
    _names, codes, pos = frame_positions(uni)
    stage = {int(p): s for s in EXCLUSIVE_STAGES for p in b.stages[s].tolist()}
    expected = sorted((uni.uid(x), uni.uid(y)) for x in stage for y in stage
                      if codes[x] == codes[y] and 0 < pos[y] - pos[x] <= 1
                      and stage[x] != stage[y])
    assert expected  # the per-frame split plants neighbours in different stages
    warned = constraints(tmp_path)
    assert warned["status"] == "ok"  # warn by default: the check passes and says so
    pairs = warned["details"]["adjacent_pairs"]
    assert pairs["count"] == len(expected) and pairs["k"] == 1
    assert [(p["a"], p["b"]) for p in pairs["pairs"]] == expected[:20]
    assert "adjacent_frames violated (warn)" in verify(
        tmp_path / "splits.json", tmp_path / "universe.csv", lock=None,
        adjacent_frames="warn").finding("constraints").summary
    refused = constraints(tmp_path, adjacent_frames="error", adjacent_k=2)
    assert refused["status"] == "violation" and "adjacent_frames violated" in refused["summary"]
    assert refused["details"]["adjacent_pairs"]["count"] >= len(expected)
    calls: list[str | None] = []

    def module():  # a DataModule's face: setup() only
        return type("DM", (), {"setup": lambda self, stage=None: calls.append(stage)})()

    kw = {"splits": tmp_path / "splits.json", "universe": tmp_path / "universe.csv",
          "lock": None, "cache": None}
    with pytest.raises(DriftError, match="adjacent_frames"):
        guard(module(), verify_mode="strict", adjacent_frames="error", **kw).setup("fit")
    assert calls == []  # refused before the module read a frame
    guard(module(), verify_mode="strict", adjacent_frames="warn", **kw).setup("fit")
    guard(module(), verify_mode="warn", adjacent_frames="error", **kw).setup("fit")
    assert calls == ["fit", "fit"]
    with pytest.raises(DvcCuvisError, match="adjacent_k must be a whole number from 1"):
        verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None, adjacent_k=0)


def test_blocks_and_a_buffer_leave_a_split_whose_check_passes(tmp_path: Path, cli,
                                                              monkeypatch) -> None:
    uni, _ = enumerated(tmp_path, recordings=4, per=12)
    (blocks,) = bake(uni, BakeOptions(seed=1, group_by="block:4"))
    spans = recording_stages(uni, blocks.stages)
    assert any(len(s) > 1 for s in spans.values())  # a recording now spans stages, in blocks
    _names, codes, pos = frame_positions(uni)
    for s in EXCLUSIVE_STAGES:  # each block of 4 contiguous frames sits in one stage
        block = {(int(codes[p]), int(pos[p]) // 4) for p in blocks.stages[s].tolist()}
        for other in EXCLUSIVE_STAGES:
            if other != s:
                assert not block & {(int(codes[p]), int(pos[p]) // 4)
                                    for p in blocks.stages[other].tolist()}
    assert adjacent_pairs(uni, blocks.stages).count > 0  # block edges still touch
    (buffered,) = bake(uni, BakeOptions(seed=1, group_by="block:4", buffer=1))
    left_out = buffered.metrics["buffered"]
    assert left_out and buffered.metrics["buffer"] == 1
    assert adjacent_pairs(uni, buffered.stages).count == 0
    assert set(left_out).isdisjoint(uni.uids(np.concatenate(list(buffered.stages.values()))))
    assert any("left out of every stage (--buffer)" in w for w in buffered.warnings)
    save_splits(buffered.config, tmp_path / "splits.json")
    checked = constraints(tmp_path, adjacent_frames="error")
    assert checked["status"] == "ok" and "adjacent_frames satisfied" in checked["summary"]
    monkeypatch.chdir(tmp_path)  # the same through the command line, as docs/leakage.md shows
    baked = cli("bake", "--no-params", "--universe", "universe.csv", "--out", "splits.json",
                "--metrics", "split.json", "--seed", "1", "--group-by", "block:4", "--buffer", "1")
    assert baked.code == 0 and baked.err == (
        f"dvc-cuvis: warning: {len(left_out)} frame(s) within 1 of a stage boundary inside a "
        "recording are left out of every stage (--buffer); the split metrics list them under "
        "'buffered'\n"), baked.err
    checked_cli = cli("check", "--no-params", "--universe", "universe.csv", "--splits",
                      "splits.json", "--no-lock", "--adjacent-frames", "error", "--adjacent-k", "1")
    assert checked_cli.code == 0 and "adjacent_frames satisfied" in checked_cli.out
    bad_k = cli("check", "--no-params", "--no-lock", "--adjacent-k", "0")
    assert bad_k.code == 2 and bad_k.err.count("\n") == 1 and "--adjacent-k" in bad_k.err
    for bad, match in (("block:0", "block:N needs N a whole number"),
                       ("block:x", "block:N needs N")):
        with pytest.raises(DvcCuvisError, match=match):
            BakeOptions(group_by=bad).check()
    with pytest.raises(DvcCuvisError, match="buffer"):
        BakeOptions(buffer=10**6).check()


def test_an_unnamed_frame_joins_the_group_its_folder_names(tmp_path: Path) -> None:
    (tmp_path / "universe.csv").write_text(
        "source,index,group\n"
        "a/f0.npz,0,day1-a\na/f1.npz,0,day1-a\na/f2.npz,0,\n"  # f2 without a source member
        "b/f0.npz,0,\nb/f1.npz,0,\n"                            # nothing named: the folder
        "c/f0.npz,0,x\nc/f1.npz,0,y\nc/f2.npz,0,\n")            # two names: the folder
    names, codes = read_universe(tmp_path / "universe.csv").groups()
    assert [names[c] for c in codes.tolist()] == [
        "day1-a", "day1-a", "day1-a", "b/", "b/", "x", "y", "c/"]


# --- leakage/adjacent.py pinned exactly: the K and severity checks, the pairs, the buffer ---

def frames_of(root: Path, sizes: dict[str, int]) -> Universe:
    """A universe of one multi-frame session file per recording, read from ``root``."""
    root.mkdir()
    (root / "universe.csv").write_text("source,index\n" + "".join(
        f"{name},{i}\n" for name, n in sizes.items() for i in range(n)))
    return read_universe(root / "universe.csv")


def test_adjacent_k_and_severity_are_checked_by_name() -> None:
    assert (check_k(1), check_k(MAX_K), check_k(3, "buffer")) == (1, 1000, 3)
    for bad in (0, MAX_K + 1, True, "2", 2.0):
        with pytest.raises(DvcCuvisError) as k_err:
            check_k(bad)
        assert str(k_err.value) == f"adjacent_k must be a whole number from 1 to 1000, got {bad!r}"
    assert [check_severity(s) for s in ("error", "warn", "off")] == ["error", "warn", "off"]
    with pytest.raises(DvcCuvisError) as sev_err:
        check_severity("loud")
    assert str(sev_err.value) == "adjacent_frames must be one of error, warn, off, got 'loud'"


def test_adjacent_pairs_and_the_buffer_exactly(tmp_path: Path) -> None:
    none = (("train", "val", 0), ("train", "test", 0), ("val", "test", 0))
    solo = frames_of(tmp_path / "solo", {"solo.cu3s": 1})  # no pass at all; stages missing
    assert adjacent_pairs(solo, {"train": [0]}) == Pairs(0, (), 1, none)
    kept = buffer_rows(solo, {"train": [0]}, 1)
    assert kept.dtype == np.int64 and kept.shape == (0,)
    with pytest.raises(DvcCuvisError) as buf_err:
        buffer_rows(solo, {"train": [0]}, 0)
    assert str(buf_err.value) == "buffer must be a whole number from 1 to 1000, got 0"
    two = frames_of(tmp_path / "two", {"two.cu3s": 2})  # first and last frame, one apart
    assert adjacent_pairs(two, {"train": np.array([0]), "val": np.array([1])}, k=1) == Pairs(
        1, ({"a": "two.cu3s#0", "a_stage": "train", "b": "two.cu3s#1", "b_stage": "val"},), 1,
        (("train", "val", 1), ("train", "test", 0), ("val", "test", 0)))
    # rows 0 train, 1 in no stage, 2-3 val, 4 train, 5 test: with k=2, row 2 is within 2 of
    # the kept train row 0, row 4 of the kept val row 3, row 5 of it too; row 1 is no frame
    # of any stage, so it neither goes nor keeps a stage's place; in the next recording (rows
    # 6 val, 7 train) only row 7 goes: the first recording's kept frames are not its neighbours
    six = frames_of(tmp_path / "six", {"six.cu3s": 6, "zz.cu3s": 2})
    stages = {"train": np.array([0, 4, 7]), "val": np.array([2, 3, 6]), "test": np.array([5])}
    assert buffer_rows(six, stages, 2).tolist() == [2, 4, 5, 7]
# --- leakage/recordings.py pinned exactly (mutation testing) ---

def test_recordings_positions_blocks_and_notes_pinned_exactly(tmp_path: Path) -> None:
    from dvc_cuvis.leakage.recordings import MAX_BLOCK, block_size, blocks, flat_note, natural_key

    # digits compare as numbers and sort before text; no empty parts around a digit run
    assert natural_key("f10a") == ((1, "f"), (0, 10), (1, "a"))
    assert natural_key("10") == ((0, 10),)
    assert sorted(["f10", "f2", "f", "2"], key=natural_key) == ["2", "f", "f2", "f10"]
    assert block_size("sample") is None
    assert block_size("block:1") == 1 and block_size(f"block:{MAX_BLOCK}") == MAX_BLOCK
    for bad in ("block:0", f"block:{MAX_BLOCK + 1}", "block:x"):
        with pytest.raises(DvcCuvisError) as err:
            block_size(bad)
        assert str(err.value) == (f"--group-by {bad!r}: block:N needs N a whole number from 1 "
                                  "to 1,000,000 (frames per block of a recording), e.g. block:8")
    # a session (its index is the position), three folders of frame files (natural order of
    # the file name, the root's too; a folder name ending in XX: the key is the name after
    # the last '/') and a multi-frame source named with a '/' at its end
    (tmp_path / "u.csv").write_text("source,index\n" + "".join(
        f"{s},{i}\n" for s, i in (("s.cu3s", 0), ("s.cu3s", 1), ("s.cu3s", 2), ("r/f10.npz", 0),
                                  ("r/f2.npz", 0), ("r/f1.npz", 0), ("q/a.npz", 0),
                                  ("f10.npz", 0), ("f2.npz", 0), ("stack/", 0), ("stack/", 1),
                                  ("qXX/XXz.npz", 0), ("qXX/c.npz", 0))))
    uni = read_universe(tmp_path / "u.csv")
    assert [uni.source(p) for p in range(len(uni))] == [
        "f10.npz", "f2.npz", "q/a.npz", "qXX/XXz.npz", "qXX/c.npz", "r/f1.npz", "r/f10.npz",
        "r/f2.npz", "s.cu3s", "s.cu3s", "s.cu3s", "stack/", "stack/"]
    names, codes, pos = frame_positions(uni)
    assert names == ["./", "q/", "qXX/", "r/", "s.cu3s", "stack/"]
    assert codes.tolist() == [0, 0, 1, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5]
    assert pos.dtype == np.int64 and pos.tolist() == [1, 0, 0, 0, 1, 0, 2, 1, 0, 1, 2, 0, 1]
    out, of_row = blocks(uni, 2)
    assert out == ["./@0", "q/@0", "qXX/@0", "r/@0", "r/@2", "s.cu3s@0", "s.cu3s@2",
                   "stack/@0"]
    assert of_row.dtype == np.int64 and of_row.tolist() == [0, 0, 1, 2, 2, 3, 4, 3, 5, 5, 6,
                                                            7, 7]
    assert flat_note(uni) is None
    (tmp_path / "flat.csv").write_text("source,index\nframes/f0.npz,0\nframes/f1.npz,0\n")
    assert flat_note(read_universe(tmp_path / "flat.csv")) == (
        "the frame files lie in one folder, so no recording is known: each frame is its own "
        "group; give recordings their own folders or a 'group' column if frames of one "
        "recording must stay together")
