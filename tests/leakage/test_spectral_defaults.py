"""The spectral constraints find the summaries where the duplicate constraints do (the
universe's own folder when materialize wrote them), say once when they cannot run with the
command that produces the summaries (pasted here), keep the verdict memo until a shard
changes, and ``check`` words every pair, grid and test (no Python repr); ``--json`` names
the folder used.  Real frames and shards on disk, checked in-process."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from dvc_cuvis.check.drift import verify
from dvc_cuvis.check.summaries import KEPT, read_split_summaries
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.materialize import summary_store
from dvc_cuvis.materialize.summary_store import read_shard, shard_files
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe_io import read_universe
from tests.helpers.leakage import planted_copy, planted_summaries


def _spectra(report) -> dict:
    return report.finding("constraints").details.get("spectra", {})


def test_the_spectral_checks_read_the_universes_own_summaries(tmp_path: Path) -> None:
    planted_summaries(tmp_path, drop_band=True)  # one val recording with a band less: two grids
    mat = tmp_path / "mat"  # a materialized folder: universe.csv and splits.json beside summaries/
    for name in ("universe.csv", "splits.json"):
        shutil.copy(tmp_path / name, mat / name)
    found = verify(mat / "splits.json", mat / "universe.csv", lock=None,
                   checks=("selection", "constraints")).finding("constraints")
    assert found.status == "violation" and "wavelength_grid violated" in found.summary
    assert "missing_summaries" not in found.details["spectra"]


def test_a_check_keeps_three_fields_a_frame_and_one_list_a_grid(tmp_path: Path) -> None:
    planted_summaries(tmp_path, drop_band=True)  # two grids: 30 bands, and 29 in one recording
    res = resolve(load_splits(tmp_path / "splits.json"), read_universe(tmp_path / "universe.csv"))
    read = read_split_summaries(res, tmp_path / "mat")
    stored = {n: e for shard in shard_files(tmp_path / "mat") for n, e in read_shard(shard).items()}
    assert read.entries and set(read.entries) <= set(stored)
    for name, entry in read.entries.items():  # the fields the constraints read, as stored
        assert entry == {k: stored[name][k] for k in KEPT if k in stored[name]}
        assert set(entry) == {"mean", "wavelengths", "signature"} < set(stored[name])
    grids = {id(e["wavelengths"]): len(e["wavelengths"]) for e in read.entries.values()}
    assert sorted(grids.values()) == [29, 30]  # one list per grid, shared by its frames


def test_the_spectral_checks_say_once_when_they_cannot_run(tmp_path: Path, cli,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    planted_copy(tmp_path)  # npz frames, a raw universe.csv and its split; out/ materialized
    monkeypatch.chdir(tmp_path)
    raw = verify("splits.json", "universe.csv", lock=None, content_duplicate="off")
    note = _spectra(raw)["missing_summaries"]
    assert raw.ok and note["constraints"] == ["wavelength_grid", "spectral_shift"]
    assert note["count"] == 13 and len(note["frames"]) == 5 and note["more"] == "(+8 more)"
    assert "no --summaries DIR given" in note["why"]
    assert raw.render().count("not run") == 1  # said once, for both constraints
    assert note["fix"] == ("dvc-cuvis materialize --universe universe.csv --splits splits.json "
                           "--out-dir materialized")
    run = cli(*note["fix"].split()[1:])  # pasted as printed
    assert run.code == 0, run.err
    ran = verify("splits.json", "universe.csv", lock=None, content_duplicate="off",
                 summaries="materialized")
    assert "missing_summaries" not in _spectra(ran) and _spectra(ran)["wavelength_grid"]
    one = verify("splits.json", "universe.csv", lock=None, wavelength_grid="off")
    assert _spectra(one)["missing_summaries"]["constraints"] == ["spectral_shift"]
    off = verify("splits.json", "universe.csv", lock=None, wavelength_grid="off",
                 spectral_shift="off")
    assert "spectra" not in off.finding("constraints").details  # off says nothing
    # a materialized folder with a shard gone: its frames are named, the rest checked
    shard = next(s for s in shard_files(Path("out")) if "rec0" in s.as_posix())
    shard.unlink()
    part = verify("out/splits.json", "out/universe.csv", lock=None, content_duplicate="off")
    note = _spectra(part)["missing_summaries"]
    assert note["count"] == 3 and note["frames"] == [
        "rec0/f0.npz#0", "rec0/f1.npz#0", "rec0/f2.npz#0"]
    assert "incomplete" in note["line"] and _spectra(part)["without_summary"] == 3
    assert note["fix"] == "dvc-cuvis materialize --sign-only --out-dir out"
    assert cli(*note["fix"].split()[1:]).code == 0
    whole = verify("out/splits.json", "out/universe.csv", lock=None, content_duplicate="off")
    assert "missing_summaries" not in _spectra(whole)


def test_a_clean_verdict_with_summaries_is_kept_until_a_shard_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planted_summaries(tmp_path)
    reads: list[Path] = []
    real = summary_store.read_shard

    def counted(path: Path) -> dict:
        reads.append(path)
        return real(path)

    for module in (summary_store, sys.modules.get("dvc_cuvis.check.summaries")):
        if module is not None:  # wherever the check looks the shard reader up
            monkeypatch.setattr(module, "read_shard", counted)
    cache = StatCache(tmp_path / "stat-cache.bin")

    def check(**kw: object):
        reads.clear()
        return verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None,
                      cache=cache, checks=("selection", "constraints"),
                      summaries=tmp_path / "mat", **kw)

    first = check()
    assert first.ok and not first.reused_verdict and reads
    again = check()
    assert again.reused_verdict and reads == []  # no summary read
    assert again.finding("constraints") == first.finding("constraints")
    shard = shard_files(tmp_path / "mat")[0]
    st = shard.stat()
    os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # touched
    touched = check()
    assert not touched.reused_verdict and reads
    assert check().reused_verdict
    assert not check(wavelength_grid="warn").reused_verdict  # a severity is in the key
    os.utime(tmp_path / "splits.json", ns=(st.st_atime_ns, st.st_mtime_ns + 2 * 10**9))
    assert not check().reused_verdict and reads  # the split changed


def test_check_words_pairs_grids_and_tests_and_json_names_the_folder_used(
        tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    planted_copy(tmp_path / "npz")  # an exact copy across stages, neighbours across stages
    planted_summaries(tmp_path, moved=2.0)  # near copies (the synthetic scenes), two grids
    (tmp_path / ".git").mkdir()  # the repository the folder is named relative to
    pair = r"\S+#\d+ \((train|val|test)\) ↔ \S+#\d+ \((train|val|test)\)"
    texts = []
    for root, summaries in ((tmp_path / "npz", "out"), (tmp_path, "mat")):
        monkeypatch.chdir(root)
        run = cli("check", "--no-params", "--universe", "universe.csv", "--splits",
                  "splits.json", "--no-lock", "--summaries", summaries,
                  "--content-duplicate", "error", "--near-duplicate", "warn")
        assert run.code == 1, run.err
        texts.append(run.out)
    text = "\n".join(texts)
    assert "{'" not in text and "[{" not in text and "['" not in text, text
    assert re.search(rf"content duplicates: 1 pair\(s\): {pair}\n", text), text
    assert re.search(rf"neighbouring frames \(within 1\): 7 pair\(s\): {pair};", text), text
    assert re.search(rf"near duplicates: \d+ pair\(s\): {pair} \(Hamming \d\);", text), text
    assert "wavelength grids: 30 bands 400–980 nm (test, train, val): 23 recording(s)" in text
    assert re.search(r"spectral shift: val vs train: \d\.\d\dσ in \d+–\d+ nm, p = ", text)
    monkeypatch.chdir(tmp_path / "mat")  # --json names the folder used, repository-relative
    run = cli("check", "--no-params", "--universe", "../universe.csv", "--splits",
              "../splits.json", "--no-lock", "--summaries", str(tmp_path / "mat") + "/",
              "--json")
    doc = json.loads(run.out)["checks"]["constraints"]["details"]["spectra"]
    assert doc["summaries"] == "mat"


# --- check/spectral.py pinned exactly: every result, reason and detail it lists, by severity ---

_REBAKE = (": re-bake the split stratified or grouped so every stage holds recordings of each "
           "condition")


def test_the_spectral_results_are_pinned_by_severity_and_by_the_summaries_read(
        tmp_path: Path) -> None:
    import dataclasses

    from dvc_cuvis.check.spectral import NO_FOLDER, check_spectral_severity, spectral_results
    from dvc_cuvis.errors import DvcCuvisError
    from dvc_cuvis.model.constraints import ConstraintResult as R

    assert check_spectral_severity("warn", "--spectral-shift") == "warn"
    with pytest.raises(DvcCuvisError) as bad:
        check_spectral_severity("loud", "--spectral-shift")
    assert str(bad.value) == "--spectral-shift must be one of error, warn, off, got 'loud'"
    by = planted_summaries(tmp_path, bright=True, drop_band=True)  # test brighter; val[0] 29 bands
    (tmp_path / ".git").mkdir()  # the folder is named "mat", repository-relative
    res = resolve(load_splits(tmp_path / "splits.json"), read_universe(tmp_path / "universe.csv"))
    read = read_split_summaries(res, tmp_path / "mat")
    said: list[tuple] = []

    def say(kinds: list[str], why: str, uids: list[str], count: int) -> dict:
        said.append((kinds, why, uids, count))
        return {"said": len(said)}

    def only(sources: set[str]):  # the read with the entries of these recordings alone
        return dataclasses.replace(read, entries={
            n: e for n, e in read.entries.items() if n.split("/")[1].rsplit(".", 2)[0] in sources})

    everyone = {s for st in by.values() for s in st}
    grid_line = ("30 bands 400–980 nm (test, train, val): day00.cu3s, day02.cu3s, day03.cu3s, "
                 "day04.cu3s, day05.cu3s and 18 more", "29 bands 400–960 nm (val): day01.cu3s")
    grid = R("wavelength_grid", "warn", "violated", 1, grid_line,
             f"the split's frames lie on 2 wavelength grids: {grid_line[0]}; {grid_line[1]}: "
             "re-materialize the odd recordings on one grid, or leave them out of the split")
    # two grids, warned; the shift off: no shift run, nothing said of it
    out, details = spectral_results(res, read, "off", "warn", say)
    assert out == [grid] and said == [] and "spectral_shift" not in details
    assert details == {"summaries": "mat", "without_summary": 0, "wavelength_grid": {
        "grids": [{"bands": 30, "nm": [400.0, 980.0], "recordings": details[
            "wavelength_grid"]["grids"][0]["recordings"], "stages": ["test", "train", "val"],
            "frames": 69}, {"bands": 29, "nm": [400.0, 960.0], "recordings": ["day01.cu3s"],
                            "stages": ["val"], "frames": 3}]}}
    # one grid: satisfied, listed only as an error; the shift (test brighter) flagged twice
    on_one = only(everyone - {by["val"][0]})
    for sev in ("warn", "error"):
        out, details = spectral_results(res, on_one, "warn", sev, say)
        shift = out[-1]
        assert out[:-1] == ([R("wavelength_grid", "error", "satisfied")] if sev == "error" else [])
        assert (shift.kind, shift.severity, shift.status, shift.count) == (
            "spectral_shift", "warn", "violated", 2)
        assert [o.split(" by ")[0] for o in shift.offending] == [
            "test's mean spectrum differs from train's", "test's mean spectrum differs from val's"]
        assert shift.reason == "; ".join(shift.offending) + _REBAKE
        assert [t["flagged"] for t in details["spectral_shift"]["tests"]] == [False, True, True]
        assert said[-1] == (["wavelength_grid", "spectral_shift"], "mat holds no summary for them",
                            said[-1][2], 72) and len(said[-1][2]) == 3
    # one recording in val and in test: nothing testable, satisfied, listed as an error only
    few = only(set(by["train"]) | {by["val"][1], by["test"][0]})
    assert spectral_results(res, few, "warn", "off", say)[0] == []
    out, details = spectral_results(res, few, "error", "off", say)
    assert out == [R("spectral_shift", "error", "satisfied", 0, (), (
        "val vs train: too few recordings to test (9+1: 10 ways to split them, the smallest "
        "p-value is 1/10) (largest difference 0.16σ in 560–600 nm); test vs train: too few "
        "recordings to test (9+1: 10 ways to split them, the smallest p-value is 1/10) (largest "
        "difference 3.39σ in 700–760 nm); test vs val: too few recordings to test (each stage "
        "needs one, both three) (largest difference 0.00σ in 400–980 nm)"))]
    # a band stored as None (JSON's NaN) is read as NaN, left out of its recording's mean
    name = next(n for n in few.entries if by["train"][0] in n)
    holed = [spectral_results(res, dataclasses.replace(few, entries={**few.entries, name: {
        **few.entries[name], "mean": [band, *few.entries[name]["mean"][1:]]}}), "error", "off",
        say) for band in (None, float("nan"))]
    assert holed[0][0] == holed[1][0] and holed[0][0][0].status == "satisfied"
    assert holed[0][1]["spectral_shift"] == holed[1][1]["spectral_shift"]
    # no test frame at all: only val vs train is tested
    out, details = spectral_results(res, only(set(by["train"]) | set(by["val"][1:])), "error",
                                    "off", say)
    assert [(t["a"], t["b"]) for t in details["spectral_shift"]["tests"]] == [("train", "val")]
    assert out == [R("spectral_shift", "error", "satisfied")]
    # no summary for any frame: each constraint not off is unavailable, the frames said
    said.clear()
    nothing = "no spectral summary in mat for any of the split's frames"
    for shift_sev, grid_sev, kind, sev in (("off", "error", "wavelength_grid", "error"),
                                           ("warn", "off", "spectral_shift", "warn")):
        out, details = spectral_results(res, only(set()), shift_sev, grid_sev, say)
        assert out == [R(kind, sev, "unavailable", 0, (), nothing)]
        assert said[-1] == ([kind], "mat holds no summary for them", said[-1][2], 72)
    # no folder: nothing listed, every frame said once, with why
    said.clear()
    assert spectral_results(res, None, "warn", "off", say) == (
        [], {"summaries": None, "missing_summaries": {"said": 1}})
    assert said == [(["spectral_shift"], NO_FOLDER, said[0][2], 72)] and len(said[0][2]) == 72


# --- check/readable.py: the spectral details in words (_spectra, _grid, _test, _num) ---------

_GRIDS = {"grids": [
    {"bands": 3, "nm": [400, 450.5, 500], "stages": ["train", "val"], "recordings": ["r1", "r2"],
     "frames": 7},
    {"bands": 2, "stages": ["test"], "recordings": ["r3"], "frames": 1}]}  # a grid without nm
_TESTS = {"tests": [
    {"a": "train", "b": "val", "recordings": [9, 3], "statistic": 3.456, "nm": [560, 600],
     "p_value": 0.01234, "flagged": True},
    {"a": "train", "b": "test", "recordings": [9, 1], "statistic": 0.5, "nm": [900],
     "p_value": None, "note": "too few recordings to test"},
    {"a": "val", "b": "test", "p_value": 0.5, "flagged": False}]}  # no nm, statistic, recordings


@pytest.mark.parametrize(("spectra", "lines"), [
    ({"summaries": "mat/summaries", "without_summary": 2,
      "missing_summaries": {"line": "2 frame(s) have no summary"},
      "wavelength_grid": _GRIDS, "spectral_shift": _TESTS},
     ["spectral summaries: mat/summaries (2 frame(s) without one)",
      "2 frame(s) have no summary",
      "wavelength grids: 3 bands 400–500 nm (train, val): 2 recording(s), 7 frame(s); "
      "2 bands (test): 1 recording(s), 1 frame(s)",
      "spectral shift: val vs train: 3.46σ in 560–600 nm, p = 0.0123 (9+3 recordings), "
      "shifted; test vs train: 0.50σ in 900 nm, no p-value (too few recordings to test); "
      "test vs val: 0.00σ in 0 nm, p = 0.5 ( recordings)"]),
    # no count of frames without one (read as 0) and a missing-summaries note without a line
    ({"summaries": "mat/summaries", "missing_summaries": {}},
     ["spectral summaries: mat/summaries"]),
    ({"summaries": None, "missing_summaries": {"line": "no folder"}}, ["no folder"]),
])
def test_check_words_the_spectral_details_whole(spectra: dict, lines: list[str]) -> None:
    from dvc_cuvis.check.readable import detail_lines
    assert detail_lines({"spectra": spectra}) == lines


def test_check_words_a_shift_in_one_band_as_its_centre() -> None:
    from dvc_cuvis.check.readable import detail_lines
    one = {"a": "train", "b": "test", "recordings": [4, 4], "statistic": 5, "nm": [900, 900],
           "p_value": 0.02, "flagged": True}
    assert detail_lines({"spectra": {"spectral_shift": {"tests": [one]}}}) == [
        "spectral shift: test vs train: 5.00σ in 900 nm, p = 0.02 (4+4 recordings), shifted"]
