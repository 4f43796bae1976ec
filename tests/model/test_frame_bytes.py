"""The frame's bytes (model/frame_bytes.py): deterministic, atomic, md5 on the way; a stored
member copied unchanged from its input reuses the input's CRC, checked before the frame is named."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.model.frame_bytes import npz_bytes, write_frame
from dvc_cuvis.model.frame_read import read_npz
from dvc_cuvis.model.frames import Compression, apply_crop, frame_arrays
from tests.helpers.npz_inputs import CUBES, input_npz, spy_known_crc


def test_write_frame_is_deterministic_and_reads_back(tmp_path: Path) -> None:
    cube = np.arange(4 * 5 * 3, dtype=np.float64).reshape(4, 5, 3)
    classes = np.array([[0, 1, 2, 0, 0]] * 4)
    arrays = frame_arrays(cube, [500, 600, 700], "day1/a.cu3s", classes, (1, 0, 0, 1), "t")
    md5, size = write_frame(tmp_path / "a" / "f.npz", arrays, Compression())
    data = (tmp_path / "a" / "f.npz").read_bytes()
    assert (md5, size) == (hashlib.md5(data).hexdigest(), len(data))
    assert data == npz_bytes(dict(reversed(arrays.items())), Compression())  # order-free
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["f.npz"]  # no temp file left
    with zipfile.ZipFile(tmp_path / "a" / "f.npz") as zf:
        assert [i.filename for i in zf.infolist()] == sorted(i.filename for i in zf.infolist())
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    got = read_npz(str(tmp_path / "a" / "f.npz"))
    assert got["cube"].dtype == np.float32 and got["cube"].shape == (3, 4, 3)
    assert got["class_mask"].dtype == np.uint8 and got["mask"].dtype == np.int32
    assert got["wavelengths"].tolist() == [500, 600, 700] and str(got["source"]) == "day1/a.cu3s"


@pytest.mark.parametrize("kind", sorted(CUBES))
@pytest.mark.parametrize("crop", [None, (1, 0, 2, 1)])
@pytest.mark.parametrize("compress", ["none", "masks:1", "deflate:1"])
def test_reused_input_crc_gives_the_same_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str,
        crop: tuple[int, int, int, int] | None, compress: str) -> None:
    from dvc_cuvis.model.frame_read import read_npz_input

    shape, dtype = CUBES[kind]
    cube = np.random.default_rng(1).random(shape).astype(dtype)
    odd = kind if kind in ("header-v2", "trailing") else ""
    data = input_npz(tmp_path / "in.npz", cube, odd)
    used = spy_known_crc(monkeypatch)
    src = read_npz_input(data)
    z = src.arrays
    arrays = frame_arrays(z["cube"], z["wavelengths"], "s", z["class_mask"], crop, "t")
    comp = Compression.parse(compress)
    md5, size = write_frame(tmp_path / "fast.npz", arrays, comp, origin=src)
    fast = (tmp_path / "fast.npz").read_bytes()
    assert used == (["cube.npy"] if crop is None and kind in ("big", "small")
                    and compress != "deflate:1" else [])  # only an unchanged stored cube
    used.clear()
    plain = frame_arrays(np.array(cube), np.arange(400, 400 + shape[2]), "s",
                         np.array(z["class_mask"]), crop, "t")  # copies: no input to reuse
    assert fast == npz_bytes(plain, comp) and used == []
    assert (md5, size) == (hashlib.md5(fast).hexdigest(), len(fast))
    with zipfile.ZipFile(tmp_path / "fast.npz") as zf:
        assert zf.testzip() is None  # every member's recorded CRC is its bytes' CRC
    np.testing.assert_array_equal(read_npz(str(tmp_path / "fast.npz"))["cube"],
                                  apply_crop(np.array(cube, np.float32), crop, "t"))


@pytest.mark.parametrize("kind", ["big", "small"])
def test_a_damaged_input_is_refused_before_its_frame_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    from dvc_cuvis.model.frame_read import read_npz_input

    shape, dtype = CUBES[kind]
    data = bytearray(input_npz(tmp_path / "in.npz", np.ones(shape, dtype)))
    data[data.index(b"cube.npy") + 200] ^= 0x01  # one bit of the cube data: its CRC fails
    used = spy_known_crc(monkeypatch)
    src = read_npz_input(bytes(data))
    z = src.arrays
    arrays = frame_arrays(z["cube"], z["wavelengths"], "s", z["class_mask"], None, "t")
    out = tmp_path / "out"
    with pytest.raises(zipfile.BadZipFile, match=r"Bad CRC-32 for file 'cube\.npy'"):
        write_frame(out / "f.npz", arrays, Compression(), origin=src)
    assert used == ["cube.npy"]  # the fast path was the one taken
    assert not out.exists() or list(out.iterdir()) == []  # no frame, no temp file


def test_an_array_that_only_looks_like_the_input_is_not_taken_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dvc_cuvis.model.frame_read import read_npz_input

    cube = np.random.default_rng(2).random(CUBES["big"][0]).astype(np.float32)
    src = read_npz_input(input_npz(tmp_path / "in.npz", cube))
    used = spy_known_crc(monkeypatch)
    changed = src.arrays["cube"] * 2  # same shape, dtype and header, other bytes
    arrays = frame_arrays(changed, src.arrays["wavelengths"], "s", None, None, "t")
    write_frame(tmp_path / "f.npz", arrays, Compression(), origin=src)
    assert used == [] and (tmp_path / "f.npz").read_bytes() == npz_bytes(arrays, Compression())


@pytest.mark.parametrize("compress", ["none", "deflate:1"])
def test_the_writer_gives_each_members_data_crc(tmp_path: Path, compress: str) -> None:
    # the signature's content digest takes the cube's CRC from here: it must be the CRC of
    # the data bytes alone, whether taken from the input's entry, by zipfile, or deflated
    import zlib

    from dvc_cuvis.model.frame_bytes import FrameWriter
    from dvc_cuvis.model.frame_read import read_npz_input

    cube = np.random.default_rng(2).random((8, 8, 12)).astype(np.float32)
    src = read_npz_input(input_npz(tmp_path / "in.npz", cube, ""))
    z = src.arrays
    arrays = frame_arrays(z["cube"], z["wavelengths"], "s", z["class_mask"], None, "t")
    for origin in (src, None):
        crcs: dict[str, int] = {}
        with FrameWriter() as writer:
            writer.result(writer.write(tmp_path / "out.npz", arrays, Compression.parse(compress),
                                       origin=origin, data_crcs=crcs))
        assert "cube" in crcs
        assert crcs == {k: zlib.crc32(np.ascontiguousarray(arrays[k]).tobytes()) for k in crcs}
