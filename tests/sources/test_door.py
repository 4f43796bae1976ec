"""The door: enumerate refuses every frame that materialize would trip on, lists them all,
writes nothing, says how to get the good data back, and reads an unchanged frame only once."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import dvc_cuvis.sources.npz as npz_source
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from dvc_cuvis.sources.door import DoorError, npz_verdict
from tests.helpers.files import sneaky_edit
from tests.helpers.repos import copy
from tests.helpers.shell import ENV, run, sh

ARGS = ("enumerate", "--format", "npz", "--root", "d", "--out", "u.csv",
        "--metrics", "m.json", "--no-params")


def frame(path: Path, drop: tuple[str, ...] = (), **members: np.ndarray) -> Path:
    """A good 4 x 5 x 3 frame (cube, wavelengths, class_mask, mask, source), members
    replaced by ``members`` and left out by ``drop``."""
    cube = np.full((4, 5, 3), 7.25, np.float32)
    arrays = {"cube": cube, "wavelengths": np.array([500, 600, 700], np.int32),
              "class_mask": np.zeros((4, 5), np.uint8), "mask": np.zeros((4, 5), np.int32),
              "source": np.array(path.stem)}
    arrays.update(members)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **{k: v for k, v in arrays.items() if k not in drop})
    return path


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for i in range(3):
        frame(tmp_path / "d" / f"good{i}.npz")
    return tmp_path


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Every frame enumerate opens, for its verdict and for its values (path, call order)."""
    seen: dict[str, list[str]] = {"verdict": [], "info": []}
    real_verdict, real_info = npz_source.npz_verdict, npz_source.frame_info

    def verdict(path: Path) -> list[str]:
        seen["verdict"].append(os.fspath(path))
        return real_verdict(path)

    def info(path: Path) -> dict:
        seen["info"].append(os.fspath(path))
        return real_info(path)

    monkeypatch.setattr(npz_source, "npz_verdict", verdict)
    monkeypatch.setattr(npz_source, "frame_info", info)
    return seen


def flipped(path: Path) -> Path:
    """One byte of the cube's data flipped (the zip stays readable; its CRC fails)."""
    sneaky_edit(path)
    return path


BAD = {
    "a flipped byte": (lambda p: flipped(frame(p)), "member 'cube': damaged bytes",
                       "Bad CRC-32"),
    "only a cube": (lambda p: frame(p, drop=("wavelengths", "class_mask", "mask", "source")),
                    "member 'wavelengths' missing", "one wavelength per band"),
    "no cube": (lambda p: frame(p, drop=("cube",)), "member 'cube' missing",
                "a numeric array [H, W, C]"),
    "a 2-D cube": (lambda p: frame(p, cube=np.zeros((4, 5), np.float32)), "member 'cube': "
                   "expected a 3-D array [H, W, C], got shape (4, 5)", ""),
    "a text cube": (lambda p: frame(p, cube=np.full((4, 5, 3), "x")), "member 'cube': "
                    "expected numbers, got dtype <U1", ""),
    "wrong wavelength count": (lambda p: frame(p, wavelengths=np.arange(5)),
                               "member 'wavelengths': expected 3 numbers", "got shape (5,)"),
    "a class mask of another size": (
        lambda p: frame(p, class_mask=np.zeros((5, 4), np.uint8)),
        "member 'class_mask': expected the cube's height x width (4, 5)", "got shape (5, 4)"),
    "a mask of another size": (lambda p: frame(p, mask=np.zeros((4, 5, 1), np.int32)),
                               "member 'mask': expected the cube's height x width (4, 5)",
                               "got shape (4, 5, 1)"),
    "a category id beyond uint8": (
        lambda p: frame(p, class_mask=np.full((4, 5), 300, np.int32)),
        "member 'class_mask': expected category ids 0-255", "got 300..300"),
    "not a zip": (lambda p: p.write_bytes(b"not a zip"), "not a readable npz frame", ""),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_frame_is_refused_naming_file_member_and_expectation(
    here: Path, cli, name: str
) -> None:
    make, member, expected = BAD[name]
    make(here / "d" / "bad.npz")
    r = cli(*ARGS)
    assert r.code == 2, r.err
    assert f"d/bad.npz: {member}" in r.err and expected in r.err
    assert "1 of 4 npz frames in d would fail materialize" in r.err
    assert "good" not in r.err and "Traceback" not in r.err
    assert not (here / "u.csv").exists() and not (here / "m.json").exists()


def test_a_frame_materialize_converts_is_admitted(here: Path, cli) -> None:
    """Dtypes materialize converts (a float64 cube, float wavelengths, an int class mask,
    a column of wavelengths) and extra members pass the door."""
    frame(here / "d" / "converted.npz", cube=np.zeros((4, 5, 3)),
          wavelengths=np.array([[500.0], [600.0], [700.0]]),
          class_mask=np.ones((4, 5), np.int64), extra=np.arange(2))
    frame(here / "d" / "bare.npz", drop=("class_mask", "mask", "source"))
    r = cli(*ARGS)
    assert r.code == 0, r.err
    assert (here / "u.csv").read_text().count("\n") == 6


def test_every_bad_frame_is_listed_and_the_good_ones_keep_their_verdict(
    here: Path, cli, reads: dict[str, list[str]]
) -> None:
    for name in ("a flipped byte", "only a cube", "a 2-D cube", "a class mask of another size"):
        BAD[name][0](here / "d" / f"{name.replace(' ', '_')}.npz")
    r = cli(*ARGS)
    assert r.code == 2
    lines = r.err.splitlines()
    assert lines[0] == ("dvc-cuvis: error: 4 of 7 npz frames in d would fail materialize; "
                        "enumerate refuses them and writes nothing:")
    assert [ln.split(":")[0].strip() for ln in lines[1:5]] == [
        "d/a_2-D_cube.npz", "d/a_class_mask_of_another_size.npz", "d/a_flipped_byte.npz",
        "d/only_a_cube.npz"]  # every one, in scan order
    assert lines[5].startswith("to go on: replace the damaged files")  # no git: no restore
    assert not (here / "u.csv").exists()
    assert len(reads["verdict"]) == 7
    # every verdict was kept, the bad ones too (a fact of the bytes): none is read again
    reads["verdict"].clear()
    assert cli(*ARGS).err == r.err
    assert reads["verdict"] == []
    for p in (here / "d").glob("[ao]*.npz"):
        p.unlink()
    assert cli(*ARGS).code == 0 and reads["verdict"] == []


def test_a_second_enumerate_of_good_data_reads_no_frame_byte(
    here: Path, tmp_path: Path, reads: dict[str, list[str]]
) -> None:
    def run_once(root: Path) -> StatCache:
        cache = StatCache(tmp_path / "sc.bin")
        enumerate_universe(EnumerateOptions(format="npz", root=root, out_dir=root.parent,
                                            cache=cache))
        cache.save()
        return cache

    first = run_once(here / "d")
    assert len(reads["verdict"]) == 3 and first.checked_computed == 3
    assert first.stats()["derived_computed"] == 3  # "frames parsed" counts values alone
    for key in reads:
        reads[key].clear()
    second = run_once(here / "d")
    assert reads == {"verdict": [], "info": []}
    assert second.checked_computed == 0 and second.stats()["bytes_hashed"] == 0
    # the same bytes elsewhere (a copy, a checkout): hashed, but neither checked nor parsed
    shutil.copytree(here / "d", tmp_path / "moved" / "d")
    moved = run_once(tmp_path / "moved" / "d")
    assert reads == {"verdict": [], "info": []}
    assert moved.checked_from_memo == 3 and moved.stats()["md5_hashed"] == 3


def test_a_changed_frame_gets_a_new_verdict(here: Path, cli) -> None:
    assert cli(*ARGS).code == 0
    frame(here / "d" / "good1.npz", drop=("wavelengths",))
    r = cli(*ARGS)
    assert r.code == 2 and "d/good1.npz: member 'wavelengths' missing" in r.err
    frame(here / "d" / "good1.npz")
    assert cli(*ARGS).code == 0


def test_the_check_rescan_is_not_the_door(here: Path) -> None:
    """A check compares md5s (a damaged frame is a modified one there): its re-scan
    (``EnumerateOptions.for_rescan``) neither reads frames for a verdict nor refuses."""
    flipped(here / "d" / "good0.npz")
    opts = EnumerateOptions(format="npz", root=here / "d", out_dir=here, verify=False)
    uni, _ = enumerate_universe(opts)
    assert len(uni) == 3 and opts.cache.checked_computed == 0
    with pytest.raises(DoorError):
        enumerate_universe(EnumerateOptions(format="npz", root=here / "d", out_dir=here))
    section = {"format": "npz", "root": "d", "out": str(here / "universe.csv")}
    rescan, why = EnumerateOptions.for_rescan(section, here, here / "universe.csv",
                                              StatCache(None))
    assert why == "" and rescan is not None and rescan.verify is False


def test_a_drift_check_with_enumerate_options_compares_md5s_and_does_not_refuse(
    here: Path
) -> None:
    """``verify(current=EnumerateOptions(...))`` (the door on by default) re-scans without
    it: a damaged frame is a modified one there (exit 1 in the CLI), not a refusal."""
    from dvc_cuvis.baking import BakeOptions, bake
    from dvc_cuvis.check.drift import verify
    from dvc_cuvis.model.splits import save_splits
    from dvc_cuvis.model.universe_io import write_universe

    opts = EnumerateOptions(format="npz", root=here / "d", out_dir=here)
    uni, _ = enumerate_universe(opts)
    write_universe(uni, here / "universe.csv")
    (baked,) = bake(uni, BakeOptions(group_by="sample", val_ratio=0.34, test_ratio=0.33))
    save_splits(baked.config, here / "splits.json")
    flipped(here / "d" / "good1.npz")
    os.utime(here / "d" / "good1.npz")  # a new stamp: its md5 is read again
    report = verify(here / "splits.json", here / "universe.csv", current=opts, lock=None)
    assert not report.ok
    assert "good1.npz" in str(report.to_dict())


def test_verdicts_name_members_without_paths(tmp_path: Path) -> None:
    """A verdict is a function of the bytes (kept by md5): it never names the path."""
    p = flipped(frame(tmp_path / "x.npz"))
    (problem,) = npz_verdict(p)
    assert problem.startswith("member 'cube': damaged bytes (Bad CRC-32")
    assert str(tmp_path) not in problem
    assert npz_verdict(frame(tmp_path / "y.npz")) == []


def damage(path: Path) -> None:
    """One byte of a tracked frame flipped, as a disk or a copy would: a new mtime."""
    path.chmod(0o644)
    flipped(path)
    os.utime(path)


def _restore_command(err: str) -> str:
    found = re.search(r"to get the last good data back \(this overwrites the damaged files "
                      r"and nothing else, committed or not\): `([^`]*)`", err)
    assert found, err
    return found.group(1)


@pytest.mark.slow
def test_under_dvc_repro_the_door_fails_the_stage_and_its_restore_command_works(
    built: Path, tmp_path: Path
) -> None:
    repo = copy(built, tmp_path / "repo")
    frames = sorted((repo / "data" / "npz").rglob("*.npz"))
    good = {p: p.read_bytes() for p in frames}
    for p in (frames[1], frames[4]):
        damage(p)
    proc = run("dvc", "repro", cwd=repo)
    assert proc.returncode != 0
    err = proc.stdout + proc.stderr
    for p in (frames[1], frames[4]):
        assert f"data/npz/{p.relative_to(repo / 'data/npz').as_posix()}: " in err
    assert "2 of 8 npz frames in data/npz would fail materialize" in err
    assert not (repo / "universe.csv").exists()
    # DVC committed the damaged data before the stage ran: the .dvc file differs from HEAD
    assert "data/npz.dvc" in sh("git", "status", "--porcelain", cwd=repo)
    command = _restore_command(err)
    damaged = [p.relative_to(repo).as_posix() for p in (frames[1], frames[4])]
    assert command == " && ".join(f"dvc get . {f} --rev HEAD -o {f} --force" for f in damaged)
    subprocess.run(command, shell=True, cwd=repo, env=ENV, check=True, capture_output=True)
    assert {p: p.read_bytes() for p in frames} == good
    sh("dvc", "repro", cwd=repo)
    assert sh("git", "status", "--porcelain", cwd=repo) == ""
    # damaged data committed by mistake: the way back is the commit before, for that frame
    before = sh("git", "rev-parse", "HEAD", cwd=repo).strip()
    damage(frames[2])
    run("dvc", "repro", cwd=repo)
    sh("git", "commit", "-qm", "oops", "--", "data/npz.dvc", cwd=repo)
    proc = run("dvc-cuvis", "enumerate", "--params", "params.yaml", cwd=repo)
    assert proc.returncode == 2 and "1 of 8 npz frames" in proc.stderr
    command = _restore_command(proc.stderr)
    one = frames[2].relative_to(repo).as_posix()
    assert command == f"dvc get . {one} --rev {before[:12]} -o {one} --force"
    subprocess.run(command, shell=True, cwd=repo, env=ENV, check=True, capture_output=True)
    assert {p: p.read_bytes() for p in frames} == good
    assert run("dvc-cuvis", "enumerate", "--params", "params.yaml", cwd=repo).returncode == 0


def test_tiff_cubes_are_read_and_labels_matched_at_the_door(
    tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tifffile")
    pytest.importorskip("PIL.Image")
    import dvc_cuvis.sources.tiff as tiff_source
    from tests.helpers.tiff import write_cube, write_label

    monkeypatch.chdir(tmp_path)
    write_cube(tmp_path / "t/images/good.tif")
    write_label(tmp_path / "t/labels/good.png", value=1)
    write_cube(tmp_path / "t/images/plain.tif", seed=1)  # unlabeled: its cube is read all the same
    write_cube(tmp_path / "t/images/cut.tif", h=32, w=32)
    cut = tmp_path / "t/images/cut.tif"
    cut.write_bytes(cut.read_bytes()[:2000])
    write_cube(tmp_path / "t/images/nowl.tif", wl=None)
    write_cube(tmp_path / "t/images/wide.tif", seed=2)
    write_label(tmp_path / "t/labels/wide.png", h=5, w=6, value=2)
    write_cube(tmp_path / "t/images/junk.tif", seed=3)
    (tmp_path / "t/labels/junk.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    calls: list[str] = []
    real = tiff_source.tiff_verdict
    monkeypatch.setattr(tiff_source, "tiff_verdict",
                        lambda p: calls.append(os.fspath(p)) or real(p))
    args = ("enumerate", "--format", "tiff", "--root", "t", "--out", "u.csv", "--no-params")
    r = cli(*args)
    assert r.code == 2 and not Path("u.csv").exists()
    lines = r.err.splitlines()
    assert lines[0] == ("dvc-cuvis: error: 4 of 6 TIFF cubes in t would fail materialize; "
                        "enumerate refuses them and writes nothing:")
    listed = dict(ln.strip().split(": ", 1) for ln in lines[1:5])
    assert sorted(listed) == ["t/images/cut.tif", "t/images/nowl.tif", "t/labels/junk.png",
                              "t/labels/wide.png"]
    assert listed["t/images/cut.tif"].startswith("not a readable TIFF cube")
    assert "GDAL_METADATA has no <Item name='wavelength'>" in listed["t/images/nowl.tif"]
    assert listed["t/labels/junk.png"].startswith("not a readable PNG label map")
    assert listed["t/labels/wide.png"] == ("label shape (5, 6) does not match cube "
                                           "t/images/wide.tif (6, 5) (height, width)")
    assert len(calls) == 6
    calls.clear()
    assert cli(*args).err == r.err and calls == []  # every verdict kept by the stat cache
    for name in ("cut.tif", "nowl.tif", "wide.tif", "junk.tif"):
        (tmp_path / "t/images" / name).unlink()
    for name in ("wide.png", "junk.png"):
        (tmp_path / "t/labels" / name).unlink()
    assert cli(*args).code == 0 and calls == []
    assert Path("u.csv").read_text().count("\n") == 3


def test_the_restore_command_fits_what_tracks_the_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Data in git: the damaged file alone, from the newest commit whose bytes the door
    passes, into the work tree only (``git restore``); nothing tracks it: words alone."""
    from dvc_cuvis.sources.door import BadFrame, restore_hint

    monkeypatch.chdir(tmp_path)
    sh("git", "init", "-q", cwd=tmp_path)
    frame(tmp_path / "d" / "a.npz")
    frame(tmp_path / "d" / "b.npz")
    sh("git", "add", "d", cwd=tmp_path)
    sh("git", "commit", "-qm", "data in git", cwd=tmp_path)
    first = sh("git", "rev-parse", "HEAD", cwd=tmp_path).strip()
    flipped(tmp_path / "d" / "a.npz")
    bad = [BadFrame("d/a.npz", ("damaged",))]
    assert restore_hint(Path("d"), bad).startswith(
        "to get the last good data back (this overwrites the damaged files and nothing "
        "else, committed or not): `git restore --source=HEAD -- d/a.npz`, then run")
    sh("git", "commit", "-qam", "damage, by mistake", cwd=tmp_path)
    assert f"`git restore --source={first[:12]} -- d/a.npz`" in restore_hint(Path("d"), bad)
    monkeypatch.chdir(tmp_path / "d")  # paths as the user types them, from where they are
    assert f"`git restore --source={first[:12]} -- a.npz`" in restore_hint(
        Path("."), [BadFrame("a.npz", ("damaged",))])
    monkeypatch.chdir(tmp_path)
    frame(tmp_path / "d" / "new.npz")
    assert "d/new.npz: never added to git" in restore_hint(
        Path("d"), [BadFrame("d/new.npz", ("damaged",))])
