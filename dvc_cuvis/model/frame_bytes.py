"""The bytes of an npz frame: deterministic, written atomically, md5 taken on the way.

*Write*: members in sorted order, fixed zip timestamps and attributes, arrays through
``np.lib.format`` (never pickled), compression chosen per member
(:class:`~dvc_cuvis.model.frames.Compression`) -- the same inputs give the same bytes on
any machine.  A stored member copied unchanged from an input npz
(:class:`~dvc_cuvis.model.frame_read.NpzInput`) takes its CRC from the input's zip entry.
"""

from __future__ import annotations

import bisect
import hashlib
import io
import threading
import zipfile
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dvc_cuvis._io import Buffer, atomic_write_parts
from dvc_cuvis.model.frame_read import NpzInput
from dvc_cuvis.model.frames import Compression
from dvc_cuvis.model.zip_crc import crc32_without_prefix

# zip's earliest representable time: no member carries the time it was written
_EPOCH = (1980, 1, 1, 0, 0, 0)


def npz_bytes(arrays: dict[str, np.ndarray], compression: Compression) -> bytes:
    """A deterministic ``.npz``: sorted members, fixed timestamps/attributes, no pickle."""
    return b"".join(npz_parts(arrays, compression))


def npz_parts(arrays: dict[str, np.ndarray], compression: Compression,
              origin: NpzInput | None = None,
              data_crcs: dict[str, int] | None = None) -> list[Buffer]:
    """The bytes of :func:`npz_bytes` as pieces whose concatenation is the file.

    A stored member's array data is a view of the array itself, not a copy: the zip
    container is written by ``zipfile`` (so its bytes are exactly those of ``npz_bytes``
    in every earlier version) into a sink that keeps each write by reference.  A writer
    then hashes and writes the pieces one after the other: a 16 MB cube is never copied
    into a member buffer, a zip buffer and a result string on its way to the disk.

    ``origin``: the input the arrays were read from.  A stored member whose bytes are
    exactly one of its members' (the array is the very view
    :func:`~dvc_cuvis.model.frame_read.read_npz_input` made, and the ``.npy`` header is
    the same) takes its CRC from the input's zip entry instead
    of a pass over the data — valid only once ``origin.verify()`` has passed, which
    :func:`write_frame` ensures before the file gets its name.

    ``data_crcs``: filled with the CRC-32 of each C-contiguous array's data bytes (its
    member's CRC less its ``.npy`` header,
    :func:`~dvc_cuvis.model.zip_crc.crc32_without_prefix`), so a frame's content digest
    costs no pass of its own.
    """
    sink = _Parts()
    with zipfile.ZipFile(sink, "w", allowZip64=True) as zf:
        for key in sorted(arrays):
            arr = np.asanyarray(arrays[key])
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_EPOCH)
            info.create_system = 3
            info.external_attr = 0o644 << 16
            level = compression.level_for(key)
            info.compress_type = zipfile.ZIP_STORED if level is None else zipfile.ZIP_DEFLATED
            pieces = _npy_pieces(arr)
            if level is None:
                info.file_size = sum(len(p) for p in pieces)  # as writestr sets it
            crc = origin.crc_of(arr, pieces) if origin is not None and level is None else None
            if crc is not None:
                _write_known_crc(zf, sink, info, pieces, crc)
            elif level is None:
                with zf.open(info, "w") as dest:
                    for piece in pieces:
                        dest.write(piece)
            else:
                zf.writestr(info, b"".join(pieces), compresslevel=level)
            if data_crcs is not None and len(pieces) == 2:  # [header, data]: C order
                data_crcs[key] = crc32_without_prefix(info.CRC, zlib.crc32(pieces[0]),
                                                      len(pieces[1]))
    return sink.parts


def _write_known_crc(zf: zipfile.ZipFile, sink: _Parts, info: zipfile.ZipInfo,
                     pieces: list[memoryview], crc: int) -> None:
    """Write a stored member whose CRC is known, the same bytes as ``zf.open(info, "w")``.

    ``zipfile`` would CRC every byte it is given: it gets the ``.npy`` header alone, and
    the data is appended to the sink after it, then the local header is rewritten with
    the whole member's sizes and CRC (as ``zipfile`` itself does on closing a member; the
    sink refuses a rewrite of another length) and the central directory moved past it.
    """
    size = info.file_size
    zip64 = size * 1.05 > zipfile.ZIP64_LIMIT  # as ZipFile._open_to_write decides
    head, data = pieces
    with zf.open(info, "w") as dest:
        dest.write(head)
    sink.write(data)
    info.file_size = info.compress_size = size
    info.CRC = crc
    end = sink.tell()
    sink.seek(info.header_offset)
    sink.write(info.FileHeader(zip64))
    sink.seek(end)
    zf.start_dir = end


def _npy_pieces(arr: np.ndarray) -> list[memoryview]:
    """``np.lib.format.write_array``'s bytes: the header, then the data (a view if it can)."""
    if arr.flags.c_contiguous and not arr.dtype.hasobject and arr.dtype.isbuiltin:
        head = io.BytesIO()
        try:  # write_array picks format 1.0 whenever the header fits it, as here
            np.lib.format.write_array_header_1_0(
                head, np.lib.format.header_data_from_array_1_0(arr))
        except ValueError:
            pass
        else:
            return [head.getbuffer(), arr.reshape(-1).view(np.uint8).data]
    member = io.BytesIO()
    np.lib.format.write_array(member, arr, allow_pickle=False)
    return [member.getbuffer()]


class _Parts:
    """A seekable write-only file that keeps what is written by reference, in order.

    ``zipfile`` writes a member's header, its data, then seeks back and rewrites the
    header with the final sizes and CRC: a write at an earlier offset must replace one
    earlier write of the same length exactly.
    """

    def __init__(self) -> None:
        self.parts: list[Buffer] = []
        self._starts: list[int] = []
        self._pos = self._end = 0

    def write(self, data: Buffer) -> int:
        n = memoryview(data).nbytes
        if n == 0:
            return 0
        if self._pos == self._end:
            self._starts.append(self._pos)
            self.parts.append(data if isinstance(data, bytes) else memoryview(data))
            self._end += n
        else:
            i = bisect.bisect_left(self._starts, self._pos)
            if (i == len(self._starts) or self._starts[i] != self._pos
                    or memoryview(self.parts[i]).nbytes != n):
                raise OSError("unsupported rewrite in a zip under construction")
            self.parts[i] = bytes(data)
        self._pos += n
        return n

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = 0) -> int:
        self._pos = {0: pos, 1: self._pos + pos, 2: self._end + pos}[whence]
        return self._pos

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def write_frame(path: Path | str, arrays: dict[str, np.ndarray],
                compression: Compression, *, fsync: bool = True,
                origin: NpzInput | None = None) -> tuple[str, int]:
    """Atomically write one frame; returns its md5 and size (what the manifest records).

    The md5 is taken over the pieces while they go to the disk (no second read, no joined
    copy): on a frame of a few MB, in a thread beside the write (both release the GIL).
    ``origin`` (the input npz the arrays come from, see
    :func:`~dvc_cuvis.model.frame_read.read_npz_input`): members copied from it unchanged
    reuse its CRC, so the md5 thread starts at once, and the input's own CRC is checked in
    this thread meanwhile, before a byte is written — a damaged input raises
    ``zipfile.BadZipFile`` and leaves nothing behind.
    ``fsync=False``: see :func:`dvc_cuvis._io.atomic_write_parts`.
    """
    parts = npz_parts(arrays, compression, origin)
    size = sum(memoryview(part).nbytes for part in parts)
    h = hashlib.md5()
    if size < 1 << 22:
        if origin is not None:
            origin.verify()
        _md5_update(h, parts)
        atomic_write_parts(path, parts, fsync=fsync)
        if origin is not None:
            origin.check_unchanged()
        return h.hexdigest(), size
    hasher = threading.Thread(target=_md5_update, args=(h, parts), daemon=True)
    hasher.start()
    try:
        if origin is not None:
            origin.verify()  # the one CRC pass over the input, beside the md5 thread
        atomic_write_parts(path, parts, fsync=fsync)
    finally:
        hasher.join()
    if origin is not None:
        origin.check_unchanged()
    return h.hexdigest(), size


class FrameWriter:
    """Writes frames one after another, each one's md5 taken while the next is written.

    The md5 is the slowest pass over a frame's bytes (docs/performance.md): one thread
    hashes frame *i* while the caller reads, checks and writes frame *i+1*, so a run of
    frames costs about one md5 per frame instead of md5 + read + write.  :meth:`write`
    returns at once with the frame named on disk; :meth:`result` gives its md5 and size
    (at most two frames wait for their md5, so memory stays bounded).
    """

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="md5")
        self._pending: list[Future[tuple[str, int]]] = []

    def __enter__(self) -> FrameWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def write(self, path: Path | str, arrays: dict[str, np.ndarray], compression: Compression,
              *, fsync: bool = True, origin: NpzInput | None = None,
              data_crcs: dict[str, int] | None = None) -> FrameHandle:
        """Write one frame as :func:`write_frame` does; returns a handle for :meth:`result`
        (``data_crcs``: see :func:`npz_parts`)."""
        parts = npz_parts(arrays, compression, origin, data_crcs)
        size = sum(memoryview(part).nbytes for part in parts)
        while len(self._pending) >= 2:  # never more than two frames' bytes held for hashing
            self._pending.pop(0).result()
        future = self._pool.submit(_md5_hex, parts, size)
        try:
            if origin is not None:
                origin.verify()
            atomic_write_parts(path, parts, fsync=fsync)
        except BaseException:
            future.cancel()
            raise
        self._pending.append(future)
        return FrameHandle(future, origin)

    @staticmethod
    def result(handle: FrameHandle) -> tuple[str, int]:
        """The md5 and size of a frame :meth:`write` wrote (waits for its md5).

        Its last read of a mapped input is over then: the input is checked unchanged (see
        :func:`~dvc_cuvis.model.frame_read.open_npz_input`) before the frame may be claimed.
        """
        md5_size = handle.future.result()
        if handle.origin is not None:
            handle.origin.check_unchanged()
        return md5_size


@dataclass(frozen=True)
class FrameHandle:
    """A frame :meth:`FrameWriter.write` wrote: its md5 to come, the input it came from."""

    future: Future[tuple[str, int]]
    origin: NpzInput | None


def _md5_hex(parts: list[Buffer], size: int) -> tuple[str, int]:
    h = hashlib.md5()
    _md5_update(h, parts)
    return h.hexdigest(), size


def _md5_update(h: Any, parts: list[Buffer]) -> None:
    for part in parts:
        h.update(part)
