"""Our folders only, and environment errors (docs/robustness.md, the section of that name).

A repository anyone can push may ship symlinks: deletion never follows one out of a folder
we own, the dataset walk lists each file once and ends on loops, names that materialize
could not create are refused at enumerate, and the file system's refusals (disk full,
permissions, read-only, a folder where a file belongs) are one line naming the file.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis import _io
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.limits import LimitError
from dvc_cuvis.materialize import ReaderParams
from dvc_cuvis.materialize import materialize_universe as materialize
from dvc_cuvis.materialize.summary_store import refresh
from dvc_cuvis.model.universe_io import read_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from tests.helpers.files import tree, write_universe_csv


def _frame(path: Path, value: float = 1.0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:  # np.savez would append ".npz" to a name without it
        np.savez(fh, cube=np.full((2, 2, 3), value, np.float32),
                 wavelengths=np.array([500, 600, 700], np.int32))


def _bystander(folder: Path) -> dict[str, str]:
    """A folder outside ours with files our deletion patterns match; returns its tree."""
    folder.mkdir()
    _frame(folder / "precious.npz")
    (folder / "notes.tmp").write_bytes(b"not ours")
    (folder / ".half.npz.tmp").write_bytes(b"not ours either")
    (folder / "%summary.json").write_text('{"recipe": -1, "frames": {}}\n')
    return tree(folder)


def _materialized(tmp_path: Path) -> tuple[Path, Path]:
    """Three npz inputs and their universe.csv, materialized once into ``out``."""
    for name in ("a", "b", "c"):
        _frame(tmp_path / f"{name}.npz")
    csv = write_universe_csv(tmp_path / "universe.csv",
                             [("a.npz", 0), ("b.npz", 0), ("c.npz", 0)], "source,index")
    out = tmp_path / "out"
    materialize(read_universe(csv), None, out, ReaderParams(), select="all")
    return csv, out


# -- 1. deletion never follows a link out of the folder we own ---------------------------


def test_a_symlinked_frames_folder_is_refused_and_nothing_behind_it_is_touched(
        tmp_path: Path, cli) -> None:
    csv, out = _materialized(tmp_path)
    before = _bystander(tmp_path / "elsewhere")
    # frames/ itself a link (as a repository can ship it), then a folder inside it
    os.rename(out / "frames", tmp_path / "old-frames")
    (out / "frames").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    r = cli("materialize", "--universe", csv, "--out-dir", out, "--select", "all",
            "--stat-cache", "none")
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert f"{out / 'frames'}: a symlink" in r.err and "remove the link" in r.err
    assert tree(tmp_path / "elsewhere") == before
    (out / "frames").unlink()
    (out / "frames" / "day1").mkdir(parents=True)
    (out / "frames" / "day1" / "sub").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(DvcCuvisError, match="day1/sub: a symlink"):
        materialize(read_universe(csv), None, out, ReaderParams(), select="all")
    assert tree(tmp_path / "elsewhere") == before
    # a link to a file is an entry of ours: the link goes, never the file it leads to
    (out / "frames" / "day1" / "sub").unlink()
    (out / "frames" / "day1" / "stale.npz").symlink_to(tmp_path / "elsewhere/precious.npz")
    result = materialize(read_universe(csv), None, out, ReaderParams(), select="all")
    assert result.deleted == 1 and not os.path.lexists(out / "frames/day1/stale.npz")
    assert tree(tmp_path / "elsewhere") == before
    (out / ".materialize.lock").unlink()  # a dangling lock link: nothing is created there
    (out / ".materialize.lock").symlink_to(tmp_path / "elsewhere/planted")
    with pytest.raises(DvcCuvisError, match=r"\.materialize\.lock: .*symlink"):
        materialize(read_universe(csv), None, out, ReaderParams(), select="all")
    assert tree(tmp_path / "elsewhere") == before


def test_summary_shards_are_never_deleted_or_written_through_a_link(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    before = _bystander(tmp_path / "elsewhere")
    (out / "summaries").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(DvcCuvisError, match="summaries: a symlink"):
        refresh(out, {}, {}, frozenset(), summarize_frame=None, sync=False)
    assert tree(tmp_path / "elsewhere") == before


def test_a_versions_view_never_deletes_through_a_link(tmp_path: Path) -> None:
    from dvc_cuvis.train.versioned import _link

    before = _bystander(tmp_path / "elsewhere")
    view = tmp_path / "view"
    view.mkdir()
    (view / "frames").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    _frame(tmp_path / "object")
    with pytest.raises(DvcCuvisError, match="frames: a symlink"):
        _link(tmp_path / "object", view / "frames" / "precious.npz", view)
    assert tree(tmp_path / "elsewhere") == before
    (view / "frames").unlink()
    (view / "frames").mkdir()
    (view / "frames/precious.npz").symlink_to(tmp_path / "elsewhere/precious.npz")
    _link(tmp_path / "object", view / "frames" / "precious.npz", view)  # replaces the link
    assert not (view / "frames/precious.npz").is_symlink()
    assert tree(tmp_path / "elsewhere") == before


# -- 2. enumerate lists each file once ---------------------------------------------------


def test_enumerate_lists_each_file_once_through_loops_of_links(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "data"
    for rel in ("a/1.npz", "a/2.npz", "b/3.npz", "b/deep/4.npz", "5.npz"):
        _frame(root / rel)
    (root / "a" / "to_b").symlink_to("../b")  # a loop of two links: a -> b -> a -> ...
    (root / "b" / "to_a").symlink_to("../a")
    (root / "b" / "deep" / "home").symlink_to("../..")  # back to the root, twice over
    (root / "again").symlink_to(".")
    caplog.set_level(logging.WARNING, logger="dvc_cuvis")
    start = time.monotonic()
    uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=root, out_dir=tmp_path,
                                                 hash_content=False))
    assert time.monotonic() - start < 5
    assert uni.column("source") == ["5.npz", "a/1.npz", "a/2.npz", "b/3.npz", "b/deep/4.npz"]
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "'again' (a loop" in warned and "'a/to_b' (a link to b inside the root)" in warned
    assert "(+1 more)" in warned  # four links, three named


# -- 3. names materialize could not create are refused at the door -----------------------


def test_names_too_long_once_encoded_are_refused_at_enumerate_not_at_materialize(
        tmp_path: Path) -> None:
    root = tmp_path / "data"
    long_name = "x" * 240 + ".npz"  # 244 bytes: a name the file system takes
    escaped = "%" * 80 + ".npz"  # 84 bytes on disk, 240 once each "%" is encoded as "%25"
    for name in (long_name, escaped, "ok.npz"):
        _frame(root / name)
    with pytest.raises(LimitError, match=r"'%%%%.*cannot be materialized: .* over the "
                                         r"limit of 240 .*\(\+1 more\)"):
        enumerate_universe(EnumerateOptions(format="npz", root=root, out_dir=tmp_path,
                                            hash_content=False))
    # a universe.csv written by hand meets the same limit at materialize, before any write
    csv = write_universe_csv(tmp_path / "universe.csv", [("ok.npz", 0), (long_name, 0)],
                             "source,index")
    csv.write_text(csv.read_text().replace("\n" + long_name, "\ndata/" + long_name)
                   .replace("\nok.npz", "\ndata/ok.npz"))
    with pytest.raises(LimitError, match=r"universe.csv: data/x{200}.*cannot be "
                                         r"materialized: .*temp file included"):
        materialize(read_universe(csv), None, tmp_path / "out", ReaderParams(), select="all")
    assert not (tmp_path / "out" / "frames").exists()


# -- 4. environment errors: one line naming the file, exit 2, no partial file ------------


def _bake(cli, tmp_path: Path, out: Path, seed: int = 1):
    csv = tmp_path / "u.csv"
    if not csv.exists():
        write_universe_csv(csv, [(f"s{i}.npz", 0) for i in range(10)])
    return cli("bake", "--universe", csv, "--out", out, "--seed", seed, "--no-params")


def _one_line(r, *needles: str) -> None:
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert r.err.startswith("dvc-cuvis: error: ") and "internal error" not in r.err, r.err
    for needle in needles:
        assert needle in r.err, r.err


def test_the_file_systems_refusals_are_one_line_naming_the_file(
        tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "splits.json"
    assert _bake(cli, tmp_path, out).code == 0
    old = out.read_bytes()
    real_write, real_open = os.write, os.open

    def full_disk(fd: int, data) -> int:  # the disk fills after the first bytes
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".splits.json.tmp"):
            real_write(fd, bytes(data[:1]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    with monkeypatch.context() as m:
        m.setattr(_io.os, "write", full_disk)
        r = _bake(cli, tmp_path, out, seed=2)
    _one_line(r, f"{out}: No space left on device", "free space")
    assert out.read_bytes() == old and not (tmp_path / ".splits.json.tmp").exists()
    # root passes chmod: permission denied and a read-only file system come from the call
    for code, says in ((errno.EACCES, "check the permissions"), (errno.EROFS, "read-only")):

        def refuse(path, flags, mode=0o777, *, dir_fd=None, code=code):
            if str(path).endswith(".tmp"):
                raise OSError(code, os.strerror(code), str(path))
            return real_open(path, flags, mode, dir_fd=dir_fd)

        with monkeypatch.context() as m:
            m.setattr(_io.os, "open", refuse)
            r = _bake(cli, tmp_path, out, seed=2)
        _one_line(r, f"{out}: {os.strerror(code)}", says)
        assert out.read_bytes() == old and not (tmp_path / ".splits.json.tmp").exists()
    (tmp_path / "taken").mkdir()  # an output path that is a folder
    _one_line(_bake(cli, tmp_path, tmp_path / "taken"), f"{tmp_path / 'taken'}: Is a directory",
              "a folder where a file belongs")
    assert os.listdir(tmp_path / "taken") == []
    # a file where a folder belongs (what root cannot write past either)
    _one_line(_bake(cli, tmp_path, tmp_path / "u.csv" / "splits.json"),
              f"{tmp_path / 'u.csv'}: Not a directory")


def test_an_environment_error_anywhere_is_one_line_and_a_bug_stays_internal(
        cli, monkeypatch: pytest.MonkeyPatch) -> None:
    from dvc_cuvis.cli import bake

    def raising(exc: OSError):
        def settings(*args, **kwargs):
            raise exc
        return settings

    # a read deep in a verb (a data file, a cache): mapped where the CLI maps errors
    monkeypatch.setattr(bake, "Settings", raising(PermissionError(
        errno.EACCES, "Permission denied", "data/x.npz")))
    _one_line(cli("bake", "--universe", "u.csv"),
              "data/x.npz: Permission denied; permission denied")
    monkeypatch.setattr(bake, "Settings", raising(OSError(errno.EBADF, "Bad file descriptor")))
    r = cli("bake", "--universe", "u.csv")
    assert r.code == 2 and "internal error: OSError" in r.err  # a bug says so


# -- 5. a params.yaml that is not a file is an error, not the built-in defaults ----------


def test_a_dangling_or_folder_params_yaml_is_an_error_through_bake(tmp_path: Path, cli,
                                                                   monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_universe_csv(tmp_path / "u.csv", [(f"s{i}.npz", 0) for i in range(10)])
    Path("params.yaml").symlink_to("gone.yaml")
    r = cli("bake", "--universe", "u.csv", "--out", "splits.json")
    _one_line(r, "params.yaml: is a symlink to gone.yaml, which does not exist")
    Path("params.yaml").unlink()
    Path("params.yaml").mkdir()
    r = cli("bake", "--universe", "u.csv", "--out", "splits.json")
    _one_line(r, "params.yaml: is a folder")
    r = cli("bake", "--universe", "u.csv", "--out", "splits.json", "--params", "params.yaml")
    _one_line(r, "params.yaml: is a folder")
    assert not Path("splits.json").exists()
    with pytest.raises(DvcCuvisError):  # (the library says so too)
        from dvc_cuvis.config.params import load_params

        load_params("params.yaml")
