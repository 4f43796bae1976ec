"""Each drift finding, whole, on every branch: status, summary, details and fix.

These tests build a handful of tiny files (no git, no ``dvc repro``) and compare the whole
:meth:`~dvc_cuvis.check.drift.Finding.record` of one check with what a user reads in ``check
--json``.  They run in milliseconds, so mutation testing (``scripts/mutation.sh``) reaches a
test that pins a finding's every word first, instead of running the pipeline tests until one
happens to look at it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from dvc_cuvis.check.drift import verify
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe

SOURCES = [f"s{k}.cu3s" for k in range(6)]


def _files(paths: list[str]) -> dict[str, Any]:
    return {"kind": "files", "paths": paths}


def tiny(root: Path, split: dict[str, Any], *, group: bool = False,
         constraints: list[dict[str, str]] | None = None, pin: bool = True) -> Path:
    """universe.csv (6 one-frame sources, groups g0 g0 g1 g1 g2 g2) and splits.json."""
    cols = "source,index" + (",group" if group else "")
    rows = "".join(f"{s},0" + (f",g{k // 2}" if group else "") + "\n"
                   for k, s in enumerate(SOURCES))
    (root / "universe.csv").write_text(cols + "\n" + rows)
    doc = {**split, "constraints": constraints or []}
    if pin:
        doc["universe_hash"] = read_universe(root / "universe.csv").hash
    (root / "splits.json").write_text(json.dumps(doc))
    return root


def record(root: Path, check: str, **kwargs: Any) -> dict[str, Any]:
    """The one finding of ``check`` (run alone with what it needs), as ``record()``."""
    kwargs.setdefault("lock", None)
    if check == "constraints":  # no summaries here: their note is tested in tests/leakage/
        kwargs.setdefault("spectral_shift", "off")
        kwargs.setdefault("wavelength_grid", "off")
    report = verify(root / "splits.json", root / "universe.csv", **kwargs)
    return report.finding(check).record()


CLEAN = {"train": [_files(SOURCES[:4])], "val": [_files(SOURCES[4:5])],
         "test": [_files(SOURCES[5:])]}
LEAKY = {"train": [_files(["s0.cu3s", "s2.cu3s", "s3.cu3s"])], "val": [_files(["s1.cu3s"])],
         "test": [_files(["s4.cu3s", "s5.cu3s"])]}  # s0/s1 share g0 across train and val
REBAKE = "re-bake with a strategy that respects the constraint (e.g. --group-by group, --ad-aware)"


# -- selection ------------------------------------------------------------------------------


def test_selection_ok_counts_every_stage(tmp_path: Path) -> None:
    tiny(tmp_path, CLEAN)
    assert record(tmp_path, "selection", checks=["selection"]) == {
        "check": "selection", "status": "ok", "details": {}, "fix": "",
        "summary": "every selector resolves fully: train=4 val=1 test=1 predict=6"}


def test_selection_an_unresolvable_selector_is_a_violation(tmp_path: Path) -> None:
    tiny(tmp_path, {"train": [{"kind": "file_indices", "source": "nowhere.cu3s", "ids": [0]}]})
    rec = record(tmp_path, "selection", checks=["selection"])
    assert rec["status"] == "violation" and rec["details"] == {}
    assert rec["summary"].startswith(f"{tmp_path / 'splits.json'}: train[0]")
    assert "nowhere.cu3s" in rec["summary"]
    assert rec["fix"] == "fix the selector, or re-bake the split against this universe"


def test_selection_partial_is_a_violation_unless_allowed(tmp_path: Path) -> None:
    tiny(tmp_path, {"train": [{"kind": "file_indices", "source": "s0.cu3s", "ids": [0, 4, 5]}],
                    "val": [_files(["s1.cu3s", "gone.cu3s"])]})
    rec = record(tmp_path, "selection", checks=["selection"])
    summary = "2 selector(s) match only partly (3 requested sample(s) absent)"
    assert (rec["status"], rec["summary"]) == ("violation", summary)
    rel = os.path.relpath(tmp_path, Path.cwd())  # the check ran in another folder
    assert rec["fix"] == ("re-bake it, keeping assignments and dropping the absent samples: "
                          f"`dvc-cuvis bake --universe {rel}/universe.csv --base "
                          f"{rel}/splits.json --out {rel}/splits.json --allow-removed`")
    partial = rec["details"]["partial"]
    assert len(partial) == 2 and "s0.cu3s" in partial[0] and "gone.cu3s" in partial[1]
    allowed = record(tmp_path, "selection", checks=["selection"], allow_partial=True)
    assert allowed == {"check": "selection", "status": "ok", "fix": "",
                       "summary": summary + "; allowed (--allow-partial)",
                       "details": {"partial": partial}}


# -- constraints ----------------------------------------------------------------------------


def test_constraints_satisfied_name_each_kind(tmp_path: Path) -> None:
    tiny(tmp_path, CLEAN, group=True, constraints=[
        {"kind": "no_split_overlap", "severity": "error"},
        {"kind": "no_source_overlap", "severity": "warn"}])
    # g2 holds s4 (val) and s5 (test): group leakage is on ("auto" with a group column)
    rec = record(tmp_path, "constraints", checks=["constraints"], group_leakage="warn")
    assert rec == {"check": "constraints", "status": "ok", "details": {}, "fix": "",
                   "summary": "no_split_overlap satisfied, no_source_overlap satisfied, "
                              "group_leakage violated (warn)"}
    off = record(tmp_path, "constraints", checks=["constraints"], group_leakage="off")
    assert off["summary"] == "no_split_overlap satisfied, no_source_overlap satisfied"


def test_constraints_an_error_violation_is_a_violation_with_every_result(tmp_path: Path) -> None:
    overlap = {**LEAKY, "test": [_files(["s4.cu3s", "s5.cu3s", "s0.cu3s"])]}
    tiny(tmp_path, overlap, group=True, constraints=[
        {"kind": "no_split_overlap", "severity": "error"},
        {"kind": "no_train_anomalous", "severity": "warn"}])
    rec = record(tmp_path, "constraints", checks=["constraints"])
    assert rec == {
        "check": "constraints", "status": "violation",
        "summary": "no_split_overlap violated, group_leakage violated",
        "details": {
            "results": {
                "no_split_overlap": "violated (error): 1 shared between train and test",
                "no_train_anomalous": "unavailable (warn): the universe has no category_ids "
                                      "column",
                "group_leakage": "violated (error): 1 group(s) span >1 of train/val/test"},
            "offending": ["s0.cu3s#0", "g0"]},
        "fix": REBAKE}


def test_constraints_without_a_reason_show_status_and_severity_only(tmp_path: Path) -> None:
    tiny(tmp_path, LEAKY, group=True, constraints=[{"kind": "no_split_overlap",
                                                     "severity": "error"}])
    rec = record(tmp_path, "constraints", checks=["constraints"], group_leakage="error")
    assert rec["status"] == "violation" and rec["summary"] == "group_leakage violated"
    assert rec["details"] == {
        "results": {"no_split_overlap": "satisfied (error)",
                    "group_leakage": "violated (error): 1 group(s) span >1 of train/val/test"},
        "offending": ["g0"]}


def test_constraints_none_declared_and_an_unresolved_split(tmp_path: Path) -> None:
    tiny(tmp_path, CLEAN)
    assert record(tmp_path, "constraints", checks=["constraints"]) == {
        "check": "constraints", "status": "ok", "summary": "no constraints declared",
        "details": {}, "fix": ""}
    tiny(tmp_path, {"train": [_files(["nowhere.cu3s"])]},
         constraints=[{"kind": "no_split_overlap", "severity": "error"}])
    assert record(tmp_path, "constraints", checks=["constraints"]) == {
        "check": "constraints", "status": "skipped", "summary": "the split does not resolve",
        "details": {}, "fix": ""}


# -- staleness ------------------------------------------------------------------------------


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _entry(root: Path, name: str) -> str:
    p = root / name
    return (f"    - path: {name}\n      hash: md5\n      md5: {_md5(p)}\n"
            f"      size: {p.stat().st_size}\n")


def piped(root: Path, *, stage_files: tuple[str, str] = ("universe.csv", "splits.json")) -> Path:
    """A bake stage in dvc.yaml and its dvc.lock entry, as ``dvc repro`` writes them."""
    tiny(root, CLEAN)
    dep, out = stage_files
    (root / "params.yaml").write_text("bake:\n  seed: 3\n")
    (root / "dvc.yaml").write_text(
        f"stages:\n  bake:\n    cmd: dvc-cuvis bake\n    deps: [{dep}]\n    params: [bake]\n"
        f"    outs:\n      - {out}:\n          cache: false\n")
    (root / "dvc.lock").write_text(
        "schema: '2.0'\nstages:\n  bake:\n    cmd: dvc-cuvis bake\n    deps:\n"
        + _entry(root, dep) + "    params:\n      params.yaml:\n        bake:\n"
        "          seed: 3\n    outs:\n" + _entry(root, out))
    return root


def stale(root: Path, **kwargs: Any) -> dict[str, Any]:
    return record(root, "staleness", checks=["staleness"], lock=root / "dvc.lock", **kwargs)


def test_staleness_ok_names_the_stages(tmp_path: Path) -> None:
    piped(tmp_path)
    assert stale(tmp_path) == {
        "check": "staleness", "status": "ok", "summary": "matches dvc.lock (stages bake)",
        "details": {"stages": ["bake"], "changed": [], "params_changed": []}, "fix": ""}


def test_staleness_without_a_lock_is_skipped(tmp_path: Path) -> None:
    piped(tmp_path)
    assert record(tmp_path, "staleness", checks=["staleness"], lock=None) == {
        "check": "staleness", "status": "skipped", "summary": "no dvc.lock", "details": {},
        "fix": ""}


def test_staleness_an_edited_file_and_an_edited_param(tmp_path: Path) -> None:
    piped(tmp_path)
    doc = json.loads((tmp_path / "splits.json").read_text())
    (tmp_path / "splits.json").write_text(json.dumps(doc, indent=1))  # same split, new bytes
    rec = stale(tmp_path)
    assert rec == {
        "check": "staleness", "status": "drift",
        "summary": "the workspace differs from dvc.lock: 1 file(s), 0 param(s)",
        "details": {"stages": ["bake"], "changed": ["splits.json (stage bake)"],
                    "params_changed": []},
        "fix": "run the pipeline again"}  # no DVC repository here: no `dvc repro` to run
    piped(tmp_path)
    (tmp_path / ".dvc").mkdir()  # now a DVC repository: the command, run in its folder
    (tmp_path / "params.yaml").write_text("bake:\n  seed: 4\n")
    rec = stale(tmp_path)
    rel = os.path.relpath(tmp_path, Path.cwd())
    assert rec["status"] == "drift" and rec["fix"] == f"run `cd {rel} && dvc repro`"
    assert rec["summary"] == "the workspace differs from dvc.lock: 0 file(s), 1 param(s)"
    assert rec["details"]["changed"] == [] and len(rec["details"]["params_changed"]) == 1
    assert "seed" in rec["details"]["params_changed"][0]


def test_a_drift_names_only_the_stale_stages(tmp_path: Path) -> None:
    piped(tmp_path)
    (tmp_path / "raw.txt").write_text("raw\n")
    with (tmp_path / "dvc.yaml").open("a") as f:
        f.write("  enumerate:\n    cmd: dvc-cuvis enumerate\n    deps: [raw.txt]\n"
                "    outs:\n      - universe.csv:\n          cache: false\n")
    with (tmp_path / "dvc.lock").open("a") as f:
        f.write("  enumerate:\n    cmd: dvc-cuvis enumerate\n    deps:\n"
                + _entry(tmp_path, "raw.txt") + "    outs:\n" + _entry(tmp_path, "universe.csv"))
    assert stale(tmp_path)["details"]["stages"] == ["bake", "enumerate"]  # both compared, ok
    (tmp_path / "params.yaml").write_text("bake:\n  seed: 4\n")
    rec = stale(tmp_path)
    assert rec["status"] == "drift" and rec["details"]["stages"] == ["bake"]


def test_staleness_a_stage_defined_anew_in_dvc_yaml(tmp_path: Path) -> None:
    piped(tmp_path)
    yaml_file = tmp_path / "dvc.yaml"
    yaml_file.write_text(yaml_file.read_text().replace("cmd: dvc-cuvis bake",
                                                       "cmd: dvc-cuvis bake --seed 4"))
    rec = stale(tmp_path)
    assert rec["status"] == "drift"
    assert rec["details"]["changed"] == ["stage bake: command changed in dvc.yaml"]
    assert rec["summary"] == "the workspace differs from dvc.lock: 1 file(s), 0 param(s)"


def test_staleness_a_lock_without_a_stage_for_these_files_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "other.csv").write_text("x\n")
    (tmp_path / "other.json").write_text("{}\n")
    piped(tmp_path, stage_files=("other.csv", "other.json"))
    assert stale(tmp_path) == {
        "check": "staleness", "status": "skipped",
        "summary": "dvc.lock has no stage for these files", "details": {}, "fix": ""}


@pytest.mark.parametrize("text", ["stages: [\n", "schema: '2.0'\nstages: 3\n"])
def test_staleness_a_corrupt_lock_is_a_violation(tmp_path: Path, text: str) -> None:
    piped(tmp_path)
    (tmp_path / "dvc.lock").write_text(text)
    rec = stale(tmp_path)
    assert rec["status"] == "violation"
    assert rec["details"] == {"lock": str(tmp_path / "dvc.lock")}
    assert rec["summary"].startswith(str(tmp_path / "dvc.lock"))
    assert rec["fix"] == "restore dvc.lock from version control, or run the pipeline again"
    (tmp_path / ".dvc").mkdir()  # a DVC repository (git tracks no dvc.lock): rewrite it
    rel = os.path.relpath(tmp_path, Path.cwd())
    assert stale(tmp_path)["fix"] == (
        f"write it again (every stage runs): `cd {rel} && rm dvc.lock && dvc repro`")
    report = verify(tmp_path / "splits.json", tmp_path / "universe.csv",
                    lock=tmp_path / "dvc.lock")
    assert not report.ok and report.exit_code == 1
    assert "[FAIL] staleness:" in report.render()


# -- hashing: where the check's md5s came from ----------------------------------------------


def test_the_report_says_where_its_md5s_came_from(tmp_path: Path) -> None:
    from dvc_cuvis.digests.stat_cache import StatCache

    data = {f"s{k}.cu3s": bytes([k]) * (100 + k) for k in range(3)}
    for name, blob in data.items():
        (tmp_path / name).write_bytes(blob)
    rows = "".join(f"{n},0,{hashlib.md5(b).hexdigest()}\n" for n, b in data.items())
    (tmp_path / "universe.csv").write_text("source,index,md5\n" + rows)
    pin = read_universe(tmp_path / "universe.csv").hash
    (tmp_path / "splits.json").write_text(json.dumps({"train": [{"kind": "all"}],
                                                      "universe_hash": pin}))
    args = (tmp_path / "splits.json", tmp_path / "universe.csv")
    first = verify(*args, lock=None, cache=StatCache(tmp_path / "c.bin"))
    assert first.ok and not first.reused_verdict
    assert (first.hashing["md5_hashed"], first.hashing["bytes_hashed"]) == (3, 303)
    again = verify(*args, lock=None, cache=StatCache(tmp_path / "c.bin"))  # as a new process
    assert again.reused_verdict and again.hashing == dict.fromkeys(first.hashing, 0)
    assert again.findings == first.findings


# -- where the fixes run: the split's own folder, whatever form the universe comes in -------


def test_a_universe_fix_names_the_split_to_rebake_from(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    tiny(tmp_path, CLEAN)
    with open(tmp_path / "universe.csv", "a") as fh:
        fh.write("s9.cu3s,0\n")  # grown since the bake: the pin no longer matches
    monkeypatch.chdir(tmp_path)
    rec = record(tmp_path, "universe", checks=["universe"])
    assert rec["status"] == "drift"
    assert rec["fix"] == ("re-enumerate the data with the options universe.csv was made with, "
                          "then re-bake with --base splits.json to keep assignments")


def _pipeline_repo(root: Path) -> Path:
    """A DVC repository (``dvc init --no-scm``) with a pipeline and a default remote."""
    from dvc.repo import Repo

    from dvc_cuvis.repo.pull import quiet_dvc

    root.mkdir()
    with quiet_dvc():  # DVC's log handlers may hold the stream of a test that has ended
        Repo.init(str(root), no_scm=True).close()
    with open(root / ".dvc" / "config", "a") as fh:
        fh.write("    remote = store\n['remote \"store\"']\n    url = ../store\n")
    (root / "dvc.yaml").write_text("stages:\n  bake:\n    cmd: dvc-cuvis bake\n")
    return root


def _in_memory(root: Path, names: list[str]) -> Universe:
    """The universe of ``names`` (one frame each, md5 of the files under ``root``, or of
    the file's name where there is none), as a notebook builds it: no universe.csv."""

    def md5(name: str) -> str:
        p = root / name
        return _md5(p) if p.is_file() else hashlib.md5(name.encode()).hexdigest()

    return Universe.from_records([{"source": n, "index": 0, "md5": md5(n)} for n in names])


def test_an_in_memory_universe_takes_its_fixes_from_the_splits_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No universe.csv: the pipeline whose `dvc repro` fixes it is the split's."""
    repo = _pipeline_repo(tmp_path / "repo")
    for name in SOURCES[:5]:  # s5.cu3s is missing, and DVC does not track it
        (repo / name).write_bytes(name.encode())
    uni = _in_memory(repo, SOURCES)
    split = {"universe_hash": "0" * 64, "train": [_files(SOURCES[:4])],
             "val": [_files(["s4.cu3s", "gone.cu3s"])], "test": [_files(["s5.cu3s"])]}
    (repo / "splits.json").write_text(json.dumps(split))
    monkeypatch.chdir(repo)
    report = verify(repo / "splits.json", uni, lock=None)
    assert (report.splits, report.universe) == (str(repo / "splits.json"), "universe")
    assert [(f.check, f.status, f.fix) for f in report.findings] == [
        ("universe", "drift", "re-enumerate and re-bake: `dvc repro`"),
        ("content", "drift", "restore the files, or re-enumerate and re-bake: `dvc repro`"),
        ("selection", "violation", "re-bake the split: `dvc repro`"),
        ("constraints", "ok", ""),
        ("staleness", "skipped", "")]
    assert report.finding("content").details["missing"] == ["s5.cu3s"]


def test_an_in_memory_universe_not_pulled_names_the_repositorys_pull(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A frame DVC tracks (its .dvc file, as a clone has it) and nobody pulled yet."""
    repo = _pipeline_repo(tmp_path / "repo")
    for name in SOURCES[:4]:
        (repo / name).write_bytes(name.encode())
    uni = _in_memory(repo, [*SOURCES[:4], "s9.cu3s"])
    (repo / "s9.cu3s.dvc").write_text(
        f"outs:\n- md5: {hashlib.md5(b's9.cu3s').hexdigest()}\n  size: 7\n  hash: md5\n"
        "  path: s9.cu3s\n")
    (repo / "splits.json").write_text(json.dumps(
        {"universe_hash": uni.hash, "train": [_files(SOURCES[:4])], "val": [_files(["s9.cu3s"])]}))
    monkeypatch.chdir(repo)
    report = verify(repo / "splits.json", uni, lock=None, checks=["content"])
    assert [f.record() for f in report.findings] == [{
        "check": "content", "status": "not-pulled",
        "summary": "1 frames not pulled: `dvc pull`", "details": {"not_pulled": ["s9.cu3s"]},
        "fix": "`dvc pull`"}]


# -- which checks run, and how a warned report is logged ------------------------------------


def test_only_the_checks_that_need_it_resolve_the_selectors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dvc_cuvis.check import drift

    tiny(tmp_path, CLEAN)
    resolved: list[str] = []
    real = drift.check_selection

    def spy(*args: Any, **kwargs: Any) -> Any:
        resolved.append(args[3])  # the `where` its messages name
        return real(*args, **kwargs)

    monkeypatch.setattr(drift, "check_selection", spy)
    report = verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None,
                    checks=["staleness", "universe"])
    assert [(f.check, f.status) for f in report.findings] == [("universe", "ok"),
                                                             ("staleness", "skipped")]
    assert resolved == []
    for needs in ("selection", "constraints", "content"):
        verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None, checks=[needs])
    assert resolved == [str(tmp_path / "splits.json")] * 3


def test_a_warned_report_is_the_log_records_argument(tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """The report is data, never a format string: a handler gets it whole in ``args``."""
    import logging

    from dvc_cuvis.check.drift import ensure

    (tmp_path / "100%").mkdir()  # a '%' in the text a handler formats
    tiny(tmp_path / "100%", CLEAN)
    with open(tmp_path / "100%" / "universe.csv", "a") as fh:
        fh.write("s9.cu3s,0\n")
    report = verify(tmp_path / "100%" / "splits.json", tmp_path / "100%" / "universe.csv",
                    lock=None)
    with caplog.at_level(logging.WARNING, logger="dvc_cuvis.check.drift"):
        assert ensure(report, "warn") is report
    (rec,) = caplog.records
    assert "100%" in report.render()
    assert (rec.msg, rec.args) == ("%s", (report.render().rstrip(),))


# -- a re-scan through the check's own cache (current=EnumerateOptions) --------------------


def test_a_deep_rescan_takes_a_damaged_frame_for_modified_and_hashes_each_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The door (a frame materialize would trip on is refused) is enumerate's, not the
    check's: the check compares md5s, and under ``deep`` its content check takes the md5s
    the re-scan computed in this call instead of looking each file up again."""
    import numpy as np

    from dvc_cuvis.model.universe_io import write_universe
    from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
    from tests.helpers.files import sneaky_edit

    monkeypatch.chdir(tmp_path)
    for i in range(3):
        (tmp_path / "d").mkdir(exist_ok=True)
        np.savez(tmp_path / "d" / f"f{i}.npz", cube=np.full((4, 5, 3), 7.25, np.float32),
                 wavelengths=np.array([500, 600, 700], np.int32),
                 class_mask=np.zeros((4, 5), np.uint8), mask=np.zeros((4, 5), np.int32),
                 source=np.array(f"f{i}"))
    opts = EnumerateOptions(format="npz", root=tmp_path / "d", out_dir=tmp_path)
    assert opts.verify  # enumerate's door is on
    uni, _ = enumerate_universe(opts)
    write_universe(uni, tmp_path / "universe.csv")
    pin = read_universe(tmp_path / "universe.csv").hash
    (tmp_path / "splits.json").write_text(json.dumps({"train": [{"kind": "all"}],
                                                      "universe_hash": pin}))
    sneaky_edit(tmp_path / "d" / "f1.npz")  # its CRC fails: the door would refuse it
    report = verify(tmp_path / "splits.json", tmp_path / "universe.csv", current=opts,
                    deep=True, lock=None)
    assert [(f.check, f.status) for f in report.findings] == [
        ("universe", "drift"), ("content", "drift"), ("selection", "ok"),
        ("constraints", "ok"), ("staleness", "skipped")]
    assert report.finding("content").details["modified"] == ["d/f1.npz"]
    assert (report.hashing["md5_hashed"], report.hashing["md5_cached"]) == (3, 0)


# -- details in words (check/readable.py: detail_lines and its duplicate/neighbour pairs) ----


def _pair(a: str, b: str, **extra: object) -> dict[str, object]:
    return {"a": a, "a_stage": "train", "b": b, "b_stage": "test", **extra}


def test_detail_lines_words_every_kind_of_value_and_cuts_lists_at_the_limit() -> None:
    """Each detail is one line in words: lists cut to the limit (8 unless told) and counted,
    mappings as ``k=v`` with nested values worded, empty values and None left out, pairs
    as ``a (stage) ↔ b (stage)`` with their count (given, or the pairs listed)."""
    from dvc_cuvis.check.readable import detail_lines

    nine = [{"a": 1, "b": None, "c": "", "d": [1, 2]}, [3, 4]] + [f"f{i}" for i in range(2, 9)]
    plain = {"none": None, "blank": "", "word": "x", "zero": 0, "empty_list": [],
             "nine": nine, "empty_map": {},
             "map": {"n": 3, "sub": {"x": 1, "y": None}, "ids": ["a", "b"]}}
    assert detail_lines(plain) == [
        "word: x", "zero: 0",
        "nine: a 1; d 1, 2, 3, 4, f2, f3, f4, f5, f6, f7 (+1 more)",
        "map: n=3, sub: x 1, ids: a, b"]
    pairs = {
        "adjacent_pairs": {"k": 2, "count": 3,
                           "pairs": [_pair("r#0", "r#1"), _pair("r#2", "r#3"),
                                     _pair("r#4", "r#5")]},
        "duplicate_pairs": {
            "content_duplicate": {"count": 5, "pairs": [_pair("p", "q"), _pair("s", "t"),
                                                        _pair("u", "v")]},
            "near_duplicate": {"pairs": [_pair("m", "n", distance=3)]},
            "unsigned": {"count": 4, "frames": ["u1", "u2", "u3"], "fix": "dvc-cuvis sign d"}}}
    assert detail_lines(pairs, limit=2) == [
        "neighbouring frames (within 2): 3 pair(s): r#0 (train) ↔ r#1 (test); "
        "r#2 (train) ↔ r#3 (test) (+1 more)",
        "content duplicates: 5 pair(s): p (train) ↔ q (test); s (train) ↔ t (test) (+3 more)",
        "near duplicates: 1 pair(s): m (train) ↔ n (test) (Hamming 3)",
        "unsigned: 4 frame(s) without a signature: u1, u2 (+2 more); "
        "sign them: dvc-cuvis sign d"]
    uncounted = {"duplicate_pairs": {"unsigned": {"frames": ["u1"], "fix": "sign"}}}
    assert detail_lines(uncounted, limit=2) == [
        "unsigned: 1 frame(s) without a signature: u1; sign them: sign"]
