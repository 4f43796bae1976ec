"""A Dask cluster of real processes on 127.0.0.1, for the tests and ``benchmarks/bench_dask.py``.

The scheduler listens on 127.0.0.1 only (free port, address read from its scheduler file);
workers run in their own working folder (so a relative path that reached a worker would
miss); every process is stopped by its own pid, with bounded waits.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

START_S = 30.0  # bound on a process start, a worker registration, a run


class Cluster:
    """A scheduler process and the worker processes added to it."""

    def __init__(self, tmp: Path, env: dict[str, str] | None = None) -> None:
        self.tmp = tmp
        self.cwd = tmp / "worker-cwd"  # not where the data or the caller is
        self.cwd.mkdir(parents=True)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.workers: list[subprocess.Popen[bytes]] = []
        sched_file = tmp / "scheduler.json"
        self._spawn("scheduler", ["distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", "0", "--dashboard-address", "127.0.0.1:0",
                                  "--scheduler-file", str(sched_file)], env)
        deadline = time.monotonic() + START_S
        while True:
            try:
                self.address: str = json.loads(sched_file.read_text())["address"]
                break
            except (OSError, ValueError, KeyError):
                if time.monotonic() > deadline or self.procs[0].poll() is not None:
                    raise RuntimeError(f"no scheduler: {self.log('scheduler')}") from None
                time.sleep(0.05)
        assert self.address.startswith("tcp://127.0.0.1:")

    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None) -> None:
        with open(self.tmp / f"{name}.log", "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", *args], cwd=self.cwd,
                                    stdout=log, stderr=subprocess.STDOUT,
                                    env={**os.environ, **(env or {})}, start_new_session=True)
        self.procs.append(proc)

    def log(self, name: str, tail: int | None = 3000) -> str:
        text = (self.tmp / f"{name}.log").read_text(errors="replace")
        return text[-tail:] if tail else text

    def clients(self) -> int:
        """How many clients have connected to the scheduler so far (from its log)."""
        return self.log("scheduler", tail=None).count("Receive client connection")

    def add_worker(self, env: dict[str, str] | None = None, args: Sequence[str] = ()
                   ) -> subprocess.Popen[bytes]:
        """One worker process (no nanny: a killed worker stays dead), one thread; ``args``:
        more ``dask worker`` options (a ``--preload`` module and its own options, say)."""
        name = f"worker{len(self.workers)}"
        self._spawn(name, ["distributed.cli.dask_worker", self.address, "--nthreads", "1",
                           "--nworkers", "1", "--no-nanny", "--host", "127.0.0.1",
                           "--dashboard-address", "127.0.0.1:0", "--name", name,
                           "--local-directory", str(self.tmp / name), *args], env)
        self.workers.append(self.procs[-1])
        return self.procs[-1]

    def wait_for_workers(self, n: int) -> None:
        from dask.distributed import Client

        with Client(self.address, timeout=START_S) as c:
            c.wait_for_workers(n, timeout=START_S)

    def close(self) -> None:
        """Workers first (a worker whose scheduler is gone retries for a while), then the
        scheduler: SIGTERM, and SIGKILL for whatever has not exited within 5 s."""
        for group in (self.workers, self.procs[:1]):
            for proc in group:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in group:
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)


@contextmanager
def cluster(tmp: Path, workers: int = 0, env: dict[str, str] | None = None
            ) -> Iterator[Cluster]:
    c = None
    try:
        c = Cluster(tmp, env)
        for _ in range(workers):
            c.add_worker()
        if workers:
            c.wait_for_workers(workers)
        yield c
    finally:
        if c is not None:
            c.close()
