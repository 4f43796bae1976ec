"""A whole bake run is one library call (``bake_run`` -> ``BakeResult`` -> ``write_bake``) that
writes what the CLI writes, and its option errors name the parameter a Python caller typed
while the CLI names the flag or params key its user gave."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from dvc_cuvis.baking import BakeOptions, bake, bake_run, write_bake
from dvc_cuvis.cli._settings import option_named
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.errors import OptionError
from dvc_cuvis.model.universe import Universe
from tests.helpers.shell import sh

ROWS = "".join(f"day{k}/s.cu3s,0-1\n" for k in range(8))


def _universe(d: Path) -> Path:
    (d / "u.csv").write_text("source,index\n" + ROWS)
    return d / "u.csv"


def test_option_errors_name_the_parameter_in_python_and_the_flag_in_the_cli() -> None:
    uni = Universe.from_records([{"source": f"s{k}", "index": 0} for k in range(6)])
    cases = [
        (lambda: BakeOptions(folds=3).check_outputs(),
         "folds writes one splits file per fold: give out_dir"),
        (lambda: bake(uni, BakeOptions(folds=2), from_csv=True),
         "folds combines with a strategy, not with from_csv"),
        (lambda: BakeOptions(rule="r.json", base="b.json").check(),
         "choose one of from_csv, rule, base: rule and base are both set"),
        (lambda: BakeOptions(from_soma="a.csv", from_indices="i.npz").check_outputs(),
         "choose one of from_glovita, from_soma, from_indices: from_soma and from_indices"),
        (lambda: BakeOptions(val_ratio=-0.5).check(), "val_ratio must be a number in [0, 1)"),
        (lambda: BakeOptions(buffer=-1).check(), "buffer must be a whole number"),
        (lambda: BakeOptions(folds=1).check(), "folds: folds must be 0 (off) or at least 2"),
    ]
    errors = []
    for call, text in cases:
        with pytest.raises(OptionError) as info:
            call()
        assert str(info.value).startswith(text), str(info.value)
        assert "--" not in str(info.value)  # no flag a Python caller never typed
        errors.append(info.value)
    # the CLI names each parameter as its user gave it: the flag typed, else the default's flag
    args = argparse.Namespace(command="bake", no_params=True, params=None, folds=3,
                              from_csv=True)
    s = Settings(args)
    named = [option_named(e, s) for e in errors[:3]]
    assert named[0] == "--folds writes one splits file per fold: give --out-dir DIR"
    assert named[1] == "--folds combines with a strategy, not with --from-csv"
    assert named[2].startswith("choose one of --from-csv, --rule, --base: the default of "
                               "--rule and the default of --base are both set")


def test_bake_run_writes_what_the_cli_writes(tmp_path: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _universe(tmp_path)
    sh("git", "init", "-q", cwd=tmp_path)
    assert cli("bake", "--no-params", "--universe", "u.csv", "--out", "splits.json",
               "--metrics", "m.json").code == 0
    sh("git", "add", "u.csv", "splits.json", "m.json", cwd=tmp_path)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "seed 0",
       cwd=tmp_path)
    before = (tmp_path / "splits.json").read_bytes()
    opts = BakeOptions(universe="u.csv", out="splits.json", metrics="m.json", plots="p",
                       seed=5, group_by="source")
    result = bake_run(opts)
    assert (tmp_path / "splits.json").read_bytes() == before  # nothing written yet
    assert result.moves and all(" moved from " in ln for ln in result.moves), result.moves
    assert set(result.moves) <= set(result.warnings)
    write_bake(result, opts)
    r = cli("bake", "--no-params", "--universe", "u.csv", "--out", "cli.json", "--metrics",
            "cm.json", "--plots", "cp", "--seed", "5", "--group-by", "source")
    assert r.code == 0 and r.out == result.summary(opts).replace("splits.json", "cli.json") + "\n"
    assert (tmp_path / "cli.json").read_bytes() == (tmp_path / "splits.json").read_bytes()
    assert (tmp_path / "cm.json").read_bytes() == (tmp_path / "m.json").read_bytes()
    for name in ("stages.json", "categories.json", "groups.json"):
        assert (tmp_path / "cp" / name).read_bytes() == (tmp_path / "p" / name).read_bytes()
    folds = BakeOptions(universe="u.csv", folds=2, out_dir="f", metrics="fm.json")
    result = bake_run(folds)
    write_bake(result, folds)
    assert result.folded and sorted(p.name for p in (tmp_path / "f").iterdir()) == [
        "fold-0.json", "fold-1.json"]
    assert result.summary(folds) == "baked 2 folds (hash) -> f/fold-*.json"
