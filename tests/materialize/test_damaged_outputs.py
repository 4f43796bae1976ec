"""Damaged files materialize wrote itself: the manifest and the summaries shards are rebuilt
(said on stderr), never trusted, and a reader of a damaged shard names the command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cuvis_ai_schemas.training.data import DataSplitConfig, Selector

from dvc_cuvis.materialize import ReaderParams
from dvc_cuvis.materialize import materialize_universe as materialize
from dvc_cuvis.materialize.summary_store import DamagedShardError, load_summaries
from dvc_cuvis.model.universe_io import read_universe

NESTED = b'{"version": 2, "frames": ' + b"[" * 100_000


def _dataset(root: Path) -> Path:
    for name in ("a", "b", "c"):
        np.savez(root / f"{name}.npz", cube=np.full((2, 2, 3), ord(name), np.float32),
                 wavelengths=np.array([500, 600, 700]))
    (root / "universe.csv").write_text(
        "source,index,format\n" + "".join(f"{n}.npz,0,npz\n" for n in "abc"))
    split = DataSplitConfig(train=[Selector(kind="files", paths=["a.npz", "b.npz"])],
                            test=[Selector(kind="files", paths=["c.npz"])],
                            predict=[Selector(kind="files", paths=["a.npz"])])
    (root / "splits.json").write_text(split.model_dump_json())
    return root / "universe.csv"


def _run(universe: Path, out: Path) -> Any:
    from dvc_cuvis.model.splits import load_splits

    return materialize(read_universe(universe), load_splits(universe.parent / "splits.json"),
                       out, ReaderParams())


def _files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes()
            for p in sorted(out.rglob("*")) if p.is_file() and p.name != ".lock"}


@pytest.mark.parametrize("damage", [
    NESTED,  # deeper than the parser's stack: was "internal error", and stuck until deleted
    b'{"version": 2, "frames": {"frames/a.npz.000000.npz": "not an entry"}}',
    b'{"version": 2, "frames": {"frames/a.npz.',  # cut short
], ids=["nested", "not-an-entry", "cut-short"])
def test_a_damaged_manifest_is_rebuilt_and_vouches_for_no_frame_it_did_not_write(
        tmp_path: Path, damage: bytes) -> None:
    universe, out = _dataset(tmp_path), tmp_path / "out"
    _run(universe, out)
    clean = _files(out)
    frame = out / "frames" / "a.npz.000000.npz"
    torn = bytearray(frame.read_bytes())
    torn[-30] ^= 0xFF  # same size: only its md5 tells it from the frame the manifest named
    frame.write_bytes(bytes(torn))
    (out / "manifest.json").write_bytes(damage)
    result = _run(universe, out)
    assert (result.written, result.kept) == (3, 0)
    (note,) = result.notes
    assert note.startswith(f"{out / 'manifest.json'}: damaged (") and "rebuilding it" in note
    assert _files(out) == clean
    again = _run(universe, out)
    assert (again.written, again.kept, again.notes) == (0, 3, [])


def test_the_cli_says_so_in_one_line(tmp_path: Path, cli: Any) -> None:
    universe, out = _dataset(tmp_path), tmp_path / "out"
    _run(universe, out)
    (out / "manifest.json").write_bytes(NESTED)
    r = cli("materialize", "--no-params", "--universe", universe, "--splits",
            tmp_path / "splits.json", "--out-dir", out, "--stat-cache", "none")
    assert r.code == 0, r.err
    (line,) = [x for x in r.err.splitlines() if "manifest.json" in x]
    assert line == (f"dvc-cuvis: {out / 'manifest.json'}: damaged (nested too deep); rebuilding "
                    "it: every selected frame is written again, none is taken on its word")
    assert "3 written" in r.out


def test_a_damaged_summaries_shard_is_rebuilt_by_materialize_and_named_by_readers(
        tmp_path: Path) -> None:
    universe, out = _dataset(tmp_path), tmp_path / "out"
    _run(universe, out)
    clean = _files(out)
    shard = out / "summaries" / "%summary.json"
    frames = sorted(json.loads(shard.read_text())["frames"])
    for damage in (b'{"recipe": 3, "frames": ' + b"[" * 100_000, b"{cut",
                   b'{"recipe": 3, "frames": {"frames/a.npz.000000.npz": 7}}'):
        shard.write_bytes(damage)
        with pytest.raises(DamagedShardError) as exc:  # what the report reads
            load_summaries(out, frames)
        assert str(exc.value).startswith(f"{shard}: damaged summaries shard (")
        assert str(exc.value).endswith("; rerun dvc-cuvis materialize on its folder, which "
                                       "rebuilds it")
        result = _run(universe, out)
        assert result.notes == [f"{shard}: damaged summaries shard ({exc.value.why}); rebuilt"]
        assert (result.written, result.kept) == (0, 3) and _files(out) == clean
