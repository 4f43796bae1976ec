"""enumerate, resolve, export and fetch as library calls: one frozen options value in, one
typed result out, and the CLI prints exactly that result (no workflow of its own)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from dvc_cuvis.check.resolving import ResolveOptions, resolve_split
from dvc_cuvis.errors import OptionError
from dvc_cuvis.interop.exporting import ExportOptions, export_split
from dvc_cuvis.repo.fetching import FetchOptions
from dvc_cuvis.sources import EnumerateOptions
from tests.helpers.files import gui_setup


def test_the_cli_prints_what_the_library_call_returns(tmp_path: Path, cli) -> None:
    universe, splits, _ = gui_setup(tmp_path)
    done = resolve_split(ResolveOptions(universe=universe, splits=splits))
    r = cli("resolve", "--universe", universe, "--splits", splits, "--no-params")
    assert r.code == 0 and done.ok and done.failure() is None
    assert r.out == "\n".join(done.lines()) + "\n"
    out_lib, out_cli = tmp_path / "lib", tmp_path / "cli"
    exported = export_split(ExportOptions(to="indices", universe=universe, splits=splits,
                                          out_dir=out_lib))
    r = cli("export", "--to", "indices", "--universe", universe, "--splits", splits,
            "--out-dir", out_cli, "--no-params")
    assert r.code == 0 and r.out == f"wrote {out_cli / 'indices.npz'}\n"
    assert exported.written == (out_lib / "indices.npz",)
    assert (out_lib / "indices.npz").read_bytes() == (out_cli / "indices.npz").read_bytes()


def test_a_partial_selector_fails_the_call_with_the_lines_the_cli_prints(tmp_path: Path,
                                                                        cli) -> None:
    universe, splits, d = gui_setup(tmp_path)
    rows = [(f"{d}/day3/b.cu3s", i) for i in range(7)] + [(f"{d}/day2/a.cu3s", i)
                                                          for i in range(6)]  # no a#6
    universe.write_text("source,index\n" + "".join(f"{s},{i}\n" for s, i in rows))
    done = resolve_split(ResolveOptions(universe=universe, splits=splits))
    r = cli("resolve", "--universe", universe, "--splits", splits, "--no-params")
    assert not done.ok and done.partial and r.code == 1
    assert r.err == "".join(f"{line}\n" for line in [*done.warnings(), done.failure()])
    allowed = resolve_split(dataclasses.replace(done.options, allow_partial=True))
    assert allowed.ok and allowed.warnings()[0].startswith("dvc-cuvis: warning: ")


def test_an_option_rule_names_the_parameter_not_a_flag() -> None:
    with pytest.raises(OptionError) as err:
        ExportOptions(to="soma", out=Path("data.yaml"))
    assert err.value.param == "out"
    assert str(err.value) == ("out is for --to cuvis-ai (one data-group file); to='soma' "
                              "writes a folder")
    worded = err.value.named(lambda p, form: f"<{p}:{form}>")
    assert worded == ("<out:> is for --to cuvis-ai (one data-group file); <to:shown> writes a "
                      "folder<out:typo=out_dir><out:aside>")
    for build, param in ((lambda: FetchOptions(stages=()), "stages"),
                         (lambda: ResolveOptions(group_leakage="sometimes"), "group_leakage"),
                         (lambda: ExportOptions(to="excel"), "to")):
        with pytest.raises(OptionError) as err:
            build()
        assert err.value.param == param and f"{param}" in str(err.value)


def test_options_are_frozen_and_auto_is_resolved_once(tmp_path: Path) -> None:
    opts = EnumerateOptions(format="npz", root=tmp_path, out_dir=tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.jobs = 4  # type: ignore[misc]
    assert opts.universe_csv == tmp_path / "universe.csv"
    assert ExportOptions(to="cuvis-ai").resolved().out == Path("export/data.yaml")
    (tmp_path / ".dvc").mkdir()
    fetch = FetchOptions(stages=("val",), universe=tmp_path / "universe.csv").resolved()
    assert fetch.root == tmp_path.resolve()
    assert fetch.resolved() is fetch  # nothing is looked up again


def test_the_hook_verb_names_the_kept_hook_as_the_library_keeps_it() -> None:
    from dvc_cuvis.cli import hook as cli_hook
    from dvc_cuvis.repo import hooks

    assert cli_hook.KEPT == hooks.KEPT  # the parser spells it without importing the library
