"""diff / log / report --base with --repo: the history of another repository (a path or a
git URL), read from git alone."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dvc_cuvis.baking.core import BakeOptions
from tests.helpers.history import universe_of, write_version
from tests.helpers.shell import sh


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The team's dataset repository: tags v1 (a split), v2 (grown, re-baked)."""
    root = tmp_path_factory.mktemp("team") / "dataset"
    root.mkdir()
    sh("git", "init", "-q", "-b", "main", cwd=root)
    write_version(root, universe_of(12), BakeOptions(seed=0, group_by="source"), "v1")
    sh("git", "tag", "v1", cwd=root)
    write_version(root, universe_of(15), BakeOptions(seed=0, group_by="source"), "v2 growth")
    sh("git", "tag", "v2", cwd=root)
    return root


def test_diff_and_log_of_a_path_match_the_repository_s_own(team: Path, cli,
                                                            monkeypatch) -> None:
    monkeypatch.chdir(team)
    own_diff = cli("diff", "v1", "v2", "--json")
    own_log = cli("log", "--json")
    assert own_diff.code == 0 and own_log.code == 0, own_diff.err + own_log.err
    monkeypatch.chdir(team.parent)  # not inside any repository
    far_diff = cli("diff", "--repo", team, "v1", "v2", "--json")
    assert far_diff.code == 0, far_diff.err
    assert far_diff.out == own_diff.out
    assert json.loads(far_diff.out)["universe"]["added"] == 12
    head = cli("diff", "--repo", team, "v1", "--json")  # REV_B defaults to HEAD (= v2)
    assert json.loads(head.out) == {**json.loads(own_diff.out), "b": "HEAD"}
    far_log = cli("log", "--repo", team, "--json")
    assert far_log.code == 0 and far_log.out == own_log.out
    md = cli("diff", "--repo", team, "v1", "v2", "--md")
    assert md.code == 0 and md.out.startswith("### Split diff `v1` → `v2`")


def test_a_git_url_is_mirrored_bare_and_refreshed(team: Path, cli, monkeypatch,
                                                  tmp_path: Path) -> None:
    url = team.as_uri()  # file:// — git's URL path, not a folder name
    monkeypatch.chdir(tmp_path)
    first = cli("log", "--repo", url, "--json")
    assert first.code == 0, first.err
    assert len(json.loads(first.out)) == 2
    mirrors = list((Path(os.environ["XDG_CACHE_HOME"]) / "dvc-cuvis" / "git").glob("*.git"))
    assert len(mirrors) == 1 and (mirrors[0] / "HEAD").is_file()
    assert not (mirrors[0] / "universe.csv").exists()  # bare: history only
    write_version(team, universe_of(18), BakeOptions(seed=0, group_by="source"), "v3")
    try:
        later = cli("log", "--repo", url, "--json")  # fetched: the new commit is seen
        assert later.code == 0 and len(json.loads(later.out)) == 3
        d = cli("diff", "--repo", url, "v2", "main", "--json")
        assert json.loads(d.out)["universe"]["added"] == 12
    finally:
        sh("git", "reset", "-q", "--hard", "v2", cwd=team)  # the module's repo as it was


def test_report_base_from_another_repository(team: Path, cli, monkeypatch,
                                             tmp_path: Path) -> None:
    monkeypatch.chdir(team)  # the report inside the team repository, --base v1 from its own
    ref = cli("report", "--no-params", "--no-check", "--base", "v1", "--out",
               tmp_path / "own.html")
    assert ref.code == 0, ref.err
    shallow = tmp_path / "shallow"  # a checkout that lacks v1's history
    sh("git", "clone", "-q", "--depth", "1", team.as_uri(), str(shallow), cwd=tmp_path)
    monkeypatch.chdir(shallow)
    alone = cli("report", "--no-params", "--no-check", "--base", "v1", "--out",
                tmp_path / "x.html")
    assert alone.code == 2  # v1 is not in this clone
    far = cli("report", "--no-params", "--no-check", "--base", "v1", "--repo", team,
              "--out", tmp_path / "far.html")
    assert far.code == 0, far.err
    assert (tmp_path / "far.html").read_bytes() == (tmp_path / "own.html").read_bytes()
    lone = cli("report", "--no-params", "--no-check", "--repo", team, "--out",
               tmp_path / "y.html")
    assert lone.code == 2 and "give --base too" in lone.err


def test_git_alone_and_clear_errors(team: Path, cli, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    no_revs = cli("diff", "--repo", team)
    assert no_revs.code == 2 and "needs REV_A [REV_B]" in no_revs.err
    unknown = cli("diff", "--repo", team, "v9")
    assert unknown.code == 2 and "unknown revision 'v9'" in unknown.err
    bad = cli("log", "--repo", (tmp_path / "nowhere").as_uri())
    assert bad.code == 2 and "cannot read its git history" in bad.err
    assert len(bad.err.strip().splitlines()) == 1
    # a DVC-tracked universe is data: --repo never pulls it
    dvc_repo = tmp_path / "with-dvc"
    sh("git", "clone", "-q", str(team), str(dvc_repo), cwd=tmp_path)
    (dvc_repo / "materialized.dvc").write_text(
        "outs:\n- md5: 0123456789abcdef0123456789abcdef.dir\n  path: materialized\n")
    sh("git", "add", "materialized.dvc", cwd=dvc_repo)
    sh("git", "commit", "-qm", "frames", cwd=dvc_repo)
    pulled = cli("diff", "--repo", dvc_repo, "HEAD", "HEAD",
                 "--universe", "materialized/universe.csv")
    assert pulled.code == 2
    assert "tracked by DVC" in pulled.err and "--repo reads git alone" in pulled.err
