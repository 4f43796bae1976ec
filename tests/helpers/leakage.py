"""Planted leakage cases the leakage tests share: a copied frame across stages, and
recordings whose summaries carry a shifted band range or another wavelength grid."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.materialize import ReaderParams
from dvc_cuvis.materialize import materialize_universe as materialize
from dvc_cuvis.materialize.summaries import summarize, to_record
from dvc_cuvis.materialize.summary_store import shard_of, write_shard
from dvc_cuvis.model.frame_bytes import npz_bytes
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.frames import Compression
from dvc_cuvis.model.splits import save_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe, write_universe
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe

WL = np.arange(400.0, 1000.0, 20.0)  # 30 bands
BRIGHT = (WL >= 700) & (WL < 800)  # the planted band range: 700-780 nm
RECS, PER = 24, 3


def scene(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:24, 0:24]
    img = np.zeros((24, 24, 4))
    for _ in range(4):
        cy, cx, s = rng.uniform(0, 24), rng.uniform(0, 24), rng.uniform(3, 8)
        img += np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / (2 * s * s))[..., None] \
            * rng.uniform(0.2, 1, 4)
    return img.astype(np.float32)


def planted_copy(root: Path) -> tuple[str, str]:
    """Enumerate 4 recordings x 3 distinct frames plus one copy of ``rec0/f0`` (re-saved
    compressed, so its md5 differs) as its own recording, bake per sample with a seed that
    puts the copy in another stage, materialize; returns the pair's uids."""
    data = root / "data"
    for r in range(4):
        for k in range(3):
            (data / f"rec{r}").mkdir(parents=True, exist_ok=True)
            (data / f"rec{r}" / f"f{k}.npz").write_bytes(npz_bytes(
                {"cube": scene(10 * r + k), "wavelengths": np.arange(4, dtype=np.int32)},
                Compression()))
    (data / "copy").mkdir()
    (data / "copy" / "f0.npz").write_bytes(npz_bytes(
        {"cube": scene(0), "wavelengths": np.arange(4, dtype=np.int32)},
        Compression.parse("deflate")))
    uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=data, out_dir=root, jobs=1))
    write_universe(uni, root / "universe.csv")
    uni = read_universe(root / "universe.csv")
    pair = ("rec0/f0.npz#0", "copy/f0.npz#0")
    for seed in range(50):
        (baked,) = bake(uni, BakeOptions(seed=seed, group_by="sample"))
        stage = {uni.uid(int(p)): s for s in ("train", "val", "test")
                 for p in baked.stages[s].tolist()}
        if pair[0] in stage and pair[1] in stage and stage[pair[0]] != stage[pair[1]]:
            break
    save_splits(baked.config, root / "splits.json")
    materialize(uni, baked.config, root / "out", ReaderParams(), jobs=1)
    return pair


def planted_summaries(root: Path, *, bright: bool = False, moved: float = 0.0,
                      drop_band: bool = False) -> dict[str, list[str]]:
    """A grouped bake of 24 recordings (cu3s sessions of 3 frames) and their summary shards;
    ``bright``: half the test frames 15 % brighter in 700-780 nm; ``moved``: one train
    recording's centres moved; ``drop_band``: one val recording with a band less."""
    uni = Universe.from_records([{"source": f"day{r:02d}.cu3s", "index": i}
                                 for r in range(RECS) for i in range(PER)])
    (split,) = bake(uni, BakeOptions(seed=3))
    save_splits(split.config, root / "splits.json")
    write_universe(uni, root / "universe.csv")
    stage = {uni.source(int(p)): s for s in ("train", "val", "test")
             for p in split.stages[s].tolist()}
    by_stage: dict[str, list[str]] = {}
    for src, st in sorted(stage.items()):
        by_stage.setdefault(st, []).append(src)
    rng = np.random.default_rng(2)
    shards: dict[str, dict[str, dict]] = {}
    for r in range(RECS):
        src = f"day{r:02d}.cu3s"
        level = 1.0 + 0.05 * rng.standard_normal()
        wl = WL.copy()
        if moved and src == by_stage["train"][0]:
            wl = wl + moved
        cut = drop_band and src == by_stage["val"][0]
        for i in range(PER):
            cube = (level + 0.01 * rng.standard_normal((2, 2, len(WL)))).astype(np.float32)
            if bright and stage[src] == "test" and i % 2 == 0:
                cube[..., BRIGHT] *= 1.15
            rec = to_record(summarize(cube[..., :-1] if cut else cube, wl[:-1] if cut else wl,
                                      None, with_thumbnail=False))
            name = frame_name(src, i)
            shards.setdefault(shard_of(name), {})[name] = {"source": src, "index": i,
                                                            "md5": f"m{r}.{i}", **rec}
    for shard, entries in shards.items():
        write_shard(root / "mat" / shard, entries)
    return by_stage
