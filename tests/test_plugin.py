"""The cuvis-ai plugin: manifest, registry, parameters, module rules, export, plugins-dir."""

from __future__ import annotations

import doctest
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dvc_cuvis.modules import MODULE_COLUMN, check_module_rules, module_for
from dvc_cuvis.universe import read_universe

from .test_datamodule import materialized  # noqa: F401  (module fixture)

pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

REPO = Path(__file__).resolve().parent.parent
PLUGINS = REPO / "dvc_cuvis" / "plugins"


def test_import_dvc_cuvis_does_not_import_the_plugin_or_cuvis_ai() -> None:
    code = ("import sys, dvc_cuvis, dvc_cuvis.cli, dvc_cuvis.modules; "
            "print(sorted(m for m in sys.modules if m.startswith(('cuvis_ai_dataloader', "
            "'cuvis_ai_core', 'torch', 'dvc_cuvis.plugin'))))")
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

    import dvc_cuvis.plugin as plugin

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


def test_register_plugin_then_create_data_module(materialized: Path, tmp_path: Path) -> None:  # noqa: F811
    from cuvis_ai_core.data.datamodule import create_data_module
    from cuvis_ai_core.utils.node_registry import NodeRegistry
    from cuvis_ai_schemas.training import DataConfig
    from cuvis_ai_schemas.training.data import DataSplitConfig

    from dvc_cuvis.drift import DriftError

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
        materialized: Path) -> None:  # noqa: F811
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


def test_resolve_and_check_apply_module_rules(cli, materialized: Path, tmp_path: Path  # noqa: F811
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


def test_module_in_params_yaml_and_a_typo_is_refused(cli, materialized: Path,  # noqa: F811
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


def test_export_writes_a_cuvis_ai_data_group(cli, materialized: Path, tmp_path: Path  # noqa: F811
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
    import dvc_cuvis.modules as modules

    for mod in (modules, interop):
        result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert result.attempted > 0 and result.failed == 0, mod.__name__
