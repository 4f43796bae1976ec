"""``dvc-cuvis init`` in a real git + DVC repository: the files it writes for each format, the
data it tracks, the category wiring, and that it never overwrites without ``--force``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.helpers.cli import Run, run_forked
from tests.helpers.shell import sh

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

STAGES = ["enumerate", "bake", "materialize", "report", "check"]


def dvc(*args: str, cwd: Path) -> str:
    return sh("dvc", *args, cwd=cwd)


def make_repo(tmp_path: Path, fmt: str) -> tuple[Path, str]:
    """A git + DVC repository holding a small data root of ``fmt``; returns (repo, root)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    sh("git", "init", "-q", cwd=repo)
    dvc("init", "-q", cwd=repo)
    data = repo / "data"
    if fmt == "cu3s":
        root = "data/sessions"
        (data / "sessions/day1").mkdir(parents=True)
        (data / "sessions/day1/a.cu3s").write_bytes(b"cu3s")
        (data / "sessions/day1/a.json").write_text('{"categories": []}')
    elif fmt == "tiff":
        root = "data/tiff"
        (data / "tiff/images").mkdir(parents=True)
        (data / "tiff/images/a.tif").write_bytes(b"II*\x00")
        (data / "tiff/categories.json").write_text('{"scratch": 1}')
    elif fmt == "npz":
        root = "data/npz"
        (data / "npz").mkdir(parents=True)
        (data / "npz/a.npz").write_bytes(b"PK")
    else:
        root = "data/universe.csv"
        data.mkdir()
        (data / "universe.csv").write_text("source,index\na.cu3s,0\n")
    return repo, root


def init(repo: Path, *args: str) -> Run:
    return run_forked("init", "--dir", repo, *args)


@pytest.mark.slow  # dvc init + dvc add, 2-3 s each
@pytest.mark.parametrize("fmt", ["cu3s", "tiff", "npz", "universe"])
def test_init_writes_the_pipeline_for_each_format(tmp_path: Path, fmt: str) -> None:
    repo, root = make_repo(tmp_path, fmt)
    r = init(repo, "--format", fmt, "--root", root)
    assert r.code == 0, r.err
    assert f"wrote {repo / 'dvc.yaml'}" in r.out and f"wrote {repo / 'params.yaml'}" in r.out
    assert "dvc repro" in r.out
    pipeline = yaml.safe_load((repo / "dvc.yaml").read_text())
    params = yaml.safe_load((repo / "params.yaml").read_text())
    assert list(pipeline["stages"]) == STAGES
    assert root in pipeline["stages"]["enumerate"]["deps"]
    assert all(s["cmd"].startswith(f"dvc-cuvis {name} --params params.yaml")
               for name, s in pipeline["stages"].items())
    # outputs are named on the stage's command line, not in the params sections a plain
    # interactive `dvc-cuvis check` / `report` reads: those never rewrite a stage's output
    assert "--metrics metrics/check.json" in pipeline["stages"]["check"]["cmd"]
    assert "--out report.html" in pipeline["stages"]["report"]["cmd"]
    assert "metrics" not in params["check"] and "out" not in params["report"]
    assert params["enumerate"]["format"] == fmt and params["enumerate"]["root"] == root
    assert params["bake"]["universe"] == "universe.csv"
    # the check stage reads the summaries materialize writes: the leakage checks run
    assert params["check"]["summaries"] == params["materialize"]["out_dir"] == "materialized"
    assert set(params) >= {"enumerate", "bake", "materialize", "check", "report", "resolve"}
    # DVC itself reads the stages, and the data root is tracked by a .dvc file
    listed = dvc("stage", "list", cwd=repo)
    assert [line.split()[0] for line in listed.splitlines() if line.strip()] == STAGES
    assert (repo / f"{root}.dvc").is_file() and f"tracked the data with DVC: {root}.dvc" in r.out
    tracked = yaml.safe_load((repo / f"{root}.dvc").read_text())
    assert tracked["outs"][0]["path"] == Path(root).name
    # category names: enumerate reads categories.json (tiff), the metrics carry them (cu3s)
    if fmt == "tiff":
        assert params["enumerate"]["categories"] == f"{root}/categories.json"
    else:
        assert "categories" not in params["enumerate"]
    if fmt in ("tiff", "cu3s"):
        assert params["bake"]["categories"] == "metrics/universe.json"
        assert params["report"]["categories"] == "metrics/universe.json"
        assert "no category names" not in r.err
    else:
        assert "categories" not in params["bake"] and "no category names found" in r.err


@pytest.mark.slow  # dvc init + dvc add, 2-3 s each
def test_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    repo, root = make_repo(tmp_path, "npz")
    (repo / "params.yaml").write_text("mine: 1\n")
    r = init(repo, "--format", "npz", "--root", root)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "params.yaml already exist" in r.err and "--force" in r.err
    assert (repo / "params.yaml").read_text() == "mine: 1\n"
    assert not (repo / "dvc.yaml").exists()  # nothing half-written
    assert not (repo / f"{root}.dvc").exists()  # and nothing tracked
    r = init(repo, "--format", "npz", "--root", root, "--force")
    assert r.code == 0, r.err
    assert yaml.safe_load((repo / "params.yaml").read_text())["enumerate"]["format"] == "npz"
    first = (repo / "dvc.yaml").read_bytes()
    r = init(repo, "--format", "npz", "--root", root)
    assert r.code == 2 and "dvc.yaml" in r.err and "params.yaml" in r.err
    r = init(repo, "--format", "npz", "--root", root, "--force")
    assert r.code == 0 and (repo / "dvc.yaml").read_bytes() == first
    assert "tracked the data" not in r.out  # already tracked: not added twice


@pytest.mark.slow  # dvc init + dvc add, 2-3 s each
def test_init_no_track_and_outside_a_repository(tmp_path: Path) -> None:
    repo, root = make_repo(tmp_path, "npz")
    r = init(repo, "--format", "npz", "--root", root, "--no-track")
    assert r.code == 0 and not (repo / f"{root}.dvc").exists()
    plain = tmp_path / "plain"
    (plain / "data").mkdir(parents=True)
    r = init(plain, "--format", "npz", "--root", "data")
    assert r.code == 2 and not (plain / "dvc.yaml").exists() and not (plain / ".dvc").exists()
    assert "not a git + DVC repository: nothing written" in r.err
    assert f"cd {plain} && git init && dvc init`" in r.err
    sh("git", "init", "-q", cwd=plain)  # git alone: the message names only what is missing
    r = init(plain, "--format", "npz", "--root", "data")
    assert r.code == 2 and f"cd {plain} && dvc init`" in r.err
    dvc("init", "-q", cwd=plain)  # the command it named, then init again: the template too
    r = init(plain, "--format", "npz", "--root", "data", "--no-track")
    assert r.code == 0 and (plain / ".dvc/plots/spectra.json").is_file()
    repo2 = tmp_path / "later"
    repo2.mkdir()
    sh("git", "init", "-q", cwd=repo2)
    dvc("init", "-q", cwd=repo2)
    r = init(repo2, "--format", "tiff", "--root", "data/tiff")
    assert r.code == 0 and "data/tiff does not exist yet" in r.err


@pytest.mark.parametrize("root", ["/abs/data", "../data", ".", ""])
def test_init_root_must_be_inside_the_repository(tmp_path: Path, root: str) -> None:
    r = init(tmp_path, "--format", "npz", "--root", root)
    assert r.code == 2 and "must be a relative folder inside the repository" in r.err
    assert not (tmp_path / "dvc.yaml").exists()


def test_init_into_a_missing_folder(tmp_path: Path) -> None:
    r = init(tmp_path / "nope", "--format", "npz")
    assert r.code == 2 and "nope: not a directory" in r.err


@pytest.mark.slow  # dvc init + dvc add, 1-1.5 s
def test_init_leaves_already_tracked_data_alone(tmp_path: Path) -> None:
    repo, root = make_repo(tmp_path, "npz")
    sh("git", "add", root, cwd=repo)  # the data is in git already: `dvc add` would refuse
    r = init(repo, "--format", "npz", "--root", root)
    assert r.code == 0, r.err
    assert f"{root} is already tracked by git: left as it is" in r.err
    assert not (repo / f"{root}.dvc").exists()


@pytest.mark.slow  # dvc init + dvc add, 1-1.5 s
def test_init_names_why_dvc_add_failed(tmp_path: Path) -> None:
    repo, root = make_repo(tmp_path, "npz")
    outside = tmp_path / "elsewhere"
    shutil.move(str(repo / root), outside)
    (repo / root).symlink_to(outside, target_is_directory=True)  # DVC refuses symlinked dirs
    r = init(repo, "--format", "npz", "--root", root)
    assert r.code == 2 and r.err.count("\n") == 1
    assert f"`dvc add {root}` failed: Cannot add files inside symlinked directories" in r.err
    assert "--no-track" in r.err
    assert not (repo / "dvc.yaml").exists()  # refused: nothing written


@pytest.mark.slow  # dvc init + dvc add, 1-1.5 s
def test_init_ignores_what_report_and_dvc_plots_write_keeping_the_lines_there(
    tmp_path: Path,
) -> None:
    from dvc_cuvis.repo.project import IGNORED, init_project

    repo = tmp_path / "repo"
    repo.mkdir()
    sh("git", "init", "-q", cwd=repo)
    dvc("init", "-q", cwd=repo)
    sh("git", "commit", "-qm", "dvc init", cwd=repo)
    (repo / ".gitignore").write_text("/data/\n*.tmp")  # no final newline
    r = init(repo, "--format", "npz", "--root", "data/npz", "--no-track")
    assert r.code == 0, r.err
    assert f"ignored in {repo / '.gitignore'}: split-report.html, dvc_plots/" in r.out
    want = ("/data/\n*.tmp\n# written outside the pipeline (dvc-cuvis report, dvc plots show)\n"
            "split-report.html\ndvc_plots/\n")
    assert (repo / ".gitignore").read_text() == want
    (repo / "split-report.html").write_text("<html></html>")
    (repo / "dvc_plots").mkdir()
    (repo / "dvc_plots" / "index.html").write_text("<html></html>")
    (repo / "kept.txt").write_text("x")
    assert sh("git", "status", "--porcelain", "--untracked-files=all", cwd=repo).split() == [
        "??", ".dvc/plots/spectra.json", "??", ".gitignore", "??", "dvc.yaml", "??", "kept.txt",
        "??", "params.yaml"]
    # a second init adds nothing (and says nothing); an entry written anchored counts
    again = init(repo, "--format", "npz", "--root", "data/npz", "--no-track", "--force")
    assert again.code == 0 and "ignored in" not in again.out
    assert (repo / ".gitignore").read_text() == want
    other = tmp_path / "other"
    other.mkdir()
    sh("git", "init", "-q", cwd=other)
    dvc("init", "-q", cwd=other)
    (other / ".gitignore").write_text("/dvc_plots/\n")
    done = init_project(other, fmt="npz", root="data/npz", track=False)
    assert done.ignored == ["split-report.html"] and IGNORED == ("split-report.html",
                                                                 "dvc_plots/")
    assert (other / ".gitignore").read_text().splitlines()[0] == "/dvc_plots/"
