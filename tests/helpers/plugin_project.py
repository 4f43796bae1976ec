"""The example project the plugin tests train on (cuvis-ai-core's trainer and its gRPC
service): the example materialized, its cuvis-ai data group and trainrun, and the ways its data
drifts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.cli import main
from dvc_cuvis.materialize import ReaderParams
from dvc_cuvis.materialize import materialize_universe as materialize
from dvc_cuvis.model.universe_io import read_universe, write_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from examples.generate import generate

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "dvc_cuvis" / "plugins"
TRAINRUN = "dvc_rx_statistical.yaml"

PIPELINE = """\
metadata:
  name: channel_mean
nodes:
- name: score
  class_name: tests.helpers.nodes.ChannelMeanScore
connections: []
"""


def build_project(root: Path, *, sessions: int = 6, frames: int = 4,
                  batch_size: int | None = 2) -> Path:
    """The example, materialized, with its cuvis-ai data group and trainrun, in ``root``
    (``batch_size`` None: the data group's default)."""
    ex = root / "example"
    generate(ex / "data", sessions=sessions, frames=frames, size=(8, 8), bands=4, seed=4)
    uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=ex / "data/npz",
                                                 out_dir=ex))
    write_universe(uni, ex / "universe.csv")
    uni = read_universe(ex / "universe.csv")
    (b,) = bake(uni, BakeOptions(strategy="random", seed=3, group_by="group"))
    materialize(uni, b.config, ex / "materialized", ReaderParams())
    (root / "examples/trainrun").mkdir(parents=True)
    shutil.copy(REPO / "examples/trainrun" / TRAINRUN, root / "examples/trainrun")
    (root / "examples/pipeline").mkdir()
    (root / "examples/pipeline/rx_statistical.yaml").write_text(PIPELINE)
    assert main(["export", "--no-params", "--to", "cuvis-ai",
                 "--universe", str(ex / "materialized/universe.csv"),
                 "--splits", str(ex / "materialized/splits.json"),
                 "--out", str(root / "examples/data/dvc_example.yaml"),
                 *(["--batch-size", str(batch_size)] if batch_size else [])]) == 0
    return root


def mat(root: Path) -> Path:
    return root / "example/materialized"


def frame(root: Path, k: int) -> Path:
    uni = read_universe(mat(root) / "universe.csv")
    return mat(root) / uni.value("materialized_path", k)


# -- the ways the data drifts ----------------------------------------------------------------


def tamper_pin(root: Path) -> str:
    doc = json.loads((mat(root) / "splits.json").read_text())
    doc["universe_hash"] = "0" * 64
    (mat(root) / "splits.json").write_text(json.dumps(doc, indent=2))
    return "universe.csv changed since the split was baked"


def swap_frame(root: Path) -> str:
    shutil.copyfile(frame(root, 1), frame(root, 0))  # another valid frame in its place
    return "content: 1 file(s) modified, 0 missing"


def flip_byte(root: Path) -> str:
    path = frame(root, 2)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    return "content: 1 file(s) modified, 0 missing"
