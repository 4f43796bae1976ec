"""diff names category renames and per-stage per-category count changes (text, md, json)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.model.splits import dumps_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import write_universe
from tests.helpers.shell import sh

#: id 3's name at the second revision: a pipe, a backtick and an escape sequence in it
HOSTILE = "weeds|`x`\x1b[2J"


def test_diff_reports_category_renames_and_count_changes(tmp_path: Path, cli,
                                                         monkeypatch) -> None:
    root = tmp_path
    sh("git", "init", "-q", cwd=root)
    uni = Universe.from_records({"source": f"s{s:02d}.cu3s", "index": i,
                                 "category_ids": "1;3" if s % 2 else "1"}
                                for s in range(8) for i in range(2))
    write_universe(uni, root / "universe.csv")
    (b,) = bake(uni, BakeOptions(seed=0, group_by="source"))
    (root / "splits.json").write_text(dumps_splits(b.config))
    (root / "params.yaml").write_text(yaml.safe_dump({"bake": {"categories": "names.json"}}))
    (root / "names.json").write_text(json.dumps({"crop": 1, "weed": 3}))
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", "v1", cwd=root)
    cfg = json.loads((root / "splits.json").read_text())
    cfg["test"].append(cfg["train"].pop(0))  # one source's frames move train -> test
    (root / "splits.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (root / "names.json").write_text(json.dumps({"categories": [
        {"id": 1, "name": "crop"}, {"id": 3, "name": HOSTILE}]}))  # the COCO form
    sh("git", "commit", "-qam", "v2", cwd=root)
    monkeypatch.chdir(root)

    got = json.loads(cli("diff", "HEAD~1", "HEAD", "--json").out)["categories"]
    assert got["renamed"] == [{"id": 3, "a": "weed", "b": HOSTILE}]
    moved = {(c["stage"], c["id"]): (c["a"], c["b"]) for c in got["counts"]}
    assert {s for s, _ in moved} == {"train", "test"} and ("train", 1) in moved
    (ta, tb), (sa, sb) = moved["train", 1], moved["test", 1]
    assert ta - tb == 2 and sb - sa == 2  # the moved source's two frames, each with id 1

    text = cli("diff", "HEAD~1", "HEAD").out
    assert "category 3 renamed: 'weed' → 'weeds|`x`\\x1b[2J'" in text
    assert "\x1b" not in text
    assert "samples per category and stage:" in text
    assert f"  train    'crop' (1)              {ta:>8}{tb:>8}{tb - ta:>+8}" in text

    md = cli("diff", "HEAD~1", "HEAD", "--md").out
    assert "Category 3 renamed: `weed` → ``weeds|`x`\\x1b[2J``" in md
    assert "| stage | category | before | after | Δ |" in md
    assert f"| train | `crop` (1) | {ta} | {tb} | {tb - ta:+d} |" in md
    assert "\x1b" not in md and "`weeds\\|" not in md.split("renamed:")[1].split("\n")[0]

    same = json.loads(cli("diff", "HEAD", "HEAD", "--json").out)["categories"]
    assert same == {"renamed": [], "counts": []}


def test_diff_summarises_npz_moves_per_recording(tmp_path: Path, cli, monkeypatch) -> None:
    """npz frames of one recording folder moving together are one line; --by-sample lists
    each frame as before."""
    root = tmp_path
    sh("git", "init", "-q", cwd=root)
    uni = Universe.from_records({"source": f"rec_{r:02d}/frame_{f:04d}.npz", "index": 0,
                                 "group": f"rec_{r:02d}"}
                                for r in range(6) for f in range(12))
    write_universe(uni, root / "universe.csv")
    (b,) = bake(uni, BakeOptions(seed=0, group_by="group"))
    (root / "splits.json").write_text(dumps_splits(b.config))
    sh("git", "add", "-A", cwd=root)
    sh("git", "commit", "-qm", "v1", cwd=root)
    (b,) = bake(uni, BakeOptions(seed=5, group_by="group"))  # a reseed moves recordings
    (root / "splits.json").write_text(dumps_splits(b.config))
    sh("git", "commit", "-qam", "v2", cwd=root)
    monkeypatch.chdir(root)

    got = json.loads(cli("diff", "HEAD~1", "HEAD", "--json").out)
    moved = {}
    for c in got["changed_samples"]:
        rec = c["source"].split("/")[0]
        moved.setdefault(rec, set()).add(f"{c['from']}->{c['to']}")
    assert moved and all(len(t) == 1 for t in moved.values())  # whole recordings move
    text = cli("diff", "HEAD~1", "HEAD").out
    lines = [ln for ln in text.splitlines() if ln.startswith("  rec_")]
    assert lines == [f"  {rec}: 12 frames {next(iter(t))}" for rec, t in sorted(moved.items())]
    assert "frame_0000.npz" not in text
    long = cli("diff", "HEAD~1", "HEAD", "--by-sample", "--all").out
    assert sum(ln.startswith("  rec_") for ln in long.splitlines()) == 12 * len(moved)
    md = cli("diff", "HEAD~1", "HEAD", "--md").out
    assert "<summary>Changed samples by recording</summary>" in md
    assert f"{sorted(moved)[0]}: 12 frames" in md
