"""``bake --keep-duplicates-together``: clusters of copies (and near copies) merged into one
group with the groups their frames belong to, stable under growth, moves said; the remedy
that check prints, pasted, leads to a split whose check passes (docs/leakage.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.baking import BakeOptions, bake_run
from dvc_cuvis.baking.moves import Committed, moved
from dvc_cuvis.baking.together import keep_together
from dvc_cuvis.leakage.clusters import SignatureSet, duplicate_clusters
from dvc_cuvis.leakage.signatures import Signature, signature
from dvc_cuvis.model.compare import Version
from dvc_cuvis.model.universe_io import read_universe


def _scene(rng: np.random.Generator, side: int = 24, bands: int = 8) -> np.ndarray:
    y, x = np.mgrid[0:side, 0:side]
    img = np.zeros((side, side, bands))
    for _ in range(5):
        cy, cx, s = rng.uniform(0, side), rng.uniform(0, side), rng.uniform(2, 7)
        img += np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / (2 * s * s))[..., None] \
            * rng.uniform(0.2, 1, bands)
    return img.astype(np.float32)


def _near(cube: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A noisy copy with its gain changed: a near copy, not an exact one."""
    noise = rng.normal(0, 0.01 * float(cube.max() - cube.min()), cube.shape)
    return (cube * 1.03 + noise).astype(np.float32)


def _signatures(recordings: range, seed: int = 0) -> dict[str, Signature]:
    """Two frames per recording ``rNN.cu3s``, distinct scenes (by recording number)."""
    return {f"r{r:02d}.cu3s#{i}": signature(_scene(np.random.default_rng(1000 * seed + 2 * r + i)))
            for r in recordings for i in (0, 1)}


def _plant(sigs: dict[str, Signature]) -> dict[str, Signature]:
    """An exact copy r00#0 = r17#1, a chain r03#1 = r09#0 and r09#1 = r12#0 (three
    recordings in one cluster), and a near copy r22#0 ~ r05#0."""
    rng = np.random.default_rng(7)
    out = dict(sigs)
    out["r17.cu3s#1"] = out["r00.cu3s#0"]
    out["r09.cu3s#0"] = out["r03.cu3s#1"]
    out["r12.cu3s#0"] = out["r09.cu3s#1"]
    out["r22.cu3s#0"] = signature(_near(_scene(np.random.default_rng(10)), rng))  # r05#0's
    return out


def _universe(path: Path, recordings: range) -> Path:
    path.write_text("source,index\n" + "".join(f"r{r:02d}.cu3s,0-1\n" for r in recordings))
    return path


def _reader(sigs: dict[str, Signature]):
    def read(uni, given):
        return SignatureSet({u: sigs.get(u) for u in uni.uids()}, "mem", "sign them here")
    return read


def _stage_of(result, universe: Path) -> dict[str, str]:
    """Each sample's stage (train/val/test) in a one-split bake result."""
    (baked,) = result.baked
    uni = read_universe(universe)
    return {uni.uid(int(p)): s for s, pos in baked.stages.items() if s != "predict"
            for p in pos.tolist()}


def test_clusters_are_merged_with_their_groups_stably_under_growth(tmp_path: Path) -> None:
    sigs = _plant(_signatures(range(30)))
    assert duplicate_clusters(sigs, "exact") == [
        ("r00.cu3s#0", "r17.cu3s#1"), ("r03.cu3s#1", "r09.cu3s#0"),
        ("r09.cu3s#1", "r12.cu3s#0")]
    assert ("r05.cu3s#0", "r22.cu3s#0") in duplicate_clusters(sigs, "near")
    path = _universe(tmp_path / "universe.csv", range(30))
    plain = _stage_of(bake_run(BakeOptions(universe=path, out=tmp_path / "s.json")), path)
    opts = BakeOptions(universe=path, out=tmp_path / "s.json", keep_duplicates_together="near")
    result = bake_run(opts, _reader(sigs))
    kept = _stage_of(result, path)
    rec = {r: {kept[f"r{r:02d}.cu3s#{i}"] for i in (0, 1)} for r in range(30)}
    # each cluster in one stage, with the whole recordings its frames belong to; a merged
    # group is named by its smallest member, so it keeps that member's own (hash) stage
    assert rec[0] == rec[17] == {plain["r00.cu3s#0"]}
    assert rec[3] == rec[9] == rec[12] == {plain["r03.cu3s#0"]}
    assert rec[5] == rec[22] == {plain["r05.cu3s#0"]}
    untouched = [f"r{r:02d}.cu3s#{i}" for r in range(30) if r not in (0, 3, 5, 9, 12, 17, 22)
                 for i in (0, 1)]
    assert {u: kept[u] for u in untouched} == {u: plain[u] for u in untouched}
    record = result.metrics["keep_duplicates_together"]
    moved_frames = sum(kept[u] != plain[u] for u in plain)
    assert record == {"mode": "near", "clusters": 4, "frames_in_clusters": 8,
                      "groups_merged": 4, "frames_moved": 8, "unsigned": 0}
    assert moved_frames <= 8 and result.warnings[0].startswith(
        "--keep-duplicates-together near: 4 cluster(s)")
    # a committed split baked without the option: the frames that joined a cluster's stage
    # are announced as moved, and why
    uni = read_universe(path)
    before = bake_run(BakeOptions(universe=path, out=tmp_path / "s.json")).baked[0]
    together = keep_together(uni, opts, _reader(sigs)(uni, None)).together
    lines = moved(Committed(Version("HEAD", uni, before.stages, None, []), frozenset(), b""),
                  uni, result.baked[0], opts, together=together)
    assert moved_frames and len(lines) >= 1
    assert all("kept in one group with its duplicates" in ln
               and "(--keep-duplicates-together near)" in ln for ln in lines), lines
    assert sum(int(ln.split()[0]) for ln in lines) == moved_frames
    # growth: 20 recordings unrelated to any cluster; no sample baked before moves
    path = _universe(tmp_path / "grown.csv", range(50))
    grown_sigs = {**_signatures(range(30, 50), seed=1), **sigs}
    grown = bake_run(BakeOptions(universe=path, out=tmp_path / "s.json",
                                 keep_duplicates_together="near"), _reader(grown_sigs))
    after = _stage_of(grown, path)
    assert {u: after[u] for u in kept} == kept
    assert grown.metrics["keep_duplicates_together"]["clusters"] == 4
    guni = read_universe(path)
    gtogether = keep_together(guni, opts, _reader(grown_sigs)(guni, None)).together
    old = Committed(Version("HEAD", uni, result.baked[0].stages, None, []), frozenset(), b"")
    assert moved(old, guni, grown.baked[0], opts, together=gtogether) == []


def test_unsigned_frames_are_said_and_no_signature_at_all_is_refused(tmp_path: Path) -> None:
    from dvc_cuvis.errors import DvcCuvisError, OptionError

    sigs = _signatures(range(6))
    del sigs["r02.cu3s#1"]
    uni = _universe(tmp_path / "universe.csv", range(6))
    opts = BakeOptions(universe=uni, out=tmp_path / "s.json", keep_duplicates_together="exact")
    result = bake_run(opts, _reader(sigs))
    assert result.metrics["keep_duplicates_together"]["unsigned"] == 1
    assert any(w.startswith("1 frame(s) without a signature were not compared "
                            "(--keep-duplicates-together): r02.cu3s#1; sign them: "
                            "sign them here") for w in result.warnings), result.warnings
    with pytest.raises(DvcCuvisError, match=r"no frame of .* has a signature.*sign them here"):
        bake_run(opts, _reader({}))
    with pytest.raises(OptionError, match="pass signatures="):
        bake_run(opts)
    with pytest.raises(OptionError, match=r"keep_duplicates_together.*base"):
        BakeOptions(keep_duplicates_together="exact", base="b.json").check()
    with pytest.raises(OptionError, match="choose one of off, exact, near"):
        BakeOptions(keep_duplicates_together="yes").check()


def _planted_files(root: Path) -> tuple[int, Path]:
    """4 recordings x 3 distinct frames, an exact copy of ``rec0/f0`` (re-saved compressed)
    and a near copy of ``rec1/f1`` (noisy, gain changed), each in a folder of its own;
    enumerated, baked per sample with a seed that puts both copies in other stages than
    their originals, materialized to ``out``; returns the seed and the universe."""
    from dvc_cuvis.baking import bake
    from dvc_cuvis.materialize import ReaderParams, materialize_universe
    from dvc_cuvis.model.frame_bytes import npz_bytes
    from dvc_cuvis.model.frames import Compression
    from dvc_cuvis.model.splits import save_splits
    from dvc_cuvis.model.universe_io import write_universe
    from dvc_cuvis.sources import EnumerateOptions, enumerate_universe

    data = root / "data"
    cubes = {f"rec{r}/f{k}.npz": _scene(np.random.default_rng(10 * r + k))
             for r in range(4) for k in range(3)}
    cubes["copy/f0.npz"] = cubes["rec0/f0.npz"]
    cubes["near/f0.npz"] = _near(cubes["rec1/f1.npz"], np.random.default_rng(3))
    for name, cube in cubes.items():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_bytes(npz_bytes(
            {"cube": cube, "wavelengths": np.arange(cube.shape[2], dtype=np.int32)},
            Compression.parse("deflate") if name.startswith("copy") else Compression()))
    uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=data, out_dir=root, jobs=1))
    write_universe(uni, root / "universe.csv")
    uni = read_universe(root / "universe.csv")
    pairs = (("rec0/f0.npz#0", "copy/f0.npz#0"), ("rec1/f1.npz#0", "near/f0.npz#0"))
    for seed in range(200):
        (baked,) = bake(uni, BakeOptions(seed=seed, group_by="sample"))
        stage = {uni.uid(int(p)): s for s in ("train", "val", "test")
                 for p in baked.stages[s].tolist()}
        if all(a in stage and b in stage and stage[a] != stage[b] for a, b in pairs):
            break
    save_splits(baked.config, root / "splits.json")
    materialize_universe(uni, baked.config, root / "out", ReaderParams(), jobs=1)
    return seed, root / "universe.csv"


def test_the_remedy_check_prints_pasted_into_bake_passes_the_check(
        tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    import shlex

    monkeypatch.chdir(tmp_path)
    seed, _ = _planted_files(tmp_path)
    bake_cmd = ["bake", "--no-params", "--universe", "universe.csv", "--out", "splits.json",
                "--group-by", "sample", "--seed", str(seed)]
    check_cmd = ["check", "--no-params", "--universe", "universe.csv", "--splits",
                 "splits.json", "--no-lock", "--summaries", "out"]
    for near in ("warn", "error"):  # exact copies alone, then near copies too
        run = cli(*bake_cmd)
        assert run.code == 0, run.err
        run = cli(*check_cmd, "--near-duplicate", near)
        assert run.code == 1, run.out
        fix = next(ln.strip() for ln in run.out.splitlines() if ln.strip().startswith("fix:"))
        flags = shlex.split(fix.split(" add ", 1)[1].split(" to dvc-cuvis bake")[0])
        mode = "exact" if near == "warn" else "near"
        assert flags == ["--keep-duplicates-together", mode, "--summaries", "out"], fix
        assert f"bake.keep_duplicates_together: {mode}" in fix
        run = cli(*bake_cmd, *flags)  # the remedy as printed
        assert run.code == 0, run.err
        assert f"--keep-duplicates-together {mode}: " in run.err
        run = cli(*check_cmd, "--near-duplicate", near)
        assert run.code == 0, run.out
    # the params route: the same keys under bake in params.yaml
    (tmp_path / "params.yaml").write_text(
        f"bake:\n  group_by: sample\n  seed: {seed}\n  keep_duplicates_together: near\n"
        "  summaries: out\n")
    assert cli("bake", "--universe", "universe.csv", "--out", "splits.json").code == 0
    assert cli(*check_cmd, "--near-duplicate", "error").code == 0
    # no materialized folder beside a raw universe, or one without a signature: exit 2
    run = cli(*bake_cmd, "--keep-duplicates-together", "exact")
    assert run.code == 2 and "give --summaries DIR" in run.err and "Traceback" not in run.err
    (tmp_path / "empty").mkdir()
    run = cli(*bake_cmd, "--keep-duplicates-together", "exact", "--summaries", "empty")
    assert run.code == 2 and "has a signature" in run.err and "--sign-only" in run.err


def test_what_keeping_copies_together_says_word_for_word(tmp_path: Path) -> None:
    from dvc_cuvis.errors import DvcCuvisError
    from dvc_cuvis.model.universe import Universe

    sigs = _signatures(range(4))
    sigs["r01.cu3s#0"] = sigs["r00.cu3s#0"]  # one cluster of two recordings
    for u in ("r02.cu3s#0", "r02.cu3s#1", "r03.cu3s#0", "r03.cu3s#1"):
        del sigs[u]
    uni = read_universe(_universe(tmp_path / "universe.csv", range(4)))
    opts = BakeOptions(universe=uni.path, keep_duplicates_together="exact")
    kept = keep_together(uni, opts, SignatureSet(sigs, "mem", "sign here"))
    assert kept.warnings == (
        "--keep-duplicates-together exact: 1 cluster(s) of duplicate frames kept in one stage "
        "each; 1 group(s) merged into others, 2 frame(s) placed with their cluster's group "
        "(the split metrics count them under 'keep_duplicates_together')",
        "4 frame(s) without a signature were not compared (--keep-duplicates-together): "
        "r02.cu3s#0, r02.cu3s#1, r03.cu3s#0 (+1 more); sign them: sign here")
    near = keep_together(uni, BakeOptions(universe=uni.path, keep_duplicates_together="near"),
                         SignatureSet(sigs, "mem", "sign here"))
    assert near.warnings[0].startswith("--keep-duplicates-together near: 1 cluster(s) of "
                                       "duplicate or near-duplicate frames kept in one stage")
    alone = {u: s for u, s in _signatures(range(4)).items()}  # no copy, all signed
    assert keep_together(uni, opts, SignatureSet(alone, "mem", "x")).warnings == ()
    for where, path in ((uni.path, uni.path), ("the universe", None)):
        bare = Universe.from_records([{"source": "r00.cu3s", "index": 0}], path=path)
        with pytest.raises(DvcCuvisError) as err:
            keep_together(bare, opts, SignatureSet({}, "mem", "sign here"))
        assert str(err.value) == (
            f"mem: no frame of {where} has a signature, so --keep-duplicates-together exact "
            "has nothing to compare; materialize the frames (the signatures are stored in its "
            "summaries/) or sign them: sign here")


def test_near_clusters_join_chains_crops_and_the_cosine_bound() -> None:
    shape = (1.0,) + (0.0,) * 15

    def sig(n: int, phash: int, crops: tuple[int, ...] = ()) -> Signature:
        return Signature(f"{n:032x}", phash, shape, crops)

    def bits(*at: int) -> int:
        return sum(1 << b for b in at)

    # a chain a~c, c~d, b~d (3 bits apart each; the ends 6 or 9 apart) is one cluster
    h = 0x0123456789ABCDEF
    chain = {"a": sig(0, h), "c": sig(1, h ^ bits(1, 2, 3)),
             "d": sig(2, h ^ bits(1, 2, 3, 10, 11, 12)),
             "b": sig(3, h ^ bits(1, 2, 3, 10, 11, 12, 20, 21, 22))}
    assert duplicate_clusters(chain, "near") == [("a", "b", "c", "d")]
    # a hash below 2**63 with crops: the crop whose low 11 bits are set pairs with the other
    crops = tuple(0x3F00_0000_0000_07FF + k * (1 << 40) for k in range(8))
    assert duplicate_clusters({"x": sig(4, 0x1000, crops), "y": sig(5, crops[0] ^ 1)},
                              "near") == [("x", "y")]
    # spectral shapes exactly at the cosine bound pair, as in the audit (cos >= bound)
    twins = {"p": sig(6, h), "q": sig(7, h ^ 1)}
    assert duplicate_clusters(twins, "near", cosine=1.0) == [("p", "q")]
