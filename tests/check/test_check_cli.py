"""`dvc-cuvis check` with its defaults in an initialized repository, and `--deep`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.files import sneaky_edit


def test_plain_check_reads_the_repository_params_and_sees_added_data(
    repo: Path, cli, monkeypatch
) -> None:
    monkeypatch.chdir(repo / "data")  # a subfolder: params.yaml is found at the root
    assert cli("check").code == 0
    src = repo / "data/npz/day1_line-a_s01/frame_0000.npz"
    shutil.copy(src, src.with_name("frame_0099.npz"))
    r = cli("check", "--json")
    assert r.code == 1
    universe = json.loads(r.out)["checks"]["universe"]
    assert universe["status"] == "drift" and "added" in json.dumps(universe)


def test_deep_check_sees_an_edit_that_keeps_the_stamp(repo: Path, cli,
                                                      monkeypatch) -> None:
    monkeypatch.chdir(repo)
    assert cli("check").code == 0  # warms the repository's stat cache
    sneaky_edit(repo / "data/npz/day1_line-a_s01/frame_0001.npz", valid=True)
    assert cli("check").code == 0  # documented: the stamp is unchanged, the cache trusts it
    r = cli("check", "--deep", "--json")
    assert r.code == 1
    checks = json.loads(r.out)["checks"]
    assert checks["universe"]["status"] == "drift"
    assert checks["content"]["status"] == "drift"


def test_check_outside_a_dataset_repository_says_so(tmp_path: Path, cli,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no git, no DVC, no params.yaml here or above
    r = cli("check")
    assert r.code == 2 and f"{tmp_path} is not inside a dataset repository" in r.err
    assert "run it in your dataset repository, or give --splits PATH" in r.err, r.err
    (tmp_path / ".dvc").mkdir()  # inside one, the plain hint stays
    r = cli("check")
    assert r.code == 2 and "not inside" not in r.err and "give --splits PATH" in r.err
