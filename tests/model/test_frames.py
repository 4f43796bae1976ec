"""The npz frame module and the layout of materialized frames (names, collisions, migration)."""

from __future__ import annotations

import hashlib
import io
import os
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dvc_cuvis.materialize import executors
from dvc_cuvis.materialize import tasks as mtasks
from dvc_cuvis.materialize.core import materialize_universe as materialize
from dvc_cuvis.materialize.options import ReaderParams
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.frames import (
    Compression,
    apply_crop,
    frame_arrays,
    npz_bytes,
    read_npz,
    write_frame,
)
from dvc_cuvis.model.universe_io import read_universe
from tests.helpers.files import tree

# -- the frame bytes -----------------------------------------------------------------------


def test_write_frame_is_deterministic_and_reads_back(tmp_path: Path) -> None:
    cube = np.arange(4 * 5 * 3, dtype=np.float64).reshape(4, 5, 3)
    classes = np.array([[0, 1, 2, 0, 0]] * 4)
    arrays = frame_arrays(cube, [500, 600, 700], "day1/a.cu3s", classes, (1, 0, 0, 1), "t")
    md5, size = write_frame(tmp_path / "a" / "f.npz", arrays, Compression())
    data = (tmp_path / "a" / "f.npz").read_bytes()
    assert (md5, size) == (hashlib.md5(data).hexdigest(), len(data))
    assert data == npz_bytes(dict(reversed(arrays.items())), Compression())  # order-free
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["f.npz"]  # no temp file left
    with zipfile.ZipFile(tmp_path / "a" / "f.npz") as zf:
        assert [i.filename for i in zf.infolist()] == sorted(i.filename for i in zf.infolist())
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    got = read_npz(str(tmp_path / "a" / "f.npz"))
    assert got["cube"].dtype == np.float32 and got["cube"].shape == (3, 4, 3)
    assert got["class_mask"].dtype == np.uint8 and got["mask"].dtype == np.int32
    assert got["wavelengths"].tolist() == [500, 600, 700] and str(got["source"]) == "day1/a.cu3s"


# -- the atomic write under a failure ------------------------------------------------------


@pytest.mark.parametrize("fail", ["write", "fsync", "interrupt", "rename"])
def test_a_failed_atomic_write_keeps_the_old_file_and_leaves_no_temp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: str) -> None:
    import errno

    from dvc_cuvis._io import atomic_write_bytes

    target = tmp_path / "f.npz"
    target.write_bytes(b"old frame")
    real_write = os.write
    calls: list[int] = []

    def half_then_full(fd: int, data: memoryview) -> int:
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data[: len(data) // 2])

    def fail_with(exc: BaseException):  # type: ignore[no-untyped-def]
        def raiser(*_a: object, **_k: object) -> None:
            raise exc
        return raiser

    with monkeypatch.context() as m:
        if fail == "write":
            m.setattr(os, "write", half_then_full)
        elif fail == "fsync":
            m.setattr(os, "fsync", fail_with(OSError(errno.EIO, "I/O error")))
        elif fail == "interrupt":
            m.setattr(os, "fsync", fail_with(KeyboardInterrupt()))
        else:
            m.setattr(os, "replace", fail_with(OSError(errno.EXDEV, "cross-device link")))
        with pytest.raises((OSError, KeyboardInterrupt)):
            atomic_write_bytes(target, b"new frame " * 10_000)
    assert fail != "write" or len(calls) == 2  # a partial temp file really existed
    assert target.read_bytes() == b"old frame"
    assert [p.name for p in tmp_path.iterdir()] == ["f.npz"]  # no temp file left
    atomic_write_bytes(target, b"new frame")  # and the next write of that path goes through
    assert target.read_bytes() == b"new frame" and [p.name for p in tmp_path.iterdir()] == [
        "f.npz"]


# -- an input member copied unchanged: its CRC reused, the input's checked while writing ----


def _input_npz(path: Path, cube: np.ndarray, odd: str = "") -> bytes:
    """An input frame as a user's ``np.savez`` writes it (every member stored).

    ``odd``: ``header-v2`` (the cube's ``.npy`` header in format 2.0) or ``trailing``
    (bytes after the cube's data inside its member): both readable, neither copyable.
    """
    rng = np.random.default_rng(7)
    classes = rng.integers(0, 4, cube.shape[:2]).astype(np.uint8)
    members: dict[str, Any] = {
        "cube": cube, "wavelengths": np.arange(400, 400 + cube.shape[2], dtype=np.int32),
        "class_mask": classes, "mask": (classes > 0).astype(np.int32), "source": np.array("s")}
    if not odd:
        np.savez(path, **members)
        return path.read_bytes()
    with zipfile.ZipFile(path, "w") as zf:
        for key, arr in members.items():
            member = io.BytesIO()
            version = (2, 0) if key == "cube" and odd == "header-v2" else None
            np.lib.format.write_array(member, arr, version=version)
            tail = b"\0" * 64 if key == "cube" and odd == "trailing" else b""
            zf.writestr(f"{key}.npy", member.getvalue() + tail)
    return path.read_bytes()


def _spy_known_crc(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import dvc_cuvis.model.frames as frames

    used: list[str] = []
    real = frames._write_known_crc

    def spy(zf, sink, info, pieces, crc):  # type: ignore[no-untyped-def]
        used.append(info.filename)
        return real(zf, sink, info, pieces, crc)

    monkeypatch.setattr(frames, "_write_known_crc", spy)
    return used


# 4.2 MB: md5 in a thread beside the write; 3 KB: hashed inline; the others are not copyable
_CUBES: dict[str, tuple[tuple[int, int, int], Any]] = {
    "big": ((64, 64, 260), np.float32), "small": ((8, 8, 12), np.float32),
    "float64": ((8, 8, 12), np.float64), "big-endian": ((8, 8, 12), np.dtype(">f4")),
    "header-v2": ((8, 8, 12), np.float32), "trailing": ((8, 8, 12), np.float32),
}


@pytest.mark.parametrize("kind", sorted(_CUBES))
@pytest.mark.parametrize("crop", [None, (1, 0, 2, 1)])
@pytest.mark.parametrize("compress", ["none", "masks:1", "deflate:1"])
def test_reused_input_crc_gives_the_same_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str,
        crop: tuple[int, int, int, int] | None, compress: str) -> None:
    from dvc_cuvis.model.frames import read_npz_input

    shape, dtype = _CUBES[kind]
    cube = np.random.default_rng(1).random(shape).astype(dtype)
    odd = kind if kind in ("header-v2", "trailing") else ""
    data = _input_npz(tmp_path / "in.npz", cube, odd)
    used = _spy_known_crc(monkeypatch)
    src = read_npz_input(data)
    z = src.arrays
    arrays = frame_arrays(z["cube"], z["wavelengths"], "s", z["class_mask"], crop, "t")
    comp = Compression.parse(compress)
    md5, size = write_frame(tmp_path / "fast.npz", arrays, comp, origin=src)
    fast = (tmp_path / "fast.npz").read_bytes()
    assert used == (["cube.npy"] if crop is None and kind in ("big", "small")
                    and compress != "deflate:1" else [])  # only an unchanged stored cube
    used.clear()
    plain = frame_arrays(np.array(cube), np.arange(400, 400 + shape[2]), "s",
                         np.array(z["class_mask"]), crop, "t")  # copies: no input to reuse
    assert fast == npz_bytes(plain, comp) and used == []
    assert (md5, size) == (hashlib.md5(fast).hexdigest(), len(fast))
    with zipfile.ZipFile(tmp_path / "fast.npz") as zf:
        assert zf.testzip() is None  # every member's recorded CRC is its bytes' CRC
    np.testing.assert_array_equal(read_npz(str(tmp_path / "fast.npz"))["cube"],
                                  apply_crop(np.array(cube, np.float32), crop, "t"))


@pytest.mark.parametrize("n", [0, 1, 1000, 65535, 65536, 65537, (1 << 20) + 13])
@pytest.mark.parametrize("fast", [True, False])
def test_crc32_is_zlibs_at_every_size_and_alignment(
        monkeypatch: pytest.MonkeyPatch, n: int, fast: bool) -> None:
    import zlib

    import dvc_cuvis.model.frames as frames

    if not fast:  # as on a machine without libdeflate
        monkeypatch.setattr(frames, "_libdeflate_crc32", lambda: None)
    data = np.random.default_rng(n).bytes(n + 7)
    for off in (0, 3, 7):
        view = memoryview(data)[off:off + n]
        want = zlib.crc32(view)
        assert frames.crc32(view) == frames.crc32(bytes(view)) == want
        assert frames.crc32(bytearray(view)) == want
        if n:
            flipped = bytearray(view)
            flipped[n // 2] ^= 0x01
            assert frames.crc32(flipped) == zlib.crc32(flipped) != want


def test_the_fast_crc_is_the_one_taken_where_the_system_has_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import zlib

    import dvc_cuvis.model.frames as frames

    fn = frames._libdeflate_crc32()
    if fn is None:
        pytest.skip("no libdeflate on this machine: zlib.crc32 serves (tested above)")
    sizes: list[int] = []

    def spy(crc: int, address: int, n: int) -> int:
        sizes.append(n)
        return int(fn(crc, address, n))

    monkeypatch.setattr(frames, "_libdeflate_crc32", lambda: spy)
    big, small = bytes(range(256)) * 1024, b"x" * 100
    assert frames.crc32(big) == zlib.crc32(big) and frames.crc32(small) == zlib.crc32(small)
    assert sizes == [len(big)]  # a small buffer goes to zlib: a ctypes call costs more


@pytest.mark.parametrize("kind", ["big", "small"])
def test_a_damaged_input_is_refused_before_its_frame_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    from dvc_cuvis.model.frames import read_npz_input

    shape, dtype = _CUBES[kind]
    data = bytearray(_input_npz(tmp_path / "in.npz", np.ones(shape, dtype)))
    data[data.index(b"cube.npy") + 200] ^= 0x01  # one bit of the cube data: its CRC fails
    used = _spy_known_crc(monkeypatch)
    src = read_npz_input(bytes(data))
    z = src.arrays
    arrays = frame_arrays(z["cube"], z["wavelengths"], "s", z["class_mask"], None, "t")
    out = tmp_path / "out"
    with pytest.raises(zipfile.BadZipFile, match=r"Bad CRC-32 for file 'cube\.npy'"):
        write_frame(out / "f.npz", arrays, Compression(), origin=src)
    assert used == ["cube.npy"]  # the fast path was the one taken
    assert not out.exists() or list(out.iterdir()) == []  # no frame, no temp file


@pytest.mark.parametrize("crop", [None, (1, 0, 0, 0)])
def test_materialize_refuses_a_damaged_npz_input_cleanly(
        tmp_path: Path, crop: tuple[int, int, int, int] | None) -> None:
    from dvc_cuvis.errors import DvcCuvisError

    good = _input_npz(tmp_path / "good.npz", np.ones(_CUBES["big"][0], np.float32))
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


def test_an_array_that_only_looks_like_the_input_is_not_taken_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dvc_cuvis.model.frames import read_npz_input

    cube = np.random.default_rng(2).random(_CUBES["big"][0]).astype(np.float32)
    src = read_npz_input(_input_npz(tmp_path / "in.npz", cube))
    used = _spy_known_crc(monkeypatch)
    changed = src.arrays["cube"] * 2  # same shape, dtype and header, other bytes
    arrays = frame_arrays(changed, src.arrays["wavelengths"], "s", None, None, "t")
    write_frame(tmp_path / "f.npz", arrays, Compression(), origin=src)
    assert used == [] and (tmp_path / "f.npz").read_bytes() == npz_bytes(arrays, Compression())


# -- a mapped input (worker processes): no copy, a change while mapped is caught -----------


@pytest.fixture()
def not_racy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs written just now may be mapped (forked workers inherit this too)."""
    import dvc_cuvis.model.frames as frames

    monkeypatch.setattr(frames, "RACY_NS", 0)


def test_a_mapped_input_gives_the_same_frame_without_a_copy(tmp_path: Path,
                                                            not_racy: None) -> None:
    import mmap

    from dvc_cuvis.model.frames import FrameWriter, open_npz_input, read_npz_input

    cube = np.random.default_rng(4).random(_CUBES["big"][0]).astype(np.float32)
    data = _input_npz(tmp_path / "in.npz", cube)
    _input_npz(tmp_path / "small.npz", cube[:8, :8, :12])  # under 1 MiB: always read
    src = open_npz_input(str(tmp_path / "in.npz"), mapped=True)
    assert isinstance(src._data, mmap.mmap)  # the arrays are the file's pages
    assert isinstance(open_npz_input(str(tmp_path / "in.npz"))._data, bytes)
    assert isinstance(open_npz_input(str(tmp_path / "small.npz"), mapped=True)._data, bytes)
    read = read_npz_input(data).arrays
    assert sorted(src.arrays) == sorted(read)
    for k in read:
        np.testing.assert_array_equal(src.arrays[k], read[k])
    z = src.arrays
    arrays = frame_arrays(z["cube"], z["wavelengths"], "s", z["class_mask"], None, "t")
    with FrameWriter() as writer:
        md5, size = writer.result(writer.write(tmp_path / "f.npz", arrays, Compression(),
                                               origin=src))
    out = (tmp_path / "f.npz").read_bytes()
    assert out == npz_bytes(arrays, Compression())
    assert (md5, size) == (hashlib.md5(out).hexdigest(), len(out))


@pytest.mark.parametrize("mapped", [True, False])
def test_an_input_written_while_mapped_gives_no_frame_to_claim(
        tmp_path: Path, mapped: bool, not_racy: None) -> None:
    from dvc_cuvis.errors import DvcCuvisError
    from dvc_cuvis.model.frames import FrameWriter, open_npz_input

    cube = np.random.default_rng(5).random(_CUBES["big"][0]).astype(np.float32)
    data = _input_npz(tmp_path / "in.npz", cube)
    src = open_npz_input(str(tmp_path / "in.npz"), mapped=mapped)
    z = src.arrays
    arrays = frame_arrays(z["cube"], z["wavelengths"], "s", z["class_mask"], None, "t")
    at = data.index(b"cube.npy") + 1000
    with open(tmp_path / "in.npz", "r+b") as fh:  # another program writes it in place (the
        fh.seek(at)  # same bytes here, so the CRC check passes: a write is what is caught)
        fh.write(data[at:at + 64])
    with FrameWriter() as writer:
        handle = writer.write(tmp_path / "f.npz", arrays, Compression(), origin=src)
        if not mapped:  # a read input is one version of the file: its frame is whole
            md5, _size = writer.result(handle)
            assert md5 == hashlib.md5((tmp_path / "f.npz").read_bytes()).hexdigest()
            return
        with pytest.raises(DvcCuvisError, match=r"in\.npz: the file was written while its "
                                                r"frame was being made"):
            writer.result(handle)
    with pytest.raises(DvcCuvisError, match="was written while"):  # so does write_frame
        write_frame(tmp_path / "g.npz", arrays, Compression(), origin=src)


def test_a_racy_input_is_read_not_mapped(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A file changed within RACY_NS of its opening could be written again in the same
    coarse clock tick without a visible change: it is read (one version), never mapped."""
    import mmap

    import dvc_cuvis.model.frames as frames

    cube = np.random.default_rng(8).random(_CUBES["big"][0]).astype(np.float32)
    _input_npz(tmp_path / "in.npz", cube)  # just written: racy
    path = str(tmp_path / "in.npz")
    assert isinstance(frames.open_npz_input(path, mapped=True)._data, bytes)
    old = time.time_ns() - 10_000_000_000
    os.utime(path, ns=(old, old))  # mtime long ago, but the ctime is now: still racy
    assert isinstance(frames.open_npz_input(path, mapped=True)._data, bytes)
    later = time.time_ns() + 3_000_000_000
    monkeypatch.setattr(frames, "_now_ns", lambda: later)  # opened 3 s later: mapped
    assert isinstance(frames.open_npz_input(path, mapped=True)._data, mmap.mmap)


def _big_inputs(tmp_path: Path, n: int) -> Path:
    rng = np.random.default_rng(6)
    rows = ["source,index,format"]
    for i in range(n):
        _input_npz(tmp_path / f"in{i}.npz", rng.random(_CUBES["big"][0]).astype(np.float32))
        rows.append(f"in{i}.npz,0,npz")
    (tmp_path / "universe.csv").write_text("\n".join(rows) + "\n")
    return tmp_path / "universe.csv"


def test_workers_map_their_inputs_and_write_the_same_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, not_racy: None) -> None:
    import dvc_cuvis.model.frames as frames

    uni = read_universe(_big_inputs(tmp_path, 6))
    one = materialize(uni, None, tmp_path / "one", ReaderParams(), select="all", jobs=1)
    seen: list[bool] = []
    real = frames.open_npz_input

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


def test_one_writer_over_many_tasks_gives_each_task_its_own_md5s(tmp_path: Path) -> None:
    from dvc_cuvis.errors import DvcCuvisError

    rng = np.random.default_rng(3)
    tasks = []
    for i in range(5):  # frames big enough that an md5 overlaps the next frame's write
        shape = _CUBES["big"][0] if i % 2 == 0 else _CUBES["small"][0]
        _input_npz(tmp_path / f"in{i}.npz", rng.random(shape).astype(np.float32))
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


@pytest.mark.parametrize("compress", ["none", "deflate:1"])
def test_the_writer_gives_each_members_data_crc(tmp_path: Path, compress: str) -> None:
    # the signature's content digest takes the cube's CRC from here: it must be the CRC of
    # the data bytes alone, whether taken from the input's entry, by zipfile, or deflated
    import zlib

    from dvc_cuvis.model.frames import FrameWriter, crc32_without_prefix, read_npz_input

    cube = np.random.default_rng(2).random((8, 8, 12)).astype(np.float32)
    src = read_npz_input(_input_npz(tmp_path / "in.npz", cube, ""))
    z = src.arrays
    arrays = frame_arrays(z["cube"], z["wavelengths"], "s", z["class_mask"], None, "t")
    for origin in (src, None):
        crcs: dict[str, int] = {}
        with FrameWriter() as writer:
            writer.result(writer.write(tmp_path / "out.npz", arrays, Compression.parse(compress),
                                       origin=origin, data_crcs=crcs))
        assert "cube" in crcs
        assert crcs == {k: zlib.crc32(np.ascontiguousarray(arrays[k]).tobytes()) for k in crcs}
    for head, n in ((b"", 0), (b"x" * 77, 1), (os.urandom(200), (1 << 20) + 3)):
        tail = os.urandom(n)
        assert crc32_without_prefix(zlib.crc32(head + tail), zlib.crc32(head), n) == \
            zlib.crc32(tail)
