"""The drift check's contract for ``{DATA_DIR}`` splits (the tokenized hash) and for renamed
frames (paired by their content): one user-visible promise per test, in-process and fast."""

from __future__ import annotations

import json
from pathlib import Path

from cuvis_ai_schemas.training.data import DataSplitConfig, Selector

from dvc_cuvis.check.drift import (
    infer_data_dir,
    tokenized_hash,
    verify,
)
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe

# -- the verdict line and the report's exit code -------------------------------------------
from tests.helpers.drift import (
    check,
    records,
    run_small,
    sha,
    small,
    verdict,
)

# -- {DATA_DIR} splits: the tokenized hash -------------------------------------------------


def test_tokenized_hash_by_first_principles() -> None:
    uni = Universe.from_records(
        [{"source": "dataX/x.cu3s", "index": 1}, {"source": "dataX/x.cu3s", "index": 0},
         {"source": "e/a.cu3s", "index": 0}, {"source": "dataXx/b.cu3s", "index": 2},
         {"source": "data/c.cu3s", "index": 0}, {"source": "dataX/whole.tif", "index": None}])
    want = sha(sorted(["{DATA_DIR}/x.cu3s#0", "{DATA_DIR}/x.cu3s#1", "e/a.cu3s#0",
                        "dataXx/b.cu3s#2", "data/c.cu3s#0", "{DATA_DIR}/whole.tif"]))
    assert tokenized_hash(uni, "dataX") == want
    assert tokenized_hash(uni, "dataX/") == want
    # untokenized, the canonical order differs ("dataX/..." < "e/..." < "{DATA_DIR}/...")
    assert uni.hash == sha(sorted(["dataX/x.cu3s#0", "dataX/x.cu3s#1", "e/a.cu3s#0",
                                    "dataXx/b.cu3s#2", "data/c.cu3s#0", "dataX/whole.tif"]))
    assert tokenized_hash(uni, "elsewhere") == uni.hash  # no source under it: unchanged
    plain = Universe.from_records([{"source": "d/x.cu3s", "index": k} for k in (2, 0, 1)])
    assert tokenized_hash(plain, "d") == sha([f"{{DATA_DIR}}/x.cu3s#{k}" for k in (0, 1, 2)])


def test_detokenize_and_what_counts_as_tokenized() -> None:
    from dvc_cuvis.check.drift import detokenize, is_tokenized

    by_source = DataSplitConfig(train=[Selector(kind="file_indices", source="{DATA_DIR}/a.cu3s",
                                                ids=[0])])
    by_path = DataSplitConfig(train=[Selector(kind="files", paths=["x.npz", "{DATA_DIR}/b"])])
    by_pattern = DataSplitConfig(train=[Selector(kind="glob", pattern="{DATA_DIR}/*.cu3s")])
    nested = DataSplitConfig(train=[Selector(kind="union", of=[
        Selector(kind="all"), Selector(kind="files", paths=["{DATA_DIR}/c"])])])
    plain = DataSplitConfig(train=[Selector(kind="file_indices", source="/d/a.cu3s", ids=[0]),
                                   Selector(kind="glob", pattern="*.cu3s")])
    assert [is_tokenized(c) for c in (by_source, by_path, by_pattern, nested, plain)] == [
        True, True, True, True, False]
    for data_dir in ("/d", "/d/", "/d//"):
        assert detokenize(by_source, data_dir).train[0].source == "/d/a.cu3s"
        assert detokenize(by_path, data_dir).train[0].paths == ["x.npz", "/d/b"]
        assert detokenize(by_pattern, data_dir).train[0].pattern == "/d/*.cu3s"
    assert detokenize(plain, "/e") == plain
    assert detokenize(by_source, "/dX/").train[0].source == "/dX/a.cu3s"



def test_infer_data_dir() -> None:
    def uni(*sources: str) -> Universe:
        return Universe.from_records([{"source": s, "index": 0} for s in sources])

    assert infer_data_dir(uni("/d/day1/a.cu3s", "/d/day2/b.cu3s")) == "/d"
    assert infer_data_dir(uni("/d/day1/a.cu3s")) == "/d/day1"  # one file: its folder
    assert infer_data_dir(Universe.from_records([])) == ""


def test_a_gui_split_over_sources_in_and_outside_the_data_dir(tmp_path: Path, cli,
                                                              monkeypatch) -> None:
    data = tmp_path.resolve().as_posix() + "/data"
    other = tmp_path.resolve().as_posix() + "/zzz"
    rows = ([{"source": f"{data}/day{k}/a.cu3s", "index": i} for k in range(3) for i in range(2)]
            + [{"source": f"{other}/b.cu3s", "index": 0}, {"source": f"{data}/w.tif",
                                                            "index": None}])
    uni = Universe.from_records(rows)
    uids = ([f"{{DATA_DIR}}/day{k}/a.cu3s#{i}" for k in range(3) for i in range(2)]
            + [f"{other}/b.cu3s#0", "{DATA_DIR}/w.tif"])
    pin = sha(sorted(uids))
    split = {"universe_hash": pin,
             "train": [{"kind": "files", "paths": ["{DATA_DIR}/day0/a.cu3s",
                                                   "{DATA_DIR}/day1/a.cu3s"]}],
             "val": [{"kind": "files", "paths": ["{DATA_DIR}/day2/a.cu3s"]}],
             "test": [{"kind": "files", "paths": [f"{other}/b.cu3s", "{DATA_DIR}/w.tif"]}]}
    (tmp_path / "splits.json").write_text(json.dumps(split))
    from dvc_cuvis.model.universe_io import write_universe

    write_universe(uni, tmp_path / "universe.csv")
    monkeypatch.chdir(tmp_path)
    args = ("check", "--no-params", "--stat-cache", "none", "--no-lock", "--data-dir", data)
    r = cli(*args)
    assert r.code == 0 and verdict(r.out) == "OK", r.out + r.err
    j = json.loads(cli(*args, "--json").out)["checks"]
    assert j["universe"]["details"]["data_dir"] == data
    assert j["universe"]["summary"] == f"8 samples, hash {pin[:12]} matches the pin"
    assert j["selection"]["summary"] == (
        "every selector resolves fully: train=4 val=2 test=2 predict=8")
    assert infer_data_dir(uni) == tmp_path.resolve().as_posix()
    wrong = cli(*args[:-1], other, "--json")
    assert wrong.code == 1
    u = json.loads(wrong.out)["checks"]["universe"]
    now = tokenized_hash(uni, other)
    assert u["status"] == "drift" and u["summary"] == (
        f"universe.csv changed since the split was baked (pinned {pin[:12]}, now {now[:12]})")


# -- renames -------------------------------------------------------------------------------


def test_renamed_frames_are_paired_by_their_content(repo: Path, cli, monkeypatch) -> None:
    folder = repo / "data/npz/day1_line-a_s01"
    # crosswise: frame_0000 becomes frame_0098, frame_0001 becomes frame_0097
    (folder / "frame_0000.npz").rename(folder / "frame_0098.npz")
    (folder / "frame_0001.npz").rename(folder / "frame_0097.npz")
    text, code, checks = check(cli, repo, monkeypatch, "--no-lock")
    assert code == 1 and verdict(text.out) == "FAILED"
    u = checks["universe"]
    assert u["status"] == "drift"
    assert u["details"]["renamed"] == [
        "day1_line-a_s01/frame_0000.npz -> day1_line-a_s01/frame_0098.npz",
        "day1_line-a_s01/frame_0001.npz -> day1_line-a_s01/frame_0097.npz"]
    assert u["details"]["added_samples"] == 2 and u["details"]["removed_samples"] == 2
    assert u["details"]["added_sources"] == ["day1_line-a_s01/frame_0097.npz",
                                             "day1_line-a_s01/frame_0098.npz"]
    assert u["details"]["removed_sources"] == ["day1_line-a_s01/frame_0000.npz",
                                               "day1_line-a_s01/frame_0001.npz"]
    assert ("the data on disk differs from universe.csv: 2 sample(s) added, 2 removed"
            in u["summary"])
    assert checks["content"]["details"]["missing"] == [
        "data/npz/day1_line-a_s01/frame_0000.npz", "data/npz/day1_line-a_s01/frame_0001.npz"]


def test_renames_need_a_recorded_digest_on_both_sides(tmp_path: Path) -> None:
    old = Universe.from_records([{"source": "a.cu3s", "index": 0, "md5": "1" * 32},
                                 {"source": "b.cu3s", "index": 0, "md5": ""},
                                 {"source": "c.cu3s", "index": 0, "md5": "3" * 32}])
    new = Universe.from_records([{"source": "a2.cu3s", "index": 0, "md5": "1" * 32},
                                 {"source": "b2.cu3s", "index": 0, "md5": ""},
                                 {"source": "c.cu3s", "index": 0, "md5": "3" * 32}])
    cfg = DataSplitConfig(train=[Selector(kind="all")])
    r = verify(cfg, old, current=new, lock=None, allow_unpinned=True)
    u = r.finding("universe")
    assert u.status == "drift" and u.details["renamed"] == ["a.cu3s -> a2.cu3s"]
    assert u.details["added_samples"] == 2 and u.details["removed_samples"] == 2
    nodigest = Universe.from_records([{"source": s, "index": 0} for s in ("a.cu3s", "c.cu3s")])
    moved = Universe.from_records([{"source": s, "index": 0} for s in ("a2.cu3s", "c.cu3s")])
    r = verify(cfg, nodigest, current=moved, lock=None, allow_unpinned=True)
    assert r.finding("universe").details["renamed"] == []
    # a re-digested sample (same uid, a new md5) is drift of its own
    recs = records(old)
    recs[2]["md5"] = "4" * 32
    r = verify(cfg, old, current=Universe.from_records(recs), lock=None, allow_unpinned=True)
    u = r.finding("universe")
    assert u.status == "drift" and u.details["redigested_sources"] == ["c.cu3s"]
    assert u.details["redigested_samples"] == 1 and "added_samples" not in u.details
    assert "1 sample(s) on disk no longer have the md5 that universe.csv records" in u.summary
    same = verify(cfg, old, current=old, lock=None, allow_unpinned=True).finding("universe")
    assert same.status == "ok" and same.summary.endswith(
        "unpinned split (allowed); universe.csv matches the data on disk")


def test_an_unpinned_split_fails_unless_allowed(tmp_path: Path, cli, monkeypatch) -> None:
    small(tmp_path, {"train": [{"kind": "all"}]})
    doc = json.loads((tmp_path / "splits.json").read_text())
    doc["universe_hash"] = None
    (tmp_path / "splits.json").write_text(json.dumps(doc))
    text, checks = run_small(cli, tmp_path, monkeypatch)
    assert text.code == 1 and verdict(text.out) == "FAILED"
    u = checks["universe"]
    assert u["status"] == "drift" and "--allow-unpinned" in u["summary"]
    assert u["details"]["note"] == ("the split pins no universe_hash: nothing ties it to the "
                                    "universe it was made for")
    assert u["summary"] == ("the split is unpinned (no universe_hash): bake it to pin the "
                            "universe, or accept it with --allow-unpinned")
    text, checks = run_small(cli, tmp_path, monkeypatch, "--allow-unpinned")
    assert text.code == 0 and verdict(text.out) == "OK"
    pin = read_universe(tmp_path / "universe.csv").hash
    assert checks["universe"]["summary"] == f"6 samples, hash {pin[:12]}; unpinned split (allowed)"
    assert "pins no universe_hash" in checks["universe"]["details"]["note"]


def test_sources_holding_a_hash_sign_are_named_whole() -> None:
    cfg = DataSplitConfig(train=[Selector(kind="all")])
    old = Universe.from_records([{"source": "cam#1/a.cu3s", "index": 0, "md5": "1" * 32},
                                 {"source": "cam#1/a.cu3s", "index": 1, "md5": "1" * 32},
                                 {"source": "w#2.tif", "index": None, "md5": "2" * 32},
                                 {"source": "keep.cu3s", "index": 0, "md5": "3" * 32}])
    new = Universe.from_records([{"source": "cam#1/a.cu3s", "index": 0, "md5": "9" * 32},
                                 {"source": "cam#1/a.cu3s", "index": 1, "md5": "9" * 32},
                                 {"source": "cam#1/b.cu3s", "index": 4, "md5": "4" * 32},
                                 {"source": "keep.cu3s", "index": 0, "md5": "3" * 32}])
    u = verify(cfg, old, current=new, lock=None, allow_unpinned=True).finding("universe")
    assert u.status == "drift"
    assert u.details["added_sources"] == ["cam#1/b.cu3s"]
    assert u.details["removed_sources"] == ["w#2.tif"]
    assert u.details["redigested_sources"] == ["cam#1/a.cu3s"]
    assert u.details["redigested_samples"] == 2
    assert u.details["renamed"] == []


def test_a_digest_missing_on_either_side_is_no_redigest() -> None:
    cfg = DataSplitConfig(train=[Selector(kind="all")])
    old = Universe.from_records([{"source": "a.cu3s", "index": 0, "md5": "1" * 32},
                                 {"source": "b.cu3s", "index": 0, "md5": ""}])
    new = Universe.from_records([{"source": "a.cu3s", "index": 0, "md5": ""},
                                 {"source": "b.cu3s", "index": 0, "md5": "2" * 32}])
    u = verify(cfg, old, current=new, lock=None, allow_unpinned=True).finding("universe")
    assert u.status == "ok" and "redigested_samples" not in u.details
    bare = Universe.from_records([{"source": "a.cu3s", "index": 0},
                                  {"source": "b.cu3s", "index": 0}])
    assert verify(cfg, old, current=bare, lock=None,
                  allow_unpinned=True).finding("universe").status == "ok"
    assert verify(cfg, bare, current=new, lock=None,
                  allow_unpinned=True).finding("universe").status == "ok"
