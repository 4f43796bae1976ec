"""Atomic, deterministic file writes shared by every writer in the package.

Outputs are written to a temporary sibling and renamed into place, so a reader (or a
killed run) never sees a half-written file under its final name.  JSON is written with
sorted-free but stable formatting (the caller controls key order), two-space indent and
a trailing ``\\n``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import Any

from dvc_cuvis._testpoints import testpoint


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp sibling ``.<name>.tmp`` + rename).

    The temp name is fixed and the temp file is locked while it is written: writers of one
    path take turns, and the temp file a killed writer left behind is taken over (so
    removed) by the next write of that path instead of lying around for ever.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    fd = _locked_temp(tmp)
    try:
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        os.fchmod(fd, 0o644)
        testpoint("io.before-rename")
        os.replace(tmp, target)
        testpoint("io.after-rename")
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    finally:
        os.close(fd)  # releases the lock: the next writer of this path may go


def _locked_temp(tmp: Path) -> int:
    """An open descriptor of ``tmp``, exclusively locked (waits for a live writer)."""
    while True:
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            testpoint("io.before-lock")
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


def atomic_write_text(path: Path | str, text: str) -> None:
    """Write UTF-8 ``text`` (``\\n`` line endings kept as given) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def dumps_json(obj: Any) -> str:
    """Stable pretty JSON: two-space indent, UTF-8 kept, trailing newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def write_json(path: Path | str, obj: Any) -> None:
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
