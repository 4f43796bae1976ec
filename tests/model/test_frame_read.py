"""Reading an input npz (model/frame_read.py): mapped in a worker without a copy, read when
racy, and a write to it while mapped caught before its frame is claimed."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.model.frame_bytes import npz_bytes, write_frame
from dvc_cuvis.model.frames import Compression, frame_arrays
from tests.helpers.npz_inputs import CUBES, allow_mapping, input_npz


@pytest.fixture()
def not_racy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs written just now may be mapped (forked workers inherit this too)."""
    allow_mapping(monkeypatch)


def test_a_mapped_input_gives_the_same_frame_without_a_copy(tmp_path: Path,
                                                            not_racy: None) -> None:
    import mmap

    from dvc_cuvis.model.frame_bytes import FrameWriter
    from dvc_cuvis.model.frame_read import open_npz_input, read_npz_input

    cube = np.random.default_rng(4).random(CUBES["big"][0]).astype(np.float32)
    data = input_npz(tmp_path / "in.npz", cube)
    input_npz(tmp_path / "small.npz", cube[:8, :8, :12])  # under 1 MiB: always read
    src = open_npz_input(str(tmp_path / "in.npz"), mapped=True)
    assert isinstance(src._data, mmap.mmap)  # the arrays are the file's pages
    assert isinstance(open_npz_input(str(tmp_path / "in.npz"))._data, bytes)
    assert isinstance(open_npz_input(str(tmp_path / "small.npz"), mapped=True)._data, bytes)
    read = read_npz_input(data).arrays
    assert sorted(src.arrays) == sorted(read)
    for k in read:
        np.testing.assert_array_equal(src.arrays[k], read[k])
    z = src.arrays
    arrays = frame_arrays(z["cube"], z["wavelengths"], "s", z["class_mask"], None, "t")
    with FrameWriter() as writer:
        md5, size = writer.result(writer.write(tmp_path / "f.npz", arrays, Compression(),
                                               origin=src))
    out = (tmp_path / "f.npz").read_bytes()
    assert out == npz_bytes(arrays, Compression())
    assert (md5, size) == (hashlib.md5(out).hexdigest(), len(out))


@pytest.mark.parametrize("mapped", [True, False])
def test_an_input_written_while_mapped_gives_no_frame_to_claim(
        tmp_path: Path, mapped: bool, not_racy: None) -> None:
    from dvc_cuvis.errors import DvcCuvisError
    from dvc_cuvis.model.frame_bytes import FrameWriter
    from dvc_cuvis.model.frame_read import open_npz_input

    cube = np.random.default_rng(5).random(CUBES["big"][0]).astype(np.float32)
    data = input_npz(tmp_path / "in.npz", cube)
    src = open_npz_input(str(tmp_path / "in.npz"), mapped=mapped)
    z = src.arrays
    arrays = frame_arrays(z["cube"], z["wavelengths"], "s", z["class_mask"], None, "t")
    at = data.index(b"cube.npy") + 1000
    with open(tmp_path / "in.npz", "r+b") as fh:  # another program writes it in place (the
        fh.seek(at)  # same bytes here, so the CRC check passes: a write is what is caught)
        fh.write(data[at:at + 64])
    with FrameWriter() as writer:
        handle = writer.write(tmp_path / "f.npz", arrays, Compression(), origin=src)
        if not mapped:  # a read input is one version of the file: its frame is whole
            md5, _size = writer.result(handle)
            assert md5 == hashlib.md5((tmp_path / "f.npz").read_bytes()).hexdigest()
            return
        with pytest.raises(DvcCuvisError, match=r"in\.npz: the file was written while its "
                                                r"frame was being made"):
            writer.result(handle)
    with pytest.raises(DvcCuvisError, match="was written while"):  # so does write_frame
        write_frame(tmp_path / "g.npz", arrays, Compression(), origin=src)


def test_a_racy_input_is_read_not_mapped(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A file changed within RACY_NS of its opening could be written again in the same
    coarse clock tick without a visible change: it is read (one version), never mapped."""
    import mmap

    import dvc_cuvis.model.frame_read as frame_read

    cube = np.random.default_rng(8).random(CUBES["big"][0]).astype(np.float32)
    input_npz(tmp_path / "in.npz", cube)  # just written: racy
    path = str(tmp_path / "in.npz")
    assert isinstance(frame_read.open_npz_input(path, mapped=True)._data, bytes)
    old = time.time_ns() - 10_000_000_000
    os.utime(path, ns=(old, old))  # mtime long ago, but the ctime is now: still racy
    assert isinstance(frame_read.open_npz_input(path, mapped=True)._data, bytes)
    later = time.time_ns() + 3_000_000_000
    monkeypatch.setattr(frame_read, "_now_ns", lambda: later)  # opened 3 s later: mapped
    assert isinstance(frame_read.open_npz_input(path, mapped=True)._data, mmap.mmap)
