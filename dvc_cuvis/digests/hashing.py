"""Content digests of physical files, as DVC computes them (dvc-data's ``hashfile.hash``).

The digest is DVC's: the plain md5 of the file's bytes (DVC 3 ``md5`` hash), so a value in
universe.csv's ``md5`` column can be compared with what ``dvc.lock`` / ``.dir`` listings hold;
a folder's is DVC's ``.dir`` hash over the files DVC's walk yields (``.dvcignore`` honoured,
:mod:`dvc_cuvis.digests.dvcignore`).

As in dvc-data, hashing knows nothing of where digests are remembered: :func:`dir_hash`
takes the state to ask and to record in (a :class:`~dvc_cuvis.digests.stat_cache.StatCache`,
which in turn asks DVC's state through :mod:`dvc_cuvis.digests.dvc_hashes` before a file is read
with :func:`hash_file`).  A file's *stamp* ``(inode, size, mtime_ns)`` is what says "same
file, same bytes" to every cache here.
"""

from __future__ import annotations

import hashlib
import json
import os
from operator import itemgetter
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from dvc_cuvis.digests import dvcignore

_BLOCK = 1 << 20

Stamp = tuple[int, int, int]

#: the state key of a folder's hash (``[fingerprint of its listing, hash]`` at its stamp)
DIR_KEY = "dir_md5"


def stamp_of(st: os.stat_result) -> Stamp:
    """The part of a stat result that says "same file, same bytes": inode, size, mtime."""
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def file_md5(path: Path | str) -> str:
    """DVC-compatible md5 (plain md5 of the bytes) of one file."""
    return read_md5(path)[0]


def read_md5(path: Path | str) -> tuple[str, Stamp | None]:
    """md5 of one file and the stamp of the bytes hashed (None if they changed meanwhile).

    The stamp is taken from the descriptor that is read, before and after reading, so a
    file swapped or rewritten while it is hashed is never cached under the wrong stamp.
    """
    digest, stamp, _ = hash_file(path)
    return digest, stamp


def hash_file(path: Path | str) -> tuple[str, Stamp | None, int]:
    """:func:`read_md5` plus the number of bytes read (what the hashing cost)."""
    h = hashlib.md5()
    n = 0
    with open(path, "rb") as fh:
        before = stamp_of(os.fstat(fh.fileno()))
        while block := fh.read(_BLOCK):
            h.update(block)
            n += len(block)
        after = stamp_of(os.fstat(fh.fileno()))
    return h.hexdigest(), (before if before == after else None), n


class State(Protocol):
    """Where :func:`dir_hash` asks for and records stamps and md5s (a ``StatCache``)."""

    def lookup(self, abs_path: str, key: str, stamp: Stamp) -> tuple[bool, Any]:
        """``(True, value)`` if ``key`` is recorded for ``abs_path`` at ``stamp``."""
        ...

    def record(self, abs_path: str, key: str, stamp: Stamp, value: Any) -> None:
        """Remember ``value`` under ``key`` for ``abs_path`` at ``stamp``."""
        ...

    def md5_stamped(self, abs_path: str, stamp: Stamp) -> tuple[str, Stamp | None]:
        """md5 of ``abs_path`` at ``stamp`` and the stamp of the bytes it is of."""
        ...


def list_tree(root: str) -> list[tuple[str, int, int, int, bool]]:
    """``(relpath, inode, size, mtime_ns, is_link)`` of every file below ``root``, sorted.

    As DVC lists a folder, like ``os.walk``: symlinks to folders are not descended,
    unreadable folders and broken links are left out, a link to a file counts as the file,
    and what DVC's ignore rules leave out (``.dvcignore`` files, nested ones included,
    DVC's default patterns, subrepositories: :mod:`dvc_cuvis.digests.dvcignore`) is not listed.
    A ``.dvcignore`` inside ``root`` is :class:`~dvc_cuvis.digests.dvcignore.IgnoreInDataFolder`,
    as DVC refuses to hash such a folder.
    """
    out: list[tuple[str, int, int, int, bool]] = []
    met: set[str] = set()
    special = dvcignore.SPECIAL
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            it = os.scandir(f"{root}/{rel_dir}" if rel_dir else root)
        except OSError:
            continue
        pre = f"{rel_dir}/" if rel_dir else ""
        with it:
            for e in it:
                if e.name in special:
                    met.add(e.name)
                try:
                    if e.is_dir():
                        if not e.is_symlink():
                            stack.append(pre + e.name)
                        continue
                    st = e.stat()
                except OSError:
                    continue
                out.append((pre + e.name, st.st_ino, st.st_size, st.st_mtime_ns,
                            e.is_symlink()))
    ignore = dvcignore.for_folder(root, met)
    if ignore is not None:  # DVC's rules apply: keep exactly what DVC's walk yields
        seen = set(dvcignore.dvc_listing(root, ignore))
        out = [f for f in out if f[0] in seen]
    out.sort(key=itemgetter(0))
    return out


#: How DVC marks the hash of a folder (the md5 of its listing) apart from a file's md5.
FOLDER_SUFFIX = ".dir"


def folder_hash(listing_md5: str) -> str:
    """DVC's hash of a folder whose listing has the md5 ``listing_md5``: ``<md5>.dir``."""
    return listing_md5 + FOLDER_SUFFIX


def is_folder_hash(value: object) -> bool:
    """True for DVC's hash of a folder (``<md5>.dir``), False for a file's plain md5."""
    return str(value).endswith(FOLDER_SUFFIX)


def dir_hash(path: Path | str, state: State) -> tuple[str, list[str]]:
    """DVC's folder hash (md5 of the sorted ``[{md5, relpath}]`` JSON + ``.dir``) and the files.

    A folder whose listing of names and file stamps is unchanged since the last call is
    not hashed again file by file: one digest of the stamps finds the recorded hash, so
    a clean ``check`` of 100k files costs their ``stat`` calls and little more.  The
    second value lists the relative paths whose bytes the hash covers (regular files
    only: a symlink's target is not part of the folder).  ``state`` is where stamps and
    md5s are remembered (a :class:`~dvc_cuvis.digests.stat_cache.StatCache`), as dvc-data's
    ``hash_file`` takes its ``state``.
    """
    root = os.path.abspath(path)
    files = list_tree(root)
    if not files:
        return folder_hash(hashlib.md5(b"[]").hexdigest()), []
    rels, inos, sizes, mtimes, links = (list(c) for c in zip(*files, strict=True))
    h = hashlib.sha256("\0".join(rels).encode("utf-8", "surrogateescape"))
    h.update(np.array(inos, dtype=np.uint64).tobytes())
    h.update(np.array(sizes, dtype=np.int64).tobytes())
    h.update(np.array(mtimes, dtype=np.int64).tobytes())
    fp = h.hexdigest()
    covered = [r for r, link in zip(rels, links, strict=True) if not link] if any(links) else rels
    stamp = (os.stat(root).st_ino, len(files), sum(sizes))
    found, memo = state.lookup(root, DIR_KEY, stamp)
    if found and isinstance(memo, list) and len(memo) == 2 and memo[0] == fp:
        return str(memo[1]), covered
    entries = []
    stable = True
    for rel, ino, size, mt, _ in files:
        digest, read_stamp = state.md5_stamped(f"{root}/{rel}", (ino, size, mt))
        stable = stable and read_stamp == (ino, size, mt)
        entries.append({"md5": digest, "relpath": rel})
    value = folder_hash(hashlib.md5(json.dumps(entries, sort_keys=True).encode()).hexdigest())
    if stable:  # a file changed while listing and hashing: do not remember this result
        state.record(root, DIR_KEY, stamp, [fp, value])
    return value, covered


def dir_md5(path: Path | str, state: State) -> str:
    """DVC's folder hash of ``path`` (see :func:`dir_hash`)."""
    return dir_hash(path, state)[0]


def content_fingerprint(uids: list[str], md5s: list[str]) -> str:
    """sha256 over ``uid\\tmd5\\n`` lines in canonical order: one value for all content."""
    h = hashlib.sha256()
    for u, m in zip(uids, md5s, strict=True):
        h.update(f"{u}\t{m}\n".encode())
    return h.hexdigest()
