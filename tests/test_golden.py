"""Golden bytes: a fixed input set whose every output file has a pinned sha256.

Determinism is tested elsewhere across checkout paths and job counts on one machine; these
digests pin the *format* itself, on any machine and numpy version.  When one of them
changes, the output bytes changed: that must be a deliberate format change (bump
``materialize.FORMAT_VERSION`` or say so in the changelog), and the new digests are pasted
here from the failure message.

The input is built from integer arithmetic (no random stream whose algorithm could change)
and written as npz frames; only npz inputs are pinned, because their sample identities do
not depend on a format's enumeration rules.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis._io import atomic_write_text, write_json
from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.materialize import ReaderParams
from dvc_cuvis.materialize import materialize_universe as materialize
from dvc_cuvis.model.frame_bytes import npz_bytes
from dvc_cuvis.model.frames import Compression
from dvc_cuvis.model.splits import load_splits, save_splits
from dvc_cuvis.model.universe_io import format_universe, read_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe

RECORDINGS = {"day1/line-a": 3, "day1/line-b": 2, "day2/line-a": 3}


def write_inputs(root: Path) -> None:
    """Eight npz frames of three recordings; categories 0 (background), 1 and 2."""
    k = 0
    for rec, frames in RECORDINGS.items():
        for f in range(frames):
            cube = ((np.arange(4 * 5 * 3).reshape(4, 5, 3) * (k + 3)) % 97).astype(np.float32)
            classes = np.zeros((4, 5), np.uint8)
            classes[: 1 + k % 3, : 2 + k % 2] = k % 3  # frame k carries category k % 3
            data = npz_bytes({"cube": cube / np.float32(97),
                              "wavelengths": np.array([450, 550, 650], np.int32),
                              "class_mask": classes, "source": np.array(f"{rec}.cu3s")},
                             Compression())
            path = root / "data" / rec / f"frame_{f:04d}.npz"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            k += 1


def digests(root: Path) -> dict[str, str]:
    """Every output's sha256, but the spectral summaries: their values are pinned to float32
    rounding (test_golden_summaries), not their bytes."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".materialize.lock"
            and not p.relative_to(root).as_posix().startswith("out/summaries/")}


def run_library(root: Path) -> None:
    """enumerate -> bake -> materialize through the library, written as the CLI writes."""
    opts = EnumerateOptions(format="npz", root=root / "data", out_dir=root, jobs=1)
    uni, info = enumerate_universe(opts)
    atomic_write_text(root / "universe.csv", format_universe(uni))
    write_json(root / "metrics/universe.json", info)
    (baked,) = bake(read_universe(root / "universe.csv"),
                    BakeOptions(seed=7, val_ratio=0.25, test_ratio=0.25))
    save_splits(baked.config, root / "splits.json")
    write_json(root / "metrics/split.json", baked.metrics)
    materialize(read_universe(root / "universe.csv"), load_splits(root / "splits.json"),
                root / "out", ReaderParams())


GOLDEN: dict[str, str] = {
    "data/day1/line-a/frame_0000.npz":
        "65ddd9ad14028ba4324a73b5040b8d8bc48dc1fcb0881181320fb8be164f9561",
    "data/day1/line-a/frame_0001.npz":
        "2073ec41b64b7c1dbb2e86ab4595d0662718cd51ec961f85a84030f9474420b1",
    "data/day1/line-a/frame_0002.npz":
        "798cc1431a005b58277eb31c166558b4c800deb1d41ee0185d903b8f868f2823",
    "data/day1/line-b/frame_0000.npz":
        "eb93f8d505321dc620c9d03aa97a2589821ed7e1862d430fb88a0a4ba63be4ef",
    "data/day1/line-b/frame_0001.npz":
        "aa650a8db1d2418cd19d384a4ec168e731e8f3b8855f7a1047d2a1c2850f8047",
    "data/day2/line-a/frame_0000.npz":
        "32537c7a32b13c92130d676dd90ff3a6ddaffc878a84923b93adba127f2f89a9",
    "data/day2/line-a/frame_0001.npz":
        "a6493eb54e8697b76c2c24cd34c56e42a13410d087931327a56c5029ca260e7b",
    "data/day2/line-a/frame_0002.npz":
        "57de6e477e3b3dba570a38d5fc2fbd6efccea29fcbef94c4ade48cbb0d9617a7",
    "metrics/split.json":
        "93361e567a01581a1bdeed6d0be29babb69ef83b332ed578654ba45d8df3d123",
    "metrics/universe.json":
        "223f5d7cdd692237ddfc250c774e698b1dcdcdcf0881ec6d53b44790f8233e44",
    "out/frames/day1/line-a/frame_0000.npz.000000.npz":
        "d409ecc59fe054e765a57c0f8a5a777f0b1dc960203d3122276ea6d34f7b59ea",
    "out/frames/day1/line-a/frame_0001.npz.000000.npz":
        "4a778a61454336c34dc3142db62a90cf7b4156edeadd4acac91da3d7db579e9a",
    "out/frames/day1/line-a/frame_0002.npz.000000.npz":
        "58584a3eaca085a4b9aabcf7bb7fa1c19062c24c4d892a7ff25720a5671b2ea4",
    "out/frames/day1/line-b/frame_0000.npz.000000.npz":
        "3925917c16440860f5f094ba5c964fa5c6116795cfedf7174c8796542c5f1b21",
    "out/frames/day1/line-b/frame_0001.npz.000000.npz":
        "7827a559b1f5bff104b525d8a8bc615ac2c2cf808e5e224a07a778c1f46c1a1c",
    "out/frames/day2/line-a/frame_0000.npz.000000.npz":
        "2aac1e3e97187005db5b481730cdc58e0583d18e22b3841b21288345b1bd4827",
    "out/frames/day2/line-a/frame_0001.npz.000000.npz":
        "ff12c4463990b2556e71fc9172cda90259c24956e4d3829d6dcdd64e6e763a99",
    "out/frames/day2/line-a/frame_0002.npz.000000.npz":
        "5364bf3ff99fed702df53d26f509aca5b3064c37fd8ee816f50bf0c688970b03",
    "out/manifest.json":
        "71d2e5db36f0a07a60fead874bf990d538e6158923f03a4d309a8e903da2ca6e",
    "out/splits.json":
        "03828312fdc98d5ffa8c1d71d4773a9aff5bda58f3026eba5ec05fd97d10d23e",
    "out/universe.csv":
        "6c831efd225ad65407e0772b6065503fc5fe4053034ce28470cb4118b5bf4119",
    "splits.json":
        "03828312fdc98d5ffa8c1d71d4773a9aff5bda58f3026eba5ec05fd97d10d23e",
    "universe.csv":
        "ea710854c82c660a0dadb53e4482f260123464bbc1aef374e718e84fd9786e40",
}


def test_golden_bytes(tmp_path: Path) -> None:
    write_inputs(tmp_path)
    run_library(tmp_path)
    got = digests(tmp_path)
    assert got == GOLDEN, (
        "output bytes changed; if deliberate (a format change), pin the new digests:\n"
        + json.dumps(got, indent=4))


def test_the_cli_writes_the_golden_bytes(tmp_path: Path) -> None:
    cli = Path(sys.executable).with_name("dvc-cuvis")
    if not cli.is_file():
        pytest.skip("the dvc-cuvis console script is not installed next to this Python")
    write_inputs(tmp_path)

    def run(*args: str) -> None:
        r = subprocess.run([str(cli), *args, "--no-params"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr

    run("enumerate", "--format", "npz", "--root", "data", "--out", "universe.csv",
        "--metrics", "metrics/universe.json", "--jobs", "1", "--stat-cache", "none")
    run("bake", "--universe", "universe.csv", "--out", "splits.json", "--metrics",
        "metrics/split.json", "--seed", "7", "--val-ratio", "0.25", "--test-ratio", "0.25")
    run("materialize", "--universe", "universe.csv", "--splits", "splits.json", "--out-dir",
        "out", "--stat-cache", "none")
    assert digests(tmp_path) == GOLDEN


#: A few summary values of the golden frames, to float32 rounding (summaries: the recipe in
#: dvc_cuvis/materialize/summaries.py; these frames are small enough that every pixel counts).
GOLDEN_SUMMARIES = {
    "frames/day1/line-a/frame_0000.npz.000000.npz": {
        "mean": [0.4314433, 0.4623711, 0.49329895], "std": [0.27288008] * 3,
        "categories": {"0": (20, [0.4314433, 0.4623711, 0.49329895])}},
    "frames/day2/line-a/frame_0000.npz.000000.npz": {
        "mean": [0.5505155, 0.4329897, 0.5154639], "std": [0.2936317, 0.2770109, 0.2770109],
        "categories": {"0": (11, [0.60449857, 0.41424555, 0.49671978]),
                       "2": (9, [0.48453608, 0.45589918, 0.5383734])}},
}


def test_golden_summaries(tmp_path: Path) -> None:
    """The spectral summaries of the golden frames: pinned values, and numpy's own figures."""
    write_inputs(tmp_path)
    run_library(tmp_path)
    shards = sorted((tmp_path / "out/summaries").rglob("%summary.json"))
    assert [p.parent.relative_to(tmp_path / "out/summaries").as_posix() for p in shards] == \
        sorted(RECORDINGS)
    entries = {k: v for p in shards for k, v in json.loads(p.read_text())["frames"].items()}
    assert len(entries) == sum(RECORDINGS.values())
    for name, want in GOLDEN_SUMMARIES.items():
        got = entries[name]
        np.testing.assert_allclose(got["mean"], want["mean"], rtol=2e-7)
        np.testing.assert_allclose(got["std"], want["std"], rtol=2e-7)
        assert {k: v["pixels"] for k, v in got["categories"].items()} == \
            {k: n for k, (n, _) in want["categories"].items()}
        for k, (_, mean) in want["categories"].items():
            np.testing.assert_allclose(got["categories"][k]["mean"], mean, rtol=2e-7)
    for name, got in entries.items():  # every frame against numpy, from the frame itself
        with np.load(tmp_path / "out" / name) as z:
            cube = z["cube"].reshape(-1, 3).astype(np.float64)
        np.testing.assert_allclose(got["mean"], cube.mean(axis=0), rtol=1e-6)
        np.testing.assert_allclose(got["std"], cube.std(axis=0), rtol=1e-6)
        assert got["invalid"] == 0 and got["sampled"] == 20 and got["md5"]
        assert got["thumbnail"]["height"] == 4 and got["thumbnail"]["width"] == 5
