"""The cuvis-ai plugin: manifest, registry, parameters, module rules, export, plugins-dir."""

from __future__ import annotations

import doctest
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from dvc_cuvis.check.drift import DriftError
from dvc_cuvis.interop.modules import MODULE_COLUMN, check_module_rules, module_for
from dvc_cuvis.model.universe_io import read_universe
from tests.helpers.repos import copy
from tests.helpers.shell import sh

pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "dvc_cuvis" / "plugins"


def test_import_dvc_cuvis_does_not_import_the_plugin_or_cuvis_ai() -> None:
    code = ("import sys, dvc_cuvis, dvc_cuvis.cli, dvc_cuvis.interop.modules; "
            "print(sorted(m for m in sys.modules if m.startswith(('cuvis_ai_dataloader', "
            "'cuvis_ai_core', 'torch', 'dvc_cuvis.plugin.datamodules'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_manifest_validates_and_names_three_guarded_modules() -> None:
    from cuvis_ai_schemas.plugin import LocalPluginSource, load_plugin_manifest

    m = load_plugin_manifest(PLUGINS / "dvc_cuvis.yaml")
    assert isinstance(m, LocalPluginSource) and m.name == "dvc_cuvis"
    assert m.package_name == "dvc-cuvis"
    caps = {c.data_module_name: c for c in m.capabilities}
    assert sorted(caps) == ["dvc_cu3s_multi", "dvc_npz_multi", "dvc_tiff_paired"]
    assert all(c.kind == "data_module" for c in caps.values())
    from cuvis_ai_dataloader.data import (
        MultiCu3sDataModule,
        MultiNpzDataModule,
        TiffPairedDataModule,
    )

    import dvc_cuvis.plugin.datamodules as plugin

    for name, upstream in (("dvc_npz_multi", MultiNpzDataModule),
                           ("dvc_cu3s_multi", MultiCu3sDataModule),
                           ("dvc_tiff_paired", TiffPairedDataModule)):
        cls = getattr(plugin, caps[name].class_name.rsplit(".", 1)[1])
        assert issubclass(cls, upstream) and name == cls.DATA_MODULE_NAME
        # every upstream parameter is still accepted
        assert set(plugin._upstream_params(upstream)) <= set(cls.valid_params())
    # extras name pip extras this package declares
    extras = yaml.safe_load((REPO / "pyproject.toml").read_text().split(
        "[project.optional-dependencies]")[1].split("\n[", 1)[0].replace(" = ", ": "))
    assert {*m.extras, *(e for c in caps.values() for e in c.extras)} <= set(extras)


def test_plugins_dir_prints_the_manifest_folder(cli) -> None:
    r = cli("plugins-dir")
    assert r.code == 0 and Path(r.out.strip()) == PLUGINS
    assert Path(r.out.strip()).is_absolute() and (Path(r.out.strip()) / "dvc_cuvis.yaml").is_file()


def test_register_plugin_then_create_data_module(materialized: Path, tmp_path: Path) -> None:
    from cuvis_ai_core.data.datamodule import create_data_module
    from cuvis_ai_core.utils.node_registry import NodeRegistry
    from cuvis_ai_schemas.training import DataConfig
    from cuvis_ai_schemas.training.data import DataSplitConfig


    root = tmp_path / "mat"
    shutil.copytree(materialized, root)
    registry = NodeRegistry()
    registry.register_plugin(PLUGINS / "dvc_cuvis.yaml")
    assert {"dvc_npz_multi", "dvc_cu3s_multi", "dvc_tiff_paired"} <= set(registry.data_modules)

    def config(**params) -> DataConfig:
        return DataConfig(data_module="dvc_npz_multi",
                          splits=DataSplitConfig(splits_path=str(root / "splits.json")),
                          batch_size=2,
                          params={"universe_csv": str(root / "universe.csv"), "lock": None,
                                  **params})

    dm = create_data_module(registry, config())
    dm.setup("fit")
    assert dm.drift_report.ok and len(dm.train_ds) > 0
    doc = json.loads((root / "splits.json").read_text())
    doc["universe_hash"] = "0" * 64
    (root / "splits.json").write_text(json.dumps(doc))
    dm = create_data_module(registry, config())
    with pytest.raises(DriftError, match=r"universe\.csv changed since the split was baked"):
        dm.setup("fit")
    assert dm.train_ds is None
    with pytest.raises(ValueError, match="unknown parameter 'verfy'; did you mean 'verify'"):
        create_data_module(registry, config(verfy="off"))
    with pytest.raises(ValueError, match="parameter 'verify': 'of' is not one of strict, warn, "
                       r"off; did you mean 'off'\?"):
        create_data_module(registry, config(verify="of"))
    with pytest.raises(ValueError, match="'deep' must be bool"):
        create_data_module(registry, config(deep="yes"))
    with pytest.raises(ValueError, match="'verify' must be str, got None"):
        create_data_module(registry, config(verify=None))


def test_our_manifest_sits_beside_cuvis_ai_s_in_one_catalog(tmp_path: Path) -> None:
    from cuvis_ai_core.utils.plugin_resolver import _build_catalog

    catalog = tmp_path / "plugins"
    catalog.mkdir()
    shutil.copy(PLUGINS / "dvc_cuvis.yaml", catalog)
    (catalog / "cuvis_ai_dataloader.yaml").write_text(UPSTREAM_MANIFEST)
    found = _build_catalog([catalog])
    assert sorted(found) == ["cuvis_ai_dataloader", "dvc_cuvis"]
    names = [c.data_module_name for m in found.values() for c in m.capabilities]
    assert len(names) == len(set(names)) == 7


#: cuvis-ai 0.19.3's configs/plugins/cuvis_ai_dataloader.yaml, its capability list.
UPSTREAM_MANIFEST = """\
name: cuvis_ai_dataloader
repo: "https://github.com/cubert-hyperspectral/cuvis-ai-dataloader.git"
tag: "v0.8.1"
package_name: cuvis-ai-dataloader
capabilities:
  - {class_name: cuvis_ai_dataloader.data.datamodule_cu3s.Cu3sDataModule, kind: data_module,
     data_module_name: cu3s, extras: [cu3s, coco]}
  - {class_name: cuvis_ai_dataloader.data.datamodule_cu3s_multi.MultiCu3sDataModule,
     kind: data_module, data_module_name: cu3s_multi, extras: [cu3s, coco]}
  - {class_name: cuvis_ai_dataloader.data.datamodule_npz_multi.MultiNpzDataModule,
     kind: data_module, data_module_name: npz_multi}
  - {class_name: cuvis_ai_dataloader.data.datamodule_tiff_paired.TiffPairedDataModule,
     kind: data_module, data_module_name: tiff_paired, extras: [tiff]}
"""


# -- the module's universe rules (resolve / check --module) ----------------------------------


def test_materialize_states_npz_multi_and_upstream_still_loads_it(
        materialized: Path) -> None:
    from cuvis_ai_dataloader.data import MultiNpzDataModule
    from cuvis_ai_schemas.training.data import DataSplitConfig

    uni = read_universe(materialized / "universe.csv")
    assert set(uni.column(MODULE_COLUMN)) == {"npz_multi"}
    assert module_for(materialized / "universe.csv", None)[0] == "npz_multi"
    dm = MultiNpzDataModule(universe_csv=str(materialized / "universe.csv"),
                            splits=DataSplitConfig(splits_path=str(materialized / "splits.json")))
    dm.setup("fit")
    assert len(dm.train_ds) > 0


def _universe(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "module", "message"), [
    ("source,index\na.npz,0\n", "npz_multi", r"universe.csv:2: npz_multi needs a "
     "'materialized_path' on every row"),
    ("source,index,materialized_path,split\na.npz,0,a.npz,train\n", "npz_multi",
     "npz_multi refuses a 'split' column"),
    ("source,index,materialized_path\na.cu3s,0,f.bin\na.cu3s,1,f.bin\n", "npz_multi",
     "duplicate materialized_path 'f.bin'"),
    ("source,index\na.npz,\n", "npz_multi", "needs an integer index on every row"),
    ("source,index\na.cu3s,\n", "cu3s_multi", "needs an integer index on every row"),
    ("source,index\na.tif,0\n", "tiff_paired", "reads one cube per TIFF file"),
    ("source,index,split\na.tif,,train\n", "tiff_paired", "tiff_paired has no universe file"),
    ("source,index,data_module\na.npz,0,npz_multi\n", "cu3s_multi",
     "states data_module 'npz_multi', but it is checked as 'cu3s_multi'"),
])
def test_module_rules_refuse_what_the_module_refuses(
        tmp_path: Path, text: str, module: str, message: str) -> None:
    from dvc_cuvis.errors import UniverseError

    uni = read_universe(_universe(tmp_path / "universe.csv", text),
                        unique_materialized_path=False)
    with pytest.raises(UniverseError, match=message):
        check_module_rules(uni, module)


def test_module_rules_agree_with_upstream_parse_universe(tmp_path: Path) -> None:
    from cuvis_ai_dataloader.data._universe import parse_universe

    cases = {"no_path": "source,index\na.npz,0\n",
             "split": "source,index,materialized_path,split\na.npz,0,a.npz,train\n",
             "shared": "source,index,materialized_path\na.c,0,f.bin\na.c,1,f.bin\n",
             "ok": "source,index,materialized_path\na.c,0,f0.npz\na.c,1,f1.npz\n"}
    for name, text in cases.items():
        path = _universe(tmp_path / f"{name}.csv", text)
        for module, flags in (("npz_multi", dict(require_materialized_path=True,
                                                 accept_split=False,
                                                 unique_materialized_path=True,
                                                 allow_index_ranges=False)),
                              ("cu3s_multi", dict(require_materialized_path=False,
                                                  accept_split=True,
                                                  unique_materialized_path=False,
                                                  allow_index_ranges=True))):
            try:
                parse_universe(path, **flags)
                theirs = True
            except ValueError:
                theirs = False
            try:
                check_module_rules(read_universe(path, unique_materialized_path=False), module)
                ours = True
            except ValueError:
                ours = False
            assert ours == theirs, (name, module)


def test_cu3s_multi_split_column_is_the_module_s_own(tmp_path: Path) -> None:
    uni = read_universe(_universe(tmp_path / "u.csv", "source,index,split\na.cu3s,0,train\n"))
    notes = check_module_rules(uni, "cu3s_multi")
    assert any("owns the 'split' column" in n for n in notes)


def test_resolve_and_check_apply_module_rules(cli, materialized: Path, tmp_path: Path
                                              ) -> None:
    bad = _universe(tmp_path / "u.csv", "source,index,split\na.npz,0,train\n")
    splits = materialized / "splits.json"
    for verb in ("resolve", "check"):
        r = cli(verb, "--no-params", "--universe", bad, "--splits", splits, "--module",
                "npz_multi")
        assert r.code == 2 and "npz_multi refuses a 'split' column" in r.err, (verb, r.err)
        assert "Traceback" not in r.err
    # without the flag nothing module-specific is asked of it: the split fails on its own
    r = cli("resolve", "--no-params", "--universe", bad, "--splits", splits)
    assert "refuses a 'split' column" not in r.err
    # the materialized universe states its module: check applies npz_multi without the flag
    root = tmp_path / "mat"
    shutil.copytree(materialized, root)
    r = cli("check", "--no-params", "--universe", root / "universe.csv", "--splits",
            root / "splits.json", "--no-lock")
    assert r.code == 0, r.err
    lines = (root / "universe.csv").read_text().splitlines()
    cells = lines[1].split(",")
    cells[2] = ""  # a hand-edit drops a frame's materialized_path
    (root / "universe.csv").write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    r = cli("check", "--no-params", "--universe", root / "universe.csv", "--splits",
            root / "splits.json", "--no-lock")
    assert r.code == 2 and "npz_multi needs a 'materialized_path'" in r.err


def test_module_in_params_yaml_and_a_typo_is_refused(cli, materialized: Path,
                                                     tmp_path: Path) -> None:
    bad = _universe(tmp_path / "u.csv", "source,index,split\na.npz,0,train\n")
    params = tmp_path / "params.yaml"
    params.write_text(f"check:\n  universe: {bad}\n  splits: {materialized / 'splits.json'}\n"
                      "  module: npz_multi\n")
    r = cli("check", "--params", params)
    assert r.code == 2 and "npz_multi refuses a 'split' column" in r.err
    params.write_text(params.read_text().replace("module:", "modul:"))
    r = cli("check", "--params", params)
    assert r.code == 2 and "unknown key 'modul' in section 'check'; did you mean 'module'" in r.err
    params.write_text(params.read_text().replace("modul: npz_multi", "module: npz"))
    r = cli("check", "--params", params)
    assert r.code == 2 and "'npz' is not one of npz_multi, cu3s_multi, tiff_paired" in r.err


# -- export --to cuvis-ai ----------------------------------------------------------------------


def test_export_writes_a_cuvis_ai_data_group(cli, materialized: Path, tmp_path: Path
                                             ) -> None:
    from cuvis_ai_schemas.training import DataConfig

    out = tmp_path / "configs/data/mine.yaml"
    r = cli("export", "--no-params", "--to", "cuvis-ai", "--universe",
            materialized / "universe.csv", "--splits", materialized / "splits.json", "--out",
            out, "--batch-size", "3")
    assert r.code == 0, r.err
    doc = yaml.safe_load(out.read_text())
    cfg = DataConfig.model_validate(doc)
    assert cfg.data_module == "dvc_npz_multi" and cfg.batch_size == 3
    assert (out.parent / cfg.splits.splits_path).resolve() == (materialized / "splits.json"
                                                               ).resolve()
    assert (out.parent / cfg.params["universe_csv"]).resolve() == (
        materialized / "universe.csv").resolve()
    assert not Path(cfg.splits.splits_path).is_absolute()
    first = out.read_bytes()
    assert cli("export", "--no-params", "--to", "cuvis-ai", "--universe",
               materialized / "universe.csv", "--splits", materialized / "splits.json",
               "--out", out, "--batch-size", "3").code == 0
    assert out.read_bytes() == first and b"\r" not in first
    # an unbaked split or a universe that is not materialized is refused, naming the file
    bad = _universe(tmp_path / "u.csv", "source,index\na.npz,0\n")
    r = cli("export", "--no-params", "--to", "cuvis-ai", "--universe", bad, "--splits",
            materialized / "splits.json", "--out", out)
    assert r.code == 2 and "npz_multi needs a 'materialized_path'" in r.err
    # the data group's flags are never silently ignored by the folder-writing conventions
    r = cli("export", "--no-params", "--to", "glovita", "--universe",
            materialized / "universe.csv", "--splits", materialized / "splits.json",
            "--out", tmp_path / "g.json", "--out-dir", tmp_path / "gv")
    assert r.code == 2 and "--out is for --to cuvis-ai" in r.err and "--out-dir?" in r.err
    assert not (tmp_path / "g.json").exists() and not (tmp_path / "gv").exists()


def test_docstring_examples_of_the_plugin_modules() -> None:
    import dvc_cuvis.interop.cuvis_ai as interop
    import dvc_cuvis.interop.modules as modules

    for mod in (modules, interop):
        result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert result.attempted > 0 and result.failed == 0, mod.__name__


# -- the guard in front of setup(), setting by setting (in-process, on the built pipeline) ----


@pytest.fixture
def repo(npz_pipeline: Path, tmp_path: Path) -> Path:
    """A private copy of the example pipeline (git, DVC, reproduced); the test runs elsewhere."""
    return copy(npz_pipeline, tmp_path / "repo")


def npz(repo: Path, **params: Any) -> Any:
    """``dvc_npz_multi`` over the pipeline's materialized universe.csv and splits.json."""
    from cuvis_ai_schemas.training.data import DataSplitConfig

    from dvc_cuvis.plugin.datamodules import DvcNpzMultiDataModule

    mat = repo / "materialized"
    return DvcNpzMultiDataModule(universe_csv=str(mat / "universe.csv"), **params,
                                 splits=DataSplitConfig(splits_path=str(mat / "splits.json")))


def unpin(repo: Path) -> None:
    """The split's pin no longer matches its universe.csv (a hand edit of splits.json)."""
    path = repo / "materialized/splits.json"
    doc = json.loads(path.read_text())
    doc["universe_hash"] = "0" * 64
    path.write_text(json.dumps(doc, indent=2) + "\n")


def statuses(dm: Any) -> dict[str, str]:
    return {f.check: f.status for f in dm.drift_report.findings}


VALID_NPZ = ("cache_dir, deep, lineage, lock, persistent_workers, pin_memory, repo, rev, "
             "samples_per_frame, stat_cache, universe_csv, verify, worker_multiprocessing_context")


def test_the_refusal_names_only_the_failed_checks_and_the_way_out(tmp_path: Path) -> None:
    from cuvis_ai_schemas.training.data import DataSplitConfig, Selector

    from dvc_cuvis.check.drift import verify
    from dvc_cuvis.model.splits import save_splits
    from dvc_cuvis.plugin.datamodules import TrainingDriftError

    (tmp_path / "universe.csv").write_text("source,index,group\na.cu3s,0,g1\nb.cu3s,0,g1\n"
                                           "c.cu3s,0,g2\n")
    split = DataSplitConfig(train=[Selector(kind="files", paths=["a.cu3s"])],
                            val=[Selector(kind="files", paths=["b.cu3s"])],
                            universe_hash="0" * 64)
    save_splits(split, tmp_path / "splits.json")
    report = verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None)
    assert [(f.check, f.status) for f in report.findings] == [
        ("universe", "drift"), ("content", "skipped"), ("selection", "ok"),
        ("constraints", "violation"), ("staleness", "skipped")]
    err = TrainingDriftError(report, "dvc_npz_multi")
    assert isinstance(err, DriftError) and err.report is report
    block = report.render().splitlines()
    drift = next(k for k, line in enumerate(block) if line.startswith("  [DRIFT] universe: "))
    fail = next(k for k, line in enumerate(block) if line.startswith("  [FAIL] constraints: "))
    assert block[drift + 1].startswith("         ") and block[fail + 1].startswith("         ")
    lines = str(err).split("\n")
    assert lines == [
        f"dvc_npz_multi: refusing to train: {DriftError(report).summary}",
        *block[drift:drift + 2],  # the failed checks' blocks of the report, as it shows them
        *block[fail:fail + 5],
        "  (no frame was read; to train on it anyway set data.params.verify: warn)"]
    assert block[fail + 2] == "         offending: g1"
    assert block[fail + 3].startswith("         wavelength_grid and spectral_shift not run: ")
    assert block[fail + 4] == ("         fix: re-bake with a strategy that respects the "
                               "constraint (e.g. --group-by group, --ad-aware)")
    assert block[drift + 2].startswith("  [skip] content: ")  # left out of the refusal


def test_strict_is_the_default_and_stops_before_any_frame(repo: Path) -> None:
    from dvc_cuvis.plugin.datamodules import TrainingDriftError

    unpin(repo)
    dm = npz(repo)
    assert dm.drift_report is None and dm.guard_settings == {
        "verify": "strict", "deep": False, "lock": "auto", "stat_cache": "auto",
        "lineage": None, "rev": None, "repo": None, "cache_dir": None}
    with pytest.raises(TrainingDriftError) as err:
        dm.setup("fit")
    splits = repo / "materialized/splits.json"
    assert str(err.value).startswith(f"dvc_npz_multi: refusing to train: {splits} does not "
                                     "match the data: universe (universe.csv changed since")
    assert err.value.report is dm.drift_report and not dm.drift_report.ok
    assert dm.train_ds is None and dm.val_ds is None


def test_verify_off_checks_nothing_and_sets_up_only_the_stage(repo: Path) -> None:
    unpin(repo)
    dm = npz(repo, verify="off")
    assert dm.check_drift() is None
    dm.setup("fit")
    assert dm.drift_report is None
    assert dm.train_ds is not None and dm.val_ds is not None and dm.test_ds is None


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the drift check logged (cuvis-ai's own warnings left out)."""
    return [r.getMessage() for r in caplog.records if r.name.startswith("dvc_cuvis")]


def test_verify_warn_logs_each_distinct_report_once(repo: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    unpin(repo)
    dm = npz(repo, verify="warn")
    with caplog.at_level(logging.WARNING, logger="dvc_cuvis"):
        dm.setup("fit")
        first = dm.drift_report
        dm.setup("test")
        assert said(caplog) == [first.render().rstrip()]
        assert statuses(dm)["universe"] == "drift" and dm.test_ds is not None
        caplog.clear()
        (repo / "materialized" / read_universe(repo / "materialized/universe.csv").value(
            "materialized_path", 0)).unlink()
        dm.setup("test")  # another report: said again
    assert said(caplog) == [dm.drift_report.render().rstrip()]
    assert statuses(dm)["content"] == "drift"


def test_no_split_is_refused_unless_the_check_is_off(tmp_path: Path) -> None:
    from dvc_cuvis.errors import DvcCuvisError
    from dvc_cuvis.plugin.datamodules import DvcCu3sMultiDataModule

    (tmp_path / "universe.csv").write_text("source,index\na.cu3s,0\n")
    dm = DvcCu3sMultiDataModule(universe_csv=str(tmp_path / "universe.csv"), lock=None)
    with pytest.raises(DvcCuvisError) as err:
        dm.setup("fit")
    assert str(err.value) == (
        "dvc_cu3s_multi: no splits given; the drift check needs the split "
        "(data.splits.splits_path: splits.json), or set data.params.verify: off")
    off = DvcCu3sMultiDataModule(universe_csv=str(tmp_path / "universe.csv"), verify="off")
    assert off.check_drift() is None and off.drift_report is None


def test_deep_rehashes_a_frame_edited_in_place(repo: Path) -> None:
    uni = read_universe(repo / "materialized/universe.csv")
    frame = repo / "materialized" / uni.value("materialized_path", 2)
    npz(repo, lock=None).setup("fit")  # the stat cache (the repository's) knows every frame
    before = frame.stat()
    with frame.open("r+b") as fh:  # same inode, same size, mtime put back: only a hash sees it
        fh.seek(before.st_size // 2)
        byte = fh.read(1)
        fh.seek(before.st_size // 2)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(frame, ns=(before.st_atime_ns, before.st_mtime_ns))
    dm = npz(repo, verify="warn", lock=None)
    dm.setup("fit")
    assert statuses(dm)["content"] == "ok" and frame.stat().st_ino == before.st_ino
    deep = npz(repo, verify="warn", lock=None, deep=True)
    deep.setup("fit")
    assert deep.drift_report.finding("content").summary == ("1 file(s) modified, 0 missing "
                                                               "since enumerate")


def test_the_stat_cache_is_the_repository_s_a_file_or_memory(repo: Path, tmp_path: Path
                                                            ) -> None:
    kept = repo / ".dvc/tmp/dvc-cuvis"
    shutil.rmtree(kept, ignore_errors=True)
    user = Path(os.environ["XDG_CACHE_HOME"]) / "dvc-cuvis"
    csv = (repo / "materialized/universe.csv").read_bytes()
    npz(repo).setup("fit")  # run from elsewhere: the cache of the universe's repository
    assert sorted(p.name for p in kept.iterdir()) == ["stat-cache.bin"]
    assert not user.exists() and (repo / "materialized/universe.csv").read_bytes() == csv
    shutil.rmtree(kept)
    npz(repo, stat_cache=str(tmp_path / "mine.bin")).setup("fit")
    assert (tmp_path / "mine.bin").stat().st_size > 0 and not kept.exists()
    memory = npz(repo, stat_cache=None, lock=None)  # one cache for the module's setups
    memory.setup("fit")
    assert memory.drift_report.ok and not memory.drift_report.reused_verdict
    memory.setup("test")
    assert memory.drift_report.reused_verdict and memory.drift_report.ok
    again = npz(repo, stat_cache=None, lock=None)
    again.setup("fit")
    assert not again.drift_report.reused_verdict  # nothing was kept on disk
    assert not kept.exists() and not user.exists()


def test_the_lock_setting_picks_the_staleness_check_s_dvc_lock(repo: Path, tmp_path: Path
                                                             ) -> None:
    auto = npz(repo)
    auto.setup("fit")
    assert auto.drift_report.finding("staleness").summary == (
        "matches dvc.lock (stages materialize)")
    given = npz(repo, lock=str(repo / "dvc.lock"))
    given.setup("fit")
    assert given.drift_report.finding("staleness").summary == (
        "matches dvc.lock (stages materialize)")
    none = npz(repo, lock=None)
    none.setup("fit")
    assert none.drift_report.finding("staleness").status == "skipped"
    with open(repo / "universe.csv", "a") as fh:  # the materialize stage's input changed
        fh.write("new/frame.npz,0,,npz,npz/new,,normal,\n")
    with pytest.raises(DriftError, match=r"staleness \(") as err:
        npz(repo).setup("fit")
    assert "  [DRIFT] staleness: " in str(err.value)
    none = npz(repo, lock=None)
    none.setup("fit")
    assert none.drift_report.ok


def test_a_data_config_shaped_call_takes_its_params(repo: Path) -> None:
    from cuvis_ai_schemas.training import DataConfig

    from dvc_cuvis.plugin.datamodules import DvcNpzMultiDataModule

    mat = repo / "materialized"
    unpin(repo)
    cfg = DataConfig(data_module="dvc_npz_multi", batch_size=3,
                     splits={"splits_path": str(mat / "splits.json")},
                     params={"universe_csv": str(mat / "universe.csv"), "verify": "off"})
    dm = DvcNpzMultiDataModule(**cfg.model_dump())
    assert dm.guard_settings["verify"] == "off" and dm.batch_size == 3
    dm.setup("fit")
    assert dm.drift_report is None and dm.train_ds is not None
    strict = DvcNpzMultiDataModule(**cfg.model_dump(), verify="strict")  # flat wins
    with pytest.raises(DriftError, match="refusing to train"):
        strict.setup("fit")


def test_a_mistyped_or_mistaken_parameter_is_named(repo: Path) -> None:
    from dvc_cuvis.errors import DvcCuvisError
    from dvc_cuvis.plugin.datamodules import DvcNpzMultiDataModule

    tail = f" (valid: {VALID_NPZ}); a mistyped parameter would otherwise be ignored"
    for params, message in [
            ({"verfy": "off"}, "unknown parameter 'verfy'; did you mean 'verify'?" + tail),
            ({"zzzzzzzz": 1}, "unknown parameter 'zzzzzzzz'" + tail),
            ({"zz": 1, "aa_bb_cc": 2}, "unknown parameter 'aa_bb_cc'" + tail),
            ({"deep": "yes"}, "parameter 'deep' must be bool, got 'yes'"),
            ({"verify": "of"}, "parameter 'verify': 'of' is not one of strict, warn, off; "
                               "did you mean 'off'?"),
            ({"verify": None}, "parameter 'verify' must be str, got None"),
            ({"lock": 3}, "parameter 'lock' must be str or null, got 3")]:
        with pytest.raises(DvcCuvisError) as err:
            npz(repo, **params)
        assert str(err.value) == f"dvc_npz_multi: {message}", params
        with pytest.raises(DvcCuvisError) as err:
            DvcNpzMultiDataModule.validate_params(params)
        assert str(err.value) == f"dvc_npz_multi: {message}", params
    with pytest.raises(DvcCuvisError) as err:  # a YAML key need not be a string
        DvcNpzMultiDataModule.validate_params({1: "x", "verify": "off"})
    assert str(err.value) == "dvc_npz_multi: unknown parameter '1'" + tail


@pytest.mark.parametrize(("params", "checkout"), [({"rev": "v1"}, "v1"),
                                                  ({"repo": "../data"}, "REV")])
def test_a_version_on_cu3s_multi_names_the_module_that_takes_it(
        params: dict[str, str], checkout: str) -> None:
    from dvc_cuvis.errors import DvcCuvisError
    from dvc_cuvis.plugin.datamodules import DvcCu3sMultiDataModule

    (key,) = params
    with pytest.raises(DvcCuvisError) as err:
        DvcCu3sMultiDataModule.validate_params({"verify": "off", **params})
    assert str(err.value) == (
        f"dvc_cu3s_multi: '{key}' (training on a dataset version) is supported by "
        "dvc_npz_multi only, not yet here; materialize the frames and train with "
        f"dvc_npz_multi, or check the version out (`git checkout {checkout} && dvc pull`) "
        f"and drop '{key}'")


def test_validate_params_hands_the_rest_to_upstream(repo: Path) -> None:
    from dvc_cuvis.plugin.datamodules import DvcNpzMultiDataModule

    csv = str(repo / "materialized/universe.csv")
    DvcNpzMultiDataModule.validate_params({"universe_csv": csv, "verify": "warn", "deep": True,
                                           "lock": None, "stat_cache": None})
    # a dataset version: its universe.csv is read at the revision before upstream checks it
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-qm", "dataset v1", cwd=repo)
    sh("git", "tag", "v1", cwd=repo)
    DvcNpzMultiDataModule.validate_params({"universe_csv": "materialized/universe.csv",
                                           "verify": "warn", "lock": None, "rev": "v1",
                                           "repo": str(repo)})
    with pytest.raises(ValueError) as err:
        DvcNpzMultiDataModule.validate_params({"verify": "off", "lock": None})
    assert str(err.value) == "npz_multi requires 'universe_csv' in params."


def test_a_dataset_version_is_fetched_stage_by_stage_and_checked_without_content(
        repo: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from cuvis_ai_schemas.training.data import DataSplitConfig

    from dvc_cuvis.plugin.datamodules import DvcNpzMultiDataModule

    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-qm", "dataset v1", cwd=repo)
    sh("git", "tag", "v1", cwd=repo)
    monkeypatch.chdir(tmp_path)  # the trainer's folder: nothing of the dataset here
    with caplog.at_level(logging.INFO, logger="dvc_cuvis"):
        dm = DvcNpzMultiDataModule(universe_csv="materialized/universe.csv", rev="v1",
                                   splits=DataSplitConfig(splits_path="materialized/splits.json"),
                                   repo=str(repo))
        dm.setup("validate")
    fetched = [m.split("): ", 1)[1] for m in said(caplog) if "): stage " in m]
    assert dm.train_ds is None and dm.val_ds is not None and len(dm.val_ds) > 0
    assert fetched == [f"stage val, {len(dm.val_ds)} samples (0 files fetched into the DVC "
                       "cache)"]  # only the stage set up, from the repository's own cache
    # every served frame is md5-verified as it is fetched: the check leaves content out
    assert [(f.check, f.status) for f in dm.drift_report.findings] == [
        ("universe", "ok"), ("selection", "ok"), ("constraints", "ok"), ("staleness", "skipped")]
    assert next(iter(dm.val_dataloader()))["cube"].shape[0] == 1


def test_tiff_paired_checks_its_listing_in_the_images_folder_s_repository(
        repo: Path, tmp_path: Path) -> None:
    pytest.importorskip("tifffile")
    from cuvis_ai_dataloader.data.datamodule_tiff_paired import TiffPairedDataModule
    from cuvis_ai_schemas.training.data import DataSplitConfig

    from dvc_cuvis.baking.core import BakeOptions, bake
    from dvc_cuvis.model.splits import save_splits
    from dvc_cuvis.model.universe import Universe
    from dvc_cuvis.plugin.datamodules import DvcTiffPairedDataModule
    from tests.helpers.tiff import scrap_folder

    images = scrap_folder(repo / "tiff") / "images"  # in the DVC repository; run from elsewhere
    listing = TiffPairedDataModule(images_dir=str(images)).enumerate()  # what it trains on
    uni = Universe.from_records([{"source": r.source, "index": None} for r in listing])
    (b,) = bake(uni, BakeOptions())
    save_splits(b.config, tmp_path / "splits.json")
    split = DataSplitConfig(splits_path=str(tmp_path / "splits.json"))
    dm = DvcTiffPairedDataModule(images_dir=str(images), splits=split)
    dm.setup("fit")
    assert dm.drift_report.ok and dm.train_ds is not None
    # the lock is looked up from images_dir (the repository's), not from the working folder
    assert dm.drift_report.finding("staleness").summary == "dvc.lock has no stage for these files"


def test_tiff_paired_without_images_dir_is_told_what_to_set(tmp_path: Path) -> None:
    from cuvis_ai_schemas.training.data import DataSplitConfig

    from dvc_cuvis.errors import DvcCuvisError
    from dvc_cuvis.plugin.datamodules import DvcTiffPairedDataModule

    bare = DvcTiffPairedDataModule(splits=DataSplitConfig(), lock=None)
    with pytest.raises(DvcCuvisError) as err:
        bare.setup("fit")
    assert str(err.value) == (
        "dvc_tiff_paired: no images_dir given; the drift check lists it "
        "(data.params.images_dir: the folder of TIFF cubes), or set data.params.verify: off")


# -- the dataset record the guard takes at setup(), and where it goes ---------------------------


def test_a_version_without_universe_csv_is_refused_naming_the_module() -> None:
    from dvc_cuvis.errors import DvcCuvisError
    from dvc_cuvis.plugin.datamodules import DvcNpzMultiDataModule

    with pytest.raises(DvcCuvisError) as err:
        DvcNpzMultiDataModule.validate_params({"rev": "v1", "verify": "off"})
    assert str(err.value) == ("dvc_npz_multi: rev 'v1' needs universe_csv (its path inside the "
                              "dataset repository)")


def _trainer(ckpt_path: str | None = None, loggers: list[Any] | None = None) -> Any:
    """What the guard reads of an attached Lightning trainer."""
    from types import SimpleNamespace

    return SimpleNamespace(state=SimpleNamespace(fn="fit"), loggers=loggers or [],
                           ckpt_path=ckpt_path)


def test_the_record_names_what_was_checked_and_the_logger_gets_it(repo: Path) -> None:
    from types import SimpleNamespace

    lock = yaml.safe_load((repo / "dvc.lock").read_text())
    (out,) = lock["stages"]["materialize"]["outs"]
    logged: list[dict[str, Any]] = []
    dm = npz(repo)  # strict, the lock found from universe.csv's folder
    dm.trainer = _trainer(loggers=[SimpleNamespace(log_hyperparams=logged.append)])
    dm.setup("fit")
    record = dm.dataset_record
    assert record["module"] == "dvc_npz_multi"
    assert record["check"]["mode"] == "strict" and record["check"]["verdict"] == "ok"
    assert record["universe"]["path"] == "materialized/universe.csv"
    assert record["data"] == [{"path": "materialized", "md5": out["md5"], "source": "dvc.lock",
                               "stage": "materialize"}]
    (params,) = logged  # the trainer's logger, under dataset/ keys
    assert params["dataset/verify"] == "strict" and params["dataset/verdict"] == "ok"
    assert params["dataset/md5/materialized"] == out["md5"]
    warn = npz(repo, verify="warn", lock=None)  # no dvc.lock: no recorded md5 of the data
    warn.setup("fit")
    assert warn.dataset_record["check"]["mode"] == "warn"
    assert warn.dataset_record["data"] == []


def test_verify_off_still_records_the_universe_csv_and_a_run_folder_gets_it_on_train(
        repo: Path, tmp_path: Path) -> None:
    import hashlib

    csv = repo / "materialized/universe.csv"
    run = tmp_path / "run"
    dm = npz(repo, verify="off", lineage=str(run))
    dm.setup("fit")
    record = dm.dataset_record
    assert record["check"] == {"mode": "off", "verdict": "not checked", "reused_verdict": False,
                               "failed": []}
    assert record["universe"] == {"path": "materialized/universe.csv",
                                  "md5": hashlib.md5(csv.read_bytes()).hexdigest()}
    dm.val_dataloader()  # a validation loader writes nothing
    assert not run.exists()
    dm.train_dataloader()
    assert json.loads((run / "dataset_lineage.json").read_text()) == json.loads(
        json.dumps(record))


@pytest.mark.parametrize("loader", ["train", "val", "test"])
def test_a_resume_from_a_checkpoint_without_a_record_is_noted_once(
        repo: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, loader: str) -> None:
    dm = npz(repo, verify="off")
    dm.setup("test" if loader == "test" else "fit")
    ckpt = tmp_path / "last.ckpt"
    dm.trainer = _trainer(ckpt_path=str(ckpt))  # Lightning restored no record of ours
    with caplog.at_level(logging.WARNING, logger="dvc_cuvis"):
        getattr(dm, f"{loader}_dataloader")()
        getattr(dm, f"{loader}_dataloader")()
    assert said(caplog) == [f"dvc_npz_multi: the checkpoint {ckpt} carries no dataset record "
                            "for this module: its dataset version is not compared with this one"]


def test_the_upstream_module_s_own_state_travels_beside_the_record(repo: Path) -> None:
    from cuvis_ai_dataloader.data import MultiNpzDataModule
    from cuvis_ai_schemas.training.data import DataSplitConfig

    from dvc_cuvis.plugin.datamodules import DvcNpzMultiDataModule
    from dvc_cuvis.train.lineage import KEY

    class Stateful(MultiNpzDataModule):  # an upstream that keeps state of its own
        def state_dict(self) -> dict[str, Any]:
            return {"epoch_seed": 7}

        def load_state_dict(self, state_dict: dict[str, Any]) -> None:
            self.restored = state_dict

    class Guarded(DvcNpzMultiDataModule, Stateful):
        pass

    mat = repo / "materialized"
    dm = Guarded(universe_csv=str(mat / "universe.csv"),
                 splits=DataSplitConfig(splits_path=str(mat / "splits.json")))
    dm.setup("fit")
    state = json.loads(json.dumps(dm.state_dict()))
    assert sorted(state) == ["dvc_cuvis_lineage", "epoch_seed"] and state["epoch_seed"] == 7
    assert state[KEY]["module"] == "dvc_npz_multi"
    dm.trainer = _trainer()
    dm.load_state_dict(state)  # the same version: upstream gets its own state, not the record
    assert dm.restored == {"epoch_seed": 7}


def test_tiff_paired_records_its_listing_or_its_universe_csv(tmp_path: Path) -> None:
    pytest.importorskip("tifffile")
    import hashlib

    from cuvis_ai_dataloader.data.datamodule_tiff_paired import TiffPairedDataModule
    from cuvis_ai_schemas.training.data import DataSplitConfig

    from dvc_cuvis.baking.core import BakeOptions, bake
    from dvc_cuvis.model.splits import save_splits
    from dvc_cuvis.model.universe import Universe
    from dvc_cuvis.model.universe_io import write_universe
    from dvc_cuvis.plugin.datamodules import DvcTiffPairedDataModule
    from tests.helpers.tiff import scrap_folder

    images = str(scrap_folder(tmp_path / "tiff") / "images")
    listing = TiffPairedDataModule(images_dir=images).enumerate()
    uni = Universe.from_records([{"source": r.source, "index": None} for r in listing])
    (b,) = bake(uni, BakeOptions())
    save_splits(b.config, tmp_path / "splits.json")
    split = DataSplitConfig(splits_path=str(tmp_path / "splits.json"))
    checked = DvcTiffPairedDataModule(images_dir=images, splits=split, lock=None,
                                      stat_cache=None)
    checked.setup("fit")  # what was checked: the listing
    assert checked.dataset_record["universe"] == {"path": None, "md5": None,
                                                  "listing_hash": uni.hash}
    off = DvcTiffPairedDataModule(images_dir=images, splits=split, verify="off")
    off.setup("fit")  # nothing checked and no file to name: no record
    assert off.dataset_record is None and off.train_ds is not None
    csv = tmp_path / "universe.csv"
    write_universe(uni, csv)
    named = DvcTiffPairedDataModule(images_dir=images, splits=split, verify="off",
                                    universe_csv=str(csv))
    named.setup("fit")  # unchecked, the record names the universe.csv it was given
    assert named.dataset_record["universe"] == {
        "path": csv.as_posix(), "md5": hashlib.md5(csv.read_bytes()).hexdigest()}
    predict = DvcTiffPairedDataModule(images_dir=images, verify="off", universe_csv=str(csv))
    predict.setup("predict")  # no split (predict needs none): no record, no error
    assert predict.dataset_record is None and predict.predict_ds is not None


def test_a_refusal_keeps_no_line_of_the_report_s_header(tmp_path: Path) -> None:
    from cuvis_ai_schemas.training.data import DataSplitConfig, Selector

    from dvc_cuvis.check.drift import verify
    from dvc_cuvis.model.splits import save_splits
    from dvc_cuvis.plugin.datamodules import TrainingDriftError

    folder = tmp_path / "run 1\nrun 2"  # a legal folder name that breaks the header's line
    folder.mkdir()
    (folder / "universe.csv").write_text("source,index\na.cu3s,0\nb.cu3s,0\n")
    split = DataSplitConfig(train=[Selector(kind="files", paths=["a.cu3s"])],
                            universe_hash="0" * 64)
    save_splits(split, folder / "splits.json")
    report = verify(folder / "splits.json", folder / "universe.csv", lock=None)
    # the newline in the folder's name is shown escaped: the header stays one line
    assert report.render().split("\n")[0].endswith("run 1\\x0arun 2/universe.csv: FAILED")
    head = f"dvc_npz_multi: refusing to train: {DriftError(report).summary}\n"
    assert "run 1\\x0arun 2" in head.split("\n")[0]  # the error's header stays one line too
    text = str(TrainingDriftError(report, "dvc_npz_multi"))
    assert text.startswith(head) and "  [DRIFT] universe: " in text
    assert "against" not in text and "FAILED" not in text, text  # the header's tail left out
