"""``diff`` between two revisions names a spectral shift of a stage and a wavelength-grid
change, from the summaries materialize recorded (a revision's read from the local DVC cache
through its dvc.lock), and says in one line when one end's summaries cannot be read
(docs/leakage.md, "Between revisions")."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from markdown_it import MarkdownIt

from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.errors import terminal
from dvc_cuvis.materialize.summaries import summarize, to_record
from dvc_cuvis.materialize.summary_store import read_shard, shard_files, shard_of, write_shard
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.splits import dumps_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import write_universe
from dvc_cuvis.review.history_options import DiffOptions, HistoryPaths
from dvc_cuvis.review.history_run import diff
from tests.helpers.shell import sh

WL = np.arange(400.0, 880.0, 30.0)  # 16 bands, 400-850 nm
SHIFTED = (WL >= 580) & (WL <= 610)  # one of the test's 8 band ranges: 580-610 nm
#: A recording name a pushed universe.csv can hold: markup, a fence-closer, a pipe, a mention.
HOSTILE = "rec`|<b>x</b> ```[y](http://evil) @org.cu3s"
RECS, PER = 20, 3
DVC_YAML = ("stages:\n  materialize:\n    cmd: dvc-cuvis materialize\n    outs:\n"
            "    - materialized\n")


def _sources() -> list[str]:
    return [HOSTILE if r == 7 else f"day{r:02d}.cu3s" for r in range(RECS)]


def _summaries(root: Path, stage: dict[str, str], *, shifted: bool,
               plain: dict[str, dict] | None = None) -> dict[str, dict]:
    """Every frame's summary in materialized/summaries/ (8 x 8 frames, 16 bands); with
    ``shifted``: half of train's frames 20 % brighter in 580-610 nm, and the hostile
    recording recalibrated by 2 nm (the other frames' records taken from ``plain``)."""
    rng = np.random.default_rng(4)
    records: dict[str, dict] = {}
    shards: dict[str, dict[str, dict]] = {}
    for src in _sources():
        level = 1.0 + 0.05 * rng.standard_normal()
        wl = WL + 2.0 if shifted and src == HOSTILE else WL
        for i in range(PER):
            cube = (level + 0.01 * rng.standard_normal((8, 8, len(WL)))).astype(np.float32)
            name = frame_name(src, i)
            bright = shifted and stage[src] == "train" and i % 2 == 0
            if bright:
                cube[..., SHIFTED] *= 1.2
            if plain is not None and not bright and src != HOSTILE:
                records[name] = plain[name]
            else:
                records[name] = {"source": src, "index": i, "md5": f"{i}",
                                 **to_record(summarize(cube, wl, None, with_thumbnail=False))}
            shards.setdefault(shard_of(name), {})[name] = records[name]
    shutil.rmtree(root / "materialized", ignore_errors=True)
    for shard, entries in shards.items():
        write_shard(root / "materialized" / shard, entries, fsync=False)
    return records


def _commit(root: Path, msg: str) -> None:
    """``dvc commit`` of the materialized folder (in-process: dvc.lock and the cache), then
    a git commit of everything but the folder."""
    from dvc.repo import Repo

    with contextlib.chdir(root), Repo(str(root)) as repo:  # targets are read from the cwd
        repo.commit("materialize", force=True)
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", msg, cwd=root)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two revisions of a grouped split of 20 recordings x 3 frames with its summaries in
    the DVC cache: HEAD~1 plain, HEAD with train half shifted and one recording on a moved
    grid (the split itself unchanged)."""
    from dvc.repo import Repo

    root = tmp_path_factory.mktemp("diffshift")
    sh("git", "init", "-q", cwd=root)
    Repo.init(str(root))
    uni = Universe.from_records([{"source": s, "index": i} for s in _sources()
                                 for i in range(PER)])
    write_universe(uni, root / "universe.csv")
    (split,) = bake(uni, BakeOptions(seed=3))
    (root / "splits.json").write_text(dumps_splits(split.config))
    (root / "params.yaml").write_text(yaml.safe_dump(
        {"materialize": {"out_dir": "materialized"}}))
    (root / "dvc.yaml").write_text(DVC_YAML)
    stage = {uni.source(int(p)): s for s in ("train", "val", "test")
             for p in split.stages[s].tolist()}
    plain = _summaries(root, stage, shifted=False)
    _commit(root, "plain")
    _summaries(root, stage, shifted=True, plain=plain)
    _commit(root, "train recalibrated")
    return root


def _diff(rev_a: str, rev_b: str | None, fmt: str = "text") -> str:
    paths = HistoryPaths(params="params.yaml")
    return diff(DiffOptions(paths, rev_a, rev_b, fmt=fmt,  # type: ignore[arg-type]
                            summaries="materialized")).output()


def test_diff_names_the_shifted_stage_its_range_and_the_grid_change(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)
    text = _diff("HEAD~1", "HEAD")
    section = text[text.index("spectra ("):].splitlines()
    assert section[0] == ("spectra (materialized summaries; HEAD against HEAD~1, unit: "
                          "recording):")
    train = next(line for line in section if line.startswith("  train"))
    assert train.startswith("  train's mean spectrum shifted by "), train
    assert "σ in 580–610 nm, brighter at HEAD (p = " in train, train
    for other in ("val", "test"):  # unchanged stages: tested, not flagged
        line = next(x for x in section if x.startswith(f"  {other}"))
        assert line.startswith(f"  {other}: no significant shift (largest 0.00σ"), line
    assert section[-2:] == ["  wavelength grid changed for 1 recording(s):",
                            f"    {terminal(HOSTILE)}: 16 bands 400–850 nm -> "
                            "16 bands 402–852 nm"]
    doc = json.loads(_diff("HEAD~1", "HEAD", "json"))["spectra"]
    tests = {s["stage"]: s["test"] for s in doc["stages"]}
    assert tests["train"]["flagged"] and tests["train"]["nm"] == [580.0, 610.0]
    assert not tests["val"]["flagged"] and not tests["test"]["flagged"]
    assert doc["grid_changes"] == [{"recording": HOSTILE,
                                    "a": {"bands": 16, "nm": [400.0, 850.0]},
                                    "b": {"bands": 16, "nm": [402.0, 852.0]}}]
    assert doc["compared"] and not doc["main_grid"]["changed"]
    # the workspace (as HEAD) against HEAD~1 reads the folder on disk: the same verdicts
    assert _diff("HEAD~1", None).split("spectra (")[1].replace("workspace", "HEAD") == \
        text.split("spectra (")[1]


def test_diff_md_names_the_shift_and_shows_a_hostile_recording_as_text(
        repo: Path, monkeypatch: pytest.MonkeyPatch, cli) -> None:
    monkeypatch.chdir(repo)
    r = cli("diff", "HEAD~1", "HEAD", "--md")  # the folder: params.yaml's materialize.out_dir
    assert r.code == 0 and r.err == "", r.err
    md = r.out
    part = md[md.index("**Spectra**"):]
    assert "- **train's mean spectrum shifted by " in part
    assert "σ in 580–610 nm, brighter at `HEAD` (p = " in part
    tokens = MarkdownIt("commonmark").enable("table").parse(part)
    fences = "".join(t.content for t in tokens if t.type == "fence")
    assert f"{HOSTILE}: 16 bands 400–850 nm -> 16 bands 402–852 nm" in fences
    inline = [c for t in tokens if t.type == "inline" for c in t.children or []]
    assert {c.type for c in inline} <= {"text", "code_inline", "strong_open", "strong_close"}
    html = MarkdownIt("commonmark").render(part)
    assert "<b>" not in html and "<a " not in html and "<img" not in html
    assert {t.content.strip() for t in tokens if t.type == "html_block"} == {
        "<details><summary>Wavelength grid changed for 1 recording(s)</summary>",
        "</details>"}
    r = cli("diff", "HEAD~1", "HEAD", "--json", "--no-spectra")
    assert r.code == 0 and "spectra" not in json.loads(r.out)


def test_summaries_that_cannot_be_read_are_one_line_with_the_command(
        repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    work = tmp_path / "repo"
    shutil.copytree(repo, work, symlinks=True)
    monkeypatch.chdir(work)
    for shard in shard_files(work / "materialized"):  # the workspace re-sampled: a band less
        entries = read_shard(shard)
        for e in entries.values():
            e["wavelengths"], e["mean"] = e["wavelengths"][:-1], e["mean"][:-1]
        write_shard(shard, entries, fsync=False)
    section = _diff("HEAD", None).split("spectra (", 1)[1].splitlines()
    assert section[1:4] == [f"  {s}: no wavelength grid is shared by its frames at both "
                            "revisions" for s in ("train", "val", "test")]
    assert section[4:6] == ["  the split's wavelength grid changed: 16 bands 400–850 nm -> "
                            "15 bands 400–820 nm", "  wavelength grid changed for 20 "
                            "recording(s):"]
    assert len(section) == 6 + 20 and "    day19.cu3s: 16 bands 400–850 nm -> 15 bands " \
        "400–820 nm" in section
    lock = yaml.safe_load(sh("git", "show", "HEAD~1:dvc.lock", cwd=work))
    md5 = lock["stages"]["materialize"]["outs"][0]["md5"]
    (work / ".dvc/cache/files/md5" / md5[:2] / md5[2:]).unlink()  # HEAD~1's listing
    text = _diff("HEAD~1", "HEAD")
    assert text.endswith("\nspectra: not compared: materialized at HEAD~1 is not in the local "
                         "DVC cache; `dvc fetch --all-commits materialized` brings them\n")
    assert "**Spectra** not compared: materialized at HEAD\\~1 is not in the local DVC " \
           "cache; `dvc fetch --all-commits materialized` brings them" in _diff(
               "HEAD~1", "HEAD", "md")
    shutil.rmtree(work / "materialized")
    assert _diff("HEAD", None).endswith(
        "\nspectra: not compared: materialized holds no spectral summaries in the "
        "workspace; `dvc pull materialized` brings them\n")
    (work / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")
    sh("git", "commit", "-qam", "no materialize", cwd=work)
    doc = json.loads(_diff("HEAD~1", "HEAD", "json"))["spectra"]
    assert doc["why"] == "dvc.lock at HEAD records no output materialized"
    assert not doc["compared"] and doc["fix"] == "" and doc["stages"] == []
