"""The summaries shards: their exact bytes, their refusals, and how refresh keeps them in step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.leakage.signatures import SIGNATURE_VERSION
from dvc_cuvis.materialize import summary_store
from dvc_cuvis.materialize.summaries import RECIPE
from dvc_cuvis.materialize.summary_store import (
    dumps_shard,
    read_shard,
    refresh,
    shard_files,
    shard_of,
    write_shard,
)

A, B, C = "frames/d/a.npz.000000.npz", "frames/d/b.npz.000000.npz", "frames/e/c.npz.000000.npz"


SIGNED = {"signature": {"v": SIGNATURE_VERSION}}


def rec(value: float, thumb: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"mean": [value], **SIGNED}
    if thumb:
        out["thumbnail"] = {"rgb": "AAAA"}
    return out


def test_a_shards_bytes_are_sorted_compact_and_end_in_a_newline() -> None:
    text = dumps_shard({"z": {"b": 1, "a": 2}, "y": {"c": 3}})
    assert text == f'{{"frames":{{"y":{{"c":3}},"z":{{"a":2,"b":1}}}},"recipe":{RECIPE}}}\n'
    with pytest.raises(ValueError):
        dumps_shard({"z": {"mean": [float("nan")]}})


def test_unreadable_shards_are_refused_naming_the_file_and_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(DvcCuvisError, match=r"bad\.json: damaged summaries shard \(.*\); rerun "
                                            r"dvc-cuvis materialize on its folder, which "
                                            r"rebuilds it"):
        read_shard(bad)
    bad.write_text(json.dumps({"recipe": RECIPE, "frames": []}))
    with pytest.raises(DvcCuvisError, match=r"bad\.json: damaged summaries shard \(no 'frames'\); "
                                            r"rerun dvc-cuvis materialize"):
        read_shard(bad)
    bad.write_text(json.dumps({"recipe": RECIPE - 1, "frames": {"x": {}}}))
    assert read_shard(bad) == {}
    bad.write_text(json.dumps({"recipe": RECIPE, "frames": {"x": {"é": 1}}}, ensure_ascii=False),
                   encoding="utf-8")
    assert read_shard(bad) == {"x": {"é": 1}}
    assert read_shard(tmp_path / "absent.json") == {}


def test_a_shard_of_the_same_bytes_is_not_rewritten(tmp_path: Path, monkeypatch) -> None:
    seen: list[Any] = []
    real = summary_store.atomic_write_parts

    def spy(path: Any, parts: Any, *, fsync: bool = True) -> None:
        seen.append(fsync)
        real(path, parts, fsync=fsync)

    monkeypatch.setattr(summary_store, "atomic_write_parts", spy)
    path = tmp_path / "s" / "%summary.json"
    assert write_shard(path, {A: rec(1.0)}) is True
    assert write_shard(path, {A: rec(1.0)}, fsync=False) is False
    assert write_shard(path, {A: rec(2.0)}, fsync=False) is True
    assert seen == [True, False]
    assert shard_files(tmp_path / "nowhere") == []


def _frames(*names: str) -> dict[str, tuple[str, int, str]]:
    return {n: (n.split("/")[2].split(".npz")[0] + ".npz", 0, f"md5-{n[-20:]}") for n in names}


def test_refresh_counts_what_it_summarized_again_and_syncs_once(tmp_path: Path,
                                                               monkeypatch) -> None:
    syncs: list[Path] = []
    monkeypatch.setattr(summary_store, "sync_file_system", syncs.append)
    asked: list[str] = []

    def again(name: str) -> dict[str, Any]:
        asked.append(name)
        return rec(9.0)

    frames = _frames(A, B, C)
    assert refresh(tmp_path, frames, {A: rec(1.0)}, frozenset(), summarize_frame=again) == 2
    assert sorted(asked) == [B, C] and syncs == [tmp_path]
    shard = read_shard(tmp_path / shard_of(A))
    assert shard[A] == {"mean": [1.0], "source": "a.npz", "index": 0, "md5": frames[A][2],
                        **SIGNED}
    assert shard[B]["mean"] == [9.0]
    # nothing changed: nothing summarized, nothing written, no sync
    assert refresh(tmp_path, frames, {}, frozenset(), summarize_frame=again) == 0
    assert syncs == [tmp_path] and len(asked) == 2
    # a frame of another md5 is summarized again; sync=False leaves the sync to the caller
    frames[A] = ("a.npz", 0, "other")
    assert refresh(tmp_path, frames, {}, frozenset(), summarize_frame=again, sync=False) == 1
    assert asked[-1] == A and syncs == [tmp_path]
    assert read_shard(tmp_path / shard_of(A))[A]["md5"] == "other"


def test_refresh_drops_gone_frames_and_empty_shards(tmp_path: Path) -> None:
    frames = _frames(A, B, C)
    refresh(tmp_path, frames, {n: rec(1.0) for n in frames}, frozenset(), summarize_frame=None)
    assert len(shard_files(tmp_path)) == 2
    refresh(tmp_path, _frames(A), {}, frozenset(), summarize_frame=None)
    assert [p.parent.name for p in shard_files(tmp_path)] == ["d"]
    assert set(read_shard(tmp_path / shard_of(A))) == {A}


def test_refresh_without_summaries_leaves_a_frame_without_one_out(tmp_path: Path) -> None:
    assert refresh(tmp_path, _frames(A, B), {A: rec(1.0)}, frozenset(),
                   summarize_frame=None) == 0
    assert set(read_shard(tmp_path / shard_of(A))) == {A}


def test_a_kept_thumbnail_goes_when_no_longer_wanted_and_comes_back_when_wanted(
        tmp_path: Path) -> None:
    frames = _frames(A)
    refresh(tmp_path, frames, {A: rec(1.0, thumb=True)}, frozenset({A}), summarize_frame=None)
    assert "thumbnail" in read_shard(tmp_path / shard_of(A))[A]
    refresh(tmp_path, frames, {}, frozenset(), summarize_frame=None)
    assert "thumbnail" not in read_shard(tmp_path / shard_of(A))[A]
    asked: list[str] = []
    refresh(tmp_path, frames, {}, frozenset({A}),
            summarize_frame=lambda n: asked.append(n) or rec(2.0, thumb=True))
    assert asked == [A] and "thumbnail" in read_shard(tmp_path / shard_of(A))[A]


def test_refresh_writes_shards_unsynced_and_syncs_when_any_changed(tmp_path: Path,
                                                                   monkeypatch) -> None:
    """Each shard without its own fsync, one sync after: also when only an early shard
    changed and a later one did not."""
    syncs: list[Path] = []
    fsyncs: list[bool] = []
    real = summary_store.atomic_write_parts
    monkeypatch.setattr(summary_store, "sync_file_system", syncs.append)
    monkeypatch.setattr(summary_store, "atomic_write_parts",
                        lambda p, parts, *, fsync=True: (fsyncs.append(fsync),
                                                         real(p, parts, fsync=fsync)))
    frames = _frames(A, C)  # shards d/ and e/, refreshed in that order
    refresh(tmp_path, frames, {A: rec(1.0), C: rec(2.0)}, frozenset(), summarize_frame=None)
    assert fsyncs == [False, False] and syncs == [tmp_path]
    refresh(tmp_path, frames, {A: rec(3.0)}, frozenset(), summarize_frame=None)  # d/ only
    assert fsyncs == [False, False, False] and syncs == [tmp_path, tmp_path]
    assert write_shard(tmp_path / "none" / "%summary.json", {}) is False


def test_an_unsigned_entry_is_summarized_again_only_when_summaries_are_on(tmp_path: Path) -> None:
    frames = _frames(A)
    unsigned = {"mean": [1.0]}  # an entry written before signatures existed
    refresh(tmp_path, frames, {A: unsigned}, frozenset(), summarize_frame=None)
    refresh(tmp_path, frames, {}, frozenset(), summarize_frame=None)
    assert read_shard(tmp_path / shard_of(A))[A]["mean"] == [1.0]  # kept: summaries off
    asked: list[str] = []
    assert refresh(tmp_path, frames, {}, frozenset(),
                   summarize_frame=lambda n: asked.append(n) or rec(2.0)) == 1
    assert asked == [A] and read_shard(tmp_path / shard_of(A))[A]["signature"] == SIGNED[
        "signature"]
