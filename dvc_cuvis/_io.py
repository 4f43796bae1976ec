"""Atomic, deterministic file writes shared by every writer in the package.

Outputs are written to a temporary sibling and renamed into place, so a reader (or a
killed run) never sees a half-written file under its final name.  JSON is written with
sorted-free but stable formatting (the caller controls key order), two-space indent and
a trailing ``\\n``.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file in the same folder + rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


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
