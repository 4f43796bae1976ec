"""`dvc-cuvis fetch --stage`: exactly one stage's files through DVC's granular pull from a
real SSH remote, md5-verified against universe.csv; nothing else downloaded."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe_io import read_universe
from testbeds.sshd import Sshd, clone
from tests.helpers.remote import ssh_dataset
from tests.helpers.shell import ENV, sh

pytest.importorskip("dvc_ssh")

pytestmark = pytest.mark.slow  # a dataset repository pushed over SSH, ~14 s in all (2 cores)


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["dvc-cuvis", *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, check=False)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, sshd: Sshd) -> tuple[Path, Path]:
    repo, store = ssh_dataset(tmp_path_factory, sshd)
    return repo, store


def stage_paths(repo: Path, stage: str, universe: str = "universe.csv") -> set[str]:
    """The repository paths of a stage's frames, computed from the split itself."""
    uni = read_universe(repo / "universe.csv")
    res = resolve(load_splits(repo / "splits.json"), uni)
    uids = set(uni.uids(res.stages[stage]))
    table = read_universe(repo / universe)
    folder = Path(universe).parent
    return {(folder / table.value("materialized_path", p)).as_posix()
            for p in range(len(table)) if table.uid(p) in uids}


def files_under(root: Path, folder: str) -> set[str]:
    base = root / folder
    return {p.relative_to(root).as_posix() for p in base.rglob("*.npz")} if base.is_dir() \
        else set()


def cache_objects(repo: Path) -> set[str]:
    md5 = repo / ".dvc" / "cache" / "files" / "md5"
    return {p.parent.name + p.name for p in md5.rglob("*") if p.is_file()} if md5.is_dir() \
        else set()


def test_fetch_a_stage_pulls_exactly_its_frames(dataset: tuple[Path, Path], sshd: Sshd,
                                                tmp_path: Path) -> None:
    repo, _ = dataset
    other = clone(repo, tmp_path / "trainer", sshd, run=sh)
    want = stage_paths(other, "test")
    assert 0 < len(want) < 18
    done = run("fetch", "--stage", "test", "--json", cwd=other)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["files"] == doc["verified"] == len(want)
    assert doc["stages"] == {"test": len(want)}
    assert files_under(other, "data/npz") == want  # nothing outside the stage
    assert not (other / "materialized").exists()
    uni = read_universe(other / "universe.csv")
    recorded = {f"data/npz/{uni.value('materialized_path', p)[len('data/npz/'):]}":
                uni.value("md5", p) for p in range(len(uni))}
    objects = cache_objects(other)
    assert {recorded[p] for p in want} <= objects
    assert not {recorded[p] for p in recorded if p not in want} & objects  # never downloaded
    again = run("fetch", "--stage", "test", cwd=other)  # present and verified: nothing to do
    assert again.returncode == 0 and "0 downloaded" in again.stdout, again.stdout
    # the check sees one stage on disk: the rest is not pulled, not removed and not drift
    checked = run("check", "--json", cwd=other)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    doc = json.loads(checked.stdout)["checks"]
    assert doc["content"]["status"] == "not-pulled"
    assert doc["content"]["summary"] == f"{18 - len(want)} frames not pulled: `dvc pull`"
    assert doc["universe"]["status"] == "ok", doc["universe"]
    assert doc["staleness"]["status"] == "not-pulled", doc["staleness"]  # not `dvc repro`
    assert "`dvc pull`" in doc["staleness"]["summary"]


def test_two_stages_and_materialized(dataset: tuple[Path, Path], sshd: Sshd,
                                     tmp_path: Path) -> None:
    repo, _ = dataset
    other = clone(repo, tmp_path / "gpu", sshd, run=sh)
    done = run("fetch", "--stage", "val", "--stage", "test", "--materialized", cwd=other)
    assert done.returncode == 0, done.stderr
    want = stage_paths(repo, "val", "materialized/universe.csv") | stage_paths(
        repo, "test", "materialized/universe.csv")
    assert files_under(other, "materialized") == want
    assert not (other / "data" / "npz").exists()
    assert f"fetched {len(want)} materialized frames" in done.stdout


def test_dry_run_lists_files_and_bytes_and_downloads_nothing(
        dataset: tuple[Path, Path], sshd: Sshd, tmp_path: Path) -> None:
    repo, _ = dataset
    other = clone(repo, tmp_path / "look", sshd, run=sh)
    done = run("fetch", "--stage", "val", "--dry-run", "--json", cwd=other)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    want = stage_paths(repo, "val")
    assert {f["path"] for f in doc["files"]} == want
    assert all(f["bytes"] == (repo / f["path"]).stat().st_size for f in doc["files"])
    assert doc["bytes"] == sum((repo / p).stat().st_size for p in want)
    assert not (other / "data" / "npz").exists()
    assert not cache_objects(other)
    text = run("fetch", "--stage", "val", "--dry-run", cwd=other).stdout
    assert f"would fetch {len(want)} files ({doc['bytes']} bytes) for val=" in text


def test_a_corrupted_object_in_the_remote_is_refused(dataset: tuple[Path, Path], sshd: Sshd,
                                                     tmp_path: Path) -> None:
    repo, store = dataset
    other = clone(repo, tmp_path / "victim", sshd, run=sh)
    target = sorted(stage_paths(repo, "test"))[0]
    uni = read_universe(repo / "universe.csv")
    md5 = next(uni.value("md5", p) for p in range(len(uni))
               if uni.value("materialized_path", p) == target)
    obj = store / "files" / "md5" / md5[:2] / md5[2:]
    original = obj.read_bytes()
    try:
        obj.chmod(0o644)
        obj.write_bytes(original[:-8] + b"corrupt!")
        done = run("fetch", "--stage", "test", cwd=other)
    finally:
        obj.write_bytes(original)
    assert done.returncode == 2
    assert f"{target}: md5 " in done.stderr and "differs" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_bad_stage_and_no_remote_are_clear_errors(dataset: tuple[Path, Path], sshd: Sshd,
                                                  tmp_path: Path) -> None:
    repo, _ = dataset
    other = clone(repo, tmp_path / "bad", sshd, run=sh)
    bad = run("fetch", "--stage", "tset", cwd=other)
    assert bad.returncode == 2 and "invalid choice: 'tset'" in bad.stderr
    none = run("fetch", cwd=other)
    assert none.returncode == 2 and "fetch needs --stage STAGE" in none.stderr
    (other / ".dvc" / "config.local").unlink()
    sh("dvc", "remote", "modify", "store", "url", "ssh://nobody@127.0.0.1:1/x", cwd=other)
    down = run("fetch", "--stage", "test", cwd=other)
    assert down.returncode == 2 and down.stderr.startswith("dvc-cuvis: error: dvc pull: "), \
        down.stderr
    assert len(down.stderr.splitlines()) == 1 and "Connect call failed" in down.stderr


def test_granular_targets_give_dvcs_view_without_reparsing(dataset: tuple[Path, Path],
                                                           sshd: Sshd, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """Paths inside a tracked folder: the view DVC itself builds, with no dvc.yaml or
    dvc.lock parsed again once DVC's index is built (DVC parses both per attempt)."""
    import contextlib

    from dvc.dvcfile import FileMixin
    from dvc.repo import Repo
    from dvc.repo.index import index_from_targets

    from dvc_cuvis.repo.pull import granular_targets

    repo, _ = dataset
    other = clone(repo, tmp_path / "view", sshd, run=sh)
    monkeypatch.chdir(other)  # DVC reads relative targets from the working directory
    targets = sorted(stage_paths(other, "test"))
    loads: list[str] = []
    original = FileMixin._load

    def counting(self: FileMixin, *args: object, **kwargs: object) -> object:
        loads.append(self.relpath)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(FileMixin, "_load", counting)
    seen = {}
    for patched in (False, True):
        with Repo(str(other)) as dvc_repo:
            dvc_repo.index  # noqa: B018  (built once, as the fetch builds it)
            loads.clear()
            with granular_targets(dvc_repo) if patched else contextlib.nullcontext():
                view = index_from_targets(dvc_repo, targets=targets)
                seen[patched] = ([str(o) for o in view.outs], set(view.data_keys["repo"]),
                                 list(loads))
                assert [s.name for s in dvc_repo.stage.collect("bake")] == ["bake"]
    assert seen[True][:2] == seen[False][:2]
    assert seen[True][1] == {tuple(t.split("/")) for t in targets}
    assert seen[False][2], "DVC re-parses its files per index (the cost removed)"
    assert seen[True][2] == []


def test_one_stage_feeds_training_in_a_fresh_clone(dataset: tuple[Path, Path], sshd: Sshd,
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """fetch --stage test --materialized -> check --stage test -> setup("test") -> one test
    step, in a clone that pulled nothing else."""
    torch = pytest.importorskip("torch")
    pl = pytest.importorskip("pytorch_lightning")
    from dvc_cuvis.cli import main
    from dvc_cuvis.train.datamodule import SplitDataModule

    repo, _ = dataset
    other = clone(repo, tmp_path / "gpu", sshd, run=sh)
    monkeypatch.chdir(other)
    assert main(["fetch", "--stage", "test", "--materialized"]) == 0
    assert (other / "materialized" / "splits.json").is_file()  # the module's split came too
    want = stage_paths(repo, "test", "materialized/universe.csv")
    assert files_under(other, "materialized") == want
    check = ["check", "--universe", "materialized/universe.csv", "--splits",
             "materialized/splits.json", "--no-enumerate"]
    assert main([*check, "--stage", "test"]) == 0  # the other stages: not pulled, a note
    assert main(check) == 1  # every stage: the others' frames are not pulled
    dm = SplitDataModule(other / "materialized/universe.csv",
                         other / "materialized/splits.json", batch_size=2)
    dm.setup("test")
    assert dm.report is not None and dm.report.ok
    assert len(dm.datasets["test"]) == len(want)

    class Probe(pl.LightningModule):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def test_step(self, batch: dict[str, object], _: int) -> None:
            self.log("loss", self.layer(batch["cube"].mean(dim=(1, 2))).pow(2).mean())

    trainer = pl.Trainer(limit_test_batches=1, accelerator="cpu", devices=1, logger=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         default_root_dir=tmp_path / "run", enable_checkpointing=False)
    (result,) = trainer.test(Probe(), datamodule=dm, verbose=False)
    assert "loss" in result
    with pytest.raises(Exception, match="not pulled"):  # fit needs train: not here
        dm.setup("fit")
