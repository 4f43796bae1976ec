"""Optional progress bars for long loops (tqdm on stderr, only when asked for).

One place decides how progress is shown, so enumerate's hashing and materialize's
frame writing look the same and a run without ``--progress`` never imports tqdm.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


def progress(items: Iterable[Any], *, total: int, desc: str, enabled: bool) -> Iterator[Any]:
    """Wrap an iterable in a tqdm bar on stderr when ``enabled`` (and tqdm is available)."""
    if not enabled:
        yield from items
        return
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm comes with dvc
        yield from items
        return
    yield from tqdm(items, total=total, desc=desc, unit="file", leave=False)
