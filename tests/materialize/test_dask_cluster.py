"""The Dask executor on a real cluster: ``dask scheduler`` and ``dask worker`` processes.

Every cluster listens on 127.0.0.1 only (free ports, scheduler address read from its
scheduler file), its workers run in their own working folder (so a relative path that
reached a worker would miss), and the fixture stops every process it started, each by its
own pid, with bounded waits.  Outputs are compared with a local run byte for byte (sha256
of every file, the manifest included).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.model.universe_io import format_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from testbeds.dask_cluster import START_S, Cluster, cluster
from tests.helpers import crashpoints
from tests.helpers.files import tiff_project, tree

pytestmark = pytest.mark.slow  # a few seconds per cluster; CI runs every test

@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One scheduler, two worker processes, shared by this module's identity tests."""
    with cluster(tmp_path_factory.mktemp("cluster")) as c:
        for i in range(2):  # each worker logs the crash points it passes
            c.add_worker(crashpoints.child_env(),
                         crashpoints.worker_options(log=c.tmp / f"worker{i}.points"))
        c.wait_for_workers(2)
        yield c


def points(c: Cluster, worker: int) -> list[str]:
    """The crash points worker ``worker`` of ``c`` passed so far (from its log)."""
    path = c.tmp / f"worker{worker}.points"
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The materialize tests' dataset (TIFF + npz, universe.csv, baked splits.json)."""
    return tiff_project(tmp_path)


def materialize_cmd(out: str, *extra: str) -> list[str]:
    """The CLI with relative paths (run from the project; workers have another cwd)."""
    return [sys.executable, "-m", "dvc_cuvis", "materialize", "--universe", "universe.csv",
            "--splits", "splits.json", "--out-dir", out, "--no-params", "--stat-cache", "none",
            "--no-progress", *extra]


def run_cli(project: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=project, capture_output=True, text=True,
                          timeout=2 * START_S, check=False)


def local_reference(project: Path) -> dict[str, str]:
    done = run_cli(project, materialize_cmd("local"))
    assert done.returncode == 0, done.stderr
    ref = tree(project / "local")
    assert "manifest.json" in ref and sum(k.startswith("frames/") for k in ref) == 12
    # the spectral summaries too: on a worker they are taken from the cube it holds, and the
    # shards come out byte for byte as the local pool's
    assert any(k.startswith("summaries/") and k.endswith("%summary.json") for k in ref), ref
    return ref


def test_materialize_on_worker_processes_writes_the_local_bytes(
    project: Path, two_workers: Cluster
) -> None:
    ref = local_reference(project)
    done = run_cli(project, materialize_cmd("dask", "--executor", "dask",
                                            "--scheduler", two_workers.address))
    assert done.returncode == 0, done.stderr
    assert "12 written" in done.stdout
    assert tree(project / "dask") == ref
    # both worker processes wrote frames (one worker alone would prove less about a cluster)
    written = [points(two_workers, i).count("materialize.frame-written") for i in range(2)]
    assert sum(written) == 12 and min(written) >= 1, written
    assert not (two_workers.cwd / "dask").exists()  # nothing written relative to a worker


def test_enumerate_on_worker_processes_gives_the_local_universe(
    project: Path, two_workers: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)  # relative root: the workers must get absolute paths
    for fmt, root in (("tiff", "data/tiff"), ("npz", "data/npz")):
        results = {}
        for executor in ("local", "dask"):
            clients = two_workers.clients()
            cache_file = project / f"cache-{fmt}-{executor}.bin"
            cache = StatCache(cache_file)
            uni, metrics = enumerate_universe(EnumerateOptions(
                format=fmt, root=Path(root), out_dir=Path("."), cache=cache,
                executor=executor, scheduler=two_workers.address))
            results[executor] = (format_universe(uni), json.dumps(metrics, sort_keys=True))
            assert two_workers.clients() == clients + (executor == "dask")  # ran there, or not
            assert cache.stats()["md5_hashed"] > 0 and cache.stats()["bytes_hashed"] > 0
            # what the workers hashed came back into our stat cache: a rerun reads nothing
            again = StatCache(cache_file)
            enumerate_universe(EnumerateOptions(format=fmt, root=Path(root), out_dir=Path("."),
                                                cache=again))
            assert again.stats()["bytes_hashed"] == 0, (fmt, executor)
        assert results["dask"] == results["local"], fmt
        assert "md5" in results["dask"][0].splitlines()[0]


class _KnowsEveryMd5:
    """Stands in for DVC's state: it knows the md5 of every file (as after a ``dvc pull``)."""

    def md5(self, abs_path: str, stamp: object) -> str:
        return hashlib.md5(Path(abs_path).read_bytes()).hexdigest()

    def md5_many(self, items: list[tuple[str, object]]) -> dict[str, str]:
        return {p: self.md5(p, s) for p, s in items}


def test_enumerate_on_the_cluster_hashes_no_byte_the_caller_knows(
    project: Path, two_workers: Cluster
) -> None:
    """Workers on other machines see neither our stat cache nor our DVC state: the md5s
    the caller knows travel with the work, and no worker reads a file to hash it."""
    root = project / "data/npz"
    local = enumerate_universe(EnumerateOptions(format="npz", root=root, out_dir=project,
                                                cache=StatCache(None)))[0]
    cache = StatCache(None, dvc=_KnowsEveryMd5())  # type: ignore[arg-type]
    uni, _ = enumerate_universe(EnumerateOptions(
        format="npz", root=root, out_dir=project, cache=cache, executor="dask",
        scheduler=two_workers.address))
    assert format_universe(uni) == format_universe(local)
    stats = cache.stats()
    assert stats["bytes_hashed"] == 0 and stats["md5_hashed"] == 0, stats
    assert stats["md5_from_dvc"] == len(uni) and stats["md5_cached"] == 0, stats


def test_enumerate_cli_flags_reach_the_cluster(
    project: Path, two_workers: Cluster, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    base = ["enumerate", "--format", "npz", "--root", "data/npz", "--no-params",
            "--stat-cache", "none"]
    assert cli(*base, "--out", "local.csv").code == 0
    clients = two_workers.clients()
    r = cli(*base, "--out", "dask.csv", "--executor", "dask", "--scheduler",
            two_workers.address)
    assert r.code == 0, r.err
    assert (project / "dask.csv").read_bytes() == (project / "local.csv").read_bytes()
    assert two_workers.clients() == clients + 1
    # and from params.yaml: executor and scheduler are keys of the enumerate section
    (project / "params.yaml").write_text(
        f"enumerate:\n  format: npz\n  root: data/npz\n  out: params.csv\n"
        f"  stat_cache: none\n  executor: dask\n  scheduler: {two_workers.address}\n")
    r = cli("enumerate")
    assert r.code == 0, r.err
    assert two_workers.clients() == clients + 2
    assert (project / "params.csv").read_bytes() == (project / "local.csv").read_bytes()


def test_an_unreachable_scheduler_is_one_error_line(project: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on (bound, then released)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
    done = subprocess.run(materialize_cmd("out", "--executor", "dask", "--scheduler",
                                          f"tcp://127.0.0.1:{port}"),
                          cwd=project, capture_output=True, text=True, env=env,
                          timeout=START_S, check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Dask scheduler" in lines[0], done.stderr


def _no_temp_files(root: Path) -> None:
    assert [p.name for p in root.rglob("*.tmp")] == []


@pytest.mark.parametrize(
    ("allowed_failures", "kill_at"),
    [("3", "io.before-rename:2"),  # default: the scheduler reruns the task elsewhere
     ("0", "io.before-rename:2")],  # no retry: the run fails cleanly, a rerun completes it
    ids=["rescheduled", "gives-up"])
def test_a_worker_killed_mid_run(
    project: Path, tmp_path: Path, allowed_failures: str, kill_at: str
) -> None:
    ref = local_reference(project)
    sched_env = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": allowed_failures}
    with cluster(tmp_path / "kill", env=sched_env) as c:
        # the only worker at first: it takes the tasks and SIGKILLs itself with a frame's
        # bytes in its temp file, not yet renamed into place
        killer = c.add_worker(crashpoints.child_env(),
                              crashpoints.worker_options(kill=kill_at))
        c.wait_for_workers(1)
        run = subprocess.Popen(materialize_cmd("dask", "--executor", "dask", "--scheduler",
                                               c.address),
                               cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        try:
            assert killer.wait(timeout=START_S) == -signal.SIGKILL, c.log("worker0")
            frames = project / "dask" / "frames"
            assert 1 <= len(list(frames.rglob("*.npz"))) < 12  # killed mid-run, for real
            c.add_worker()  # the other worker
            out, err = run.communicate(timeout=2 * START_S)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait(timeout=10)
        if allowed_failures != "0":
            assert run.returncode == 0, err
            assert "12 written" in out
            assert "distributed" not in err  # a rescheduled task is no news for the user
        else:
            lines = err.strip().splitlines()
            assert run.returncode == 2 and len(lines) == 1, err
            assert "Dask workers died" in lines[0] and "rerun" in lines[0]
            _no_temp_files(project / "dask")  # the lost task's temp file is gone
            rerun = run_cli(project, materialize_cmd("dask", "--executor", "dask",
                                                     "--scheduler", c.address))
            assert rerun.returncode == 0, rerun.stderr
    _no_temp_files(project / "dask")
    assert tree(project / "dask") == ref
