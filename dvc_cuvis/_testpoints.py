"""Test-only crash points: named places where a test makes the process die (or pause).

A crash test must prove that a kill left a *partial* state (a temp file beside an output,
frames without a manifest, an old output still in place) and that the rerun repairs it.
A kill at a random moment rarely lands there; a kill at a named point always does.

``DVC_CUVIS_TESTPOINT=<name>[:<k>]``: at the k-th hit (default 1) of ``name`` in this
process, the process sends itself SIGKILL — no cleanup handler, ``finally`` or atexit runs,
exactly as with ``kill -9`` or a power cut.  Two companions, also for tests only:

- ``DVC_CUVIS_TESTPOINT_PAUSE=<folder>``: at that hit, pause instead of dying: create
  ``<folder>/<name>.reached``, then wait (at most 120 s) until ``<folder>/<name>.go``
  exists.  A concurrency test holds one run at a known point while it starts another.
- ``DVC_CUVIS_TESTPOINT_LOG=<file>``: append every hit's name as a line, so a test learns
  the points a clean run passes (and how often) and can then kill at each of them.

The environment is read once, at import; with none of these set ``testpoint`` returns at
its first comparison, so the calls may sit in hot loops.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

_SPEC = os.environ.get("DVC_CUVIS_TESTPOINT", "")
_PAUSE = os.environ.get("DVC_CUVIS_TESTPOINT_PAUSE", "")
_LOG = os.environ.get("DVC_CUVIS_TESTPOINT_LOG", "")
_ACTIVE = bool(_SPEC or _LOG)

_name, _sep, _k = _SPEC.rpartition(":")
if not (_sep and _k.isdigit() and _name):
    _name, _k = _SPEC, "1"
_TARGET, _AT = _name, max(int(_k), 1)
_hits = 0


def testpoint(name: str) -> None:
    """Die with SIGKILL (or pause) here when ``DVC_CUVIS_TESTPOINT`` names this point."""
    if not _ACTIVE:
        return
    _hit(name)


def _hit(name: str) -> None:
    global _hits
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as fh:
            fh.write(name + "\n")
    if name != _TARGET:
        return
    _hits += 1
    if _hits != _AT:
        return
    if _PAUSE:
        folder = Path(_PAUSE)
        (folder / f"{name}.reached").touch()
        deadline = time.monotonic() + 120
        while not (folder / f"{name}.go").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return
    os.kill(os.getpid(), signal.SIGKILL)
