"""`dvc-cuvis resolve`: JSON contract, readable summary, exit codes, errors without tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import run_subprocess
from tests.helpers.files import gui_setup, write_universe_csv


def test_resolve_json_is_exact_membership(tmp_path: Path, cli) -> None:
    universe, splits, d = gui_setup(tmp_path)
    r = cli("resolve", "--universe", universe, "--splits", splits, "--json")
    assert r.code == 0, r.err
    got = json.loads(r.out)
    assert list(got) == ["train", "val", "test", "predict"]
    assert got["val"] == [f"{d}/day2/a.cu3s#5", f"{d}/day3/b.cu3s#0", f"{d}/day3/b.cu3s#6"]
    assert got["predict"] == sorted(got["predict"], key=lambda u: (u.rsplit("#", 1)[0],
                                                                   int(u.rsplit("#", 1)[1])))
    assert len(got["predict"]) == 14
    assert r.out.count("\n") == 1  # one JSON object on one line


def test_resolve_summary(tmp_path: Path, cli) -> None:
    universe, splits, _ = gui_setup(tmp_path)
    r = cli("resolve", "--universe", universe, "--splits", splits)
    assert r.code == 0
    assert "train            7        2" in r.out
    assert "predict         14        2       2  (empty: whole universe)" in r.out
    assert "constraint no_split_overlap [error]: satisfied" in r.out
    assert "(baked)" in r.out and "DIFFERS (pinned cecbeb06efa1)" in r.out


def test_resolve_constraint_failure_exit_1_still_prints_json(tmp_path: Path, cli) -> None:
    universe = write_universe_csv(tmp_path / "u.csv", [("a", 0), ("a", 1)])
    splits = tmp_path / "s.json"
    splits.write_text(json.dumps({
        "train": [{"kind": "all"}], "test": [{"kind": "file_indices", "source": "a", "ids": [1]}],
        "constraints": [{"kind": "no_split_overlap", "severity": "error"}],
    }))
    r = cli("resolve", "--universe", universe, "--splits", splits, "--json")
    assert r.code == 1
    assert json.loads(r.out)["test"] == ["a#1"]
    assert "check failed" in r.err and "no_split_overlap violated" in r.err


def test_resolve_is_purely_logical(tmp_path: Path, cli) -> None:
    universe = tmp_path / "u.csv"
    universe.write_text("source,index,materialized_path\n/nonexistent/x.cu3s,0,gone/x.npz\n")
    splits = tmp_path / "s.json"
    splits.write_text(json.dumps({"train": [{"kind": "files", "paths": ["/nonexistent/x.cu3s"]}]}))
    r = cli("resolve", "--universe", universe, "--splits", splits, "--json")
    assert r.code == 0 and json.loads(r.out)["train"] == ["/nonexistent/x.cu3s#0"]


def test_resolve_reads_params_section(tmp_path: Path, cli, monkeypatch) -> None:
    universe, splits, _ = gui_setup(tmp_path)
    universe = universe.rename(tmp_path / "u.csv")
    splits = splits.rename(tmp_path / "s.json")
    (tmp_path / "params.yaml").write_text(
        f"resolve:\n  universe: {universe.name}\n  splits: {splits.name}\n")
    monkeypatch.chdir(tmp_path)
    r = cli("resolve", "--json", "--params", "params.yaml")
    assert r.code == 0 and len(json.loads(r.out)["train"]) == 7
    r = cli("resolve", "--json")  # ./params.yaml is read without being named
    assert r.code == 0 and len(json.loads(r.out)["train"]) == 7
    r = cli("resolve", "--json", "--no-params")  # ... unless told not to
    assert r.code == 2 and "splits.json: splits file not found" in r.err
    (tmp_path / "params.yaml").write_text("resolve: [1, 2]\n")
    r = cli("resolve", "--json", "--params", "params.yaml")
    assert r.code == 2 and "section 'resolve' must be a mapping" in r.err
    r = cli("resolve", "--params", "nope.yaml")
    assert r.code == 2 and "nope.yaml: params file not found" in r.err


def test_bad_inputs_exit_2_one_line_no_traceback(tmp_path: Path, cli) -> None:
    universe = write_universe_csv(tmp_path / "u.csv", [("a", 0)])
    splits = tmp_path / "s.json"
    cases = {
        "zero": ({"train": [{"kind": "file_indices", "source": "b", "ids": [0]}]},
                 "train[0]: selector file_indices(source='b') matched 0 samples"),
        "schema": ({"train": [{"kind": "nope"}]}, "invalid field train[0].kind"),
        "category": ({"train": [{"kind": "categories", "any_of": ["x"]}]},
                     "needs a category name->id map"),
        "range": ({"train": [{"kind": "file_indices", "source": "a", "ids": ["3-1"]}]},
                  "start 3 must be <= stop 1"),
    }
    for name, (doc, message) in cases.items():
        splits.write_text(json.dumps(doc))
        r = cli("resolve", "--universe", universe, "--splits", splits)
        assert r.code == 2, name
        assert message in r.err, (name, r.err)
        assert "Traceback" not in r.err and r.err.count("\n") == 1, r.err
    r = cli("resolve", "--universe", tmp_path / "missing.csv", "--splits", splits)
    assert r.code == 2 and "missing.csv: universe file not found" in r.err
    r = cli("resolve", "--bogus")
    assert r.code == 2 and "unrecognized arguments" in r.err


def test_console_entry_point_subprocess(tmp_path: Path) -> None:
    universe, splits, _ = gui_setup(tmp_path)
    r = run_subprocess("resolve", "--universe", universe, "--splits", splits, "--json")
    assert r.code == 0 and len(json.loads(r.out)["test"]) == 3
    bad = run_subprocess("resolve", "--universe", splits, "--splits", splits)
    assert bad.code == 2 and "Traceback" not in bad.err
    assert "missing required column(s)" in bad.err
