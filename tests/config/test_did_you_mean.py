"""One "did you mean" for every error that suggests a name: keys, values, sections, flags."""

from __future__ import annotations

import re
from pathlib import Path

from dvc_cuvis.config.options import closest, did_you_mean

PKG = Path(__file__).resolve().parents[2] / "dvc_cuvis"


def test_one_wording_names_in_quotes_and_flags_as_typed() -> None:
    assert did_you_mean("val_ratio") == "; did you mean 'val_ratio'?"
    assert did_you_mean("--out-dir") == "; did you mean --out-dir?"
    assert did_you_mean(None) == did_you_mean("") == ""


def test_closest_takes_a_cutoff() -> None:
    names = ["d/a.cu3s", "d/b.cu3s", "zzz"]
    assert closest("d/c.cu3s", names) == "d/b.cu3s"  # a tie goes to the greater name
    assert closest("val_ratoi", ["val_ratio", "test_ratio"]) == "val_ratio"
    assert closest("qqqq", names) is None
    assert closest("ab", ["abcd"], cutoff=0.5) == "abcd"
    assert closest("ab", ["abcd"], cutoff=0.7) is None


def test_no_module_words_did_you_mean_itself() -> None:
    pattern = re.compile(r"did you mean", re.IGNORECASE)
    spelled = []
    for f in sorted(PKG.rglob("*.py")):
        if f.relative_to(PKG).as_posix() == "config/options.py":
            continue
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1):
            code = line.split("#", 1)[0]
            if pattern.search(code) and not code.lstrip().startswith(("dvc_cuvis.", '"""')):
                spelled.append(f"{f.relative_to(PKG)}:{n}: {line.strip()}")
    assert spelled == []
