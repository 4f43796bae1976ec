"""Bake says which existing samples it moved relative to the committed split, and why, in a
real git repository (the split, universe and metrics at HEAD; the working-tree split gone, as
under ``dvc repro``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.baking.moves import committed
from tests.helpers.repos import copy
from tests.helpers.shell import sh

RETURNED = ("dvc-cuvis: warning: 2 samples of npz/day2_line-b_s04 returned from test to "
            "train: test now has groups of its own")


@pytest.fixture
def repo(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the committed README workflow (4 recordings x 2 frames), as the cwd."""
    repo = copy(built, tmp_path / "repo")
    monkeypatch.chdir(repo)
    return repo


def grow(repo: Path, suffix: str = "c") -> None:
    """One new recording beside each of the four (a folder ``<recording>-<suffix>`` holding
    one frame without a ``source`` member: the folder is its group), enumerated; the
    working-tree splits.json removed, as ``dvc repro`` does before bake.

    With suffix ``c``, two of the four new groups hash into test (seed 0); with ``new``,
    none does and test borrows ``day1_line-a_s01-new/``."""
    recordings = sorted(p for p in (repo / "data/npz").iterdir() if p.name.startswith("day"))
    for k, rec in enumerate(recordings):
        new = rec.parent / f"{rec.name}-{suffix}"
        new.mkdir()
        np.savez(new / "frame_0000.npz", cube=np.full((8, 8, 3), k, np.float32),
                 wavelengths=np.array([500, 600, 700], np.int32))
    sh("dvc-cuvis", "enumerate", "--params", "params.yaml", cwd=repo)
    (repo / "splits.json").unlink()


@pytest.mark.slow  # builds a repository of its own: several seconds
def test_a_lent_group_that_returns_is_named_with_its_count_and_reason(repo: Path, cli) -> None:
    head = json.loads(sh("git", "show", "HEAD:metrics/splits.json", cwd=repo))
    assert head["lent_groups"] == ["npz/day2_line-b_s04"]  # test borrowed it: too few groups
    grow(repo)
    r = cli("bake", "--params", "params.yaml")
    assert r.code == 0, r.err
    assert RETURNED in r.err.splitlines()
    moved = [ln for ln in r.err.splitlines() if " samples of " in ln or " sample of " in ln]
    assert moved == [RETURNED]  # the returned group alone: every other sample kept its stage
    now = json.loads((repo / "metrics/splits.json").read_text()).get("lent_groups", [])
    assert "npz/day2_line-b_s04" not in now  # (a new group may be lent: no existing sample)
    # the same split again (committed now): nothing moved, nothing said
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-qm", "grown", cwd=repo)
    again = cli("bake", "--params", "params.yaml")
    assert again.code == 0 and "sample" not in again.err


@pytest.mark.slow  # builds a repository of its own: several seconds
def test_a_lent_group_replaced_by_another_loan_says_so(repo: Path, cli) -> None:
    grow(repo, "new")  # no new group hashes into test: it borrows again
    r = cli("bake", "--params", "params.yaml")
    now = json.loads((repo / "metrics/splits.json").read_text())["lent_groups"]
    assert r.code == 0 and now == ["day1_line-a_s01-new/"]
    assert r.err.splitlines() == [
        "dvc-cuvis: warning: 2 samples of npz/day2_line-b_s04 returned from test to train: "
        "test borrows another group now"]


@pytest.mark.slow  # builds a repository of its own: several seconds
def test_moves_under_other_settings_say_why(repo: Path, cli) -> None:
    r = cli("bake", "--params", "params.yaml", "--seed", "7")
    moved = [ln for ln in r.err.splitlines() if "of npz/" in ln]
    assert r.code == 0 and moved
    lent = json.loads((repo / "metrics/splits.json").read_text()).get("lent_groups", [])
    for ln in moved:
        group = ln.split(" of ", 1)[1].split()[0]
        if group in lent:  # lent now (and not before: test borrowed npz/day2_line-b_s04)
            assert " has no group of its own" in ln and (" lent to " in ln or " lent from "
                                                         in ln), ln
        elif group == "npz/day2_line-b_s04":
            assert " returned from test to " in ln, ln
        else:
            assert ln.endswith("its hash stage changed (the seed, the ratios or the "
                               "grouping differ from the committed split's)"), ln
    assert any("its hash stage changed" in ln for ln in moved)
    r = cli("bake", "--params", "params.yaml", "--strategy", "random", "--seed", "1")
    moved = [ln for ln in r.err.splitlines() if "of npz/" in ln]
    assert r.code == 0 and moved
    assert all("the random strategy places every group anew when the universe changes"
               in ln for ln in moved), moved
    # counted per group: each line's count is that group's moved samples (2 frames each)
    assert all(ln.split()[2] in ("1", "2") for ln in moved), moved


def test_no_committed_split_is_nothing_to_compare(tmp_path: Path) -> None:
    assert committed(tmp_path / "splits.json", tmp_path / "universe.csv", None) is None
    sh("git", "init", "-q", cwd=tmp_path)  # a repository without a commit
    assert committed(tmp_path / "splits.json", tmp_path / "universe.csv", None) is None


@pytest.mark.slow  # builds a repository of its own: several seconds
def test_the_committed_split_is_read_from_head_not_the_working_tree(repo: Path) -> None:
    (repo / "splits.json").unlink()
    (repo / "metrics/splits.json").write_text("{}")
    old = committed(repo / "splits.json", repo / "universe.csv", repo / "metrics/splits.json")
    assert old is not None
    assert old.lent == frozenset({"npz/day2_line-b_s04"})
    assert old.splits == sh("git", "show", "HEAD:splits.json", cwd=repo).encode()
    assert sum(old.version.counts()[s] for s in ("train", "val", "test")) == 8


def test_many_moved_groups_are_named_up_to_a_limit_and_counted(tmp_path: Path) -> None:
    from dvc_cuvis.baking import BakeOptions, bake
    from dvc_cuvis.baking.moves import NAMED, Committed, moved
    from dvc_cuvis.model.compare import Version
    from dvc_cuvis.model.universe import Universe

    uni = Universe.from_records([{"source": f"g{g:02d}/f.npz", "index": i, "group": f"g{g:02d}"}
                                 for g in range(40) for i in range(3)])
    (before,) = bake(uni, BakeOptions(seed=0))
    opts = BakeOptions(seed=1)
    (after,) = bake(uni, opts)
    old = Committed(Version("HEAD", uni, before.stages, None, []), frozenset(), b"")
    lines = moved(old, uni, after, opts)
    # rows are in canonical order: group g holds rows 3g..3g+2
    changed = [g for g in range(40) if any((3 * g in before.stages[s]) != (3 * g in after.stages[s])
                                           for s in ("train", "val", "test"))]
    assert len(changed) > NAMED  # a new seed moves most groups
    assert len(lines) == NAMED + 1
    assert all(ln.startswith("3 samples of g") and "its hash stage changed" in ln
               for ln in lines[:NAMED]), lines
    assert lines[-1] == (f"... and {3 * (len(changed) - NAMED)} more samples moved "
                         f"({len(changed) - NAMED} more groups or transitions)")
    assert moved(Committed(Version("HEAD", uni, after.stages, None, []), frozenset(), b""),
                 uni, after, opts) == []


def test_npz_moves_are_summed_per_recording_unless_by_sample() -> None:
    from dvc_cuvis.baking import BakeOptions, bake
    from dvc_cuvis.baking.moves import NAMED, Committed, moved
    from dvc_cuvis.model.compare import Version
    from dvc_cuvis.model.universe import Universe

    # each frame its own group (group_by source): a reseed scatters a recording's frames
    uni = Universe.from_records([{"source": f"rec_{r:02d}/frame_{f:04d}.npz", "index": 0}
                                 for r in range(3) for f in range(12)])
    (before,) = bake(uni, BakeOptions(seed=0, group_by="source"))
    opts = BakeOptions(seed=3, group_by="source")
    (after,) = bake(uni, opts)
    old = Committed(Version("HEAD", uni, before.stages, None, []), frozenset(), b"")
    long = moved(old, uni, after, opts, by_sample=True)
    assert long and all(ln.startswith("1 sample of rec_") and "/frame_" in ln.split(" moved")[0]
                        for ln in long if not ln.startswith("..."))
    short = moved(old, uni, after, opts)
    assert short and not any("/frame_" in ln for ln in short)
    per = {}  # the same moves counted by hand: (recording, from, to) -> frames
    stage = {s: set(after.stages[s].tolist()) for s in ("train", "val", "test")}
    for s0 in ("train", "val", "test"):
        for row in before.stages[s0].tolist():
            s1 = next(s for s in ("train", "val", "test") if row in stage[s])
            if s1 != s0:
                key = (f"rec_{row // 12:02d}", s0, s1)
                per[key] = per.get(key, 0) + 1
    order = ("train", "val", "test")
    want = [f"{n} sample{'s' if n != 1 else ''} of {rec} moved from {a} to {b}: its hash "
            "stage changed (the seed, the ratios or the grouping differ from the committed "
            "split's)" for (rec, a, b), n in sorted(
                per.items(), key=lambda kv: (-kv[1], kv[0][0], order.index(kv[0][1]),
                                             order.index(kv[0][2])))]
    assert len(per) > NAMED  # capped like the per-group lines, counted per recording
    rest = sum(sorted(per.values(), reverse=True)[NAMED:])
    assert short == [*want[:NAMED], f"... and {rest} more samples moved ({len(per) - NAMED} "
                     "more groups or transitions)"]
