"""Materialize's tasks (materialize/tasks.py): a damaged npz input leaves no frame, and one
writer over many tasks gives each task its own md5s."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.materialize import executors
from dvc_cuvis.materialize import tasks as mtasks
from dvc_cuvis.materialize.options import ReaderParams
from dvc_cuvis.model.frame_names import frame_name
from tests.helpers.npz_inputs import CUBES, input_npz


@pytest.mark.parametrize("crop", [None, (1, 0, 0, 0)])
def test_materialize_refuses_a_damaged_npz_input_cleanly(
        tmp_path: Path, crop: tuple[int, int, int, int] | None) -> None:
    from dvc_cuvis.errors import DvcCuvisError

    good = input_npz(tmp_path / "good.npz", np.ones(CUBES["big"][0], np.float32))
    bad = bytearray(good)
    bad[bad.index(b"cube.npy") + 4000] ^= 0x10
    (tmp_path / "bad.npz").write_bytes(bytes(bad))
    out = tmp_path / "out"
    results: dict[str, object] = {}
    for name in ("good", "bad"):
        task = mtasks.Task("npz", str(tmp_path / f"{name}.npz"), None, f"{name}.npz",
                        ((0, frame_name(f"{name}.npz", 0)),), str(out),
                        ReaderParams(crop=crop, processing_mode=None))
        try:
            results[name] = mtasks.run_task(task)
        except DvcCuvisError as exc:
            results[name] = str(exc)
    assert isinstance(results["good"], list)
    msg = results["bad"]
    assert isinstance(msg, str) and msg.startswith(f"{tmp_path / 'bad.npz'}: cannot read npz frame")
    assert "Bad CRC-32" in msg and "cube.npy" in msg, msg
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "frames", "frames/good.npz.000000.npz"]  # nothing of the damaged input, not even a temp


def test_one_writer_over_many_tasks_gives_each_task_its_own_md5s(tmp_path: Path) -> None:
    from dvc_cuvis.errors import DvcCuvisError

    rng = np.random.default_rng(3)
    tasks = []
    for i in range(5):  # frames big enough that an md5 overlaps the next frame's write
        shape = CUBES["big"][0] if i % 2 == 0 else CUBES["small"][0]
        input_npz(tmp_path / f"in{i}.npz", rng.random(shape).astype(np.float32))
        tasks.append(mtasks.Task("npz", str(tmp_path / f"in{i}.npz"), None, f"in{i}.npz",
                              ((0, frame_name(f"in{i}.npz", 0)),), str(tmp_path / "out"),
                              ReaderParams(processing_mode=None), fsync=False))
    data = bytearray((tmp_path / "in3.npz").read_bytes())
    data[data.index(b"cube.npy") + 300] ^= 0x04
    (tmp_path / "in3.npz").write_bytes(bytes(data))
    got: list[list[tuple[str, str, int]]] = []
    with pytest.raises(DvcCuvisError, match=r"in3\.npz: cannot read npz frame"):
        for results in executors.execute(tasks, jobs=1):
            got.append(results)
    assert len(got) == 3  # every task before the damaged one comes back, none after it
    for (name, md5, size, _summary), in got:
        data = (tmp_path / "out" / name).read_bytes()
        assert (md5, size) == (hashlib.md5(data).hexdigest(), len(data))
    assert sorted(p.name for p in (tmp_path / "out/frames").iterdir()) == [
        f"in{i}.npz.000000.npz" for i in range(3)]
    assert mtasks.run_tasks(tasks[:3]) == got  # the same, whether or not frames overlap
