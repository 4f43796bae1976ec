"""Where materialize's tasks run (materialize/executors.py): workers map their inputs and
write the same bytes, a worker's death is one error and the rerun completes, and tasks are
grouped in order."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dvc_cuvis.materialize import executors
from dvc_cuvis.materialize import tasks as mtasks
from dvc_cuvis.materialize.core import materialize_universe as materialize
from dvc_cuvis.materialize.options import ReaderParams
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.universe_io import read_universe
from tests.helpers.files import tree
from tests.helpers.npz_inputs import CUBES, allow_mapping, input_npz


@pytest.fixture()
def not_racy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs written just now may be mapped (forked workers inherit this too)."""
    allow_mapping(monkeypatch)


def _big_inputs(tmp_path: Path, n: int) -> Path:
    rng = np.random.default_rng(6)
    rows = ["source,index,format"]
    for i in range(n):
        input_npz(tmp_path / f"in{i}.npz", rng.random(CUBES["big"][0]).astype(np.float32))
        rows.append(f"in{i}.npz,0,npz")
    (tmp_path / "universe.csv").write_text("\n".join(rows) + "\n")
    return tmp_path / "universe.csv"


def test_workers_map_their_inputs_and_write_the_same_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, not_racy: None) -> None:
    import dvc_cuvis.model.frame_read as frame_read

    uni = read_universe(_big_inputs(tmp_path, 6))
    one = materialize(uni, None, tmp_path / "one", ReaderParams(), select="all", jobs=1)
    seen: list[bool] = []
    real = frame_read.open_npz_input

    def spy(path: str, *, mapped: bool = False) -> Any:
        seen.append(mapped)
        return real(path, mapped=mapped)

    monkeypatch.setattr(mtasks, "open_npz_input", spy)
    materialize(uni, None, tmp_path / "again", ReaderParams(), select="all", jobs=1)
    assert seen == [False] * 6  # the caller's own process reads: nothing can fault it
    two = materialize(uni, None, tmp_path / "two", ReaderParams(), select="all", jobs=2)
    assert tree(one.out_dir) == tree(two.out_dir)
    tasks = [mtasks.Task("npz", str(tmp_path / "in0.npz"), None, "in0.npz",
                      ((0, frame_name("in0.npz", 0)),), str(tmp_path / "m"), ReaderParams())]
    submitted: list[list[mtasks.Task]] = []

    class Pool:  # what execute hands a worker process
        def __init__(self, max_workers: int) -> None:
            pass

        def __enter__(self) -> Pool:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def submit(self, fn: Any, group: list[mtasks.Task]) -> Any:
            from concurrent.futures import Future

            submitted.append(group)
            f: Future[Any] = Future()
            f.set_result(fn(group))
            return f

    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Pool)
    list(executors.execute(tasks * 2, jobs=2))
    assert [t.mapped for g in submitted for t in g] == [True, True]


def test_an_input_truncated_under_a_worker_fails_cleanly_and_the_rerun_completes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, not_racy: None) -> None:
    from dvc_cuvis.errors import DvcCuvisError

    uni = read_universe(_big_inputs(tmp_path, 4))
    clean = materialize(uni, None, tmp_path / "clean", ReaderParams(), select="all")
    victim = tmp_path / "in2.npz"
    whole = victim.read_bytes()
    real = mtasks.frame_arrays

    def truncating(cube: Any, wl: Any, source: str, *args: Any) -> Any:
        if source == "in2.npz":  # the input is mapped by now: its pages vanish under it
            import faulthandler

            faulthandler.disable()  # (this worker's SIGBUS is expected: no stack dump)
            os.truncate(victim, 100)
        return real(cube, wl, source, *args)

    monkeypatch.setattr(mtasks, "frame_arrays", truncating)  # the forked workers inherit it
    out = tmp_path / "out"
    with pytest.raises(DvcCuvisError, match=r"worker process died \(killed, out of memory, "
                                            r"or an input file truncated"):
        materialize(uni, None, out, ReaderParams(), select="all", jobs=2)
    monkeypatch.undo()
    victim.write_bytes(whole)
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    materialize(uni, None, out, ReaderParams(), select="all", jobs=2)
    assert tree(out) == tree(clean.out_dir)


def test_worker_groups_keep_task_order_and_balance_two_workers() -> None:
    def task(i: int, n: int) -> mtasks.Task:
        return mtasks.Task("npz", f"f{i}", None, f"f{i}", tuple((k, f"x{k}") for k in range(n)),
                        "out", ReaderParams())

    small = [task(i, 1) for i in range(200)]
    groups = executors._groups(small, 2)
    assert [t for g in groups for t in g] == small and [len(g) for g in groups] == [25] * 8
    mixed = [task(0, 1), task(1, 32), task(2, 1), task(3, 1)]
    assert [[t.path for t in g] for g in executors._groups(mixed, 2)] == [
        ["f0"], ["f1"], ["f2", "f3"]]  # 35 frames: groups of up to 5, a bigger task alone
    assert [len(g) for g in executors._groups(small[:3], 1)] == [1, 1, 1]
