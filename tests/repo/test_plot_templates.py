"""The spectra plot template: init writes it, and DVC's own plots draw one line per stage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from dvc_cuvis.repo.plot_templates import SPECTRA_TEMPLATE, template_text
from tests.helpers.shell import sh

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
ROOT = Path(__file__).resolve().parents[2]


def _rows(offset: float) -> list[dict[str, object]]:
    return [{"wavelength": w, "stage": s, "mean": offset + i / 10 + w / 1000, "std": 0.05}
            for i, s in enumerate(("train", "val", "test")) for w in (450, 550, 650)]


def test_the_repositorys_template_is_the_one_init_writes() -> None:
    assert (ROOT / ".dvc/plots/spectra.json").read_text() == template_text(SPECTRA_TEMPLATE)
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["report"]
    assert "example/materialized" in stage["deps"]
    (plot,) = stage["plots"]
    assert plot["example/plots/spectra.json"]["template"] == "spectra"


def test_init_writes_the_template_and_the_report_stage_draws_the_spectra(tmp_path: Path) -> None:
    from dvc_cuvis.repo.project import init_project

    sh("git", "init", "-q", cwd=tmp_path)
    sh("dvc", "init", "-q", cwd=tmp_path)
    init_project(tmp_path, fmt="npz", root="data", track=False)
    assert (tmp_path / ".dvc/plots/spectra.json").read_text() == template_text(SPECTRA_TEMPLATE)
    pipeline = yaml.safe_load((tmp_path / "dvc.yaml").read_text())
    report = pipeline["stages"]["report"]
    assert "materialized" in report["deps"] and "--spectra-plot plots/spectra.json" in report["cmd"]
    assert report["plots"] == [{"plots/spectra.json": {"cache": False, "template": "spectra",
                                                        "x": "wavelength", "y": "mean"}}]
    assert yaml.safe_load((tmp_path / "params.yaml").read_text())["report"]["summaries"] == \
        "materialized"


def test_dvc_plots_diff_draws_each_stage_at_each_revision(tmp_path: Path) -> None:
    sh("git", "init", "-q", cwd=tmp_path)
    sh("dvc", "init", "-q", cwd=tmp_path)
    (tmp_path / ".dvc/plots").mkdir()
    (tmp_path / ".dvc/plots/spectra.json").write_text(template_text(SPECTRA_TEMPLATE))
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots/spectra.json").write_text(json.dumps(_rows(0.5)))
    (tmp_path / "dvc.yaml").write_text("plots:\n  - plots/spectra.json:\n      template: spectra\n"
                                       "      x: wavelength\n      y: mean\n")
    sh("git", "add", "-A", cwd=tmp_path)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "v1", cwd=tmp_path)
    (tmp_path / "plots/spectra.json").write_text(json.dumps(_rows(0.6)))
    out = json.loads(sh("dvc", "plots", "diff", "HEAD", "--json",
                        cwd=tmp_path))
    (plot,) = out["data"]["plots/spectra.json"]
    spec = plot["content"]
    assert spec["encoding"]["color"]["field"] == "stage"
    assert spec["layer"][1]["encoding"]["strokeDash"]["field"] == "rev"
    seen = {(r["stage"], r["rev"]) for r in spec["data"]["values"]}
    assert seen == {(s, rev) for s in ("train", "val", "test") for rev in ("HEAD", "workspace")}
