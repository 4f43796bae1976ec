"""The report workflow is one library call (``report`` -> ``ReportResult`` -> ``write_report``)
that writes the page the CLI writes; its option errors name the parameter."""

from __future__ import annotations

from pathlib import Path

import pytest

from dvc_cuvis import BakeOptions, bake, read_universe, save_splits
from dvc_cuvis.errors import OptionError
from dvc_cuvis.review import ReportOptions, report, write_report


def test_report_call_writes_what_the_cli_writes(tmp_path: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "u.csv").write_text("source,index\n"
                                    + "".join(f"d{k}/s.cu3s,0-2\n" for k in range(6)))
    (baked,) = bake(read_universe(tmp_path / "u.csv"), BakeOptions(seed=2))
    save_splits(baked.config, tmp_path / "s.json")
    opts = ReportOptions(universe="u.csv", splits="s.json", out="lib.html", check=False,
                         title="t")
    result = report(opts)
    assert not (tmp_path / "lib.html").exists()  # nothing written yet
    write_report(result, opts)
    r = cli("report", "--no-params", "--universe", "u.csv", "--splits", "s.json", "--out",
            "cli.html", "--no-check", "--title", "t")
    assert r.code == 0 and r.out == result.summary(opts).replace("lib.html", "cli.html") + "\n"
    assert (tmp_path / "cli.html").read_bytes() == (tmp_path / "lib.html").read_bytes()
    assert result.shown.drift is None and result.shown.diff is None


def test_report_options_name_repo_without_base(tmp_path: Path) -> None:
    with pytest.raises(OptionError) as info:
        ReportOptions(universe="u.csv", splits="s.json", repo="../elsewhere")
    assert str(info.value) == "repo names where base is read: give base too"
