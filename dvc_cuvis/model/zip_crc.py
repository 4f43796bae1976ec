"""The zip CRC-32: fast where the system has libdeflate, and taken apart arithmetically.

A frame's writer, its reader and the content digest of its signature all need the CRC of
bytes they hold; one module gives it, equal to ``zlib.crc32`` on every input.
"""

from __future__ import annotations

import ctypes
import functools
import zlib
from typing import Any

import numpy as np

from dvc_cuvis._io import Buffer


def crc32(data: Buffer) -> int:
    """The zip CRC-32 of ``data``, as ``zlib.crc32`` gives it, faster where the system allows.

    Checking an input's CRC is a pass over its whole cube per frame that materialize must
    make (a damaged input must leave no frame); libdeflate's CRC (carry-less multiply, where
    the system has the library) is several times zlib 1.2's (figures in docs/performance.md).
    Without libdeflate,
    or for small buffers, ``zlib.crc32``.
    """
    fn = _libdeflate_crc32() if memoryview(data).nbytes >= 1 << 16 else None
    if fn is None:
        return zlib.crc32(data)
    arr = np.frombuffer(data, dtype=np.uint8)  # the buffer's address, without a copy
    return int(fn(0, arr.ctypes.data, arr.nbytes))


#: The CRC-32 polynomial, bit-reversed (zip's convention).
_CRC_POLY = 0xEDB88320


def _crc_multiply(a: int, b: int) -> int:
    """The product of two polynomials modulo the CRC-32 polynomial (bit-reversed form)."""
    product, bit = 0, 1 << 31
    while bit:
        if a & bit:
            product ^= b
        b = (b >> 1) ^ _CRC_POLY if b & 1 else b >> 1
        bit >>= 1
    return product


@functools.lru_cache(maxsize=64)
def _zeros_operator(length: int) -> int:
    """x to the power of ``8 * length`` modulo the polynomial: what appending ``length``
    bytes does to a CRC register (cached: a run's frames share a few sizes)."""
    result, square, power = 1 << 31, 1 << 30, 8 * length  # x^0, x^1
    while power:
        if power & 1:
            result = _crc_multiply(result, square)
        square = _crc_multiply(square, square)
        power >>= 1
    return result


def crc32_without_prefix(whole: int, prefix: int, length: int) -> int:
    """The CRC-32 of the last ``length`` bytes of a buffer, from the whole buffer's CRC and
    its prefix's: CRC-32 is linear, so the prefix's part is shifted past those bytes and
    taken out, with no pass over them."""
    return whole ^ _crc_multiply(_zeros_operator(length), prefix)


@functools.cache
def _libdeflate_crc32() -> Any:
    """libdeflate's ``libdeflate_crc32`` through ctypes (the call releases the GIL), or None.

    Used only after it gives ``zlib.crc32``'s value on a test buffer (same polynomial and
    conventions), so a different library under that name can never change a verdict.
    """
    for name in ("libdeflate.so.0", "libdeflate.so", "libdeflate.dylib", "libdeflate.0.dylib"):
        try:
            fn = ctypes.CDLL(name).libdeflate_crc32
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_uint32
        fn.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t]
        probe = np.frombuffer(bytes(range(256)) * 300, dtype=np.uint8)
        if int(fn(0, probe.ctypes.data, probe.nbytes)) == zlib.crc32(probe.data):
            return fn
    return None
