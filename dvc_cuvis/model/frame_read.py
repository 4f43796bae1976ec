"""Reading an npz frame: stored members served straight out of one read of the file
(``np.frombuffer``), deflated ones inflated within their declared size.

An input npz a frame is made from is an :class:`NpzInput`: read (or mapped) once, its CRC
check deferred so a writer (:mod:`~dvc_cuvis.model.frame_bytes`) can run it beside other
work.
"""

from __future__ import annotations

import io
import mmap
import os
import time
import weakref
import zipfile
from typing import Any

import numpy as np

from dvc_cuvis._io import Buffer
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.npz_members import StoredMember, read_members
from dvc_cuvis.model.zip_crc import crc32


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
    (see :func:`~dvc_cuvis.model.frame_bytes.write_frame`); nothing may be written from
    ``arrays`` before it passes.
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
    (which :class:`~dvc_cuvis.model.frame_bytes.FrameWriter` calls before a frame may be
    claimed), and a program truncating it kills the process that maps it (``SIGBUS``) — a
    worker's death is reported as one error and the rerun completes, a caller's would not
    be.  Files under 1 MiB are always read.
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
