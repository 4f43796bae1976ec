"""The output folder's lock: one materialize run writes a folder at a time."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from dvc_cuvis.errors import DvcCuvisError, FileSystemError


@contextlib.contextmanager
def output_lock(out_dir: Path, *, wait_s: float = 0.0) -> Iterator[None]:
    """Exclusive lock on ``out_dir`` (``.materialize.lock``); waits up to ``wait_s`` seconds."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / ".materialize.lock"
    try:  # never through a link: a dangling one would create a file where it leads
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise FileSystemError(exc, path) from None
    deadline = time.monotonic() + wait_s
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise DvcCuvisError(
                        f"{out_dir}: another `dvc-cuvis materialize` is writing this folder; "
                        "wait for it (or pass --lock-wait SECONDS)"
                    ) from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)  # closing releases the flock
