"""``check`` as a library call: one frozen options value, findings that are values, and a
report that carries everything the CLI writes (on real files in a tmp folder)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from dvc_cuvis.baking import BakeOptions, bake
from dvc_cuvis.check.drift import CheckOptions, verify
from dvc_cuvis.check.facts import ContentDrift, UniverseFacts
from dvc_cuvis.check.report import DriftReport, Finding
from dvc_cuvis.errors import OptionError
from dvc_cuvis.model.splits import save_splits
from dvc_cuvis.model.universe_io import read_universe


def _split(tmp_path: Path) -> tuple[Path, Path]:
    """A baked split of a 12-sample universe, no DVC, no data files (content: skipped)."""
    uni = tmp_path / "universe.csv"
    uni.write_text("source,index\n" + "".join(f"day{k}.cu3s,0-1\n" for k in range(6)))
    (baked,) = bake(read_universe(uni), BakeOptions())
    save_splits(baked.config, tmp_path / "splits.json")
    return tmp_path / "splits.json", uni


def test_one_frozen_options_value_is_the_keyword_form(tmp_path: Path) -> None:
    splits, uni = _split(tmp_path)
    opts = CheckOptions(lock=None, checks="universe,selection", adjacent_frames="error")
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.deep = True  # type: ignore[misc]
    assert opts.checks == ("universe", "selection")  # a comma list, as the params file says
    by_value = verify(splits, uni, opts)
    by_keywords = verify(splits, uni, lock=None, checks=["universe", "selection"],
                         adjacent_frames="error")
    assert by_value == by_keywords and [f.check for f in by_value.findings] == [
        "universe", "selection"]
    # keywords override the value; "auto" is resolved once, to a path or None
    assert verify(splits, uni, opts, checks=("constraints",)).findings[0].check == "constraints"
    assert opts.resolved(tmp_path).lock is None
    assert CheckOptions().resolved(tmp_path).lock is None  # no repository: no dvc.lock
    # what the CLI writes by hand, carried by the report
    assert by_value.metrics() == {"ok": True, "universe": "ok", "selection": "ok"}
    assert by_value.plot_rows()[1] == {"check": "selection", "status": "ok", "failed": 0}
    assert json.loads(by_value.to_json())["checks"]["universe"]["status"] == "ok"
    with pytest.raises(dataclasses.FrozenInstanceError):
        by_value.splits = "other"  # type: ignore[misc]


@pytest.mark.parametrize("kwargs,param,text", [
    ({"checks": ("bogus",)}, "checks", "unknown check(s) ['bogus']"),
    ({"adjacent_k": 0}, "adjacent_k", "adjacent_k must be a whole number"),
    ({"adjacent_frames": "loud"}, "adjacent_frames", "adjacent_frames must be one of"),
    ({"wavelength_grid": "x"}, "wavelength_grid", "wavelength_grid must be one of"),
    ({"stages": ("nope",)}, "stages", "stage nope: choose from"),
])
def test_an_impossible_option_names_its_parameter(kwargs: dict[str, object], param: str,
                                                  text: str) -> None:
    with pytest.raises(OptionError) as err:
        CheckOptions(**kwargs)  # type: ignore[arg-type]
    assert err.value.param == param and text in str(err.value) and err.value.exit_code == 2


def test_the_cli_names_the_flag_or_params_key_of_a_bad_option(tmp_path: Path, cli,
                                                             monkeypatch) -> None:
    _split(tmp_path)
    monkeypatch.chdir(tmp_path)
    r = cli("check", "--no-params", "--checks", "universe,bogus", "--no-lock")
    assert r.code == 2 and r.err.count("\n") == 1
    assert "--checks: unknown check(s) ['bogus']" in r.err and "Traceback" not in r.err
    (tmp_path / "params.yaml").write_text("check:\n  checks: [bogus]\n")
    r = cli("check", "--no-lock")
    assert r.code == 2 and "params.yaml: check.checks: unknown check(s)" in r.err


def test_details_come_from_the_facts_and_a_revision_is_a_new_finding() -> None:
    facts = ContentDrift(("a.npz",), (), 1, edited_rows=(3,))
    found = Finding("content", "drift", "1 missing", fix="restore", facts=facts)
    assert found.details == {"missing": ["a.npz"], "modified": [], "affected_samples": 1,
                             "edited_rows": [3]}
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.status = "ok"  # type: ignore[misc]
    revised = dataclasses.replace(found, facts=dataclasses.replace(facts, not_pulled=1))
    assert revised.details["not_pulled"] == 1 and "not_pulled" not in found.details
    # details without facts are kept as given (a remembered verdict, a plain check)
    assert Finding("selection", "violation", "x", {"partial": ["p"]}).details == {
        "partial": ["p"]}
    # the universe finding's notes are typed: a vouched finding gets no re-scan note
    note = UniverseFacts(not_rescanned="--no-enumerate")
    assert note.details() == {"data_on_disk": "not re-scanned: --no-enumerate"}
    assert dataclasses.replace(note, vouched=True, not_rescanned="").details() == {}
    report = DriftReport("s", "u", [found])
    assert report.findings == (found,) and not report.ok


def test_the_rescan_note_is_shown_fresh_and_remembered_but_never_stored(
        tmp_path: Path) -> None:
    splits, uni = _split(tmp_path)
    opts = CheckOptions(lock=None, stat_cache=tmp_path / "cache.bin",
                        not_rescanned="no 'enumerate' section")
    first, again = verify(splits, uni, opts), verify(splits, uni, opts)
    assert not first.reused_verdict and again.reused_verdict
    for report in (first, again):
        assert report.finding("universe").details["data_on_disk"] == (
            "not re-scanned: no 'enumerate' section")
    plain = verify(splits, uni, dataclasses.replace(opts, not_rescanned=""))
    assert plain.reused_verdict and "data_on_disk" not in plain.finding("universe").details
