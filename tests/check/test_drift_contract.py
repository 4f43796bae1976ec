"""The drift check's contract, one user-visible promise per test, in-process and fast.

Each test states what a user sees — the exit code, each check's status, the files, stages
and counts named, and the verdict line ("OK" / "FAILED") — for one way the data, the split
or dvc.lock can go wrong.  The real pipeline (git + ``dvc repro``) is built once per
session (:mod:`tests.helpers.repos`) and copied per test; small universes are written by hand.
With ``test_drift_tokens.py`` ({DATA_DIR} splits, renames) and ``test_drift_memo.py`` (the
remembered verdict), these are the tests ``scripts/mutation.sh`` runs against every mutant of
``drift.py``; the shared helpers are :mod:`tests.helpers.drift`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import pytest
from cuvis_ai_schemas.training.data import DataSplitConfig, Selector

from dvc_cuvis.check.drift import (
    DriftError,
    DriftReport,
    Finding,
    ensure,
    verify,
)
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe

# -- the verdict line and the report's exit code -------------------------------------------
from tests.helpers.drift import (
    ALL_OK,
    LEAKY,
    check,
    flip,
    md5,
    records,
    rewrite,
    run_small,
    sha,
    small,
    stage_of,
    statuses,
    verdict,
)


def test_a_clean_pipeline_says_ok_and_exits_0(repo: Path, cli, monkeypatch) -> None:
    text, code, checks = check(cli, repo, monkeypatch)
    assert code == 0 and text.code == 0
    assert statuses(checks) == ALL_OK
    assert verdict(text.out) == "OK"
    assert "[FAIL]" not in text.out and "[DRIFT]" not in text.out
    assert checks["staleness"]["summary"] == (
        "matches dvc.lock (stages bake, enumerate, materialize)")
    assert checks["content"]["summary"] == (
        "24 files match their recorded md5 (24 through dvc.lock's input hashes)")
    assert checks["universe"]["summary"] == (
        f"24 samples, hash {checks['universe']['summary'].split()[3]} matches the pin; "
        "dvc.lock vouches that the data is what it was enumerated from")
    assert checks["selection"]["summary"] == (
        "every selector resolves fully: train=15 val=6 test=3 predict=24")
    # init's check stage reads the materialized summaries, so the leakage checks run; two
    # of these 8 x 8-pixel frames hash alike (docs/leakage.md: small frames), a warning
    assert checks["constraints"]["summary"] == (
        "no_split_overlap satisfied, no_train_anomalous violated (warn), group_leakage "
        "satisfied, wavelength_grid satisfied, near_duplicate violated (warn)")
    assert checks["constraints"]["details"]["duplicates"] == {"exact": 0, "near": 1,
                                                             "unsigned": 0}


def test_edited_data_and_params_are_stale(repo: Path, cli, monkeypatch) -> None:
    params = repo / "params.yaml"
    params.write_text(params.read_text().replace("seed: 0", "seed: 5"))
    with (repo / "data/npz/day1_line-a_s01/frame_0000.npz").open("ab") as fh:
        fh.write(b"x")
    text, code, checks = check(cli, repo, monkeypatch, "--no-enumerate")
    assert code == 1 and verdict(text.out) == "FAILED"
    st = checks["staleness"]
    assert st["status"] == "drift" and st["fix"] == "run `dvc repro`"
    assert st["summary"] == "the workspace differs from dvc.lock: 2 file(s), 1 param(s)"
    assert st["details"] == {"stages": ["bake", "enumerate", "materialize"],
                             "changed": ["data/npz (stage enumerate)",
                                         "data/npz (stage materialize)"],
                             "params_changed": ["params.yaml:bake.seed (stage bake)"]}
    assert checks["content"]["details"]["modified"] == [
        "data/npz/day1_line-a_s01/frame_0000.npz"]  # not vouched: the stage changed
    assert "[DRIFT] staleness: the workspace differs from dvc.lock" in text.out


def test_report_verdict_words_and_marks() -> None:
    ok = DriftReport("s.json", "u.csv", [Finding("universe", "ok", "fine", {}, "no fix shown"),
                                         Finding("content", "skipped", "no md5")])
    assert ok.ok and ok.exit_code == 0
    assert ok.render() == ("check s.json against u.csv: OK\n"
                           "  [ok  ] universe: fine\n"
                           "  [skip] content: no md5\n")
    bad = DriftReport("s.json", "u.csv", [
        Finding("universe", "ok", "fine"),
        Finding("content", "drift", "1 file(s) modified", {"modified": ["a", "b"], "n": 3,
                                                            "empty": [], "none": None,
                                                            "blank": "", "nothing": {},
                                                            "stages": {"train": 1, "val": 2}},
                "restore"),
        Finding("staleness", "violation", "unreadable", {}, "repair"),
        Finding("selection", "violation", "no fix known")])
    assert not bad.ok and bad.exit_code == 1
    assert bad.render() == ("check s.json against u.csv: FAILED\n"
                            "  [ok  ] universe: fine\n"
                            "  [DRIFT] content: 1 file(s) modified\n"
                            "         modified: a, b\n"
                            "         n: 3\n"
                            "         stages: train=1, val=2\n"
                            "         fix: restore\n"
                            "  [FAIL] staleness: unreadable\n"
                            "         fix: repair\n"
                            "  [FAIL] selection: no fix known\n")
    assert bad.to_dict() == {
        "ok": False, "reused_verdict": False, "splits": "s.json", "universe": "u.csv",
        "checks": {f.check: {"status": f.status, "summary": f.summary, "fix": f.fix,
                             "details": f.details} for f in bad.findings}}
    assert bad.to_dict()["checks"]["staleness"] == {
        "status": "violation", "summary": "unreadable", "fix": "repair", "details": {}}
    assert bad.finding("staleness") is bad.findings[2]
    assert [f.failed for f in bad.findings] == [False, True, True, True]
    assert bad.findings[1].record() == {"check": "content", "status": "drift",
                                        "summary": "1 file(s) modified",
                                        "details": bad.findings[1].details, "fix": "restore"}
    pull = DriftReport("s", "u", [Finding("content", "not-pulled", "3 frames not pulled")])
    assert pull.render() == "check s against u: FAILED\n  [PULL] content: 3 frames not pulled\n"
    assert not pull.ok and pull.exit_code == 1
    odd = DriftReport("s", "u", [Finding("content", "odd", "?")])
    assert odd.ok and odd.render().splitlines()[1] == "  [odd] content: ?"
    eight = DriftReport("s", "u", [Finding("content", "drift", "x",
                                           {"missing": [f"f{k}" for k in range(8)]})])
    assert "         missing: f0, f1, f2, f3, f4, f5, f6, f7\n" in eight.render()
    many = DriftReport("s", "u", [Finding("content", "drift", "x",
                                          {"missing": [f"f{k}" for k in range(11)]})])
    assert "         missing: f0, f1, f2, f3, f4, f5, f6, f7 (+3 more)\n" in many.render()
    assert DriftReport("s", "u", [Finding("universe", "ok", "fine")],
                       reused_verdict=True).render().splitlines()[0] == (
        "check s against u: OK (the last clean verdict: no file it rests on has changed)")


# -- dvc.lock that cannot be read ----------------------------------------------------------


@pytest.mark.lowest_dvc
@pytest.mark.parametrize("content", [b"stages: [unterminated\n", b"\x00\xff\xfe not text",
                                     b"stages:\n  - 1\n  - 2\n", b"- just\n- a list\n"],
                         ids=["bad-yaml", "not-utf8", "stages-a-list", "top-level-list"])
def test_a_corrupt_dvc_lock_fails_the_check(repo: Path, cli, monkeypatch,
                                            content: bytes) -> None:
    (repo / "dvc.lock").write_bytes(content)
    text, code, checks = check(cli, repo, monkeypatch, "--no-enumerate")
    assert code == 1 and text.code == 1, text.out + text.err
    assert statuses(checks) == {**ALL_OK, "staleness": "violation"}
    assert verdict(text.out) == "FAILED"
    assert "[FAIL] staleness: " in text.out and "dvc.lock" in checks["staleness"]["summary"]
    # git does not track this dvc.lock, and `dvc repro` refuses an unreadable one
    assert checks["staleness"]["fix"] == (
        "write it again (every stage runs): `rm dvc.lock && dvc repro`")
    assert "Traceback" not in text.err and "internal error" not in text.err


@pytest.mark.lowest_dvc
def test_a_corrupt_dvc_lock_is_not_vouched_for_and_no_verdict_is_remembered(
        repo: Path) -> None:
    from dvc_cuvis.digests.stat_cache import StatCache

    (repo / "dvc.lock").write_text("stages: [unterminated\n")
    cache = repo / "c.bin"
    for _ in range(2):
        r = verify(repo / "splits.json", repo / "universe.csv", cache=StatCache(cache))
        assert not r.ok and r.exit_code == 1  # the four other checks may be remembered
        assert r.finding("staleness").status == "violation"
        assert r.finding("staleness").details == {"lock": str(repo / "dvc.lock")}
        assert "through dvc.lock" not in r.finding("content").summary
    with pytest.raises(DriftError) as info:
        ensure(r)
    assert "staleness" in str(info.value) and info.value.exit_code == 1


@pytest.mark.lowest_dvc
def test_the_lock_is_looked_up_beside_the_split_file_first(tmp_path: Path) -> None:
    """splits.json in one project, universe.csv elsewhere: the split's dvc.lock is checked."""
    small(tmp_path / "data", {"train": [{"kind": "files", "paths": ["s0.cu3s", "s1.cu3s"]}],
                               "val": [{"kind": "files", "paths": ["s2.cu3s"]}]})
    project = tmp_path / "project"
    (project / ".dvc").mkdir(parents=True)
    (tmp_path / "data" / "splits.json").rename(project / "splits.json")
    (project / "dvc.lock").write_text("stages: [unterminated\n")
    r = verify(project / "splits.json", tmp_path / "data" / "universe.csv", cache=None)
    assert r.finding("staleness").status == "violation"
    assert r.finding("staleness").details == {"lock": str(project / "dvc.lock")}
    assert not r.ok and r.exit_code == 1


# -- the split given as a config object ----------------------------------------------------


@pytest.mark.lowest_dvc
def test_a_config_object_split_is_checked_against_the_universes_dvc_lock(
        repo: Path, tmp_path: Path, monkeypatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # not inside the repository
    pointer = DataSplitConfig(splits_path=str(repo / "splits.json"))
    inline = DataSplitConfig.model_validate(
        {**json.loads((repo / "splits.json").read_text()), "splits_path": None})
    for cfg in (pointer, inline):
        for uni in (repo / "universe.csv", read_universe(repo / "universe.csv")):
            r = verify(cfg, uni)
            assert r.ok, r.render()
            st = r.finding("staleness")
            assert st.status == "ok" and st.details["stages"] == ["bake", "enumerate",
                                                                   "materialize"], st
    r = verify(pointer, repo / "universe.csv")
    assert r.splits == str(repo / "splits.json")
    assert verify(inline, repo / "universe.csv").splits == "splits"
    # the universe's repository is the one asked, not the current folder's
    other = tmp_path / "other"
    shutil.copytree(repo, other, symlinks=True)
    (other / "dvc.lock").write_text("stages: [unterminated\n")
    monkeypatch.chdir(other)
    assert verify(inline, repo / "universe.csv").finding("staleness").status == "ok"
    assert verify(inline, other / "universe.csv").finding("staleness").status == "violation"


@pytest.mark.lowest_dvc
def test_lock_none_and_an_explicit_lock(repo: Path) -> None:
    sp, csv = repo / "splits.json", repo / "universe.csv"
    assert verify(sp, csv, lock=None).finding("staleness").summary == "no dvc.lock"
    assert verify(sp, csv, lock=None).finding("staleness").status == "skipped"
    (repo / "broken.lock").write_text("stages: [\n")
    assert verify(sp, csv, lock=repo / "broken.lock").finding("staleness").status == "violation"
    assert verify(sp, csv, lock=str(repo / "dvc.lock")).finding("staleness").status == "ok"
    (repo / "empty.lock").write_text("stages: {}\n")
    st = verify(sp, csv, lock=repo / "empty.lock").finding("staleness")
    assert (st.status, st.summary) == ("skipped", "empty.lock has no stage for these files")
    only = verify(sp, csv, checks=["staleness"])
    assert [f.check for f in only.findings] == ["staleness"] and only.ok
    with pytest.raises(DvcCuvisError, match=r"unknown check\(s\) \['bogus'\]"):
        verify(sp, csv, checks=["universe", "bogus"])


# -- content: every missing and modified file, every row of a file -------------------------


def test_every_missing_and_modified_frame_is_reported(repo: Path, cli, monkeypatch) -> None:
    gone = ["data/npz/day1_line-a_s01/frame_0000.npz", "data/npz/day2_line-a_s03/frame_0001.npz"]
    edited = ["data/npz/day1_line-b_s02/frame_0002.npz", "data/npz/day4_line-b_s08/frame_0000.npz"]
    for g in gone:
        (repo / g).unlink()
    for e in edited:
        flip(repo / e)
    text, code, checks = check(cli, repo, monkeypatch, "--no-enumerate", "--no-lock")
    assert code == 1 and verdict(text.out) == "FAILED"
    assert statuses(checks) == {**ALL_OK, "content": "drift", "staleness": "skipped"}
    d = checks["content"]["details"]
    assert d["missing"] == gone and d["modified"] == edited
    assert checks["content"]["summary"] == "2 file(s) modified, 2 missing since enumerate"
    assert d["affected_samples"] == 4
    stage = stage_of(repo / "splits.json")
    want: dict[str, int] = {}
    for f in gone + edited:
        s = stage[f.removeprefix("data/npz/")]
        want[s] = want.get(s, 0) + 1
    assert d["affected_stages"] == want
    assert "[DRIFT] content: 2 file(s) modified, 2 missing since enumerate" in text.out
    assert f"missing: {gone[0]}, {gone[1]}" in text.out
    assert f"modified: {edited[0]}, {edited[1]}" in text.out
    # DVC does not track these frames: no `dvc checkout` could bring them back
    assert checks["content"]["fix"] == (
        "restore the files, or re-enumerate and re-bake: `dvc repro`")
    assert "dvc checkout" not in checks["content"]["fix"] and "fix: restore" in text.out


#: the split over the cu3s-like universe: rows of one session in several stages
CU3S_SPLIT = {
    "train": [{"kind": "file_indices", "source": "s/day0.cu3s", "ids": [0, 1]},
              {"kind": "file_indices", "source": "s/day2.cu3s", "ids": [0]},
              {"kind": "files", "paths": ["s/day3.cu3s"]}],
    "val": [{"kind": "file_indices", "source": "s/day0.cu3s", "ids": [2]},
            {"kind": "file_indices", "source": "s/day2.cu3s", "ids": [1]}],
    "test": [{"kind": "files", "paths": ["s/day1.cu3s"]},
             {"kind": "file_indices", "source": "s/day2.cu3s", "ids": [2]}],
}


def _cu3s_like(root: Path, *, annotations: bool = False) -> tuple[Path, Path]:
    """A universe as cu3s writes it without materialized_path: the source is the file, one
    row per measurement (4 sessions x 3), md5 of the session file; and a pinned split."""
    (root / "s").mkdir(parents=True)
    rows = []
    for k in range(4):
        f = root / "s" / f"day{k}.cu3s"
        f.write_bytes(bytes([k + 1]) * (100 + k))
        ann = ""
        if annotations:
            a = f.with_suffix(".json")
            a.write_text(json.dumps({"session": k}))
            ann = f"s/{a.name},{md5(a)}"
        rows += [f"s/{f.name},{i},{md5(f)}" + (f",{ann}" if ann else "") + "\n"
                 for i in range(3)]
    header = "source,index,md5" + (",annotation,annotation_md5" if annotations else "")
    (root / "universe.csv").write_text(header + "\n" + "".join(rows))
    pin = read_universe(root / "universe.csv").hash
    (root / "splits.json").write_text(json.dumps({**CU3S_SPLIT, "universe_hash": pin}))
    return root / "splits.json", root / "universe.csv"


def test_a_universe_without_materialized_path_has_its_sources_content_checked(
        tmp_path: Path, cli, monkeypatch) -> None:
    _cu3s_like(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = ("check", "--no-params", "--universe", "universe.csv", "--splits", "splits.json",
            "--stat-cache", "none", "--no-lock")
    r = cli(*args)
    assert r.code == 0 and verdict(r.out) == "OK", r.out + r.err
    assert "[ok  ] content: 4 files match their recorded md5" in r.out
    flip(tmp_path / "s/day2.cu3s")
    (tmp_path / "s/day0.cu3s").unlink()
    (tmp_path / "s/day3.cu3s").unlink()
    r = cli(*args)
    assert r.code == 1 and verdict(r.out) == "FAILED"
    j = cli(*args, "--json")
    content = json.loads(j.out)["checks"]["content"]
    assert content["status"] == "drift"
    assert content["summary"] == "1 file(s) modified, 2 missing since enumerate"
    d = content["details"]
    assert d["missing"] == ["s/day0.cu3s", "s/day3.cu3s"] and d["modified"] == ["s/day2.cu3s"]
    assert d["affected_samples"] == 9  # three rows per file: every one of them counts
    assert d["affected_stages"] == {"train": 6, "val": 2, "test": 1}  # by CU3S_SPLIT
    assert "[DRIFT] content: 1 file(s) modified, 2 missing since enumerate" in r.out


def test_every_row_naming_a_modified_file_is_counted(tmp_path: Path) -> None:
    sp, csv = _cu3s_like(tmp_path, annotations=True)
    assert verify(sp, csv, lock=None).finding("content").summary == (
        "8 files match their recorded md5")
    ann = tmp_path / "s/day2.json"
    rewrite(ann, b'{"session": 99}')
    f = verify(sp, csv, lock=None).finding("content")
    assert f.status == "drift" and f.details["modified"] == ["s/day2.json"]
    assert f.details["missing"] == [] and f.details["affected_samples"] == 3
    assert f.details["affected_stages"] == {"train": 1, "val": 1, "test": 1}
    flip(tmp_path / "s/day2.cu3s")  # the session and its annotation: still its 3 rows
    (tmp_path / "s/day1.json").unlink()
    f = verify(sp, csv, lock=None).finding("content")
    assert f.details["modified"] == ["s/day2.cu3s", "s/day2.json"]
    assert f.details["missing"] == ["s/day1.json"]
    assert f.details["affected_samples"] == 6
    assert f.details["affected_stages"] == {"train": 1, "val": 1, "test": 4}
    # without the split resolving, the rows are still counted, the stages unknown
    bad = json.loads(sp.read_text())
    bad["train"] = [{"kind": "files", "paths": ["nope.cu3s"]}]
    sp.write_text(json.dumps(bad))
    r = verify(sp, csv, lock=None)
    f = r.finding("content")
    assert f.details["affected_samples"] == 6 and "affected_stages" not in f.details
    assert r.finding("selection").status == "violation"
    assert r.finding("constraints").status == "skipped"


@pytest.mark.lowest_dvc
def test_files_dvc_lock_vouches_for_are_counted_and_the_others_still_read(
        tmp_path: Path) -> None:
    """The content check's contract with dvc.lock's vouching (lockfile.Comparison.vouched:
    folder -> the files under it): vouched files are not read but counted, every other
    file named by a digest column is still read."""
    from dvc_cuvis.check.content import check_content
    from dvc_cuvis.digests.stat_cache import StatCache

    _cu3s_like(tmp_path, annotations=True)
    uni = read_universe(tmp_path / "universe.csv")
    sessions = [f"day{k}.cu3s" for k in range(4)]
    labels = [f"day{k}.json" for k in range(4)]
    top = str(tmp_path.resolve() / "s")

    def content(vouched):
        return check_content(uni, StatCache(None), None, None, vouched, None)

    everything = content(vouched={top: sessions + labels})
    assert everything.status == "ok"
    assert everything.summary == (
        "8 files match their recorded md5 (8 through dvc.lock's input hashes)")
    rewrite(tmp_path / "s/day3.json", b"{}")
    f = content(vouched={top: sessions})
    assert f.status == "drift" and f.details["modified"] == ["s/day3.json"]
    assert f.details["affected_samples"] == 3
    flip(tmp_path / "s/day0.cu3s")  # vouched: dvc.lock's hash stands for it, not read
    f = content(vouched={top: sessions})
    assert f.details["modified"] == ["s/day3.json"]
    f = content(vouched={top: labels})
    assert f.details["modified"] == ["s/day0.cu3s"]


def test_the_rescans_digests_are_the_content_checks(repo: Path) -> None:
    """Digests the re-scan computed are used, not read again; a re-scan without digests
    (``--no-hash``) leaves the content check to read the files."""
    uni = read_universe(repo / "universe.csv")
    recs = records(uni)
    recs[5]["md5"] = "0" * 32
    r = verify(repo / "splits.json", uni, current=Universe.from_records(recs), lock=None)
    assert r.finding("universe").details["redigested_samples"] == 1
    assert r.finding("content").details["modified"] == [uni.value("materialized_path", 5)]
    bare = Universe.from_records([{k: v for k, v in rec.items() if k != "md5"}
                                  for rec in records(uni)])
    r = verify(repo / "splits.json", uni, current=bare, lock=None)
    assert r.ok, r.render()
    assert r.finding("content").summary == "24 files match their recorded md5"


def test_no_md5_column_skips_the_content_check(tmp_path: Path) -> None:


    sp, csv = _cu3s_like(tmp_path)
    lines = csv.read_text().splitlines()
    csv.write_text("\n".join(",".join(line.split(",")[:2]) for line in lines) + "\n")
    r = verify(sp, csv, lock=None, allow_unpinned=True, checks=["content"])
    f = r.finding("content")
    assert f.status == "skipped" and r.ok
    assert f.summary == ("universe.csv has no md5 column (enumerate without --no-hash to "
                         "record content digests)")


# -- selection: --allow-partial, categories ------------------------------------------------


def test_allow_partial_passes_and_still_names_the_selector(tmp_path: Path, cli,
                                                           monkeypatch) -> None:
    small(tmp_path, {"train": [{"kind": "file_indices", "source": "s0.cu3s", "ids": [0, 7]},
                                {"kind": "files", "paths": ["s1.cu3s"]}],
                      "val": [{"kind": "files", "paths": ["s2.cu3s", "gone.cu3s", "no.cu3s"]}]})
    text, checks = run_small(cli, tmp_path, monkeypatch)
    assert text.code == 1 and verdict(text.out) == "FAILED"
    sel = checks["selection"]
    assert sel["status"] == "violation"
    assert sel["summary"] == "2 selector(s) match only partly (3 requested sample(s) absent)"
    assert "7" in sel["details"]["partial"][0] and "s0.cu3s" in sel["details"]["partial"][0]
    assert "[FAIL] selection: 2 selector(s) match only partly" in text.out

    assert sel["fix"] == ("re-bake it, keeping assignments and dropping the absent samples: "
                          "`dvc-cuvis bake --universe universe.csv --base splits.json --out "
                          "splits.json --allow-removed`")  # no pipeline

    text, checks = run_small(cli, tmp_path, monkeypatch, "--allow-partial")
    assert text.code == 0 and verdict(text.out) == "OK", text.out + text.err
    sel = checks["selection"]
    assert sel["status"] == "ok" and sel["summary"].endswith("; allowed (--allow-partial)")
    assert sel["details"]["partial"] and "s0.cu3s" in sel["details"]["partial"][0]
    assert "[ok  ] selection: 2 selector(s) match only partly" in text.out
    assert f"partial: {sel['details']['partial'][0]}" in text.out


def test_the_library_refuses_a_partial_selector_unless_allowed(tmp_path: Path) -> None:
    """verify()'s own default (not the CLI's): a partial selector fails the report."""
    from dvc_cuvis.check.drift import verify

    small(tmp_path, {"train": [{"kind": "file_indices", "source": "s0.cu3s", "ids": [0, 7]}],
                      "val": [{"kind": "files", "paths": ["s2.cu3s"]}]})
    report = verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None, cache=None)
    assert not report.ok and report.exit_code == 1
    assert report.finding("selection").status == "violation"
    allowed = verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None,
                     cache=None, allow_partial=True)
    assert allowed.ok and allowed.finding("selection").status == "ok"


def test_a_categories_selector_is_resolved_with_the_category_map(tmp_path: Path, cli,
                                                                 monkeypatch) -> None:
    small(tmp_path, {"train": [{"kind": "categories", "any_of": ["dent"]}],
                      "val": [{"kind": "categories", "any_of": ["scratch"]}]}, categories=True)
    (tmp_path / "cats.json").write_text(json.dumps({"scratch": 1, "dent": 2}))
    text, checks = run_small(cli, tmp_path, monkeypatch, "--categories", "cats.json")
    assert text.code == 0 and verdict(text.out) == "OK", text.out + text.err
    assert checks["selection"]["summary"] == (
        "every selector resolves fully: train=3 val=3 test=0 predict=6")
    text, checks = run_small(cli, tmp_path, monkeypatch)
    assert text.code == 1 and verdict(text.out) == "FAILED"
    assert checks["selection"]["status"] == "violation"
    assert checks["selection"]["summary"].startswith(
        "splits.json: train[0]: a 'categories' selector needs a category name->id map")
    assert checks["selection"]["fix"] == (
        "fix the selector, or re-bake the split against this universe")
    assert checks["constraints"]["status"] == "skipped"
    assert checks["constraints"]["summary"] == "the split does not resolve"
    uni = read_universe(tmp_path / "universe.csv")
    assert verify(tmp_path / "splits.json", uni, lock=None,
                  name_to_id={"scratch": 2, "dent": 1}).ok  # swapped ids: still 3 and 3
    r = verify(tmp_path / "splits.json", uni, lock=None, name_to_id={"dent": 2})
    assert r.finding("selection").status == "violation"
    assert "'scratch' not in dataset categories" in r.finding("selection").summary


# -- constraints: the group leakage option, end to end -------------------------------------


def test_group_leakage_error_warn_off(tmp_path: Path, cli, monkeypatch) -> None:
    # s0 and s1 share group g0; one is trained on, the other validated
    small(tmp_path, {"train": [{"kind": "files", "paths": ["s0.cu3s", "s2.cu3s", "s3.cu3s"]}],
                      "val": [{"kind": "files", "paths": ["s1.cu3s"]}],
                      "test": [{"kind": "files", "paths": ["s4.cu3s", "s5.cu3s"]}]}, group=True)
    for mode in ("auto", "error"):
        extra = () if mode == "auto" else ("--group-leakage", mode)
        text, checks = run_small(cli, tmp_path, monkeypatch, *extra)
        assert text.code == 1 and verdict(text.out) == "FAILED", mode
        c = checks["constraints"]
        assert c["status"] == "violation" and c["summary"] == "group_leakage violated", c
        assert c["details"]["results"] == {
            "group_leakage": "violated (error): 1 group(s) span >1 of train/val/test"}
        assert c["details"]["offending"] == ["g0"]
        assert c["fix"] == ("re-bake with a strategy that respects the constraint "
                            "(e.g. --group-by group, --ad-aware)")
    text, checks = run_small(cli, tmp_path, monkeypatch, "--group-leakage", "warn")
    assert text.code == 0 and verdict(text.out) == "OK"
    c = checks["constraints"]
    assert c["status"] == "ok" and "group_leakage violated (warn)" in c["summary"]
    text, checks = run_small(cli, tmp_path, monkeypatch, "--group-leakage", "off")
    assert text.code == 0 and verdict(text.out) == "OK"
    assert "group_leakage" not in checks["constraints"]["summary"]
    # verify() itself, each mode
    sp, csv = tmp_path / "splits.json", tmp_path / "universe.csv"
    assert not verify(sp, csv, lock=None).ok
    assert not verify(sp, csv, lock=None, group_leakage="error").ok
    assert verify(sp, csv, lock=None, group_leakage="warn").ok
    off = verify(sp, csv, lock=None, group_leakage="off")
    assert off.ok and "group_leakage" not in off.finding("constraints").summary


def test_a_split_with_no_constraints_says_so(tmp_path: Path) -> None:
    small(tmp_path, {"train": [{"kind": "all"}]})
    doc = json.loads((tmp_path / "splits.json").read_text())
    doc["constraints"] = []
    (tmp_path / "splits.json").write_text(json.dumps(doc))
    r = verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None)
    c = r.finding("constraints")
    assert (c.status, c.summary) == ("ok", "no constraints declared") and r.ok


# -- ensure: strict raises, warn logs, off is silent ---------------------------------------


def test_ensure_strict_warn_off(caplog: pytest.LogCaptureFixture) -> None:
    bad = DriftReport("s.json", "u.csv", [Finding("universe", "drift", "grew", {}, "rebake"),
                                          Finding("content", "ok", "fine"),
                                          Finding("selection", "violation", "100% partial")])
    good = DriftReport("s.json", "u.csv", [Finding("universe", "ok", "fine")])
    with caplog.at_level(logging.DEBUG, logger="dvc_cuvis.check.drift"):
        for mode in ("strict", "warn", "off"):
            assert ensure(good, mode) is good
        assert caplog.records == []
        assert ensure(bad, "off") is bad
        assert caplog.records == []  # off: nothing logged
        assert ensure(bad, "warn") is bad
        assert len(caplog.records) == 1
        rec = caplog.records[0]
        assert rec.levelno == logging.WARNING and rec.name == "dvc_cuvis.check.drift"
        assert rec.getMessage() == bad.render().rstrip()
        caplog.clear()
        with pytest.raises(DriftError) as info:
            ensure(bad)
        with pytest.raises(DriftError):
            ensure(bad, "strict")
        assert caplog.records == []
    assert info.value.report is bad and info.value.exit_code == 1
    # the fix lines ride along, each exactly as `dvc-cuvis check` prints it (report.render)
    assert str(info.value) == ("s.json does not match the data: universe (grew), "
                               "selection (100% partial)\n  fix: rebake")
    assert info.value.fixes == ("fix: rebake",)
    assert info.value.summary == ("s.json does not match the data: universe (grew), "
                                  "selection (100% partial)")
    rendered = [line.strip() for line in bad.render().splitlines()]
    assert all(fix in rendered for fix in info.value.fixes)

    with pytest.raises(DvcCuvisError, match="verify must be strict, warn or off, got 'loud'"):
        ensure(good, "loud")


# -- the mutation-testing setup these tests serve (scripts/mutation.sh, docs/mutation.md) --


def test_the_mutation_setup_names_real_modules_and_fast_tests() -> None:
    import re
    import subprocess
    import tomllib

    root = Path(__file__).resolve().parents[2]
    cfg = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mutmut"]
    script = (root / "scripts/mutation.sh").read_text()
    known = re.search(r"^KNOWN=\((.*?)\)", script, re.M | re.S)
    assert known is not None
    paths = dict(re.findall(r"\[(\w+)\]=([\w/]+)", script))
    assert [f"dvc_cuvis/{paths[m]}.py" for m in known.group(1).split()] == cfg["only_mutate"]
    for test in cfg["pytest_add_cli_args_test_selection"]:
        assert (root / test).is_file(), test
    assert "tests/check/test_drift_contract.py" in cfg["pytest_add_cli_args_test_selection"]
    assert "/mutants/" in (root / ".gitignore").read_text().splitlines()
    bad = subprocess.run(["bash", str(root / "scripts/mutation.sh"), "bogus"],
                         capture_output=True, text=True, check=False)
    assert bad.returncode == 2
    assert bad.stderr == ("mutation.sh: unknown module 'bogus'; choose from: drift selectors "
                          "splits split_state resolution constraints stats plugin report "
                          "tokens universe content selection staleness facts fixes summaries "
                          "summary_store spectra spectra_html spectra_base svg review_report "
                          "core_summaries tasks_summary leak_signatures leak_index "
                          "leak_duplicates leak_adjacent leak_recordings leak_grids leak_shift "
                          "leak_clusters check_duplicates check_spectral check_summaries "
                          "check_readable bake_together\n")


def test_every_failed_constraint_is_named(tmp_path: Path) -> None:
    small(tmp_path, {"constraints": [{"kind": "no_split_overlap", "severity": "error"}],
                      "train": [{"kind": "files", "paths": ["s0.cu3s", "s1.cu3s"]}],
                      "val": [{"kind": "files", "paths": ["s1.cu3s", "s2.cu3s"]}]}, group=True)
    r = verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None)
    c = r.finding("constraints")
    assert c.status == "violation"
    assert c.summary == "no_split_overlap violated, group_leakage violated"
    assert set(c.details["results"]) == {"no_split_overlap", "group_leakage"}
    assert all(v.startswith("violated (error): ") for v in c.details["results"].values())


def test_check_verify_mode() -> None:
    from dvc_cuvis.check.drift import VERIFY_MODES, check_verify_mode

    assert [check_verify_mode(m) for m in VERIFY_MODES] == ["strict", "warn", "off"]
    with pytest.raises(DvcCuvisError, match="verify must be strict, warn or off, got 'loud'"):
        check_verify_mode("loud")


@pytest.mark.lowest_dvc
def test_an_in_memory_split_and_universe_use_the_current_repositorys_lock(
        repo: Path, monkeypatch) -> None:
    monkeypatch.chdir(repo)
    uni = Universe.from_records(records(read_universe(repo / "universe.csv")))
    cfg = DataSplitConfig.model_validate(json.loads((repo / "splits.json").read_text()))
    st = verify(cfg, uni).finding("staleness")
    assert (st.status, st.summary) == ("skipped", "dvc.lock has no stage for these files")
    monkeypatch.chdir(repo / "data")  # below the root: the same dvc.lock
    assert verify(cfg, uni).finding("staleness").summary == (
        "dvc.lock has no stage for these files")
    monkeypatch.chdir(repo)  # an in-memory universe's paths are relative to the current folder
    content = verify(cfg, uni, lock=None).finding("content")
    assert (content.status, content.summary) == ("ok", "24 files match their recorded md5")


def test_deep_trusts_no_digest_it_did_not_compute(repo: Path) -> None:
    """Under ``deep`` the content check reads every file itself: digests handed in with a
    universe (or by a function) are the universe check's, never the content check's."""
    uni = read_universe(repo / "universe.csv")
    recs = records(uni)
    recs[2]["md5"] = "0" * 32
    given = Universe.from_records(recs)
    for current in (given, lambda: given):
        r = verify(repo / "splits.json", uni, current=current, lock=None, deep=True)
        assert r.finding("universe").details["redigested_samples"] == 1
        content = r.finding("content")
        assert content.status == "ok", content
        assert content.summary == "24 files match their recorded md5"


def test_a_tokenized_split_with_dir_indices_resolves_against_the_data_dir(
        tmp_path: Path) -> None:
    """The tokenized pin is the universe check's; the positional ``dir_indices`` bound check
    inside resolution must not compare it with the untokenized universe."""
    data = tmp_path.resolve().as_posix() + "/d"
    uni = Universe.from_records([{"source": f"{data}/{k}.cu3s", "index": 0} for k in "abcd"])
    pin = sha(sorted(f"{{DATA_DIR}}/{k}.cu3s#0" for k in "abcd"))
    cfg = DataSplitConfig.model_validate({
        "universe_hash": pin,
        "train": [{"kind": "file_indices", "source": "{DATA_DIR}/a.cu3s", "ids": [0]}],
        "val": [{"kind": "dir_indices", "ids": [1, 2]}]})
    r = verify(cfg, uni, lock=None)
    assert r.ok, r.render()
    assert r.finding("selection").summary == (
        "every selector resolves fully: train=1 val=2 test=0 predict=4")
    assert r.finding("universe").summary == f"4 samples, hash {pin[:12]} matches the pin"


# -- each check on its own (``checks=[...]``), and what the report names -----------------


def test_the_constraints_check_alone_names_every_result(tmp_path: Path) -> None:
    """A satisfied constraint is listed with its severity and no reason; a violated one
    with its reason; no selection finding is reported when only constraints are asked."""
    small(tmp_path, LEAKY, group=True)
    r = verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None,
               checks=["constraints"], spectral_shift="off",  # no summaries: tests/leakage/
               wavelength_grid="off")
    assert [f.check for f in r.findings] == ["constraints"]
    assert not r.ok and r.exit_code == 1
    c = r.finding("constraints")
    assert (c.status, c.summary) == ("violation", "group_leakage violated")
    assert c.details == {"results": {"no_split_overlap": "satisfied (error)",
                                     "group_leakage": "violated (error): 1 group(s) span >1 of "
                                                      "train/val/test"},
                         "offending": ["g0"]}


def test_the_selection_check_alone(tmp_path: Path) -> None:
    small(tmp_path, {"train": [{"kind": "file_indices", "source": "s0.cu3s", "ids": [0, 7]}],
                      "val": [{"kind": "files", "paths": ["s2.cu3s"]}]})
    sp, csv = tmp_path / "splits.json", tmp_path / "universe.csv"
    bad = verify(sp, csv, lock=None, checks=["selection"])
    assert [(f.check, f.status) for f in bad.findings] == [("selection", "violation")]
    assert not bad.ok and bad.exit_code == 1
    assert bad.findings[0].summary == (
        "1 selector(s) match only partly (1 requested sample(s) absent)")
    good = verify(sp, csv, lock=None, checks=["selection"], allow_partial=True)
    assert [(f.check, f.status) for f in good.findings] == [("selection", "ok")] and good.ok


def test_the_content_check_alone_counts_the_stages_it_touches(repo: Path) -> None:
    stages = stage_of(repo / "splits.json")
    frame = "day1_line-a_s01/frame_0000.npz"
    flip(repo / "data/npz" / frame)
    r = verify(repo / "splits.json", repo / "universe.csv", lock=None, checks=["content"])
    assert [f.check for f in r.findings] == ["content"] and not r.ok
    f = r.finding("content")
    assert (f.status, f.summary) == ("drift", "1 file(s) modified, 0 missing since enumerate")
    assert f.details == {"missing": [], "modified": [f"data/npz/{frame}"],
                         "affected_samples": 1, "affected_stages": {stages[frame]: 1}}
    assert f.fix == ("restore the files, or re-enumerate and re-bake: "
                     f"`cd {os.path.relpath(repo, Path.cwd())} && dvc repro`")


def test_a_universe_path_leading_outside_its_folder_is_refused(tmp_path: Path, cli,
                                                               monkeypatch) -> None:
    """A symlinked folder that leads out of the universe's folder: a usage error naming the
    universe path (exit 2), never a read of the file behind it."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out/x.npz").write_bytes(b"x")
    inside = tmp_path / "inside"
    inside.mkdir()
    (inside / "f").symlink_to("../out")
    (inside / "universe.csv").write_text("source,index,materialized_path,md5\n"
                                         f"a.cu3s,0,f/x.npz,{'0' * 32}\n")
    monkeypatch.chdir(inside)
    (inside / "splits.json").write_text(json.dumps({"train": [{"kind": "all"}]}))
    r = cli("check", "--no-params", "--no-lock", "--stat-cache", "none", "--allow-unpinned")
    assert r.code == 2, r.out + r.err
    assert r.out == ""
    real = os.path.realpath(tmp_path / "out/x.npz")
    assert r.err == (f"dvc-cuvis: error: universe path 'f/x.npz' leads outside . (a symlink "
                     f"to {real}); refusing to follow it\n"), r.err
    uni = Universe.from_records([{"source": "a.cu3s", "index": 0,
                                  "materialized_path": "../x.npz", "md5": "0" * 32}])
    with pytest.raises(DvcCuvisError) as info:
        verify(DataSplitConfig(train=[Selector(kind="all")]), uni, lock=None,
               allow_unpinned=True)
    assert str(info.value) == "universe path '../x.npz' contains '..'; it must stay inside ."


# -- a clone that has not pulled: "not pulled", never drift or a crash --------------------


NOT_PULLED_FIX = "`dvc pull`"  # the clone's default remote holds the data


@pytest.mark.slow  # a git clone of a pushed pipeline, ~2 s each
def test_a_clone_that_has_not_pulled_is_told_to_pull(fresh_clone: Path, cli,
                                                     monkeypatch) -> None:
    frames = sorted(f"data/npz/{p}" for p in stage_of(fresh_clone / "splits.json"))
    text, code, checks = check(cli, fresh_clone, monkeypatch)  # re-scans: params.yaml
    assert code == 1 and text.code == 1 and verdict(text.out) == "FAILED", text.out + text.err
    assert statuses(checks) == {**ALL_OK, "content": "not-pulled", "staleness": "not-pulled"}
    content = checks["content"]
    assert content["summary"] == "8 frames not pulled: `dvc pull`"
    assert content["details"] == {"not_pulled": frames} and len(frames) == 8
    assert content["fix"] == NOT_PULLED_FIX
    assert checks["staleness"]["summary"] == (
        "2 path(s) dvc.lock records are not (all) pulled (data/npz, materialized): `dvc pull`")
    assert "[PULL] content: 8 frames not pulled: `dvc pull`\n" in text.out
    assert "[PULL] staleness: 2 path(s)" in text.out and "[DRIFT]" not in text.out
    assert text.err == ""
    # the summaries init's check reads are not pulled either: not run, and pulled by the fix
    note = checks["constraints"]["details"]["spectra"]["missing_summaries"]
    assert note["why"] == "materialized is a DVC output that is not (all) pulled"
    assert (note["fix"], note["then"], note["count"]) == ("dvc pull materialized", "", 8)


@pytest.mark.slow  # a git clone of a pushed pipeline, ~2 s each
@pytest.mark.lowest_dvc
def test_a_clone_that_has_not_pulled_without_dvc_lock(fresh_clone: Path, cli,
                                                      monkeypatch) -> None:
    text, code, checks = check(cli, fresh_clone, monkeypatch, "--no-lock")
    assert code == 1 and verdict(text.out) == "FAILED", text.out + text.err
    assert statuses(checks) == {**ALL_OK, "content": "not-pulled", "staleness": "skipped"}
    assert checks["content"]["summary"] == "8 frames not pulled: `dvc pull`"
    assert "[PULL] content: 8 frames not pulled: `dvc pull`\n" in text.out
    assert "[skip] staleness: no dvc.lock\n" in text.out and text.err == ""
    spectra = checks["constraints"]["details"]["spectra"]
    assert spectra["missing_summaries"]["fix"] == "dvc pull materialized"
    # without the staleness check at all: the same advice, and only the checks asked for
    text, code, checks = check(cli, fresh_clone, monkeypatch, "--checks", "universe,content")
    assert code == 1 and verdict(text.out) == "FAILED", text.out + text.err
    assert statuses(checks) == {"universe": "ok", "content": "not-pulled"}
    assert checks["content"]["summary"] == "8 frames not pulled: `dvc pull`"
    assert text.err == ""


@pytest.mark.slow  # a git clone of a pushed pipeline, ~2 s each
def test_a_clone_whose_remote_is_gone_is_still_told_to_pull(fresh_clone: Path, cli,
                                                            monkeypatch) -> None:
    """Without a reachable remote DVC cannot even list a tracked folder: the frames under
    it are still "not pulled", never an internal error."""
    from tests.helpers.shell import sh

    sh("dvc", "remote", "remove", "store", cwd=fresh_clone)
    text, code, checks = check(cli, fresh_clone, monkeypatch)
    assert code == 1 and text.code == 1 and verdict(text.out) == "FAILED", text.out + text.err
    assert checks["content"]["status"] == "not-pulled", checks["content"]
    # no remote, so no `dvc pull` to paste: the fix says what to configure, in words
    assert checks["content"]["summary"] == "8 frames not pulled"
    assert checks["content"]["fix"] == (
        "no DVC remote is configured here: add the remote that holds this data "
        "(dvc remote add -d NAME URL), then pull")
    assert "`" not in checks["staleness"]["fix"]
    assert "internal error" not in text.err


def test_a_deep_check_reports_the_files_it_hashed(repo: Path, cli, monkeypatch) -> None:
    """``--deep`` hashes through a fresh cache of its own; ``--json`` reports that one."""
    monkeypatch.chdir(repo)
    args = ("check", "--params", "params.yaml", "--no-lock", "--no-enumerate",
            "--stat-cache", "c.bin", "--json")
    assert cli(*args).code == 0  # the stat cache now knows every frame
    run = cli(*args, "--deep")
    assert run.code == 0, run.out + run.err
    deep = json.loads(run.out)["hashing"]
    frames = sum((repo / p).stat().st_size for p in
                 read_universe(repo / "universe.csv").column("materialized_path"))
    assert (deep["md5_cached"], deep["md5_hashed"], deep["bytes_hashed"]) == (0, 24, frames)


def test_a_second_check_reads_no_file_its_stat_cache_knows(repo: Path, cli,
                                                           monkeypatch) -> None:
    """A failed check is not remembered, so the next one runs the content check again: every
    file whose stamp is unchanged comes from the stat cache (``--json``'s ``hashing``)."""
    flip(repo / "data/npz/day1_line-a_s01/frame_0000.npz")
    monkeypatch.chdir(repo)
    args = ("check", "--params", "params.yaml", "--no-lock", "--no-enumerate",
            "--stat-cache", "c.bin", "--json")
    runs = [cli(*args) for _ in range(2)]
    assert [r.code for r in runs] == [1, 1], runs[0].err
    docs = [json.loads(r.out) for r in runs]
    assert [d["checks"]["content"]["details"]["modified"] for d in docs] == [
        ["data/npz/day1_line-a_s01/frame_0000.npz"]] * 2
    assert docs[1]["reused_verdict"] is False
    assert (docs[1]["hashing"]["md5_cached"], docs[1]["hashing"]["md5_hashed"],
            docs[1]["hashing"]["bytes_hashed"]) == (24, 0, 0)


def test_an_annotation_digest_without_an_annotation_checks_no_file(tmp_path: Path) -> None:
    """Only the frame's own column falls back to the source; an annotation digest on a row
    that names no annotation is never compared with the source file."""
    (tmp_path / "f").mkdir()
    for name, data in (("a.npz", b"frame a"), ("b.npz", b"frame b"), ("b.json", b"{}")):
        (tmp_path / "f" / name).write_bytes(data)
    d = {name: md5(tmp_path / "f" / name) for name in ("a.npz", "b.npz", "b.json")}
    rows = [f"a.cu3s,0,f/a.npz,{d['a.npz']},,{'0' * 32}",
            f"b.cu3s,0,f/b.npz,{d['b.npz']},f/b.json,{d['b.json']}"]
    (tmp_path / "universe.csv").write_text(
        "source,index,materialized_path,md5,annotation,annotation_md5\n" + "\n".join(rows) + "\n")
    r = verify(DataSplitConfig(train=[Selector(kind="all")]), tmp_path / "universe.csv",
               lock=None, allow_unpinned=True)
    content = r.finding("content")
    assert (content.status, content.summary) == ("ok", "3 files match their recorded md5")
    assert r.ok, r.render()
