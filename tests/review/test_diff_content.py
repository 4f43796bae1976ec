"""diff and log show samples whose bytes changed (md5 / annotation md5), from git alone."""

from __future__ import annotations

import json
from pathlib import Path

from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.model.splits import dumps_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import write_universe
from tests.helpers.shell import sh


def _uni(md5: dict[str, str], ann: dict[str, str]) -> Universe:
    rows = []
    for s in range(12):
        for i in range(2):
            uid = f"rec{s:02d}.cu3s#{i}"
            rows.append({"source": f"rec{s:02d}.cu3s", "index": i,
                         "md5": md5.get(uid, f"{s:02d}{i}".ljust(32, "a")),
                         "annotation_md5": ann.get(uid, f"{s:02d}".ljust(32, "b"))})
    return Universe.from_records(rows)


def test_diff_and_log_report_changed_bytes_by_stage(tmp_path: Path, cli, monkeypatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    sh("git", "init", "-q", cwd=repo)
    uni = _uni({}, {})
    (b,) = bake(uni, BakeOptions(seed=0, group_by="source"))
    write_universe(uni, repo / "universe.csv")
    (repo / "splits.json").write_text(dumps_splits(b.config))
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-qm", "v1", cwd=repo)
    train_uid = uni.uid(int(b.stages["train"][0]))
    test_uid = uni.uid(int(b.stages["test"][0]))
    # re-processed frames: new md5s (one train, one test), one re-labelled sample
    edited = _uni({train_uid: "f" * 32, test_uid: "e" * 32}, {test_uid: "d" * 32})
    write_universe(edited, repo / "universe.csv")  # the split itself does not change
    sh("git", "commit", "-qam", "re-processed two frames", cwd=repo)
    monkeypatch.chdir(repo)

    r = cli("diff", "HEAD~1", "HEAD")
    assert r.code == 0, r.err
    assert "content changed: 2 sample(s) present at both ends have new bytes" in r.out
    assert f"{train_uid} [train]: md5" in r.out
    assert f"{test_uid} [test]: md5, annotation_md5" in r.out
    assert "moved: 0 sample(s)" in r.out

    r = cli("diff", "HEAD~1", "HEAD", "--json")
    got = json.loads(r.out)["content_changed"]
    assert got["total"] == 2 and got["by_stage"] == {"test": 1, "train": 1}
    assert {s["uid"] for s in got["samples"]} == {train_uid, test_uid}

    r = cli("diff", "HEAD~1", "HEAD", "--md")
    assert "**Content changed:** 2 sample(s)" in r.out and test_uid in r.out

    r = cli("log", "--json")
    entries = json.loads(r.out)
    assert [e["content"] for e in entries] == [2, None]  # the universe-only commit is listed
    r = cli("log")
    assert "~bytes" in r.out


def test_a_whole_file_sample_is_not_its_sources_frame_0(tmp_path: Path) -> None:
    """`x.tif` (whole file, empty index) and `x.tif#0` are different samples to diff too."""
    from dvc_cuvis.model.compare import diff_versions
    from dvc_cuvis.review.history import GitTree, load_version

    repo = tmp_path / "repo"
    repo.mkdir()
    sh("git", "init", "-q", cwd=repo)
    for rows, msg in (("x.tif,\ny.tif,\n", "whole-file"), ("x.tif,0\ny.tif,\n", "indexed")):
        (repo / "universe.csv").write_text("source,index\n" + rows)
        (repo / "splits.json").write_text(json.dumps({"train": [{"kind": "all"}]}))
        sh("git", "add", "-A", cwd=repo)
        sh("git", "commit", "-qm", msg, cwd=repo)
    tree = GitTree(str(repo))
    a = load_version(tree, "HEAD~1", "splits.json", "universe.csv", None)
    b = load_version(tree, "HEAD", "splits.json", "universe.csv", None)
    assert a.universe.hash != b.universe.hash
    d = diff_versions(a, b)
    assert d.transitions == {"new->train": 1, "train->removed": 1}
    got = {(s["source"], s["index"], s["from"], s["to"]) for s in d.to_dict()["changed_samples"]}
    assert got == {("x.tif", 0, "new", "train"), ("x.tif", None, "train", "removed")}
