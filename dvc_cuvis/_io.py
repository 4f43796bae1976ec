"""Atomic, deterministic file writes shared by every writer in the package.

Outputs are written to a temporary sibling and renamed into place, so a reader (or a
killed run) never sees a half-written file under its final name.  JSON is written with
sorted-free but stable formatting (the caller controls key order), two-space indent and
a trailing ``\\n``.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeAlias

from dvc_cuvis.errors import (
    FileSystemError,
    RepoError,
    YamlError,
    first_line,
    is_environment_error,
)

# A JSON value as :func:`json.loads` returns it (and :func:`dumps_json` accepts it).
Json: TypeAlias = str | int | float | bool | list["Json"] | dict[str, "Json"] | None

Buffer = bytes | bytearray | memoryview


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp sibling ``.<name>.tmp`` + rename).

    The temp name is fixed and the temp file is locked while it is written: writers of one
    path take turns, and the temp file a killed writer left behind is taken over (so
    removed) by the next write of that path instead of lying around for ever.
    """
    atomic_write_parts(path, (data,))


def atomic_write_parts(path: Path | str, parts: Iterable[Buffer], *, fsync: bool = True) -> None:
    """:func:`atomic_write_bytes` of the concatenation of ``parts``, never joined in memory.

    ``fsync=False`` skips the per-file ``fsync``: the rename is still atomic for a killed
    process (the page cache survives it), but after a power cut the file may be empty or
    torn until the caller has synced the file system (see ``materialize``'s scheme).
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        _make_folder(target.parent)
        fd = _locked_temp(tmp)
    except OSError as exc:  # the folder (or a file in its way), else the output, is named
        named = exc.filename if exc.filename and str(exc.filename) != str(tmp) else target
        raise FileSystemError(exc, named) from None
    try:
        os.ftruncate(fd, 0)
        for part in parts:
            view = memoryview(part).cast("B")
            while view:
                view = view[os.write(fd, view):]
        if fsync:
            os.fsync(fd)
        os.fchmod(fd, 0o644)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and is_environment_error(exc):  # a full disk, a folder
            raise FileSystemError(exc, target) from None  # under the final name, ...
        raise
    finally:
        os.close(fd)  # releases the lock: the next writer of this path may go


def _make_folder(folder: Path) -> None:
    """``folder`` and its parents, made; a file in the way is ``ENOTDIR`` naming it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # mkdir met a file (or a dangling link) where a folder belongs
        in_way = next((p for p in (folder, *folder.parents)
                       if os.path.lexists(p) and not p.is_dir()), folder)
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(in_way)) from None


def _locked_temp(tmp: Path) -> int:
    """An open descriptor of ``tmp``, exclusively locked (waits for a live writer)."""
    while True:
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # the writer we waited for may have renamed this inode into place meanwhile
            same = os.fstat(fd).st_ino == os.stat(tmp, follow_symlinks=False).st_ino
        except FileNotFoundError:
            same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            return fd
        os.close(fd)


def sync_file_system(path: Path | str) -> None:
    """Make every write already done on the file system of ``path`` durable.

    ``syncfs(2)`` of that one file system on Linux (it reports a failed write-back, as
    ``fsync`` would, since Linux 5.8), ``sync(2)`` elsewhere.  One call after many files
    costs far less than an ``fsync`` per file: the kernel writes back while the writer
    works, and the caller waits once (``materialize`` measures both).
    """
    syncfs = _syncfs()
    if syncfs is not None:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            if syncfs(fd) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"syncfs failed: {os.strerror(err)}", str(path))
        finally:
            os.close(fd)
        return
    os.sync()


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    """libc's ``syncfs`` (None where there is none: not Linux, or no ctypes)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).syncfs
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    syncfs: Callable[[int], int] = fn
    return syncfs


def atomic_write_text(path: Path | str, text: str) -> None:
    """Write UTF-8 ``text`` (``\\n`` line endings kept as given) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def dumps_json(obj: object) -> str:
    """Stable pretty JSON: two-space indent, UTF-8 kept, trailing newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def write_json(path: Path | str, obj: object) -> None:
    """Write ``obj`` as stable pretty JSON to ``path`` atomically."""
    atomic_write_text(path, dumps_json(obj))


def read_json(path: Path | str, what: str = "file") -> Any:
    """Parse a JSON file; every failure is a DvcCuvisError naming the file (and line:col)."""
    from dvc_cuvis.errors import DvcCuvisError, MissingFileError

    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise MissingFileError(f"{p}: {what} not found") from None
    except json.JSONDecodeError as exc:
        raise DvcCuvisError(f"{p}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise DvcCuvisError(f"{p}: JSON nested too deeply") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DvcCuvisError(f"{p}: cannot read {what} ({exc})") from None


def parse_yaml(text: str | bytes, where: Path | str) -> Any:
    """The YAML document ``text`` (an empty one is ``{}``); :class:`YamlError` naming ``where``."""
    import yaml  # (not on the path of a check that reads no YAML: hashing, the stat cache)

    try:  # libyaml's parser where PyYAML has it: faster on a dvc.lock, the same data
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or first_line(exc)
        raise YamlError(where, line, problem) from None
    return {} if data is None else data


def read_yaml(path: Path | str) -> Any:
    """The YAML file at ``path`` (UTF-8, a BOM allowed); :class:`RepoError` naming the file."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise RepoError(f"{path}: not UTF-8 text; fix or regenerate the file") from None
    except OSError as exc:
        raise RepoError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return parse_yaml(text, path)
