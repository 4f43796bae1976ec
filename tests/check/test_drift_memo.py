"""The drift check's remembered verdict: keyed by every option that can change it, and what
it answers for and says when reused; one user-visible promise per test, in-process and fast."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cuvis_ai_schemas.training.data import DataSplitConfig, Selector

from dvc_cuvis.check.drift import (
    verify,
)
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe

# -- the verdict line and the report's exit code -------------------------------------------
from tests.helpers.drift import (
    LEAKY,
    md5,
    records,
    sha,
    small,
)

# -- the remembered verdict is keyed by every option that can change it --------------------


def test_a_remembered_verdict_never_answers_for_other_options(tmp_path: Path) -> None:
    from dvc_cuvis.digests.stat_cache import StatCache

    small(tmp_path, {"train": [{"kind": "file_indices", "source": "s0.cu3s", "ids": [0, 7]},
                                {"kind": "categories", "any_of": ["dent"]}],
                      "val": [{"kind": "files", "paths": ["s2.cu3s"]}]}, categories=True)
    sp, csv = tmp_path / "splits.json", tmp_path / "universe.csv"
    cats = {"scratch": 1, "dent": 2}

    def run(**kw):
        kw = {"name_to_id": cats, "allow_partial": True, **kw}
        return verify(sp, csv, lock=None, cache=StatCache(tmp_path / "c.bin"), **kw)

    assert run().ok and run().reused_verdict  # clean, then remembered
    strict = run(allow_partial=False)
    assert not strict.ok and not strict.reused_verdict
    assert strict.finding("selection").status == "violation"
    other = run(name_to_id={"dent": 2})  # 'scratch' is not needed by this split: still clean
    assert other.ok and not other.reused_verdict
    missing = run(name_to_id={"scratch": 1})
    assert not missing.ok and not missing.reused_verdict
    first_universe_only = run(checks=["universe"])
    assert first_universe_only.ok and not first_universe_only.reused_verdict

    only = run(checks=["universe"])
    assert only.reused_verdict and [f.check for f in only.findings] == ["universe"]
    doc = json.loads(sp.read_text())
    doc["universe_hash"] = None
    sp.write_text(json.dumps(doc))
    assert run(allow_unpinned=True).ok
    assert run(allow_unpinned=True).reused_verdict
    assert not run().ok and not run().reused_verdict
    # a universe given in memory, or the data on disk given: checked, never remembered
    uni = Universe.from_records([{"source": f"s{k}.cu3s", "index": 0,
                                  "category_ids": str(1 + k % 2)} for k in range(6)])
    assert not run(allow_unpinned=True, current=uni).reused_verdict
    grown = Universe.from_records([*records(uni), {"source": "s9.cu3s", "index": 0}])
    now = run(allow_unpinned=True, current=grown)
    assert not now.ok and now.finding("universe").details["added_sources"] == ["s9.cu3s"]
    mem = verify(sp, uni, lock=None, cache=StatCache(tmp_path / "c.bin"), name_to_id=cats,
                 allow_partial=True, allow_unpinned=True)
    assert mem.ok and not mem.reused_verdict and mem.universe == "universe"
    assert not verify(sp, uni, lock=None, cache=StatCache(tmp_path / "c.bin"), name_to_id=cats,
                      allow_partial=True, allow_unpinned=True).reused_verdict


def test_a_tokenized_split_remembers_its_data_dir(tmp_path: Path) -> None:
    from dvc_cuvis.digests.stat_cache import StatCache
    from dvc_cuvis.model.universe_io import write_universe

    data = tmp_path.resolve().as_posix() + "/d"
    uni = Universe.from_records([{"source": f"{data}/{k}.cu3s", "index": 0} for k in "abc"])
    write_universe(uni, tmp_path / "universe.csv")
    pin = sha(sorted(f"{{DATA_DIR}}/{k}.cu3s#0" for k in "abc"))
    (tmp_path / "splits.json").write_text(json.dumps({
        "universe_hash": pin, "train": [{"kind": "files", "paths": ["{DATA_DIR}/a.cu3s"]}],
        "val": [{"kind": "files", "paths": ["{DATA_DIR}/b.cu3s", "{DATA_DIR}/c.cu3s"]}]}))

    def run(data_dir):
        return verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None,
                      data_dir=data_dir, cache=StatCache(tmp_path / "c.bin"))

    first = run(data + "/")
    assert first.ok and first.finding("universe").details["data_dir"] == data
    assert run(data + "/").reused_verdict
    assert run(None).ok  # inferred: the sources' common folder
    wrong = run(tmp_path.resolve().as_posix())
    assert not wrong.ok and not wrong.reused_verdict
    assert wrong.finding("universe").status == "drift"


def test_a_data_dir_ending_in_x_is_used_as_given(tmp_path: Path) -> None:
    """Only trailing slashes leave ``--data-dir``: a folder named ``scanX`` stays ``scanX``."""
    from dvc_cuvis.digests.stat_cache import StatCache
    from dvc_cuvis.model.universe_io import write_universe

    data = tmp_path.resolve().as_posix() + "/scanX"
    uni = Universe.from_records([{"source": f"{data}/{k}.cu3s", "index": 0} for k in "ab"])
    write_universe(uni, tmp_path / "universe.csv")
    (tmp_path / "splits.json").write_text(json.dumps({
        "universe_hash": sha(sorted(f"{{DATA_DIR}}/{k}.cu3s#0" for k in "ab")),
        "train": [{"kind": "files", "paths": ["{DATA_DIR}/a.cu3s"]}],
        "val": [{"kind": "files", "paths": ["{DATA_DIR}/b.cu3s"]}]}))
    report = verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None,
                    data_dir=data + "/", cache=StatCache(tmp_path / "c.bin"))
    assert report.ok and report.exit_code == 0, report.render()
    assert report.finding("universe").details["data_dir"] == data
    assert report.finding("selection").status == "ok"


@pytest.mark.slow  # builds a repository of its own: several seconds
def test_the_data_on_disk_given_as_a_function(repo: Path) -> None:
    uni = read_universe(repo / "universe.csv")
    calls: list[int] = []

    def now() -> Universe:
        calls.append(1)
        return Universe.from_records(records(uni)[1:])

    r = verify(repo / "splits.json", repo / "universe.csv", current=now, lock=None)
    assert calls == [1] and not r.ok
    assert r.finding("universe").details["removed_sources"] == [uni.source(0)]
    vouched = verify(repo / "splits.json", repo / "universe.csv", current=now)
    assert calls == [1] and vouched.ok  # dvc.lock vouches for the data: not called
    assert "dvc.lock vouches" in vouched.finding("universe").summary


def test_rows_without_a_digest_or_a_path_are_not_content_checked(tmp_path: Path) -> None:
    (tmp_path / "f").mkdir()
    (tmp_path / "f/a.npz").write_bytes(b"a" * 10)
    (tmp_path / "f/src.tif").write_bytes(b"t" * 10)
    rows = [("0first.cu3s", "0", "f/zero.npz", ""),  # first, no digest: the rest still read
            ("a.cu3s", "0", "f/a.npz", md5(tmp_path / "f/a.npz")),

            ("f/src.tif", "0", "", md5(tmp_path / "f/src.tif")),  # no path: the source is it
            ("gone.cu3s", "0", "f/gone.npz", ""),  # no digest recorded: nothing to compare
            ("gone2.cu3s", "0", "", "")]
    (tmp_path / "universe.csv").write_text(
        "source,index,materialized_path,md5\n" + "".join(",".join(r) + "\n" for r in rows))
    cfg = DataSplitConfig(train=[Selector(kind="all")])
    r = verify(cfg, tmp_path / "universe.csv", lock=None, allow_unpinned=True)
    assert r.ok, r.render()
    assert r.finding("content").summary == "2 files match their recorded md5"
    (tmp_path / "f/src.tif").unlink()
    f = verify(cfg, tmp_path / "universe.csv", lock=None,
               allow_unpinned=True).finding("content")
    assert f.status == "drift" and f.details["missing"] == ["f/src.tif"]
    assert f.details["affected_stages"] == {"train": 1}


def test_a_pin_mismatch_is_drift_even_when_the_disk_matches_universe_csv() -> None:
    uni = Universe.from_records([{"source": f"s{k}.cu3s", "index": 0} for k in range(3)])
    cfg = DataSplitConfig(universe_hash="0" * 64, train=[Selector(kind="all")])
    pinned = f"universe.csv changed since the split was baked (pinned {'0' * 12}, now "
    u = verify(cfg, uni, current=uni, lock=None).finding("universe")
    assert u.status == "drift" and u.summary == pinned + f"{uni.hash[:12]})"
    grown = Universe.from_records([*records(uni), {"source": "s9.cu3s", "index": 0}])
    u = verify(cfg, uni, current=grown, lock=None).finding("universe")
    assert u.status == "drift" and u.summary == (
        pinned + f"{uni.hash[:12]}); the data on disk differs from universe.csv: 1 sample(s) "
        "added, 0 removed")
    assert u.fix == ("re-enumerate the data with the options universe.csv was made with, then "
                     "re-bake with --base the old splits.json to keep assignments")


# -- the remembered verdict: what it answers for, and what it says ------------------------


def test_a_reused_verdict_names_the_same_split_and_universe(tmp_path: Path) -> None:
    from dvc_cuvis.digests.stat_cache import StatCache

    small(tmp_path, {"train": [{"kind": "files", "paths": ["s0.cu3s", "s1.cu3s"]}],
                      "val": [{"kind": "files", "paths": ["s2.cu3s"]}]})
    sp, csv = tmp_path / "splits.json", tmp_path / "universe.csv"
    first = verify(sp, csv, lock=None, cache=StatCache(tmp_path / "c.bin"))
    again = verify(sp, csv, lock=None, cache=StatCache(tmp_path / "c.bin"))
    assert first.ok and not first.reused_verdict and again.reused_verdict
    assert (again.splits, again.universe) == (first.splits, first.universe) == (str(sp),
                                                                               str(csv))
    assert again.to_dict() == {**first.to_dict(), "reused_verdict": True}
    head, *rest = first.render().splitlines()
    assert again.render().splitlines() == [
        head + " (the last clean verdict: no file it rests on has changed)", *rest]


def test_a_partial_checks_verdict_never_answers_for_a_full_check(tmp_path: Path) -> None:
    from dvc_cuvis.digests.stat_cache import StatCache

    small(tmp_path, LEAKY, group=True)
    sp, csv = tmp_path / "splits.json", tmp_path / "universe.csv"

    def run(checks):
        return verify(sp, csv, lock=None, cache=StatCache(tmp_path / "c.bin"), checks=checks)

    assert run(["universe", "content"]).ok
    assert run(["universe", "content"]).reused_verdict  # remembered for those two
    for full in (["universe", "content", "selection", "constraints"],
                 ["universe", "content", "selection", "constraints", "staleness"]):
        r = run(full)
        assert not r.ok and not r.reused_verdict and r.exit_code == 1, full
        assert r.finding("constraints").status == "violation"
        assert [f.check for f in r.findings] == full


def test_staleness_is_no_part_of_a_remembered_verdict(tmp_path: Path) -> None:
    """dvc.lock is compared on every call, so asking for it (or not) reuses the same
    verdict of the other four checks."""
    from dvc_cuvis.check.drift import CHECKS
    from dvc_cuvis.digests.stat_cache import StatCache

    small(tmp_path, {"train": [{"kind": "files", "paths": ["s0.cu3s", "s1.cu3s"]}],
                      "val": [{"kind": "files", "paths": ["s2.cu3s"]}]})
    sp, csv = tmp_path / "splits.json", tmp_path / "universe.csv"

    def run(checks, lock=None):
        return verify(sp, csv, lock=lock, cache=StatCache(tmp_path / "c.bin"), checks=checks)

    assert run(CHECKS).ok  # remembered (dvc.lock: none)
    four = run(CHECKS[:4])
    assert four.reused_verdict and [f.check for f in four.findings] == list(CHECKS[:4])
    (tmp_path / "dvc.lock").write_text("stages: [unterminated\n")
    full = run(CHECKS, lock=tmp_path / "dvc.lock")
    assert full.reused_verdict and not full.ok  # remembered four, and dvc.lock read now
    assert [(f.check, f.status) for f in full.findings][-1] == ("staleness", "violation")


def test_a_staleness_only_check_is_never_a_reused_verdict(tmp_path: Path) -> None:
    from dvc_cuvis.digests.stat_cache import StatCache

    small(tmp_path, {"train": [{"kind": "files", "paths": ["s0.cu3s"]}]})
    for _ in range(3):
        r = verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None,
                   cache=StatCache(tmp_path / "c.bin"), checks=["staleness"])
        assert not r.reused_verdict
        assert [(f.check, f.status, f.summary) for f in r.findings] == [
            ("staleness", "skipped", "no dvc.lock")]
        assert r.render() == ("check {} against {}: OK\n  [skip] staleness: no dvc.lock\n"
                              .format(tmp_path / "splits.json", tmp_path / "universe.csv"))


def test_a_universe_that_does_not_exist_is_a_missing_universe(tmp_path: Path) -> None:
    from dvc_cuvis.digests.stat_cache import StatCache
    from dvc_cuvis.errors import MissingUniverseError

    small(tmp_path, {"train": [{"kind": "files", "paths": ["s0.cu3s"]}]})
    for cache in (None, StatCache(tmp_path / "c.bin")):
        with pytest.raises(MissingUniverseError):
            verify(tmp_path / "splits.json", tmp_path / "gone.csv", lock=None, cache=cache)
