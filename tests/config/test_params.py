"""params.yaml sections: a misspelled verb section is refused, other tools' and verbs' are not."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from dvc_cuvis._io import read_yaml
from dvc_cuvis.cli import build_parser
from dvc_cuvis.config.params import edit_distance, misspelled_section, section
from dvc_cuvis.config.specs import OTHER_SECTIONS, VERBS
from dvc_cuvis.errors import ParamsError
from dvc_cuvis.repo.project import init_project


@pytest.mark.parametrize("a, b, d", [
    ("bake", "bake", 0), ("bkae", "bake", 1), ("bak", "bake", 1), ("bakes", "bake", 1),
    ("abke", "bake", 1), ("bkea", "bake", 2), ("baek", "bake", 1), ("make", "bake", 1),
    ("export", "report", 2), ("", "log", 3), ("log", "", 3), ("ca", "abc", 3),
    ("enumerat", "enumerate", 1), ("enumreate", "enumerate", 1), ("train", "bake", 4),
])
def test_edit_distance_counts_a_swap_of_neighbours_as_one(a: str, b: str, d: int) -> None:
    assert edit_distance(a, b) == d == edit_distance(b, a)


def test_a_section_two_edits_from_the_verb_is_its_misspelling() -> None:
    assert misspelled_section({"bkae": {"seed": 1}}, "bake") == "bkae"
    assert misspelled_section({"bkea": {}}, "bake") == "bkea"  # two edits
    assert misspelled_section({"bkeaa": {}}, "bake") is None  # three
    assert misspelled_section({"bkae": None}, "bake") == "bkae"  # an empty section too
    # the nearest wins, ties by name
    assert misspelled_section({"bkea": {}, "bkae": {}, "abke": {}}, "bake") == "abke"
    assert misspelled_section({"enumerat": {}}, "enumerate") == "enumerat"


def test_verbs_other_tools_and_values_are_not_misspellings() -> None:
    # the verb's own section present: nothing to look for
    assert misspelled_section({"bake": {}, "bkae": {}}, "bake") is None
    # another verb's section two edits away (difflib calls them close)
    assert difflib.get_close_matches("export", ["report"]) == ["report"]
    assert misspelled_section({"report": {}}, "export") is None
    for other in OTHER_SECTIONS:  # loss, logs (log), batch (fetch), train, ...
        for verb in VERBS:
            assert misspelled_section({other: {"x": 1}}, verb) is None, (other, verb)
    assert edit_distance("loss", "log") <= 2 and edit_distance("batch", "fetch") <= 2
    # a top-level value is not a section (a flat params.yaml: lr, seed, ...)
    assert misspelled_section({"lr": 0.1, "bak": 3}, "bake") is None
    assert misspelled_section({1: {}}, "bake") is None
    assert misspelled_section({"bkae": {}}, "not-a-verb") is None


def test_section_refuses_a_misspelling_with_the_file_and_the_near_name() -> None:
    with pytest.raises(ParamsError) as exc:
        section({"bkae": {"seed": 1}}, "bake", path="params.yaml")
    assert str(exc.value) == ("params.yaml: unknown section 'bkae'; did you mean 'bake'? "
                              "(without a 'bake' section, bake would run on its built-in defaults)")
    assert section({"bake": None, "bkae": {}}, "bake") == {}  # present, empty: not absent
    assert section({"train": {"epochs": 3}}, "bake") == {}


def test_verbs_are_the_cli_verbs() -> None:
    _, verbs = build_parser()
    assert sorted(verbs) == sorted(VERBS)


def test_bake_with_a_misspelled_section_exits_2(cli, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("params.yaml").write_text("bkae:\n  seed: 1\ntrain:\n  epochs: 3\n")
    r = cli("bake")
    assert r.code == 2 and r.out == ""
    assert r.err == (
        "dvc-cuvis: error: params.yaml: unknown section 'bkae'; did you mean 'bake'? (without a "
        "'bake' section, bake would run on its built-in defaults)\n")
    assert not Path("splits.json").exists()
    # a verb that reads the bake section for the split's paths says so too
    assert "unknown section 'bkae'; did you mean 'bake'?" in cli("resolve").err
    # spelled right, the same file goes on (to the missing universe)
    Path("params.yaml").write_text("bake:\n  seed: 1\ntrain:\n  epochs: 3\n")
    r = cli("bake")
    assert r.code == 2 and "universe.csv" in r.err and "section" not in r.err


def test_a_repository_init_sets_up_passes_every_verb(tmp_path: Path) -> None:
    for fmt in ("npz", "tiff", "cu3s"):
        repo = tmp_path / fmt
        repo.mkdir()
        init_project(repo, fmt=fmt, root="data", track=False, files_only=True)
        params = read_yaml(repo / "params.yaml")
        assert difflib.get_close_matches("export", list(params))  # a naive match would bite
        for verb in VERBS:
            assert misspelled_section(params, verb) is None, (fmt, verb)
            section(params, verb, path=repo / "params.yaml")


def test_check_names_a_typo_in_every_section_the_pipeline_reads(
        cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("params.yaml").write_text("materialise:\n  jobs: 2\ntrain:\n  epochs: 3\n")
    r = cli("check")
    assert r.code == 2 and "run `dvc repro`" not in r.err
    assert "params.yaml: unknown section 'materialise'; did you mean 'materialize'?" in r.err
    Path("params.yaml").write_text("report:\n  titel: x\n")
    r = cli("check")
    assert r.code == 2 and "report" in r.err and "did you mean 'title'?" in r.err


def test_an_alias_bomb_in_params_yaml_is_refused_by_every_verb_before_it_expands(
        cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    levels = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    levels += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    Path("params.yaml").write_text("\n".join(levels) + "\nbake:\n  seed: 1\n")  # 10**9 leaves
    for verb in ("bake", "check", "resolve"):
        r = cli(verb)
        assert r.code == 2 and r.err.startswith("dvc-cuvis: error: params.yaml: YAML aliases"), r
        assert "DVC_CUVIS_MAX_YAML_ALIASES" in r.err and len(r.err.splitlines()) == 1
    Path("params.yaml").write_text("base: &b {seed: 1}\nbake:\n  <<: *b\n")  # ordinary use
    assert "YAML aliases" not in cli("bake").err
