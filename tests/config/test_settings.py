"""One settings rule for every verb: flag > params section > default; typos are errors."""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import pytest

from dvc_cuvis.cli import build_parser
from tests.helpers.files import FIXTURES, write_universe_csv


def _gui(tmp: Path) -> None:
    data_dir = tmp.resolve().as_posix()
    (tmp / "s.json").write_text((FIXTURES / "gui_authored_splits.json").read_text()
                                .replace("{DATA_DIR}", data_dir))
    rows = [(f"{data_dir}/{d}", i) for d in ("day3/b.cu3s", "day2/a.cu3s") for i in range(7)]
    write_universe_csv(tmp / "u.csv", rows)


def test_repository_root_params_apply_from_a_subfolder(tmp_path: Path, cli, monkeypatch) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "data").mkdir()
    _gui(tmp_path / "data")
    (tmp_path / "params.yaml").write_text(
        "resolve:\n  universe: data/u.csv\n  splits: data/s.json\n")
    sub = tmp_path / "notebooks" / "deep"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    r = cli("resolve", "--json")  # paths in the file are relative to the file's folder
    assert r.code == 0, r.err
    assert len(json.loads(r.out)["val"]) == 3
    r = cli("resolve", "--json", "--no-params")
    assert r.code == 2 and "splits.json: splits file not found" in r.err
    r = cli("resolve", "--json", "--no-params", "--params", "x.yaml")
    assert r.code == 2 and "contradict" in r.err


def test_flag_wins_over_params_and_params_over_default(tmp_path: Path, cli, monkeypatch) -> None:
    universe = write_universe_csv(tmp_path / "u.csv", [(f"s{i}", 0) for i in range(40)])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(
        f"bake:\n  universe: {universe.name}\n  out: a.json\n  val_ratio: 0.5\n")
    assert cli("bake").code == 0
    assert cli("bake", "--val-ratio", "0.25", "--out", "b.json").code == 0
    assert cli("bake", "--no-params", "--universe", "u.csv", "--out", "c.json").code == 0

    a, b, c = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json", "c.json"))
    assert a != b and b != c and a != c  # 0.5 (params), 0.25 (flag), 0.2 (default)


@pytest.mark.parametrize(("verb", "section", "key", "hint"), [
    ("bake", "bake", "val_ratoi", "did you mean 'val_ratio'?"),
    ("check", "bake", "val_ratoi", "did you mean 'val_ratio'?"),  # check reads bake's paths
    ("check", "check", "univers", "did you mean 'universe'?"),
    ("check", "enumerate", "formt", "did you mean 'format'?"),  # ... and enumerate's options
    ("materialize", "materialize", "outdir", "did you mean 'out_dir'?"),
])
def test_unknown_params_key_is_an_error_naming_the_closest(
    tmp_path: Path, cli, monkeypatch, verb: str, section: str, key: str, hint: str
) -> None:
    monkeypatch.chdir(tmp_path)
    write_universe_csv(tmp_path / "universe.csv", [("a", 0), ("b", 0)])
    (tmp_path / "params.yaml").write_text(f"{section}:\n  {key}: 0.3\nmytrainer:\n  lr: 1\n")
    r = cli(verb)
    assert r.code == 2
    assert f"params.yaml: unknown key '{key}' in section '{section}'; {hint}" in r.err
    assert r.err.count("\n") == 1
    assert not (tmp_path / "splits.json").exists()  # a refused command writes nothing


def test_params_values_are_typed_and_choices_checked(tmp_path: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_universe_csv(tmp_path / "universe.csv", [("a", 0), ("b", 0)])
    (tmp_path / "params.yaml").write_text("bake:\n  strategy: hsh\n")
    r = cli("bake")
    assert r.code == 2 and "bake.strategy: 'hsh' is not one of" in r.err
    assert "did you mean 'hash'?" in r.err
    (tmp_path / "params.yaml").write_text("bake:\n  seed: true\n")
    r = cli("bake")
    assert r.code == 2 and "bake.seed must be int, got True" in r.err


def test_no_abbreviations_and_the_verbs_usage_with_the_closest_flag(tmp_path: Path, cli,
                                                                    monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = cli("export", "--to", "glovita", "--out-dri", "g")
    assert r.code == 2
    assert "usage: dvc-cuvis export" in r.err
    assert "unrecognized arguments: --out-dri g; did you mean --out-dir?" in r.err
    assert not (tmp_path / "g").exists()
    r = cli("bake", "--val-ratoi", "0.3")
    assert r.code == 2 and "usage: dvc-cuvis bake" in r.err and "--val-ratio?" in r.err


def _verbs() -> dict[str, argparse.ArgumentParser]:
    return build_parser()[1]


def test_every_verb_and_option_is_described() -> None:
    top = build_parser()[0].format_help()
    for name, p in _verbs().items():
        assert p.description, name
        assert name in top
        assert "exit codes: 0 ok, 1 a check failed, 2 bad input or usage" in p.format_help()
        for a in p._actions:
            if not a.option_strings or a.dest in ("help",):
                continue
            assert a.help, (name, a.option_strings)
            if a.dest not in ("params", "no_params", "json", "md"):
                assert "default" in a.help or "required" in a.help, (name, a.option_strings)


def test_a_missing_pipeline_output_suggests_dvc_repro(tmp_path: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    (tmp_path / "params.yaml").write_text("resolve:\n  universe: u.csv\n  splits: s.json\n")
    for verb in ("check", "resolve", "report", "export"):
        args = [verb, "--to", "soma"] if verb == "export" else [verb]
        r = cli(*args)
        assert r.code == 2, verb
        assert "s.json: splits file not found; run `dvc repro` to create it" in r.err, verb
        assert r.err.count("\n") == 1


def test_other_tools_sections_are_left_alone(tmp_path: Path, cli, monkeypatch) -> None:
    """A params.yaml shared with a trainer may have its own `log:` or `export:` sections."""
    monkeypatch.chdir(tmp_path)
    write_universe_csv(tmp_path / "universe.csv", [(f"s{i}", 0) for i in range(10)])
    (tmp_path / "params.yaml").write_text("log:\n  level: INFO\nexport:\n  onnx: true\n"
                                          "train:\n  lr: 0.1\n")
    r = cli("bake")
    assert r.code == 0, r.err
    r = cli("export", "--to", "soma")  # the verb whose section it is still refuses it
    assert r.code == 2 and "unknown key 'onnx' in section 'export'" in r.err


def test_a_negative_seed_is_one_clear_error(tmp_path: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_universe_csv(tmp_path / "universe.csv", [(f"s{i}", 0) for i in range(10)])
    for strategy in ("hash", "multilabel"):
        r = cli("bake", "--strategy", strategy, "--seed", "-5")
        assert r.code == 2 and "seed must be a non-negative integer, got -5" in r.err
        assert "internal error" not in r.err


def test_library_warnings_print_once_and_still_propagate(tmp_path: Path, cli, caplog,
                                                         monkeypatch) -> None:
    """The CLI prints a library warning as one prefixed line; notebooks' handlers still see it."""
    import logging

    monkeypatch.chdir(tmp_path)
    write_universe_csv(tmp_path / "universe.csv", [("a", 0), ("a", 1)])
    (tmp_path / "splits.json").write_text(json.dumps(
        {"train": [{"kind": "file_indices", "source": "a", "ids": [0, 5]}]}))
    r = cli("resolve", "--allow-partial")
    assert r.code == 0 and r.err.count("missing: 5") == 1  # once, though the resolver logs it
    with caplog.at_level(logging.WARNING):
        logging.getLogger("dvc_cuvis.baking.core").warning("probe %d", 7)
    assert "probe 7" in caplog.text  # the CLI's handler did not stop propagation
    r = cli("resolve", "--allow-partial")
    assert r.err.count("missing: 5") == 1
