"""The deterministic npz frame: its members, its bytes, and a fast reader for it (its
file name under ``frames/`` is :mod:`~dvc_cuvis.model.frame_names`).

One module owns the frame format of the DESIGN contract (``cube [H,W,C] float32``,
``wavelengths [C] int32``, ``source`` str, optional ``class_mask [H,W] uint8`` and
``mask [H,W] int32``) so that materialize (which writes frames), the DataModule (which
reads them) and interop (which writes index arrays in the same container) cannot drift
apart.

*Write*: members in sorted order, fixed zip timestamps and attributes, arrays through
``np.lib.format`` (never pickled), compression chosen per member — the same inputs give
the same bytes on any machine.  *Read*: stored members are served straight out of one
read of the file (``np.frombuffer``), deflated ones inflated within their declared size.
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import hashlib
import io
import mmap
import os
import threading
import time
import weakref
import zipfile
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dvc_cuvis._io import Buffer, atomic_write_parts
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.npz_members import StoredMember, read_members

# zip's earliest representable time: no member carries the time it was written
_EPOCH = (1980, 1, 1, 0, 0, 0)


# -- compression ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Compression:
    """Per-member zip compression: stored (None) or deflate at a level."""

    cube: int | None = None
    masks: int | None = None

    @classmethod
    def parse(cls, spec: str) -> Compression:
        """``none`` | ``deflate[:level]`` | ``masks[:level]`` (store the cube, deflate masks)."""
        name, _, level_s = str(spec).partition(":")
        try:
            level = int(level_s) if level_s else 6
        except ValueError:
            level = -1
        if not 0 <= level <= 9:
            raise DvcCuvisError(f"compress {spec!r}: level must be an integer 0-9")
        if name == "none" and not level_s:
            return cls(None, None)
        if name == "deflate":
            return cls(level, level)
        if name == "masks":
            return cls(None, level)
        raise DvcCuvisError(
            f"compress {spec!r}: choose none, deflate[:level] or masks[:level]"
        )

    def level_for(self, member: str) -> int | None:
        """Deflate level of a member (None = stored)."""
        return self.cube if member in ("cube", "wavelengths", "source") else self.masks


# -- the frame's members -------------------------------------------------------------------


def apply_crop(arr: np.ndarray, crop: tuple[int, int, int, int] | None, where: str) -> np.ndarray:
    """Remove ``T,B,L,R`` pixels from the spatial border (cube and masks alike)."""
    if crop is None:
        return arr
    t, b, left, r = crop
    h, w = arr.shape[:2]
    if t + b >= h or left + r >= w:
        raise DvcCuvisError(f"{where}: crop {crop} too large for a {h}x{w} frame")
    return arr[t:h - b, left:w - r]


def frame_arrays(
    cube: np.ndarray,
    wavelengths: np.ndarray,
    source: str,
    classes: np.ndarray | None,
    crop: tuple[int, int, int, int] | None,
    where: str,
) -> dict[str, np.ndarray]:
    """The npz members of one frame per the DESIGN contract."""
    if cube.ndim != 3:
        raise DvcCuvisError(f"{where}: cube must be [H, W, C], got shape {cube.shape}")
    out: dict[str, np.ndarray] = {
        "cube": np.ascontiguousarray(apply_crop(cube, crop, where), dtype=np.float32),
        "wavelengths": np.asarray(wavelengths).ravel().astype(np.int32),
        "source": np.array(source),
    }
    if len(out["wavelengths"]) != cube.shape[2]:
        raise DvcCuvisError(
            f"{where}: {len(out['wavelengths'])} wavelengths for {cube.shape[2]} bands"
        )
    if classes is not None:
        if classes.shape[:2] != cube.shape[:2]:
            raise DvcCuvisError(
                f"{where}: label {classes.shape[:2]} and cube {cube.shape[:2]} differ in size"
            )
        top = int(classes.max()) if classes.size else 0
        if top > 255 or (classes.size and int(classes.min()) < 0):
            raise DvcCuvisError(
                f"{where}: category id {top} exceeds the uint8 range of class_mask (0-255); "
                "renumber the categories"
            )
        cls = np.ascontiguousarray(apply_crop(classes, crop, where)).astype(np.uint8)
        out["class_mask"] = cls
        out["mask"] = (cls > 0).astype(np.int32)
    return out


# -- bytes ---------------------------------------------------------------------------------


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
    exactly one of its members' (the array is the very view :func:`read_npz_input` made,
    and the ``.npy`` header is the same) takes its CRC from the input's zip entry instead
    of a pass over the data — valid only once ``origin.verify()`` has passed, which
    :func:`write_frame` ensures before the file gets its name.

    ``data_crcs``: filled with the CRC-32 of each C-contiguous array's data bytes (its
    member's CRC less its ``.npy`` header, :func:`crc32_without_prefix`), so a frame's
    content digest costs no pass of its own.
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
    ``origin`` (the input npz the arrays come from, see :func:`read_npz_input`): members
    copied from it unchanged reuse its CRC, so the md5 thread starts at once, and the
    input's own CRC is checked in this thread meanwhile, before a byte is written — a
    damaged input raises ``zipfile.BadZipFile`` and leaves nothing behind.
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
        :func:`open_npz_input`) before the frame may be claimed.
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


# -- the zip CRC ---------------------------------------------------------------------------


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


# -- reading -------------------------------------------------------------------------------


def read_npz(path: str) -> dict[str, np.ndarray]:
    """All array members of an npz frame; stored (uncompressed) members without a copy.

    Materialized frames store their arrays uncompressed, so one read of the file and a
    ``frombuffer`` per member replaces ``np.load``'s per-member stream, copy and CRC pass
    (content integrity is what the drift check's md5 verifies before loading).  Every
    member's declared sizes are checked first (:mod:`dvc_cuvis.model.npz_members`);
    deflated members are inflated within them and CRC-checked.
    """
    with open(path, "rb") as fh:
        buf = bytearray(os.fstat(fh.fileno()).st_size)
        fh.readinto(buf)
    return read_npz_input(buf, where=f"{path}: ").arrays


def load_npz_bytes(data: bytes) -> dict[str, np.ndarray]:
    """Every member of an npz file already read into memory (an input frame, read once).

    Stored members are views of ``data`` (no copy), after their zip CRC is checked, as
    ``np.load`` would; deflated members are inflated within their declared size.  Raises
    ``zipfile.BadZipFile`` on a damaged file and :class:`~dvc_cuvis.limits.LimitError` on
    an array over the ceiling (before anything is allocated for it).
    """
    src = read_npz_input(data)
    src.verify()
    return src.arrays


class NpzInput:
    """An input npz read into memory: its arrays, not yet CRC-checked, and their CRCs.

    The CRC check is deferred to :meth:`verify` so a writer can run it beside other work
    (see :func:`write_frame`); nothing may be written from ``arrays`` before it passes.
    """

    def __init__(self, data: Buffer | mmap.mmap, arrays: dict[str, np.ndarray],
                 members: list[StoredMember]) -> None:
        self.arrays = arrays
        self._data = data  # keeps the arrays' memory (and so their addresses) alive
        self._by_address = {(m.address, m.nbytes): m for m in members}
        self._unchecked = sorted(members, key=lambda m: m.name)
        self._watched: tuple[str, int, tuple[int, ...]] | None = None

    def _watch(self, path: str, fd: int, sig: tuple[int, ...]) -> None:
        """Own ``fd`` (the mapped file, closed with this object) to tell later changes from
        ``sig``, its signature when it was opened (before anything was mapped or parsed)."""
        self._watched = (path, fd, sig)
        weakref.finalize(self, os.close, fd)

    def check_unchanged(self) -> None:
        """Raise if a mapped input was written since it was opened (no-op for a read one).

        A mapped frame's CRC check, write and md5 each read the file's own pages: a program
        writing the file meanwhile could make them see different bytes.  A write changes
        the file's size, mtime or ctime -- unless it lands in the same tick of a coarse
        file-system clock (1-4 ms before Linux 6.13's fine-grained ctime, NFS) as the last
        change before the file was opened; such a *racy* file (changed less than
        :data:`RACY_NS` before it was opened, git's rule for its index) is read, never
        mapped.  So a frame whose mapped input kept all three is made of one version of it
        (as a read input's always is).  Not caught: a program writing through its own
        shared mapping onto pages it already dirtied (the kernel updates no timestamp).
        """
        if self._watched is None:
            return
        path, fd, sig = self._watched
        if _signature(os.fstat(fd)) != sig:
            raise DvcCuvisError(
                f"{path}: the file was written while its frame was being made (by another "
                "program?); the frame was not recorded: rerun once the file is complete"
            )

    def verify(self) -> None:
        """Check every stored member's zip CRC once; ``zipfile.BadZipFile`` if one differs."""
        while self._unchecked:
            m = self._unchecked[0]
            if crc32(m.span) != m.crc:
                raise zipfile.BadZipFile(f"Bad CRC-32 for file {m.name!r}")
            self._unchecked.pop(0)

    def crc_of(self, arr: np.ndarray, pieces: list[memoryview]) -> int | None:
        """The zip CRC of the member ``pieces`` (header, data of ``arr``), if it is an input's.

        Only when ``arr`` is the very in-place view of an input member's data (same
        address and length, C-contiguous) and the header is that member's byte for byte:
        then the member's bytes are the input's, and so is their CRC.
        """
        if len(pieces) != 2 or not arr.flags.c_contiguous:
            return None
        m = self._by_address.get((arr.__array_interface__["data"][0], arr.nbytes))
        if m is None or m.header != bytes(pieces[0]):
            return None
        return m.crc


#: a file changed less than this before it is opened is read, not mapped (see
#: :meth:`NpzInput.check_unchanged`): 2 s covers every file-system clock in use
RACY_NS = 2_000_000_000
_now_ns = time.time_ns  # (the tests move this clock)


def open_npz_input(path: str, *, mapped: bool = False) -> NpzInput:
    """:func:`read_npz_input` of the file at ``path``; ``mapped``: its pages, not a copy.

    Reading copies the file out of the page cache (CPU time of the order of the
    frame's CRC check); a mapped input's arrays are the page cache itself,
    and the frame is checked, written and hashed straight from it.  Two costs, which is
    why only a worker process maps (``materialize`` with ``jobs`` > 1): a program writing
    the file meanwhile is caught only afterwards, by :meth:`NpzInput.check_unchanged`
    (which :class:`FrameWriter` calls before a frame may be claimed), and a program
    truncating it kills the process that maps it (``SIGBUS``) — a worker's death is
    reported as one error and the rerun completes, a caller's would not be.  Files under
    1 MiB are always read.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        size = st.st_size
        # racy: changed so recently that a write now could keep the same coarse timestamps
        racy = _now_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS
        if not mapped or racy or size < 1 << 20 or not hasattr(mmap, "MAP_SHARED"):
            with os.fdopen(fd, "rb", closefd=False) as fh:
                return read_npz_input(fh.read(), where=f"{path}: ")
        data = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                         prot=mmap.PROT_READ)
        with os.fdopen(fd, "rb", closefd=False) as fh:  # zipfile reads the directory alone
            src = read_npz_input(data, directory=fh, where=f"{path}: ")
        src._watch(path, fd, _signature(st))
        fd = -1  # src owns it now
        return src
    finally:
        if fd >= 0:
            os.close(fd)


def _signature(st: os.stat_result) -> tuple[int, ...]:
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def read_npz_input(data: Buffer | mmap.mmap, *, directory: Any = None,
                   where: str = "") -> NpzInput:
    """:func:`load_npz_bytes` with the CRC check of stored members left to
    :meth:`NpzInput.verify`.

    ``directory``: a file object of the same bytes for ``zipfile`` to read the zip
    directory from (else it reads ``data`` through a ``BytesIO``, which copies anything
    but ``bytes``).  ``where``: the prefix of a :class:`~dvc_cuvis.limits.LimitError`
    (the file's name and ``": "``).
    """
    infos = zipfile.ZipFile(directory if directory is not None else io.BytesIO(data)).infolist()
    members: list[StoredMember] = []
    arrays = read_members(data, infos, where=where, stored=members)
    return NpzInput(data, arrays, members)
