"""An error about a setting names where the setting came from: the flag the user typed, or the
params key it was read from, with how to set that value aside (``--no-params``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.files import write_universe_csv

PIPELINE_EXPORT = ("export:\n  to: cuvis-ai\n  universe: u.csv\n  splits: s.json\n"
                   "  out: data/g.yaml\n  batch_size: 4\n")


@pytest.fixture
def split(tmp_path: Path, cli, monkeypatch) -> Path:
    """A baked split (s.json) over a 6-source universe (u.csv), in the current folder."""
    monkeypatch.chdir(tmp_path)
    write_universe_csv(tmp_path / "u.csv", [(f"s{k}.npz", 0) for k in range(6)])
    r = cli("bake", "--no-params", "--universe", "u.csv", "--out", "s.json")
    assert r.code == 0, r.err
    return tmp_path


def test_a_params_value_is_blamed_on_the_params_file_not_on_a_flag(split: Path, cli) -> None:
    (split / "params.yaml").write_text(PIPELINE_EXPORT)
    r = cli("export", "--to", "glovita", "--out-dir", "gv")
    assert r.code == 2
    assert r.err.count("\n") == 1
    assert "params.yaml: export.out is for --to cuvis-ai" in r.err
    assert "--out is" not in r.err and "did you mean --out-dir?" not in r.err  # never typed
    assert "delete 'out' from the 'export' section of params.yaml" in r.err
    assert "--no-params" in r.err
    assert not (split / "gv").exists()
    # the way out the message names works
    r = cli("export", "--to", "glovita", "--out-dir", "gv", "--no-params",
            "--universe", "u.csv", "--splits", "s.json")
    assert r.code == 0, r.err
    assert set(json.loads((split / "gv/splits.json").read_text())) == {"train", "val", "test"}


def test_a_typed_flag_is_blamed_on_the_flag(split: Path, cli) -> None:
    r = cli("export", "--to", "glovita", "--universe", "u.csv", "--splits", "s.json",
            "--out", "g.json")
    assert r.code == 2
    assert "--out is for --to cuvis-ai" in r.err and "did you mean --out-dir?" in r.err
    assert "params.yaml" not in r.err  # nothing came from a file
    assert not (split / "g.json").exists()


def test_the_format_from_params_is_named_by_its_key(split: Path, cli) -> None:
    (split / "params.yaml").write_text("export:\n  to: glovita\n  batch_size: 4\n")
    r = cli("export", "--universe", "u.csv", "--splits", "s.json", "--out-dir", "gv")
    assert r.code == 2
    assert ("params.yaml: export.batch_size is for --to cuvis-ai (one data-group file); "
            "glovita (from params.yaml: export.to) writes a folder") in r.err
    assert "--to glovita" not in r.err


def test_bake_names_where_conflicting_settings_came_from(split: Path, cli) -> None:
    (split / "params.yaml").write_text("bake:\n  universe: u.csv\n  folds: 3\n")
    r = cli("bake", "--out", "x.json")
    assert r.code == 2
    assert "params.yaml: bake.folds writes one splits file per fold: give --out-dir DIR" in r.err
    assert "delete 'folds' from the 'bake' section of params.yaml" in r.err
    r = cli("bake", "--no-params", "--universe", "u.csv", "--folds", "3")
    assert r.code == 2 and r.err.startswith("dvc-cuvis: error: --folds writes")
    assert "params.yaml" not in r.err
    (split / "params.yaml").write_text("bake:\n  universe: u.csv\n  base: s.json\n")
    r = cli("bake", "--out", "x.json", "--from-csv")
    assert r.code == 2
    assert ("choose one of --from-csv, --rule, --base: --from-csv and params.yaml: bake.base "
            "are both set") in r.err
    assert "delete 'base' from the 'bake' section" in r.err
    (split / "params.yaml").write_text("bake:\n  universe: u.csv\n  from_soma: soma.csv\n")
    r = cli("bake", "--out", "x.json", "--from-glovita", "g.json")
    assert r.code == 2
    assert "--from-glovita and params.yaml: bake.from_soma are both set" in r.err
    (split / "params.yaml").write_text("bake:\n  universe: u.csv\n  folds: 2\n  rule: s.json\n")
    r = cli("bake", "--out-dir", "folds")
    assert r.code == 2
    assert "params.yaml: bake.folds combines with a strategy, not with params.yaml: bake.rule" \
        in r.err
    assert not (split / "x.json").exists() and not (split / "folds").exists()


def test_report_names_a_repo_read_from_params(split: Path, cli) -> None:
    (split / "params.yaml").write_text("report:\n  universe: u.csv\n  splits: s.json\n"
                                       "  repo: ../elsewhere\n")
    r = cli("report", "--no-check")
    assert r.code == 2
    assert "params.yaml: report.repo names where --base REV is read: give --base too" in r.err
    assert "--no-params" in r.err
    r = cli("report", "--no-params", "--universe", "u.csv", "--splits", "s.json",
            "--repo", "../elsewhere")
    assert r.code == 2 and "error: --repo names where --base REV is read" in r.err


def test_a_missing_file_names_the_params_key_that_named_it(tmp_path: Path, cli,
                                                           monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.json").write_text("{}")
    (tmp_path / "params.yaml").write_text("resolve:\n  universe: nowhere.csv\n  splits: s.json\n"
                                          "bake:\n  universe: u2.csv\n")
    r = cli("resolve")
    assert r.code == 2
    assert ("nowhere.csv: universe file not found; give --universe PATH (nowhere.csv is named "
            "by params.yaml: resolve.universe)") in r.err
    r = cli("bake")
    assert r.code == 2 and "(u2.csv is named by params.yaml: bake.universe)" in r.err
    r = cli("resolve", "--universe", "typed.csv")  # a typed flag is the user's own words
    assert r.code == 2 and r.err.rstrip().endswith("typed.csv: universe file not found; give "
                                                  "--universe PATH")
    (tmp_path / "params.yaml").write_text("bake:\n  universe: u.csv\n")
    r = cli("check")  # the default path: no params key named it
    assert r.code == 2 and r.err.rstrip().endswith("splits.json: splits file not found; give "
                                                  "--splits PATH")


def test_a_missing_dataset_root_names_the_params_key(tmp_path: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text("enumerate:\n  format: npz\n  root: data/nope\n")
    r = cli("enumerate")
    assert r.code == 2
    assert ("data/nope: dataset root not found or not a directory (named by params.yaml: "
            "enumerate.root)") in r.err
    r = cli("enumerate", "--root", "data/typed")
    assert r.code == 2 and "data/typed: dataset root not found" in r.err
    assert "params.yaml" not in r.err
    assert not (tmp_path / "universe.csv").exists()
