"""``materialize/options.py``: one frozen options value per run, every "auto" decided once,
and the one-call entry point that the CLI and a notebook share."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.cli import build_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.materialize import MaterializeOptions, OptionWarning, ReaderParams, materialize


def _settings(tmp_path: Path, params: str, *flags: str) -> Settings:
    (tmp_path / "params.yaml").write_text(params)
    parser, _ = build_parser()
    return Settings(parser.parse_args(["materialize", "--params",
                                       str(tmp_path / "params.yaml"), *flags]))


def test_resolved_decides_every_auto_once(tmp_path: Path) -> None:
    opts = MaterializeOptions(out_dir=tmp_path / "out", stat_cache=None)
    with pytest.raises(DvcCuvisError, match=r"^stat_cache: not opened yet"):
        _ = opts.cache
    done = opts.resolved()
    assert isinstance(done.stat_cache, StatCache) and done.cache is done.stat_cache
    assert (done.sync, type(done.progress)) == ("fs", bool)
    assert done.resolved().cache is done.cache  # resolving again opens nothing new
    assert MaterializeOptions(out_dir=tmp_path, executor="dask",
                              stat_cache=None).resolved().sync == "file"
    with pytest.raises(FrozenInstanceError):
        done.jobs = 3  # type: ignore[misc]


@pytest.mark.parametrize("kw,said", [
    ({"select": "some"}, "select 'some': choose splits, all"),
    ({"executor": "ray"}, "executor 'ray': choose local, dask"),
    ({"sync": "never"}, "sync 'never': choose auto, fs, file"),
    ({"jobs": 0}, "jobs 0: expected a whole number >= 1"),
])
def test_a_value_no_run_can_use_is_refused_naming_the_parameter(
        tmp_path: Path, kw: dict[str, object], said: str) -> None:
    with pytest.raises(DvcCuvisError) as exc:
        MaterializeOptions(out_dir=tmp_path, **kw)  # type: ignore[arg-type]
    assert str(exc.value) == said


def test_from_settings_takes_flag_then_params_then_default(tmp_path: Path) -> None:
    s = _settings(tmp_path, "materialize:\n  out_dir: frames\n  jobs: 0\n  crop: 1,0,0,2\n"
                  "  stat_cache: none\n  no_summaries: true\n", "--select", "all")
    opts = MaterializeOptions.from_settings(s)
    assert opts.out_dir == tmp_path / "frames"  # a params path is relative to the file
    assert (opts.select, opts.jobs, opts.splits, opts.summaries) == ("all", 1, None, False)
    assert opts.params == ReaderParams(crop=(1, 0, 0, 2))
    assert isinstance(opts.stat_cache, StatCache) and opts.sync == "fs"
    wide = MaterializeOptions(out_dir=tmp_path, jobs=10_000, stat_cache=None)
    (warning,) = wide.warnings()
    assert warning == OptionWarning("jobs", warning.text) and warning.text.startswith("10,000 ")
    assert MaterializeOptions(out_dir=tmp_path, jobs=10_000, executor="dask").warnings() == ()
    many = _settings(tmp_path, "materialize:\n  out_dir: frames\n  jobs: 10000\n")
    assert many.origin(warning.param) == f"{tmp_path / 'params.yaml'}: materialize.jobs"


def test_one_call_runs_what_the_cli_runs(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    for name in ("a", "b"):
        np.savez(tmp_path / f"{name}.npz", cube=np.ones((2, 3, 4), np.float32),
                 wavelengths=np.array([500, 550, 600, 650]))
    (tmp_path / "universe.csv").write_text("source,index,format\na.npz,0,npz\nb.npz,0,npz\n")
    opts = MaterializeOptions(out_dir=tmp_path / "lib", universe=tmp_path / "universe.csv",
                              select="all", stat_cache=None)
    result = materialize(opts)
    assert (result.written, result.kept, result.notes) == (2, 0, [])
    assert result.summary("x") == "materialized 2 frames into x: 2 written, 0 unchanged, 0 deleted"
    assert result.hashing.startswith("hashing: ")
    r = cli("materialize", "--no-params", "--universe", tmp_path / "universe.csv", "--select",
            "all", "--stat-cache", "none", "--out-dir", tmp_path / "cli")
    assert r.code == 0 and r.out == result.summary(tmp_path / "cli") + "\n"
    assert r.err == f"dvc-cuvis: {result.hashing}\n"
    files = sorted(p.relative_to(tmp_path / "lib") for p in (tmp_path / "lib").rglob("*")
                   if p.is_file() and p.name != ".materialize.lock")
    assert files and all((tmp_path / "lib" / f).read_bytes() == (tmp_path / "cli" / f).read_bytes()
                         for f in files)
    again = materialize(opts)
    assert (again.written, again.kept) == (0, 2)
