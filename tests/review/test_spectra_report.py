"""The report's spectra, end to end: enumerate -> bake -> materialize -> report, no cube read."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.browser import CHROME_FLAGS, require_browser

WL = np.arange(450, 901, 15)  # 31 bands
SESSIONS = 5
FRAMES = 10


def _write(root: Path, shift: float, shifted: str | None, sessions: int = SESSIONS,
           frames: int = FRAMES) -> None:
    """``sessions`` recordings of ``frames`` frames; ``shifted`` brighter by ``shift`` in
    600-700 nm."""
    rng = np.random.default_rng(11)
    for s in range(sessions):
        for f in range(frames):
            cube = 0.5 + 0.01 * rng.standard_normal((12, 10, len(WL)))
            mask = np.zeros((12, 10), np.uint8)
            mask[:6] = 1
            cube[:6] += 0.1
            if f"day{s}" == shifted:
                cube[..., (WL >= 600) & (WL <= 700)] += shift
            path = root / "data" / f"day{s}" / f"frame_{f}.npz"
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, cube=cube.astype(np.float32), wavelengths=WL.astype(np.int32),
                     class_mask=mask)


def _pipeline(root: Path, cli, *report_args: str) -> str:
    def ok(*args: str) -> None:
        r = cli(*args, "--no-params")
        assert r.code == 0, r.err

    ok("enumerate", "--format", "npz", "--root", root / "data", "--out", root / "universe.csv",
       "--group", "parent", "--stat-cache", "none")
    ok("bake", "--universe", root / "universe.csv", "--out", root / "splits.json", "--seed", "3",
       "--val-ratio", "0.2", "--test-ratio", "0.2")
    ok("materialize", "--universe", root / "universe.csv", "--splits", root / "splits.json",
       "--out-dir", root / "out", "--stat-cache", "none")
    return _report(root, cli, *report_args)


def _report(root: Path, cli, *args: str) -> str:
    r = cli("report", "--no-params", "--universe", root / "universe.csv", "--splits",
            root / "splits.json", "--out", root / "report.html", "--no-check",
            "--summaries", root / "out", *args)
    assert r.code == 0, r.err
    return (root / "report.html").read_text()


def _test_session(root: Path) -> str:
    splits = json.loads((root / "splits.json").read_text())
    paths = [p for sel in splits["test"] for p in sel.get("paths", [sel.get("path", "")])]
    days = sorted({re.search(r"day\d+", p).group(0) for p in paths if "day" in p})
    assert len(days) == 1, splits["test"]  # the session lies wholly in test, and is all of it
    return days[0]


def _pairs(page: str) -> dict[tuple[str, str], dict[str, str]]:
    rows = re.findall(r'<tr class="balance" ([^>]*)>', page)
    out = {}
    for attrs in rows:
        a = dict(re.findall(r'data-([\w-]+)="([^"]*)"', attrs))
        out[(a["stage-a"], a["stage-b"])] = a
    return out


@pytest.fixture(scope="module")
def shifted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A project whose one test session is brighter in 600-700 nm (built once)."""
    from dvc_cuvis.cli import main

    class _Cli:
        def __call__(self, *args: object):  # a module-scoped stand-in for the cli fixture
            import contextlib
            import io

            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = main([str(a) for a in args])
            return type("R", (), {"code": code, "err": err.getvalue()})

    root = tmp_path_factory.mktemp("spectra")
    _write(root, 0.0, None)
    cli = _Cli()
    _pipeline(root, cli)
    day = _test_session(root)
    shutil.rmtree(root / "data")
    _write(root, 0.2, day)  # the same split (groups hash the same), one test session brighter
    _pipeline(root, cli)
    return root, day


def test_a_test_session_brighter_in_a_band_range_is_flagged(shifted, cli) -> None:
    root, _ = shifted
    page = (root / "report.html").read_text()
    assert 'id="spectra"' in page
    pairs = _pairs(page)
    assert pairs[("train", "test")]["flagged"] == "true"
    lo, hi = (float(v) for v in pairs[("train", "test")]["range"].split(",")[0].split("-"))
    assert 600 <= lo <= hi <= 700
    assert pairs[("train", "val")]["flagged"] == "false"
    assert "train and test differ in" in page
    assert len(re.findall(r'<img class="thumb" data-uid="[^"]+" data-stage="test"', page)) >= 1


def test_the_same_data_without_the_shift_flags_nothing(tmp_path: Path, cli) -> None:
    _write(tmp_path, 0.0, None)
    page = _pipeline(tmp_path, cli)
    flags = [a["flagged"] for a in _pairs(page).values()]
    assert flags and set(flags) == {"false"}


def test_the_report_draws_every_spectrum_after_the_frames_are_deleted(shifted, cli,
                                                                      tmp_path: Path) -> None:
    root, _ = shifted
    copy = tmp_path / "p"
    shutil.copytree(root, copy)
    shutil.rmtree(copy / "out" / "frames")
    shutil.rmtree(copy / "data")
    page = _report(copy, cli, "--spectra-plot", copy / "spectra.json")
    assert _pairs(page) == _pairs((root / "report.html").read_text())
    rows = json.loads((copy / "spectra.json").read_text())
    assert {r["stage"] for r in rows} == {"train", "val", "test"}
    assert len(rows) == 3 * len(WL) and {"wavelength", "mean", "std"} <= set(rows[0])


def test_without_summaries_the_report_says_how_to_get_them(tmp_path: Path, cli) -> None:
    _write(tmp_path, 0.0, None)
    r = cli("enumerate", "--no-params", "--format", "npz", "--root", tmp_path / "data", "--out",
            tmp_path / "universe.csv", "--group", "parent", "--stat-cache", "none")
    assert r.code == 0
    assert cli("bake", "--no-params", "--universe", tmp_path / "universe.csv", "--out",
               tmp_path / "splits.json").code == 0
    assert cli("materialize", "--no-params", "--universe", tmp_path / "universe.csv",
               "--splits", tmp_path / "splits.json", "--out-dir", tmp_path / "out",
               "--no-summaries", "--stat-cache", "none").code == 0
    assert not (tmp_path / "out" / "summaries").exists()
    page = _report(tmp_path, cli)
    assert 'data-metric="spectra-absent"' in page and "--no-summaries" in page


def test_a_shard_out_of_step_is_refused_naming_it(shifted, cli, tmp_path: Path) -> None:
    root, _ = shifted
    copy = tmp_path / "p"
    shutil.copytree(root, copy)
    shard = next((copy / "out" / "summaries").rglob("%summary.json"))
    data = json.loads(shard.read_text())
    name = sorted(data["frames"])[0]
    data["frames"][name]["md5"] = "0" * 32
    shard.write_text(json.dumps(data))
    r = cli("report", "--no-params", "--universe", copy / "universe.csv", "--splits",
            copy / "splits.json", "--out", copy / "r.html", "--no-check", "--summaries",
            copy / "out")
    assert r.code == 2 and "%summary.json" in r.err and "out of step" in r.err
    assert not (copy / "r.html").exists()


@pytest.mark.slow
def test_the_browser_shows_the_spectra_and_the_thumbnails(shifted, tmp_path: Path) -> None:
    chromium = require_browser()
    root, _ = shifted
    page = (root / "report.html").read_text()
    probe = page.replace("</body>", """<script>
window.addEventListener('load', () => {
  const imgs = [...document.querySelectorAll('#spectra img.thumb')];
  const svgs = document.querySelectorAll('#spectra svg').length;
  document.body.setAttribute('data-probe',
    imgs.length + ':' + imgs.filter(i => i.complete && i.naturalWidth > 0).length + ':' + svgs);
});
</script></body>""")
    (tmp_path / "probe.html").write_text(probe)
    dom = subprocess.run([chromium, *CHROME_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                          "--virtual-time-budget=5000", "--dump-dom",
                          (tmp_path / "probe.html").as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'data-probe="(\d+):(\d+):(\d+)"', dom.stdout)
    assert found is not None, dom.stdout[-2000:]
    shown, loaded, charts = (int(g) for g in found.groups())
    assert shown >= 3 and loaded == shown and charts >= 2


@pytest.mark.slow
def test_base_compares_train_at_a_revision_from_the_local_dvc_cache(tmp_path: Path) -> None:
    """A real pipeline (init, dvc repro) committed; train brightened; report --base HEAD."""
    import contextlib

    import yaml

    from dvc_cuvis.cli import main
    from tests.helpers.shell import sh

    dvc = ("dvc",)  # DVC's command line, in this process (tests/helpers/shell.py)

    def cli(*args: str) -> None:  # dvc-cuvis's entry point, in this process
        with contextlib.chdir(tmp_path):
            assert main(list(args)) == 0
    _write(tmp_path, 0.0, None, sessions=14, frames=2)  # enough recordings to permute
    sh("git", "init", "-q", cwd=tmp_path)
    sh(*dvc, "init", "-q", cwd=tmp_path)
    cli("init", "--format", "npz", "--root", "data")
    params = yaml.safe_load((tmp_path / "params.yaml").read_text())
    params["enumerate"]["group"] = "parent"
    params["bake"].update({"val_ratio": 0.2, "test_ratio": 0.2, "seed": 3})
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    sh(*dvc, "repro", "-q", "materialize", cwd=tmp_path)  # what the report reads; no report stage
    sh("git", "add", "-A", cwd=tmp_path)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "v1", cwd=tmp_path)
    splits = json.loads((tmp_path / "splits.json").read_text())
    train_days = sorted({p.split("/")[0] for sel in splits["train"] for p in sel["paths"]})
    for day in train_days:  # every train session brighter in 600-700 nm
        for f in (tmp_path / "data" / day).glob("*.npz"):
            with np.load(f) as z:
                members = dict(z)
            members["cube"][..., (WL >= 600) & (WL <= 700)] += 0.2
            np.savez(f, **members)
    sh(*dvc, "repro", "-q", "materialize", cwd=tmp_path)
    cli("report", "--params", "params.yaml", "--base", "HEAD", "--out", "r.html")
    page = (tmp_path / "r.html").read_text()
    (row,) = [a for a in _pairs(page).values() if a.get("base") == "true"]
    assert row["stage-a"] == "train at HEAD" and row["flagged"] == "true"
    lo, hi = (float(v) for v in row["range"].split(",")[0].split("-"))
    assert 600 <= lo <= hi <= 700
    # the verdict is the shift test over recordings, as between stages (its cell names it)
    (cells,) = re.findall(r'<tr class="balance" [^>]*data-base="true"[^>]*>(.*?)</tr>', page)
    test_cell = re.findall(r"<td>(.*?)</td>", cells)[3]
    assert test_cell.startswith("max-T ") and " recordings)" in test_cell, test_cell
    t_lo, t_hi = (float(v) for v in re.search(r"in ([\d.]+)–([\d.]+) nm", test_cell).groups())
    assert 600 <= t_lo <= t_hi <= 700, test_cell
    shutil.rmtree(tmp_path / ".dvc" / "cache")  # the base's summaries gone from the cache
    cli("report", "--params", "params.yaml", "--base", "HEAD", "--out", "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "train at HEAD is left out" in page and "not in the local DVC cache" in page


def test_summaries_of_another_recipe_are_counted_named_and_the_rerun_is_said(
        shifted, cli, tmp_path: Path) -> None:
    """After an upgrade that changes the recipe, no sample is dropped silently."""
    root, _ = shifted
    copy = tmp_path / "p"
    shutil.copytree(root, copy)
    shards = sorted((copy / "out" / "summaries").rglob("%summary.json"))
    data = json.loads(shards[0].read_text())
    stale = len(data["frames"])
    data["recipe"] = data["recipe"] - 1  # written by an older dvc-cuvis
    shards[0].write_text(json.dumps(data))
    page = _report(copy, cli)
    found = re.search(r'data-metric="spectra-missing" data-count="(\d+)"', page)
    assert found is not None and int(found.group(1)) == stale
    assert data["frames"][sorted(data["frames"])[0]]["source"] in page
    assert "dvc repro -f -s materialize &amp;&amp; dvc repro" in page


@pytest.mark.slow
@pytest.mark.child_process
def test_the_printed_upgrade_command_brings_the_summaries_back_when_pasted(
        npz_pipeline: Path, tmp_path: Path) -> None:
    """In a pipeline whose shards are of an older recipe, `dvc repro` alone reruns nothing;
    the command the report prints, pasted into a shell, brings every summary back."""
    from tests.helpers.repos import copy
    from tests.helpers.shell import run

    repo = copy(npz_pipeline, tmp_path / "repo")
    for shard in (repo / "materialized" / "summaries").rglob("%summary.json"):
        data = json.loads(shard.read_text())
        data["recipe"] -= 1
        shard.write_text(json.dumps(data))
    assert run("dvc-cuvis", "report", "--params", "params.yaml", "--out", "report.html",
               cwd=repo).returncode == 0
    page = (repo / "report.html").read_text()
    command = re.search(r"<code>(dvc repro [^<]*)</code>", page)
    assert command is not None and 'data-metric="spectra-missing"' in page
    pasted = run("bash", "-c", command.group(1).replace("&amp;", "&"), cwd=repo)
    assert pasted.returncode == 0, pasted.stdout + pasted.stderr
    after = (repo / "report.html").read_text()
    assert 'data-metric="spectra-missing"' not in after and 'data-max-shift=' in after
