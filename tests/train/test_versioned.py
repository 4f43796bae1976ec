"""Training data at a dataset *version*: a stage's frames at a git tag, fetched from a real
SSH remote into a DVC cache, md5-verified against that revision's universe."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe_io import read_universe
from dvc_cuvis.train.versioned import stage_frames
from testbeds.sshd import Sshd, clone
from tests.helpers.remote import ssh_dataset
from tests.helpers.shell import sh

pytest.importorskip("dvc_ssh")

pytestmark = pytest.mark.slow  # two dataset repositories on an SSH remote, ~20 s in all (2 cores)


def add_recording(repo: Path) -> None:
    """v2: one more recording session, tracked, re-baked, committed, tagged, pushed."""
    from examples.generate import generate

    generate(repo / "data", sessions=6, frames=3, size=(8, 8), bands=4, seed=3,
             extra_sessions=1)
    sh("dvc", "add", "data/npz", cwd=repo)
    sh("dvc", "repro", cwd=repo)
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-qm", "dataset v2: a recording added", cwd=repo)
    sh("git", "tag", "v2", cwd=repo)
    sh("dvc", "push", cwd=repo)


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory, sshd: Sshd) -> dict[str, object]:
    """The dataset repository with tags v1 and v2, and per tag the expected stage sizes."""
    repo, store = ssh_dataset(tmp_path_factory, sshd)
    sh("git", "tag", "v1", cwd=repo)
    expected = {}
    for tag in ("v1", "v2"):
        if tag == "v2":
            add_recording(repo)
        uni = read_universe(repo / "universe.csv")
        res = resolve(load_splits(repo / "splits.json"), uni)
        expected[tag] = {s: uni.uids(res.stages[s]) for s in ("train", "val", "test")}
        expected[f"{tag}-md5"] = dict(zip(uni.uids(), uni.column("md5"), strict=True))
    return {"repo": repo, "store": store, "expected": expected}


def test_each_tag_serves_its_own_stage(registry: dict[str, object], sshd: Sshd,
                                       tmp_path: Path) -> None:
    expected = registry["expected"]
    assert isinstance(expected, dict)
    # a trainer's clone: nothing pulled, everything comes from the SSH remote
    trainer = clone(registry["repo"], tmp_path / "trainer", sshd, run=sh)  # type: ignore[arg-type]
    head = sh("git", "rev-parse", "HEAD", cwd=trainer).strip()
    sizes = {}
    for tag in ("v1", "v2"):
        for stage in ("train", "test"):
            got = stage_frames(tag, stage, repo=trainer, cache_dir=tmp_path / "cache")
            assert got.uids == expected[tag][stage]
            assert got.commit == sh("git", "rev-parse", f"{tag}^{{commit}}", cwd=trainer).strip()
            for uid, path in zip(got.uids, got.paths, strict=True):
                assert path.is_relative_to(tmp_path / "cache")
                digest = hashlib.md5(path.read_bytes()).hexdigest()
                assert digest == expected[f"{tag}-md5"][uid]
            sizes[tag, stage] = len(got.uids)
    assert sizes["v2", "train"] + sizes["v2", "test"] > sizes["v1", "train"] + sizes["v1", "test"]
    # neither version was checked out: the trainer's working tree is as cloned
    assert not (trainer / "data" / "npz").exists() and not (trainer / "materialized").exists()
    assert sh("git", "status", "--porcelain", cwd=trainer).strip() == ""
    assert sh("git", "rev-parse", "HEAD", cwd=trainer).strip() == head


def test_only_the_stage_is_downloaded(registry: dict[str, object], sshd: Sshd,
                                      tmp_path: Path) -> None:
    trainer = clone(registry["repo"], tmp_path / "t", sshd, run=sh)  # type: ignore[arg-type]
    got = stage_frames("v1", "test", repo=trainer, cache_dir=tmp_path / "cache")
    objects = {p for p in (tmp_path / "cache").rglob("*") if p.is_file()}
    frames = {p for p in objects if not p.name.endswith(".dir")}
    assert frames == set(got.paths)


def test_unknown_revision_is_a_clear_error(registry: dict[str, object]) -> None:
    with pytest.raises(DvcCuvisError, match=r"unknown revision 'v9'"):
        stage_frames("v9", "train", repo=registry["repo"])  # type: ignore[arg-type]


def test_a_frame_corrupted_in_the_remote_is_refused(registry: dict[str, object], sshd: Sshd,
                                                    tmp_path: Path) -> None:
    expected = registry["expected"]
    assert isinstance(expected, dict)
    store = registry["store"]
    assert isinstance(store, Path)
    uid = expected["v1"]["test"][0]
    md5 = expected["v1-md5"][uid]
    obj = store / "files" / "md5" / md5[:2] / md5[2:]
    original = obj.read_bytes()
    trainer = clone(registry["repo"], tmp_path / "t", sshd, run=sh)  # type: ignore[arg-type]
    try:
        obj.chmod(0o644)
        obj.write_bytes(original[:-8] + b"corrupt!")
        with pytest.raises(DvcCuvisError) as err:
            stage_frames("v1", "test", repo=trainer, cache_dir=tmp_path / "cache")
    finally:
        obj.write_bytes(original)
    name = uid.split("#")[0]
    assert f"data/npz/{name}: the fetched bytes have md5" in str(err.value)
    assert "refusing to serve it" in str(err.value)
    # the bad object left the cache: with the remote repaired, a retry serves the frame
    again = stage_frames("v1", "test", repo=trainer, cache_dir=tmp_path / "cache")
    assert len(again.paths) == len(expected["v1"]["test"])


# -- the plugin's dvc_npz_multi at a pinned version --------------------------------------

TRAINRUN_DATA = """\
data_module: dvc_npz_multi
splits:
  splits_path: materialized/splits.json
batch_size: 2
params:
  universe_csv: materialized/universe.csv
  rev: {rev}
  repo: {repo}
  cache_dir: {cache}
"""


def test_dvc_npz_multi_trains_on_each_pinned_version(
        registry: dict[str, object], sshd: Sshd, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("pytorch_lightning")
    import yaml
    from cuvis_ai_schemas.training.data import DataSplitConfig

    from dvc_cuvis.plugin.datamodules import DvcNpzMultiDataModule

    expected = registry["expected"]
    assert isinstance(expected, dict)
    trainer = clone(registry["repo"], tmp_path / "gpu-box", sshd, run=sh)  # type: ignore[arg-type]
    caplog.set_level("INFO", logger="dvc_cuvis")
    seen = {}
    for tag in ("v1", "v2"):
        data = yaml.safe_load(TRAINRUN_DATA.format(rev=tag, repo=trainer,
                                                   cache=tmp_path / "cache"))
        data["splits"] = DataSplitConfig(**data["splits"])
        dm = DvcNpzMultiDataModule(**data)
        dm.setup("fit")
        assert dm.train_ds is not None and dm.val_ds is not None
        seen[tag] = (len(dm.train_ds), len(dm.val_ds))
        assert seen[tag] == (len(expected[tag]["train"]), len(expected[tag]["val"]))
        batch = next(iter(dm.train_dataloader()))
        assert batch["cube"].shape[0] == min(2, seen[tag][0])
        dm.setup("test")
        assert dm.test_ds is not None and len(dm.test_ds) == len(expected[tag]["test"])
        commit = sh("git", "rev-parse", f"{tag}^{{commit}}", cwd=trainer).strip()
        logged = [r.getMessage() for r in caplog.records if commit in r.getMessage()]
        assert any(f"@{tag} (commit {commit})" in m and "stage train" in m for m in logged)
    assert seen["v2"][0] + seen["v2"][1] > seen["v1"][0] + seen["v1"][1]
    assert not (trainer / "materialized").exists()  # no checkout in the working tree
    assert sh("git", "status", "--porcelain", cwd=trainer).strip() == ""
    with pytest.raises(Exception, match="unknown revision 'v7'"):
        data = yaml.safe_load(TRAINRUN_DATA.format(rev="v7", repo=trainer, cache=tmp_path))
        data["splits"] = DataSplitConfig(**data["splits"])
        DvcNpzMultiDataModule(**data)


@pytest.mark.parametrize("name", ["dvc_cu3s_multi", "dvc_tiff_paired"])
@pytest.mark.parametrize("key", ["rev", "repo", "cache_dir"])
def test_a_version_on_a_module_without_it_is_a_clear_error(name: str, key: str,
                                                           tmp_path: Path) -> None:
    """Only dvc_npz_multi trains on a dataset version; the others say so (not "mistyped")."""
    pytest.importorskip("cuvis_ai_dataloader")
    from dvc_cuvis.plugin.datamodules import DvcCu3sMultiDataModule, DvcTiffPairedDataModule

    cls = {"dvc_cu3s_multi": DvcCu3sMultiDataModule,
           "dvc_tiff_paired": DvcTiffPairedDataModule}[name]
    want = (rf"^{name}: '{key}' \(training on a dataset version\) is supported by "
            r"dvc_npz_multi only, not yet here; materialize the frames and train with "
            rf"dvc_npz_multi, or check the version out \(`git checkout "
            rf"{'v1' if key == 'rev' else 'REV'} && dvc pull`\) and drop '{key}'$")
    params = {key: "v1" if key == "rev" else str(tmp_path)}
    with pytest.raises(DvcCuvisError, match=want):
        cls.validate_params(params)
    folder = "images_dir" if name == "dvc_tiff_paired" else "universe_csv"
    with pytest.raises(DvcCuvisError, match=want):  # before anything is read
        cls(**{folder: str(tmp_path / "absent"), **params})
    assert not list(tmp_path.iterdir())
