"""Where the test suite's CPU goes: a pytest plugin, and the table it makes.

Each test's own CPU and its child processes' (``resource.getrusage``, so a forked or spawned
child counts once it is reaped), per worker, into ``$SUITE_CPU_DIR`` (default
``/tmp/suite-cpu``); then the totals and the costliest modules::

    rm -rf /tmp/suite-cpu && PYTHONPATH=scripts .venv/bin/pytest -n 2 -q -p suite_cpu
    .venv/bin/python scripts/suite_cpu.py            # the table (docs/development.md)
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

OUT = Path(os.environ.get("SUITE_CPU_DIR", "/tmp/suite-cpu"))
_ROWS: list[tuple[str, float, float, float]] = []


def _cpu() -> tuple[float, float]:
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Iterator[None]:
    """The test's CPU (its own, its children's) and wall time, setup and teardown included."""
    own, kids = _cpu()
    start = time.perf_counter()
    yield
    own2, kids2 = _cpu()
    _ROWS.append((item.nodeid, own2 - own, kids2 - kids, time.perf_counter() - start))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """One file per worker."""
    OUT.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (OUT / f"{worker}.json").write_text(json.dumps(_ROWS))


def main(folder: Path = OUT, top: int = 25) -> None:
    """Print the totals and the ``top`` modules by CPU."""
    rows = [r for f in sorted(folder.glob("*.json")) for r in json.loads(f.read_text())]
    own, kids = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"{len(rows)} tests: {own + kids:.0f} CPU s ({own:.0f} own + {kids:.0f} children)")
    by_module: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for nodeid, o, k, _ in rows:
        m = by_module[nodeid.split("::")[0]]
        m[0], m[1], m[2] = m[0] + o, m[1] + k, m[2] + 1
    for name, (o, k, n) in sorted(by_module.items(), key=lambda x: -(x[1][0] + x[1][1]))[:top]:
        print(f"{o + k:7.1f} s  own {o:6.1f}  children {k:6.1f}  {int(n):4d} tests  {name}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
