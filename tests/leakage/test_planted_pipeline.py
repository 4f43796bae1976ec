"""Every planted leakage case at once, through one real ``dvc repro``: the README workflow
(``dvc-cuvis init``; enumerate -> bake -> materialize -> check) on one small npz dataset that
holds an exact copy across recordings, a noisy, a 2-px-shifted and a gain-changed near copy,
neighbouring frames split ``--group-by sample``, a half-shifted test stage and a recalibrated
recording.  The tests read what the pipeline wrote: the check stage fails, ``check --json``
names each case under its constraint with its severity, the strict guard refuses, and the
remedies the check prints, pasted into ``bake``, leave those constraints satisfied."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.check.drift import DriftError
from dvc_cuvis.model.frame_bytes import npz_bytes
from dvc_cuvis.model.frame_read import read_npz
from dvc_cuvis.model.frames import Compression
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.train.datamodule import guard

pytestmark = pytest.mark.slow  # one dvc repro (four dvc-cuvis stages as child processes)

SIDE, BANDS = 64, 16  # 64 px: one crop step is 2 px, so a 2-px shift is within reach
RECORDINGS, FRAMES = 10, 6
WAVELENGTHS = np.arange(400, 400 + 40 * BANDS, 40, dtype=np.int32)  # 400-1000 nm
RECALIBRATED = "rec09"  # its centres moved by 2 nm (over the 0.5 nm tolerance)
SHIFTED_BANDS = slice(BANDS - 2, BANDS)  # 960-1000 nm, the last of the 8 band ranges
#: planted copy -> the frame it copies (each a recording of its own)
COPIES = {"copy/f0.npz#0": "rec00/f0.npz#0", "near_noise/f0.npz#0": "rec01/f0.npz#0",
          "near_shift/f0.npz#0": "rec02/f0.npz#0", "near_gain/f0.npz#0": "rec03/f0.npz#0"}


@dataclass(frozen=True)
class Planted:
    """The reproduced repository and what was planted in it."""

    repo: Path
    repro: str  # what ``dvc repro`` printed (stdout and stderr)
    code: int  # its exit code
    stage: dict[str, str]  # uid -> stage of the per-sample bake
    brightened: tuple[str, ...]  # test frames 50 % brighter in 960-1000 nm


def _scene(seed: int) -> np.ndarray:
    """A smooth scene of its own (blobs, mean 1) times a spectrum of its own in 400-840 nm."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:SIDE, 0:SIDE]
    img = np.full((SIDE, SIDE), 0.1)
    for _ in range(5):
        cy, cx, s = rng.uniform(0, SIDE), rng.uniform(0, SIDE), rng.uniform(SIDE / 10, SIDE / 4)
        img += np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / (2 * s * s)) * rng.uniform(0.3, 1)
    spectrum = np.linspace(0.5, 1.0, BANDS)
    spectrum[:12] *= rng.uniform(0.6, 1.4, 12)  # distinct shapes: no false near pair
    spectrum *= rng.normal(1.0, 0.01)  # the light of the day
    return (img[..., None] / img.mean() * spectrum).astype(np.float32)


def _write(path: Path, cube: np.ndarray, wavelengths: np.ndarray = WAVELENGTHS,
           compression: str = "none") -> None:
    """One npz frame file (no ``source`` member: its folder is its recording)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(npz_bytes({"cube": cube, "wavelengths": wavelengths},
                               Compression.parse(compression)))


def _near_copies(data: Path) -> None:
    """The copies, of the frames as finally written: exact (re-saved compressed), noisy
    (sigma = 2 % of the range), shifted by 2 px in both axes, and with 5 % more gain."""
    def cube(uid: str) -> np.ndarray:
        return read_npz(data / uid.split("#")[0])["cube"]

    _write(data / "copy/f0.npz", cube(COPIES["copy/f0.npz#0"]), compression="deflate")
    c = cube(COPIES["near_noise/f0.npz#0"])
    noise = np.random.default_rng(7).normal(0, 0.02 * float(c.max() - c.min()), c.shape)
    _write(data / "near_noise/f0.npz", (c + noise).astype(np.float32))
    c = cube(COPIES["near_shift/f0.npz#0"])
    shifted = c.copy()
    shifted[2:, 2:] = c[:-2, :-2]
    _write(data / "near_shift/f0.npz", shifted)
    _write(data / "near_gain/f0.npz", cube(COPIES["near_gain/f0.npz#0"]) * np.float32(1.05))


def _names() -> list[str]:
    """Every frame file of the dataset (relative to the data root), the copies included."""
    return [f"rec{r:02d}/f{k}.npz" for r in range(RECORDINGS) for k in range(FRAMES)] + \
        [c.split("#")[0] for c in COPIES]


def _seed_and_stages() -> tuple[int, dict[str, str]]:
    """The first seed whose per-sample bake puts every copy in another stage than its
    original: the hash stage of a sample follows from its uid and the seed alone, so the
    pipeline's bake of the enumerated files gives the same (the tests check it)."""
    uni = Universe.from_records([{"source": n, "index": 0} for n in _names()])
    for seed in range(100):
        (b,) = bake(uni, BakeOptions(seed=seed, group_by="sample"))
        stage = {uni.uid(int(p)): s for s in EXCLUSIVE_STAGES for p in b.stages[s].tolist()}
        if all(stage[c] != stage[o] for c, o in COPIES.items()):
            return seed, stage
    raise AssertionError("no seed splits every planted copy from its original")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Planted:
    """The dataset written, the pipeline set up by ``dvc-cuvis init`` and run by one
    ``dvc repro check`` (enumerate, bake, materialize, check; no report)."""
    import yaml

    from dvc_cuvis.cli import main
    from tests.helpers.shell import run, sh

    repo = tmp_path_factory.mktemp("planted") / "repo"
    data = repo / "data/npz"
    seed, stage = _seed_and_stages()
    # the half-shifted test stage: of each recording's test frames every other one (the
    # first, the third, ...) 50 % brighter in the last band range
    brightened: list[str] = []
    for r in range(RECORDINGS):
        name = f"rec{r:02d}"
        grid = WAVELENGTHS + 2 if name == RECALIBRATED else WAVELENGTHS
        tested = 0
        for k in range(FRAMES):
            cube = _scene(100 * r + k)
            if stage[f"{name}/f{k}.npz#0"] == "test" and name != RECALIBRATED:
                if tested % 2 == 0:
                    cube[..., SHIFTED_BANDS] *= np.float32(1.5)
                    brightened.append(f"{name}/f{k}.npz#0")
                tested += 1
            _write(data / f"{name}/f{k}.npz", cube, grid)
    _near_copies(data)
    sh("git", "init", "-q", cwd=repo)
    sh("dvc", "init", "-q", cwd=repo)
    with contextlib.chdir(repo):
        assert main(["init", "--format", "npz", "--root", "data/npz"]) == 0
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["bake"].update({"group_by": "sample", "seed": seed})
    params["materialize"]["jobs"] = 1
    assert params["check"]["summaries"] == params["materialize"]["out_dir"]  # init's default
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    done = run("dvc", "repro", "check", cwd=repo)  # check and the stages it needs, no report
    with (repo / ".gitignore").open("a") as fh:  # DVC ignores a stage's outputs only when
        fh.write("/materialized\n")  # the whole repro succeeds: the frames stay out of git
    sh("git", "add", "-A", cwd=repo)  # the split as committed: what a re-bake moves from
    sh("git", "commit", "-qm", "planted split", cwd=repo)
    return Planted(repo, done.stdout + done.stderr, done.returncode, stage,
                   tuple(brightened))


def _check(repo: Path, *args: str) -> tuple[int, dict, str]:
    """``dvc-cuvis check --params params.yaml --json ARGS`` in ``repo``, in this process:
    its exit code, the constraints finding, and stderr."""
    from dvc_cuvis.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(repo), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        code = main(["check", "--params", "params.yaml", "--json", *args])
    assert code in (0, 1) and "Traceback" not in err.getvalue(), err.getvalue()
    return code, json.loads(out.getvalue())["checks"]["constraints"], err.getvalue()


def _neighbours(stage: dict[str, str]) -> list[tuple[str, str]]:
    """The frames of one recording next to each other in different stages (f0 ... f5)."""
    return sorted((f"rec{r:02d}/f{k}.npz#0", f"rec{r:02d}/f{k + 1}.npz#0")
                  for r in range(RECORDINGS) for k in range(FRAMES - 1)
                  if stage[f"rec{r:02d}/f{k}.npz#0"] != stage[f"rec{r:02d}/f{k + 1}.npz#0"])


def _pairs(found: dict, kind: str) -> set[tuple[str, str]]:
    """The uid pairs ``check --json`` names under a duplicate constraint, each sorted."""
    return {tuple(sorted((p["a"], p["b"])))  # type: ignore[misc]
            for p in found["details"]["duplicate_pairs"][kind]["pairs"]}


def test_the_check_stage_fails_and_check_names_every_planted_case(planted: Planted) -> None:
    said = planted.repro
    assert planted.code != 0 and "content_duplicate violated" in said, said
    assert "Running stage 'materialize'" in said and "failed to reproduce 'check'" in said
    baked = json.loads((planted.repo / "splits.json").read_text())
    assert {p: st for st in EXCLUSIVE_STAGES for sel in baked[st] for p in sel["paths"]} == \
        {u.split("#")[0]: st for u, st in planted.stage.items()}  # the bake the data planned
    assert planted.brightened and {planted.stage[u] for u in planted.brightened} == {"test"}
    code, found, _ = _check(planted.repo)
    assert code == 1 and found["status"] == "violation"
    results = found["details"]["results"]
    # errors by default: the exact copy across recordings and the recalibrated recording
    assert found["summary"] == "wavelength_grid violated, content_duplicate violated"
    assert results["content_duplicate"].startswith("violated (error): 1 pair(s)")
    assert _pairs(found, "content_duplicate") == {("copy/f0.npz#0", "rec00/f0.npz#0")}
    assert results["wavelength_grid"].startswith("violated (error)")
    grids = found["details"]["spectra"]["wavelength_grid"]["grids"]
    assert [(g["nm"], g["recordings"]) for g in grids[1:]] == [([402.0, 1002.0], ["rec09/"])]
    # warnings by default: the near copies (and no other pair), the neighbours, the shift
    assert results["near_duplicate"].startswith("violated (warn): 3 pair(s)")
    assert _pairs(found, "near_duplicate") == {tuple(sorted(p)) for p in COPIES.items()
                                               if not p[0].startswith("copy/")}
    expected = _neighbours(planted.stage)
    assert results["adjacent_frames"].startswith(f"violated (warn): {len(expected)} pair(s)")
    adjacent = found["details"]["adjacent_pairs"]
    assert adjacent["count"] == len(expected)
    assert [(p["a"], p["b"]) for p in adjacent["pairs"]] == expected[:20]
    assert results["group_leakage"].startswith("violated (warn)")
    assert results["spectral_shift"].startswith("violated (warn): test's mean spectrum differs "
                                                "from train's")
    shift = {(t["a"], t["b"]): t
             for t in found["details"]["spectra"]["spectral_shift"]["tests"]}
    assert shift[("train", "test")]["flagged"] and not shift[("train", "val")]["flagged"]
    assert shift[("train", "test")]["nm"] == [960.0, 1000.0]  # the brightened range
    assert shift[("train", "test")]["direction"] > 0
    assert json.loads((planted.repo / "metrics/check.json").read_text())[
        "content_duplicates"] == 1  # the stage's metrics, written though it failed


def test_the_strict_guard_refuses_the_materialized_split(planted: Planted) -> None:
    calls: list[str | None] = []

    def module():  # a DataModule's face: setup() only
        return type("DM", (), {"setup": lambda self, stage=None: calls.append(stage)})()

    out = planted.repo / "materialized"  # what a training run reads, and its summaries
    kw = {"splits": out / "splits.json", "universe": out / "universe.csv", "lock": None,
          "cache": None, "summaries": out}
    with pytest.raises(DriftError, match="wavelength_grid violated, content_duplicate"):
        guard(module(), verify_mode="strict", **kw).setup("fit")
    quiet = {"content_duplicate": "off", "wavelength_grid": "off"}
    for kind in ("near_duplicate", "adjacent_frames", "spectral_shift"):
        with pytest.raises(DriftError, match=rf"constraints \({kind} violated\)"):
            guard(module(), verify_mode="strict", **quiet, **{kind: "error"}, **kw).setup("fit")
    assert calls == []  # refused before the module read a frame
    guard(module(), verify_mode="strict", **quiet, **kw).setup("fit")
    assert calls == ["fit"]  # the warnings alone do not refuse


def test_the_printed_remedies_pasted_into_bake_part_the_neighbours(planted: Planted,
                                                                    tmp_path: Path) -> None:
    from dvc_cuvis.cli import main
    from tests.helpers.shell import sh

    code, found, _ = _check(planted.repo, "--adjacent-frames", "error")
    assert code == 1
    fix = found["fix"]  # every failed constraint's remedy, the duplicate fix first
    assert fix.startswith("re-bake keeping each group of copies in one stage: add "
                          "--keep-duplicates-together exact"), fix
    assert "re-materialize the recordings named on one wavelength grid" in fix, fix
    remedy = re.search(r"--group-by (\S+) or (block:N), or --buffer K", fix)
    assert remedy, fix
    repo = tmp_path / "repo"  # a clone of the committed split, reading the same data
    sh("git", "clone", "-q", str(planted.repo), str(repo), cwd=tmp_path)
    for folder in ("data/npz", "materialized"):  # read only here: hard links will do
        shutil.copytree(planted.repo / folder, repo / folder, copy_function=os.link)
    pasted = [("--group-by", remedy[1]),
              ("--group-by", remedy[2].replace("N", "3"), "--buffer", "1")]
    for flags in pasted:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.chdir(repo), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            assert main(["bake", "--params", "params.yaml", *flags]) == 0, err.getvalue()
        said = err.getvalue().splitlines()
        moves = [ln for ln in said if " moved from " in ln]
        assert moves and all(ln.startswith("dvc-cuvis: warning: ") for ln in moves), said
        code, found, _ = _check(repo, "--adjacent-frames", "error")
        results = found["details"]["results"]
        assert results["adjacent_frames"] == "satisfied (error)", results
        assert "adjacent_pairs" not in found["details"]
        if "--buffer" in flags:  # blocks touch at their edges: the buffer leaves those out
            buffered = json.loads((repo / "metrics/splits.json").read_text())["buffered"]
            assert buffered and (f"dvc-cuvis: warning: {len(buffered)} frame(s) within 1 of a "
                                 "stage boundary inside a recording are left out of every "
                                 "stage (--buffer)") in err.getvalue(), said
            assert results["group_leakage"].startswith("violated (warn)")  # by choice
        else:
            assert results["group_leakage"].startswith("satisfied"), results
