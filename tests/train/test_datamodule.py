"""SplitDataModule and guard(): exact stage membership, npz_multi batches, strict refusal."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.check.drift import DriftError
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe_io import read_universe

torch = pytest.importorskip("torch")
from dvc_cuvis.train.datamodule import BATCH_KEYS, SplitDataModule, guard  # noqa: E402


def make(mat: Path, **kw) -> SplitDataModule:
    return SplitDataModule(mat / "universe.csv", mat / "splits.json", lock=None, stat_cache=None,
                           **kw)


def uids_of(dm: SplitDataModule, stage: str) -> list[str]:
    assert dm.universe is not None
    by_path = {str(dm.universe_csv.parent / dm.universe.value("materialized_path", p)):
               dm.universe.uid(p) for p in range(len(dm.universe))}
    return [by_path[p] for p in dm.datasets[stage].paths]


def test_stages_are_exactly_the_baked_membership(materialized: Path) -> None:
    dm = make(materialized, batch_size=2)
    dm.setup()
    res = resolve(load_splits(materialized / "splits.json"),
                  read_universe(materialized / "universe.csv"))
    for stage in ("train", "val", "test", "predict"):
        assert uids_of(dm, stage) == res.uids(stage), stage
    seen = []
    for batch in dm.val_dataloader():
        assert tuple(batch) == BATCH_KEYS
        seen.extend(batch["frame_id"].tolist())
    assert seen == list(range(len(res.stages["val"])))
    assert dm.report is not None and dm.report.ok


def test_batches_match_multinpzdatamodule(materialized: Path) -> None:
    pytest.importorskip("pytorch_lightning")
    from cuvis_ai_dataloader.data.datamodule_npz_multi import MultiNpzDataModule

    ours = make(materialized, batch_size=3)
    ours.setup("fit")
    theirs = MultiNpzDataModule(universe_csv=str(materialized / "universe.csv"),
                                splits=load_splits(materialized / "splits.json"), batch_size=3)
    theirs.setup("fit")
    for a, b in zip(ours.val_dataloader(), theirs.val_dataloader(), strict=True):
        assert set(a) == set(b)
        for key in a:
            assert a[key].dtype == b[key].dtype, key
            assert torch.equal(a[key], b[key]), key


def test_empty_predict_is_the_whole_universe(materialized: Path, tmp_path: Path) -> None:
    cfg = json.loads((materialized / "splits.json").read_text())
    cfg["predict"] = []
    (tmp_path / "splits.json").write_text(json.dumps(cfg))
    dm = SplitDataModule(materialized / "universe.csv", tmp_path / "splits.json", lock=None,
                         stat_cache=None)
    dm.setup("predict")
    assert len(dm.datasets["predict"]) == len(read_universe(materialized / "universe.csv"))


def test_loader_options_are_honoured(materialized: Path) -> None:
    dm = make(materialized, batch_size=4, num_workers=2, persistent_workers=True,
              pin_memory=True)
    dm.setup("fit")
    loader = dm.train_dataloader()
    assert loader.num_workers == 2 and loader.persistent_workers and loader.pin_memory
    assert loader.batch_size == 4
    assert sum(len(b["frame_id"]) for b in loader) == len(dm.datasets["train"])
    with pytest.raises(DvcCuvisError, match="batch_size must be an integer >= 1"):
        make(materialized, batch_size=0)
    with pytest.raises(DvcCuvisError, match="the test dataset is not built"):
        dm.test_dataloader()


@pytest.fixture
def drifted(materialized: Path, tmp_path: Path) -> Path:
    import shutil

    copy = tmp_path / "mat"
    shutil.copytree(materialized, copy)
    uni = read_universe(copy / "universe.csv")
    frame = copy / uni.value("materialized_path", 0)
    data = bytearray(frame.read_bytes())
    data[-20] ^= 0xFF
    frame.write_bytes(bytes(data))
    return copy


def test_strict_refuses_a_drifted_dataset(drifted: Path, caplog) -> None:
    dm = make(drifted)
    with pytest.raises(DriftError) as info:
        dm.setup("fit")
    assert info.value.report.finding("content").status == "drift"
    assert "content" in str(info.value) and dm.datasets == {}
    assert str(drifted / "splits.json") in str(info.value)  # names the split file
    warn = make(drifted, verify="warn")
    with caplog.at_level(logging.WARNING):
        warn.setup("fit")
    assert "content" in caplog.text and len(warn.datasets["train"]) > 0
    off = make(drifted, verify="off")
    off.setup("fit")
    assert off.report is None and len(off.datasets["train"]) > 0


def test_guard_runs_the_check_before_an_upstream_setup(materialized: Path, drifted: Path) -> None:
    pytest.importorskip("pytorch_lightning")
    from cuvis_ai_dataloader.data.datamodule_npz_multi import MultiNpzDataModule

    calls = []

    def build(root: Path) -> MultiNpzDataModule:
        dm = MultiNpzDataModule(universe_csv=str(root / "universe.csv"),
                                splits=load_splits(root / "splits.json"), batch_size=2)
        original = dm.setup
        dm.setup = lambda stage=None: (calls.append(stage), original(stage))[1]
        return guard(dm, lock=None)

    clean = build(materialized)
    clean.setup("fit")
    assert calls == ["fit"] and clean.drift_report.ok
    assert next(iter(clean.train_dataloader()))["cube"].dtype == torch.float32
    bad = build(drifted)
    with pytest.raises(DriftError):
        bad.setup("fit")
    assert calls == ["fit"]  # upstream setup never ran on drifted data
    with pytest.raises(DvcCuvisError, match="has no setup"):
        guard(object())
    with pytest.raises(DvcCuvisError, match="pass splits= and universe="):
        guard(type("DM", (), {"setup": lambda self, stage=None: None})())


def test_read_npz_matches_np_load_for_every_writer(tmp_path: Path) -> None:
    from dvc_cuvis.model.frame_bytes import npz_bytes
    from dvc_cuvis.model.frame_read import read_npz
    from dvc_cuvis.model.frames import Compression

    rng = np.random.default_rng(1)
    arrays = {"cube": rng.random((6, 5, 4), dtype=np.float32),
              "wavelengths": np.arange(4, dtype=np.int32), "source": np.array("a/b.cu3s"),
              "mask": np.eye(6, 5, dtype=np.int32), "fortran": np.asfortranarray(np.eye(3)),
              "scalar": np.array(2.5)}
    files = {}
    for spec in ("none", "masks:6", "deflate:1"):
        files[spec] = tmp_path / f"{spec.replace(':', '_')}.npz"
        files[spec].write_bytes(npz_bytes(arrays, Compression.parse(spec)))
    files["savez"] = tmp_path / "savez.npz"
    np.savez(files["savez"], **arrays)
    files["compressed"] = tmp_path / "compressed.npz"
    np.savez_compressed(files["compressed"], **arrays)
    for name, path in files.items():
        got = read_npz(str(path))
        with np.load(path) as z:
            assert set(got) == set(z.files), name
            for key in z.files:
                assert got[key].dtype == z[key].dtype and np.array_equal(got[key], z[key])
        assert got["cube"].flags.writeable  # torch.as_tensor needs writable arrays
    objects = tmp_path / "objects.npz"
    np.savez(objects, x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="allow_pickle"):
        read_npz(str(objects))  # never unpickled


@pytest.mark.parametrize("last", [False, True], ids=["an early frame", "the last frame"])
def test_repeated_setups_reuse_a_clean_verdict_but_catch_an_edit(materialized: Path,
                                                                tmp_path: Path, last: bool) -> None:
    import os
    import shutil

    from cuvis_ai_dataloader.data.datamodule_npz_multi import MultiNpzDataModule

    root = tmp_path / "mat"
    shutil.copytree(materialized, root)
    upstream = guard(MultiNpzDataModule(universe_csv=str(root / "universe.csv"),
                                        splits=load_splits(root / "splits.json"), batch_size=2),
                     lock=None, cache=tmp_path / "stat-cache.bin")
    ours = SplitDataModule(root / "universe.csv", root / "splits.json", lock=None,
                           stat_cache=tmp_path / "ours.bin")
    for dm in (upstream, ours):
        dm.setup("fit")
        dm.setup("fit")
    assert upstream.drift_report.ok and upstream.drift_report.reused_verdict
    assert ours.report is not None and ours.report.ok and ours.report.reused_verdict
    uni = read_universe(root / "universe.csv")
    frame = root / uni.value("materialized_path", len(uni) - 1 if last else 1)
    before = frame.stat().st_mtime_ns
    data = bytearray(frame.read_bytes())
    data[-20] ^= 0xFF
    frame.write_bytes(bytes(data))
    os.utime(frame, ns=(before + 10**9, before + 10**9))
    for dm in (upstream, ours):
        with pytest.raises(DriftError) as info:
            dm.setup("fit")
        assert info.value.report.finding("content").status == "drift"
        assert not info.value.report.reused_verdict


def test_setup_checks_only_the_stages_it_loads(materialized: Path, tmp_path: Path) -> None:
    """A one-stage fetch: setup("test") checks the test frames and takes a missing train
    frame as not pulled; setup("fit") needs it; a changed train frame fails every stage."""
    import shutil

    from dvc_cuvis.check.drift import verify

    mat = shutil.copytree(materialized, tmp_path / "mat")
    uni = read_universe(mat / "universe.csv")
    res = resolve(load_splits(mat / "splits.json"), uni)
    train = [mat / uni.value("materialized_path", int(p)) for p in res.stages["train"]]
    train[0].unlink()
    dm = make(mat)
    dm.setup("test")
    content = dm.report.finding("content")
    assert content.status == "ok" and "1 file(s) of other stages not pulled" in content.summary
    assert len(dm.datasets["test"]) == len(res.stages["test"])
    with pytest.raises(DriftError, match="1 missing"):
        make(mat).setup("fit")

    class Upstream:
        def setup(self, stage: str | None = None) -> None:
            self.stage = stage

    guarded = guard(Upstream(), splits=mat / "splits.json", universe=mat / "universe.csv",
                    cache=None, lock=None)
    guarded.setup("validate")  # the guard checks what setup will load, as the module does
    assert guarded.stage == "validate"
    with pytest.raises(DriftError):
        guarded.setup("fit")
    report = verify(mat / "splits.json", mat / "universe.csv", lock=None, stages=["val"])
    assert report.ok
    train[1].write_bytes(train[1].read_bytes() + b"\0")  # present and changed: drift anywhere
    report = verify(mat / "splits.json", mat / "universe.csv", lock=None, stages=["val"])
    assert report.finding("content").status == "drift" and not report.ok
    with pytest.raises(DvcCuvisError, match="stage fit: choose from"):
        verify(mat / "splits.json", mat / "universe.csv", lock=None, stages=["fit"])


def test_a_missing_torch_names_the_extra(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The loaders import torch lazily: without it, a MissingExtraError naming the extra."""
    from dvc_cuvis.errors import MissingExtraError

    dm = make(tmp_path, batch_size=2)
    dm.datasets["val"] = []  # stands in for setup(): the import comes before any frame
    for name in ("torch", "torch.utils", "torch.utils.data"):
        monkeypatch.setitem(__import__("sys").modules, name, None)  # import raises ImportError
    with pytest.raises(MissingExtraError, match=r"need torch: pip install 'dvc-cuvis\[torch\]'"):
        dm.val_dataloader()
