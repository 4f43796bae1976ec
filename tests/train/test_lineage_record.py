"""The dataset record's facts, one at a time: counts from id ranges, git's files read without
git, what dvc.lock or a ``.dvc`` file records for the data, what makes two versions equal."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dvc_cuvis.repo.git import HeadReader
from dvc_cuvis.repo.lockfile import LockFile
from dvc_cuvis.train import lineage_split as lineage
from dvc_cuvis.train.lineage import (
    _repo_facts,
    finish,
    hyperparams,
    same_version,
    take_record,
)
from dvc_cuvis.train.lineage_data import lock_entries as lock_values
from dvc_cuvis.train.lineage_memo import LineageMemo


def lock_entries(*args: Any) -> list[dict[str, Any]]:
    return [e.to_json() for e in lock_values(*args)]

GIT = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, env=GIT, check=True, capture_output=True,
                          text=True).stdout.strip()


def sel(source: str, *ids: Any) -> dict[str, Any]:
    return {"kind": "file_indices", "source": source, "ids": list(ids)}


@pytest.mark.parametrize("selectors,count", [
    ([sel("a", "0-4"), sel("a", "3-6")], 7),            # overlapping ranges counted once
    ([sel("a", "0-4", "5-7")], 8),                      # adjacent
    ([sel("a", "0-9", "2-3")], 10),                     # nested
    ([sel("a", "0-10:2", "1-3")], 8),                   # a stepped range: expanded
    ([sel("a", 3, 3, "3-3"), sel("b", 3)], 2),          # ints; another source is another uid
    ([{"kind": "files", "paths": ["x.tif", "y.tif", "x.tif"]}, sel("x.tif", 0)], 3),
    ([], 0),
    ([sel("a", "0-2"), {"kind": "glob", "pattern": "*.npz"}], None),  # a rule: unknown
])
def test_samples_per_stage_from_the_ids(selectors: list[Any], count: int | None) -> None:
    counts = lineage.stage_counts({"train": selectors})
    assert counts["train"] == count
    assert counts["val"] == 0 and counts["predict"] is None  # empty predict: the universe


def test_an_explicit_predict_is_counted() -> None:
    assert lineage.stage_counts({"predict": [sel("a", "0-1")]})["predict"] == 2


def test_split_samples_in_file_order_first_occurrence_kept() -> None:
    doc = {"train": [sel("b", "2-3"), sel("a", 1), sel("b", 3)], "test": [sel("c", 0)]}
    stages = lineage.split_samples(doc)
    assert stages is not None
    assert stages["train"] == [("b", 2), ("b", 3), ("a", 1)] and stages["test"] == [("c", 0)]
    assert lineage.split_samples({"train": [{"kind": "all"}]}) is None


def _repo(root: Path) -> str:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    (root / "f.txt").write_text("a")
    git(root, "add", "f.txt")
    git(root, "commit", "-qm", "one")
    return git(root, "rev-parse", "HEAD")


def test_the_commit_is_read_from_gits_files(tmp_path: Path) -> None:
    sha = _repo(tmp_path / "r")
    git_dir = tmp_path / "r/.git"
    assert HeadReader().commit(git_dir, git_dir) == sha
    git(tmp_path / "r", "pack-refs", "--all")  # the ref only in packed-refs now
    assert not (git_dir / "refs/heads").joinpath(git(tmp_path / "r", "branch",
                                                    "--show-current")).exists()
    assert HeadReader().commit(git_dir, git_dir) == sha
    git(tmp_path / "r", "checkout", "-q", "--detach")
    assert HeadReader().commit(git_dir, git_dir) == sha
    empty = tmp_path / "e"
    empty.mkdir()
    git(empty, "init", "-q")
    assert HeadReader().commit(empty / ".git", empty / ".git") is None  # unborn branch


def test_a_worktree_and_its_origin(tmp_path: Path) -> None:
    sha = _repo(tmp_path / "r")
    git(tmp_path / "r", "remote", "add", "upstream", "https://example.com/other.git")
    git(tmp_path / "r", "remote", "add", "origin", "git@example.com:team/data.git")
    git(tmp_path / "r", "worktree", "add", "-q", "--detach", str(tmp_path / "w"))
    facts = _repo_facts(tmp_path / "w", LineageMemo()).to_json()
    assert facts == {"root": str(tmp_path / "w"), "origin": "git@example.com:team/data.git",
                     "commit": sha, "dirty": None}


LOCK = """\
schema: '2.0'
stages:
  enumerate:
    cmd: dvc-cuvis enumerate
    deps:
    - {path: data/npz, md5: aaa.dir}
    - {path: categories.json, md5: bbb}
    outs:
    - {path: universe.csv, md5: ccc}
  materialize:
    cmd: dvc-cuvis materialize
    outs:
    - {path: materialized, md5: ddd.dir}
  check:
    cmd: dvc-cuvis check --metrics m.json
    outs:
    - {path: universe.csv, md5: zzz}
"""


def test_what_dvc_lock_records_for_the_data(tmp_path: Path) -> None:
    lock = LockFile.parse(LOCK, tmp_path / "dvc.lock")
    inside = lock_entries(lock, "materialized/universe.csv", "dvc.lock")
    assert inside == [{"path": "materialized", "md5": "ddd.dir", "source": "dvc.lock",
                       "stage": "materialize"}]
    raw = lock_entries(lock, "universe.csv", "dvc.lock")  # the inputs it was enumerated from
    assert [(e["path"], e["md5"], e["stage"]) for e in raw] == [
        ("categories.json", "bbb", "enumerate"), ("data/npz", "aaa.dir", "enumerate")]
    assert lock_entries(lock, "other/universe.csv", "dvc.lock") == []


def _dataset(root: Path) -> tuple[Path, Path]:
    data = root / "data"
    data.mkdir(parents=True)
    (data / "universe.csv").write_text("source,index\na.npz,0\nb.npz,0\n")
    (data / "splits.json").write_text(json.dumps({"train": [sel("a.npz", 0)],
                                                  "test": [sel("b.npz", 0)]}))
    return data / "splits.json", data / "universe.csv"


def test_a_dvc_file_records_the_data_without_a_lock(tmp_path: Path) -> None:
    _repo(tmp_path)
    splits, universe = _dataset(tmp_path)
    (tmp_path / "data.dvc").write_text("outs:\n- md5: 123.dir\n  path: data\n")
    record = take_record(splits, universe, module="m", mode="strict", report=None, lock=None)
    assert record["data"] == [{"path": "data", "md5": "123.dir", "source": "data.dvc",
                               "stage": None}]
    assert record["splits"]["path"] == "data/splits.json"
    assert record["stages"] == {"train": 1, "val": 0, "test": 1, "predict": None}


def test_the_record_follows_its_files(tmp_path: Path) -> None:
    first = _repo(tmp_path)
    splits, universe = _dataset(tmp_path)
    take = lambda: take_record(splits, universe, module="m", mode="warn",  # noqa: E731
                               report=None)
    a = take()
    assert a["repo"]["commit"] == first and a["check"]["verdict"] == "not checked"
    git(tmp_path, "add", "data")
    git(tmp_path, "commit", "-qm", "data")
    b = take()
    assert b["repo"]["commit"] == git(tmp_path, "rev-parse", "HEAD") != first
    assert same_version(a, b)  # another commit, the same split and data
    splits.write_text(json.dumps({"train": [sel("b.npz", 0)], "test": [sel("a.npz", 0)]}))
    c = take()
    assert not same_version(b, c) and c["split"]["train"] == [sel("b.npz", 0)]
    assert finish(c)["repo"]["dirty"] is True  # splits.json modified, not committed
    git(tmp_path, "commit", "-qam", "swap")
    assert finish(take())["repo"]["dirty"] is False


def test_versions_differ_by_universe_and_data_md5() -> None:
    base = {"split": {"train": []}, "universe": {"md5": "u1"},
            "data": [{"path": "d", "md5": "x"}], "repo": {"commit": "c1"}}
    assert same_version(base, {**base, "repo": {"commit": "c2"}})
    assert not same_version(base, {**base, "universe": {"md5": "u2"}})
    assert not same_version(base, {**base, "data": [{"path": "d", "md5": "y"}]})


def test_hyperparams_are_flat_scalars() -> None:
    record = {"repo": {"commit": None, "dirty": None}, "splits": {"path": "s.json"},
              "stages": {"train": 3, "predict": None}, "data": [{"path": "d", "md5": None}],
              "check": {"mode": "off", "verdict": "not checked"}}
    flat = hyperparams(record)
    assert flat["dataset/commit"] == "" and flat["dataset/dirty"] == ""
    assert flat["dataset/samples/train"] == 3 and flat["dataset/samples/predict"] == -1
    assert flat["dataset/md5/d"] == "" and flat["dataset/verdict"] == "not checked"
    assert all(isinstance(v, str | int | bool) for v in flat.values())
