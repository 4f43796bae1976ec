"""An npz's ``.npy`` members, read only within the sizes they declare.

A frame comes from a branch anyone can push, so what its zip directory and its ``.npy``
headers say is checked against each other, against the file and against the ceiling of
:mod:`dvc_cuvis.limits` before a byte is allocated for it: the header's shape (no negative
dimension) times its item size is the array's size; the member holds that header and
that array; a stored member's bytes lie inside the file; a deflated member cannot
declare more than deflate can make of its compressed bytes, and is inflated into a buffer
of its declared size and no further (a stream that would give more, or less, is damaged).
Bytes after the array inside its member are allowed (numpy reads past them).
A member that disagrees raises ``zipfile.BadZipFile`` (what every reader of frames already
reports as a damaged frame; one of pickled objects raises ``ValueError``, as ``np.load``
does); an array over the ceiling raises :class:`~dvc_cuvis.limits.LimitError`, which
names the ceiling's environment variable.
"""

from __future__ import annotations

import io
import mmap
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from dvc_cuvis._io import Buffer
from dvc_cuvis.limits import Limits, check_declared, current

#: the most bytes deflate can make of one compressed byte (258 per 2 bits), with room for
#: a stream's own few bytes
DEFLATE_RATIO = 1032
#: the most bytes of a ``.npy`` header we read (numpy itself refuses headers over 10,000)
HEAD_MAX = 1 << 14
#: the piece an inflated member is written in, so a stream is never inflated past its size
_PIECE = 1 << 20
_LOCAL = b"PK\x03\x04"


@dataclass(frozen=True)
class StoredMember:
    """A stored member read in place: where its data lies, its ``.npy`` header, its CRC."""

    name: str
    address: int  # of the first data byte (-1 when the data does not fill the member)
    nbytes: int
    header: bytes
    crc: int
    span: memoryview  # the member's bytes (header + data) in the input


def npy_members(infos: list[zipfile.ZipInfo]) -> list[zipfile.ZipInfo]:
    """The members that hold arrays (``*.npy``); any other member is never read."""
    return [zi for zi in infos if zi.filename.endswith(".npy")]


def read_members(buf: Buffer | mmap.mmap, infos: list[zipfile.ZipInfo], *, where: str = "",
                 names: set[str] | None = None, stored: list[StoredMember] | None = None,
                 ) -> dict[str, np.ndarray]:
    """Every ``.npy`` member of the zip in ``buf`` (only ``names`` when given), each checked
    before it is read; stored members are views of ``buf`` whose CRC is left to the caller
    (their layout appended to ``stored``), deflated ones are inflated and CRC-checked."""
    limits = current()
    out: dict[str, np.ndarray] = {}
    for zi in npy_members(infos):
        name = zi.filename[:-4]
        if names is None or name in names:
            arr, member = read_member(buf, zi, where=where, limits=limits)
            out[name] = arr
            if member is not None and stored is not None:
                stored.append(member)
    return out


def read_member(buf: Buffer | mmap.mmap, zi: zipfile.ZipInfo, *, where: str = "",
                limits: Limits | None = None) -> tuple[np.ndarray, StoredMember | None]:
    """One ``.npy`` member: the array, and its layout when it is stored (CRC unchecked)."""
    limits = limits or current()
    name = zi.filename[:-4]
    _check_entry(zi, name, where, limits)
    start = _data_start(buf, zi, name)
    if zi.compress_type == zipfile.ZIP_STORED:
        span = memoryview(buf)[start:start + zi.file_size]
        head_len, shape, fortran, dtype = _header(bytes(span[:HEAD_MAX]), zi, name, where,
                                                  limits)
        count = _count(shape)
        arr = np.frombuffer(span, dtype=dtype, count=count, offset=head_len)
        nbytes = count * dtype.itemsize
        exact = count and head_len + nbytes == zi.file_size  # no bytes after the data
        member = StoredMember(zi.filename, arr.__array_interface__["data"][0] if exact else -1,
                              nbytes, bytes(span[:head_len]), zi.CRC, span)
        return arr.reshape(shape, order="F" if fortran else "C"), member
    raw = memoryview(buf)[start:start + zi.compress_size]
    head_len, shape, fortran, dtype = _header(_inflate_head(raw), zi, name, where, limits)
    data = _inflate(raw, zi.file_size, name)
    if zlib.crc32(data) != zi.CRC:
        raise zipfile.BadZipFile(f"Bad CRC-32 for file {zi.filename!r}")
    arr = np.frombuffer(data, dtype=dtype, count=_count(shape), offset=head_len)
    return arr.reshape(shape, order="F" if fortran else "C"), None


def _check_entry(zi: zipfile.ZipInfo, name: str, where: str, limits: Limits) -> None:
    """What the zip directory declares, before the member is touched."""
    if zi.flag_bits & 0x1:
        raise zipfile.BadZipFile(f"member {name!r} is encrypted")
    if zi.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise zipfile.BadZipFile(f"member {name!r}: compression method {zi.compress_type} is "
                                 "not supported; expected stored or deflated members")
    if zi.file_size > limits.max_array_bytes + HEAD_MAX:  # (a header is not an array's)
        check_declared(f"{where}member {name!r} (bytes)", zi.file_size,
                       limits.max_array_bytes, Limits.env_name("max_array_bytes"))
    if zi.compress_type == zipfile.ZIP_STORED and zi.compress_size != zi.file_size:
        raise zipfile.BadZipFile(f"member {name!r} is stored but declares {zi.file_size:,} "
                                 f"bytes in {zi.compress_size:,}")
    if zi.file_size > zi.compress_size * DEFLATE_RATIO + 64:
        raise zipfile.BadZipFile(f"member {name!r} declares {zi.file_size:,} bytes from "
                                 f"{zi.compress_size:,} compressed, more than deflate can make")


def _data_start(buf: Buffer | mmap.mmap, zi: zipfile.ZipInfo, name: str) -> int:
    """Where the member's bytes start, once its local header and bytes lie in the file."""
    size = len(buf)
    off = zi.header_offset
    local = bytes(buf[off:off + 30]) if 0 <= off <= size else b""
    if len(local) < 30 or local[:4] != _LOCAL:
        raise zipfile.BadZipFile(f"member {name!r}: bad local file header")
    start = off + 30 + int.from_bytes(local[26:28], "little") + int.from_bytes(
        local[28:30], "little")
    if start + zi.compress_size > size:
        raise zipfile.BadZipFile(f"member {name!r} declares {zi.compress_size:,} bytes past "
                                 "the end of the file (truncated?)")
    return start


def _header(head: bytes, zi: zipfile.ZipInfo, name: str, where: str, limits: Limits
            ) -> tuple[int, tuple[int, ...], bool, np.dtype[Any]]:
    """The ``.npy`` header's length, shape, order and dtype, checked against the member."""
    fmt = np.lib.format
    stream = io.BytesIO(head)
    try:
        version = fmt.read_magic(stream)
        reader = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, fortran, dtype = reader(stream)
    except Exception as exc:  # numpy's header parser raises many kinds
        raise zipfile.BadZipFile(f"member {name!r}: not a numpy array file ({exc})") from None
    if dtype.hasobject:
        raise ValueError(f"member {name!r}: holds Python objects, which are never unpickled "
                         "(allow_pickle is never set); expected an array of numbers or text")
    if any(type(n) is not int or n < 0 for n in shape):
        raise zipfile.BadZipFile(f"member {name!r}: header declares shape {shape}; a "
                                 "dimension must be a whole number >= 0")
    nbytes = _count(shape) * dtype.itemsize
    check_declared(f"{where}member {name!r} (array bytes)", nbytes, limits.max_array_bytes,
                   Limits.env_name("max_array_bytes"))
    head_len = stream.tell()
    if head_len + nbytes > zi.file_size:  # (bytes after the data are read past, as numpy does)
        raise zipfile.BadZipFile(
            f"member {name!r}: its header declares {head_len + nbytes:,} bytes ({shape} "
            f"{dtype}), the zip only {zi.file_size:,}")
    return head_len, tuple(shape), bool(fortran), dtype


def _count(shape: tuple[int, ...]) -> int:
    count = 1
    for n in shape:
        count *= n
    return count


def _inflate_head(raw: memoryview) -> bytes:
    """The first bytes a deflated member inflates to: enough for its ``.npy`` header."""
    try:
        return zlib.decompressobj(-15).decompress(raw, HEAD_MAX)
    except zlib.error:
        return b""  # the header check names the member; _inflate says what is wrong


def _inflate(raw: memoryview, size: int, name: str) -> bytearray:
    """Inflate a member into exactly ``size`` bytes; more or fewer is a damaged member."""
    out = bytearray(size)
    view = memoryview(out)
    inflater = zlib.decompressobj(-15)
    pos = 0
    tail: bytes | memoryview = raw
    try:
        while pos < size:
            piece = inflater.decompress(tail, min(size - pos, _PIECE))
            tail = inflater.unconsumed_tail
            if not piece:
                break
            view[pos:pos + len(piece)] = piece
            pos += len(piece)
        more = b"" if inflater.eof else inflater.decompress(tail, 1)
    except zlib.error as exc:
        raise zipfile.BadZipFile(f"member {name!r}: damaged deflate stream ({exc})") from None
    if more:
        raise zipfile.BadZipFile(f"member {name!r} inflates to more than the {size:,} bytes "
                                 "it declares")
    if pos < size or not inflater.eof:
        raise zipfile.BadZipFile(f"member {name!r} inflates to {pos:,} of the {size:,} bytes "
                                 "it declares, and its stream ends early")
    return out
