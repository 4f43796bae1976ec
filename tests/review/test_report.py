"""The HTML report: content, determinism, self-containment, bad input, a real browser."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.model.splits import dumps_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import write_universe
from tests.helpers.browser import CHROME_FLAGS, require_browser
from tests.helpers.shell import sh


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report")
    uni = Universe.from_records(
        {"source": f"day{s % 3}/s{s:02d}.cu3s", "index": i, "group": f"line{s % 4}",
         "category_ids": str(1 + s % 3) if (s + i) % 4 == 0 else ""}
        for s in range(24) for i in range(5))
    write_universe(uni, root / "universe.csv")
    (root / "categories.json").write_text(json.dumps({"scratch": 1, "dent": 2, "stain": 3}))
    sh("git", "init", "-q", cwd=root)
    (b,) = bake(uni, BakeOptions(strategy="random", seed=0, group_by="source"))
    (root / "splits.json").write_text(dumps_splits(b.config))
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", "v1", cwd=root)
    (b2,) = bake(uni, BakeOptions(strategy="random", seed=3, group_by="source"))
    (root / "splits.json").write_text(dumps_splits(b2.config))
    return root


def report(project: Path, cli, *extra: str) -> str:
    out = project / "report.html"
    r = cli("report", "--universe", project / "universe.csv", "--splits",
            project / "splits.json", "--categories", project / "categories.json",
            "--out", out, *extra)
    assert r.code == 0, r.err
    return out.read_text()


def test_report_content(project: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(project)
    html = report(project, cli, "--base", "HEAD")
    assert 'data-metric="universe-samples">120<' in html
    for stage in ("train", "val", "test"):
        assert f'data-stage="{stage}" data-metric="samples"' in html
    assert "Category balance" in html and "scratch" in html and "stain" in html
    assert 'data-constraint="no_split_overlap">satisfied' in html
    assert 'data-check="content"' in html
    assert "Change from HEAD to workspace" in html and 'data-metric="moved"' in html
    assert html.count("<svg") == 3  # stages, categories, transition heat map
    # self-contained: no scripts, stylesheets or images fetched from anywhere
    assert not re.search(r"<script|<link|<img|<iframe|url\((?!#)", html)  # url(#id) is local
    assert "http" not in re.sub(r'xmlns(:\w+)?="http[^"]*"', "", html)  # namespaces only
    assert len(html.encode()) < 5 * 1024 * 1024


def test_report_is_deterministic(project: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(project)
    assert report(project, cli, "--no-check") == report(project, cli, "--no-check")


def test_missing_category_is_flagged(tmp_path: Path, cli) -> None:
    uni = Universe.from_records(
        {"source": f"s{s}", "index": 0, "category_ids": "5" if s == 0 else ""} for s in range(10))
    write_universe(uni, tmp_path / "u.csv")
    stages = {"train": np.arange(0, 6), "val": np.arange(6, 8), "test": np.arange(8, 10)}
    from dvc_cuvis.baking import to_config

    (tmp_path / "s.json").write_text(dumps_splits(to_config(uni, stages, BakeOptions())))
    r = cli("report", "--universe", tmp_path / "u.csv", "--splits", tmp_path / "s.json",
            "--out", tmp_path / "r.html", "--no-check")
    assert r.code == 0, r.err
    html = (tmp_path / "r.html").read_text()
    assert "Stages lacking a category: 5 in val, 5 in test" in html
    assert 'class="missing" data-category="5" data-stage="val"' in html


def test_bad_input_leaves_no_report(project: Path, tmp_path: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(project)
    out = tmp_path / "r.html"
    r = cli("report", "--universe", tmp_path / "missing.csv", "--splits",
            project / "splits.json", "--out", out)
    assert r.code == 2 and "universe file not found" in r.err and not out.exists()
    r = cli("report", "--universe", project / "universe.csv", "--splits",
            project / "splits.json", "--out", out, "--base", "no-such-rev")
    assert r.code == 2 and "unknown revision 'no-such-rev'" in r.err and not out.exists()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"train": [{"kind": "files", "paths": ["nope.cu3s"]}]}))
    r = cli("report", "--universe", project / "universe.csv", "--splits", bad, "--out", out)
    assert r.code == 2 and "matched 0 samples" in r.err and not out.exists()
    assert not list(tmp_path.glob(".r.html.*"))


@pytest.mark.slow  # starts chromium
def test_report_in_a_real_browser(project: Path, tmp_path: Path, cli, monkeypatch) -> None:
    chromium = require_browser()
    monkeypatch.chdir(project)
    report(project, cli, "--base", "HEAD")
    url = (project / "report.html").as_uri()
    profile = tmp_path / "profile"
    dom = subprocess.run([chromium, *CHROME_FLAGS, f"--user-data-dir={profile}", "--dump-dom",
                          url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-metric="universe-samples">120<' in dom.stdout
    assert "Category balance" in dom.stdout and "<svg" in dom.stdout
    shot = tmp_path / "report.png"
    proc = subprocess.run([chromium, *CHROME_FLAGS, f"--user-data-dir={profile}",
                           "--window-size=1100,1600", f"--screenshot={shot}", url],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("L"), dtype=np.float64)
    assert pixels.shape[0] >= 1000 and pixels.std() > 10  # not a blank page
    assert (pixels < 128).mean() > 0.01  # there is dark text and chart ink on it


def test_report_names_samples_on_which_the_anomaly_notions_differ() -> None:
    from dvc_cuvis.model.resolution import resolve
    from dvc_cuvis.review.report import ReportInput, render

    rows = [{"source": f"s{k}.cu3s", "index": 0, "category_ids": c}
            for k, c in enumerate(["", "0", "1", "0;0", "2", "", "1", ""])]
    uni = Universe.from_records(rows)
    (b,) = bake(uni, BakeOptions(seed=0, group_by="source"))
    html = render(ReportInput("r", resolve(b.config, uni), []))
    assert 'id="anomaly-notions" data-samples="2"' in html
    assert "2 sample(s) carry only category id 0" in html
    plain = Universe.from_records([{**r, "category_ids": r["category_ids"].replace("0", "")}
                                   for r in rows])
    (b,) = bake(plain, BakeOptions(seed=0, group_by="source"))
    assert "anomaly-notions" not in render(ReportInput("r", resolve(b.config, plain), []))


def test_the_reports_check_takes_checks_allowances(tmp_path: Path, cli, monkeypatch) -> None:
    """A pipeline that accepts a partial selector or an unpinned split (``check
    --allow-partial/--allow-unpinned``, or its params section) can say so to the report's
    embedded check too; without it, the report shows both as failures, as check does."""
    monkeypatch.chdir(tmp_path)
    uni = Universe.from_records({"source": "a", "index": i} for i in range(4))
    write_universe(uni, tmp_path / "universe.csv")
    (tmp_path / "splits.json").write_text(json.dumps(  # no universe_hash; id 9 is absent
        {"train": [{"kind": "file_indices", "source": "a", "ids": [0, 1, 9]}],
         "val": [{"kind": "file_indices", "source": "a", "ids": [2, 3]}]}))

    def statuses(*flags: str) -> dict[str, str]:
        r = cli("report", "--no-params", "--out", "r.html", *flags)
        assert r.code == 0, r.err
        html = (tmp_path / "r.html").read_text()
        return dict(re.findall(r'data-check="(\w+)">(\w+)<', html))

    plain = statuses()
    assert plain["selection"] != "ok" and plain["universe"] != "ok"
    allowed = statuses("--allow-partial", "--allow-unpinned")
    assert allowed["selection"] == "ok" and allowed["universe"] == "ok"
    (tmp_path / "params.yaml").write_text("report:\n  allow_partial: true\n"
                                          "  allow_unpinned: true\n")
    r = cli("report", "--out", "r.html")
    assert r.code == 0, r.err
    html = (tmp_path / "r.html").read_text()
    assert dict(re.findall(r'data-check="(\w+)">(\w+)<', html)) == allowed


def test_the_report_is_never_written_into_a_folder_dvc_tracks(tmp_path: Path) -> None:
    from dvc_cuvis.errors import DvcCuvisError
    from dvc_cuvis.review.report import write

    sh("git", "init", "-q", cwd=tmp_path)
    sh("dvc", "init", "-q", cwd=tmp_path)
    (tmp_path / "data" / "npz").mkdir(parents=True)
    (tmp_path / "data" / "npz" / "a.npz").write_bytes(b"frame")
    sh("dvc", "add", "-q", "data/npz", cwd=tmp_path)
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  m:\n    cmd: echo\n    outs: [materialized]\n  r:\n    cmd: echo\n"
        "    outs: [report.html]\n")
    (tmp_path / "materialized").mkdir()
    for inside, owner in ((tmp_path / "data/npz/split-report.html", "data/npz.dvc"),
                          (tmp_path / "materialized/split-report.html", "stage 'm'")):
        with pytest.raises(DvcCuvisError, match=f"tracked by .*{owner}.*--out split-report"):
            write(inside, "<html></html>")
        assert not inside.exists() and not list(inside.parent.glob(".*.tmp"))
    write(tmp_path / "report.html", "<html></html>")  # a stage's own output file: fine
    write(tmp_path / "split-report.html", "<html></html>")
    assert (tmp_path / "report.html").read_text() == "<html></html>"
