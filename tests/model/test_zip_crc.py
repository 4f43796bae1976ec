"""The zip CRC (model/zip_crc.py): zlib's value at every size and alignment, libdeflate's
where the system has it, and a prefix's CRC taken out arithmetically."""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest

from dvc_cuvis.model.zip_crc import crc32_without_prefix


@pytest.mark.parametrize("n", [0, 1, 1000, 65535, 65536, 65537, (1 << 20) + 13])
@pytest.mark.parametrize("fast", [True, False])
def test_crc32_is_zlibs_at_every_size_and_alignment(
        monkeypatch: pytest.MonkeyPatch, n: int, fast: bool) -> None:
    import dvc_cuvis.model.zip_crc as zip_crc

    if not fast:  # as on a machine without libdeflate
        monkeypatch.setattr(zip_crc, "_libdeflate_crc32", lambda: None)
    data = np.random.default_rng(n).bytes(n + 7)
    for off in (0, 3, 7):
        view = memoryview(data)[off:off + n]
        want = zlib.crc32(view)
        assert zip_crc.crc32(view) == zip_crc.crc32(bytes(view)) == want
        assert zip_crc.crc32(bytearray(view)) == want
        if n:
            flipped = bytearray(view)
            flipped[n // 2] ^= 0x01
            assert zip_crc.crc32(flipped) == zlib.crc32(flipped) != want


def test_the_fast_crc_is_the_one_taken_where_the_system_has_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dvc_cuvis.model.zip_crc as zip_crc

    fn = zip_crc._libdeflate_crc32()
    if fn is None:
        pytest.skip("no libdeflate on this machine: zlib.crc32 serves (tested above)")
    sizes: list[int] = []

    def spy(crc: int, address: int, n: int) -> int:
        sizes.append(n)
        return int(fn(crc, address, n))

    monkeypatch.setattr(zip_crc, "_libdeflate_crc32", lambda: spy)
    big, small = bytes(range(256)) * 1024, b"x" * 100
    assert zip_crc.crc32(big) == zlib.crc32(big) and zip_crc.crc32(small) == zlib.crc32(small)
    assert sizes == [len(big)]  # a small buffer goes to zlib: a ctypes call costs more


def test_crc32_without_prefix_is_the_crc_of_the_tail() -> None:
    # the writer's data CRC is its member's CRC less the .npy header, taken out arithmetically
    for head, n in ((b"", 0), (b"x" * 77, 1), (os.urandom(200), (1 << 20) + 3)):
        tail = os.urandom(n)
        assert crc32_without_prefix(zlib.crc32(head + tail), zlib.crc32(head), n) == \
            zlib.crc32(tail)
