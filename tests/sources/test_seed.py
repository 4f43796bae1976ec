"""A seed DVC vouches for: on a fresh ``git clone`` + ``dvc pull`` (or a ``dvc checkout`` of a
revision this machine never enumerated) enumerate parses no frame when HEAD's universe.csv
and metrics are exactly what HEAD's dvc.lock recorded for the enumerate stage; every broken
condition (a hand-edited row, another code version, another group setting, an edited frame)
means the files are read.  Real git + DVC repositories with a local remote."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.cli import main
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.sources import seed
from dvc_cuvis.sources.npz import frame_info, frame_info_from_row
from examples.generate import generate
from tests.helpers.memo import plain
from tests.helpers.repos import BUILDERS, pristine
from tests.helpers.shell import sh

pytestmark = [pytest.mark.usefixtures("_site_cache"),
              pytest.mark.slow]  # a pipeline repository pushed to a remote, ~9 s in all

DVC_YAML = """\
stages:
  enumerate:
    cmd: dvc-cuvis enumerate --params params.yaml
    deps:
      - data
    params:
      - enumerate
    outs:
      - universe.csv:
          cache: false
    metrics:
      - metrics/universe.json:
          cache: false
"""
PARAMS = ("enumerate:\n  format: npz\n  root: data/npz\n  out: universe.csv\n"
          "  metrics: metrics/universe.json\n")


def _build_origin(root: Path) -> None:
    """A pipeline repository (an enumerate stage, as ``dvc-cuvis init`` writes it) with two
    revisions v1, v2 (every frame's bytes differ), each reproduced, committed and pushed."""
    remote = root.parent / f"{ORIGIN}.remote"  # beside the repo: a stable path
    shutil.rmtree(remote, ignore_errors=True)
    sh("git", "init", "-q", cwd=root)
    sh("dvc", "init", "-q", cwd=root)
    sh("dvc", "remote", "add", "-d", "store", str(remote), cwd=root)
    (root / "dvc.yaml").write_text(DVC_YAML, encoding="utf-8")
    (root / "params.yaml").write_text(PARAMS, encoding="utf-8")
    for rev, (seed_, extra) in {"v1": (1, 0), "v2": (2, 1)}.items():
        generate(root / "data", sessions=3, frames=4, size=(8, 8), bands=4, seed=seed_,
                 extra_sessions=extra)
        sh("dvc", "add", "-q", "data", cwd=root)
        sh("dvc", "repro", "-q", cwd=root)
        sh("git", "add", "-A", cwd=root)
        sh("git", "commit", "-qm", rev, cwd=root)
        sh("git", "tag", rev, cwd=root)
    sh("dvc", "push", "-q", "-a", "-T", cwd=root)


#: The builder's name carries a digest of what it writes (a kept build is rebuilt on change).
ORIGIN = "seed-origin-" + hashlib.sha256((DVC_YAML + PARAMS).encode()).hexdigest()[:10]
BUILDERS.setdefault(ORIGIN, _build_origin)


@pytest.fixture(scope="session")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two-revision pipeline repository, built once per run (tests clone it)."""
    return pristine(ORIGIN, tmp_path_factory.getbasetemp() / "repos")


def clone_of(origin: Path, where: Path, env: dict[str, str]) -> Path:
    clone = where / "clone"
    sh("git", "clone", "-q", str(origin), str(clone), cwd=where, env=env)
    sh("dvc", "pull", "-q", cwd=clone, env=env)
    assert not (clone / ".dvc" / "tmp" / "dvc-cuvis").exists()  # no stat cache of ours
    return clone


def enumerate_cli(clone: Path, monkeypatch: pytest.MonkeyPatch,
                  capsys: pytest.CaptureFixture[str]) -> str:
    """``dvc-cuvis enumerate --params params.yaml`` in-process in ``clone``; its stderr."""
    monkeypatch.chdir(clone)
    capsys.readouterr()
    assert main(["enumerate", "--params", "params.yaml"]) == 0
    return capsys.readouterr().err


def committed(clone: Path, env: dict[str, str], path: str) -> bytes:
    return subprocess.run(["git", "show", f"HEAD:{path}"], cwd=clone, env=env,
                          capture_output=True, check=True).stdout


def n_frames(clone: Path) -> int:
    return len(list((clone / "data" / "npz").rglob("*.npz")))


def test_fresh_clone_pull_parses_no_frame_and_writes_the_same_bytes(
    origin: Path, tmp_path: Path, env: dict[str, str], reads: list[str],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    clone = clone_of(origin, tmp_path, env)
    n = n_frames(clone)
    err = enumerate_cli(clone, monkeypatch, capsys)
    assert reads == []
    assert f"frames parsed 0, from the memo {n}" in err and "hashed 0" in err
    csv_text, metrics = plain(clone)  # every frame read, no cache, no DVC
    assert (clone / "universe.csv").read_text(encoding="utf-8") == csv_text
    assert (clone / "universe.csv").read_bytes() == committed(clone, env, "universe.csv")
    assert json.loads((clone / "metrics" / "universe.json").read_text()) == metrics
    assert metrics["derived"] == {"npz-frame": 1}


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every npz frame the door reads for its verdict (its path), in call order."""
    import dvc_cuvis.sources.npz as npz_source

    seen: list[str] = []
    real = npz_source.npz_verdict

    def counting(path: Path) -> list[str]:
        seen.append(str(path))
        return real(path)

    monkeypatch.setattr(npz_source, "npz_verdict", counting)
    return seen


def test_fresh_clone_reads_no_frame_byte_for_the_door_and_a_tampered_frame_is_checked(
    origin: Path, tmp_path: Path, env: dict[str, str], reads: list[str], checked: list[str],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    clone = clone_of(origin, tmp_path, env)
    assert json.loads(committed(clone, env, "metrics/universe.json"))["door"] == {
        "npz-verdict": 2}
    err = enumerate_cli(clone, monkeypatch, capsys)
    assert checked == [] and reads == []  # no verdict taken, no frame parsed
    assert "hashing: 0 bytes read" in err
    # a frame whose bytes differ from what HEAD vouches for is read and checked
    frame = sorted((clone / "data" / "npz").rglob("*.npz"))[0]
    frame.write_bytes(frame.read_bytes()[:-40] + b"\0" * 40)  # its central directory gone
    shutil.rmtree(clone / ".dvc" / "tmp" / "dvc-cuvis")
    capsys.readouterr()
    assert main(["enumerate", "--params", "params.yaml"]) == 2
    err = capsys.readouterr().err
    assert checked == [str(frame)] and frame.name in err


def test_a_door_of_another_recipe_version_seeds_no_verdict(
    origin: Path, tmp_path: Path, env: dict[str, str], checked: list[str],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    clone = clone_of(origin, tmp_path, env)
    mpath = clone / "metrics" / "universe.json"
    true_metrics = json.loads(mpath.read_text())
    mpath.write_text(json.dumps({**true_metrics, "door": {"npz-verdict": 1}}, indent=2)
                     + "\n", encoding="utf-8")
    sh("dvc", "commit", "-q", "-f", "enumerate", cwd=clone, env=env)  # dvc.lock vouches for it
    sh("git", "commit", "-qam", "a run of an older door", cwd=clone, env=env)
    enumerate_cli(clone, monkeypatch, capsys)
    assert len(checked) == n_frames(clone)  # vouched, but by another door: every frame read


def test_checkout_of_a_revision_never_enumerated_here_parses_no_frame(
    origin: Path, tmp_path: Path, env: dict[str, str], reads: list[str],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    clone = clone_of(origin, tmp_path, env)
    sh("dvc", "fetch", "-q", "-T", cwd=clone, env=env)
    enumerate_cli(clone, monkeypatch, capsys)  # v2, seeded; its values now in our memo
    sh("git", "checkout", "-q", "v1", cwd=clone, env=env)
    sh("dvc", "checkout", "-q", cwd=clone, env=env)  # v1's bytes: none seen on this machine
    reads.clear()
    err = enumerate_cli(clone, monkeypatch, capsys)
    assert reads == [] and "frames parsed 0" in err
    assert (clone / "universe.csv").read_text(encoding="utf-8") == plain(clone)[0]


def test_inside_dvc_repro_the_stage_parses_no_frame(
    origin: Path, tmp_path: Path, env: dict[str, str],
) -> None:
    clone = clone_of(origin, tmp_path, env)
    proc = subprocess.run(["dvc", "repro", "-f", "-s", "enumerate"], cwd=clone, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"frames parsed 0, from the memo {n_frames(clone)}" in proc.stdout + proc.stderr
    assert sh("git", "status", "--porcelain", cwd=clone, env=env) == ""  # same bytes, same lock


def test_a_hand_edited_universe_csv_committed_without_a_run_seeds_nothing(
    origin: Path, tmp_path: Path, env: dict[str, str], reads: list[str], checked: list[str],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    clone = clone_of(origin, tmp_path, env)
    text = (clone / "universe.csv").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    header = lines[1 - 1].rstrip("\n").split(",")
    cats, tags = header.index("category_ids"), header.index("tags")
    row = lines[1].rstrip("\n").split(",")
    row[cats], row[tags] = "7", "anomalous"  # same md5, other values: only its file knows
    lines[1] = ",".join(row) + "\n"
    (clone / "universe.csv").write_text("".join(lines), encoding="utf-8")
    sh("git", "commit", "-qam", "hand edit", cwd=clone, env=env)
    err = enumerate_cli(clone, monkeypatch, capsys)
    assert len(reads) == n_frames(clone) and "from the memo 0" in err
    assert len(checked) == n_frames(clone)  # no verdict taken from an unvouched file either
    assert (clone / "universe.csv").read_text(encoding="utf-8") == text == plain(clone)[0]


def test_metrics_of_another_code_version_or_edited_metrics_seed_nothing(
    origin: Path, tmp_path: Path, env: dict[str, str], reads: list[str],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    clone = clone_of(origin, tmp_path, env)
    mpath = clone / "metrics" / "universe.json"
    true_metrics = json.loads(mpath.read_text())

    def write_metrics(version: int) -> None:
        mpath.write_text(json.dumps({**true_metrics, "derived": {"npz-frame": version}},
                                    indent=2) + "\n", encoding="utf-8")

    def enumerate_cold() -> None:
        shutil.rmtree(clone / ".dvc" / "tmp" / "dvc-cuvis", ignore_errors=True)
        reads.clear()
        enumerate_cli(clone, monkeypatch, capsys)  # (it writes the true metrics back)

    write_metrics(0)  # as an older frame parser would have written them
    sh("dvc", "commit", "-q", "-f", "enumerate", cwd=clone, env=env)  # dvc.lock vouches for it
    sh("git", "commit", "-qam", "a run of another version", cwd=clone, env=env)
    assert (hashlib.md5(committed(clone, env, "metrics/universe.json")).hexdigest()
            in committed(clone, env, "dvc.lock").decode())
    enumerate_cold()
    assert len(reads) == n_frames(clone)  # vouched, but derived by another code version
    write_metrics(1)  # the version claim edited by hand, dvc.lock not: not what ran
    sh("git", "commit", "-qam", "metrics edited", cwd=clone, env=env)
    enumerate_cold()
    assert len(reads) == n_frames(clone)
    assert json.loads(mpath.read_text()) == true_metrics


def npz_frame(source: str, ids: list[int]) -> bytes:
    buf = io.BytesIO()
    mask = np.zeros((8, 8), np.uint8)
    for i, c in enumerate(ids):
        mask[i, i] = c
    np.savez(buf, cube=np.ones((8, 8, 4), np.float32), class_mask=mask,
             wavelengths=np.arange(4, dtype=np.int32), source=np.array(source))
    return buf.getvalue()


def test_a_frame_edited_after_pull_is_parsed_from_its_file(
    origin: Path, tmp_path: Path, env: dict[str, str], reads: list[str],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    clone = clone_of(origin, tmp_path, env)
    victim = sorted((clone / "data" / "npz").rglob("*.npz"))[3]
    victim.chmod(0o644)  # DVC may have linked it read-only
    victim.write_bytes(npz_frame("npz/edited", [3, 5]))
    err = enumerate_cli(clone, monkeypatch, capsys)
    assert reads == [str(victim)] and "frames parsed 1" in err
    text = (clone / "universe.csv").read_text(encoding="utf-8")
    assert text == plain(clone)[0] and ",npz/edited," in text and ",3;5\n" in text


def test_a_run_whose_group_column_is_not_the_source_member_seeds_nothing(
    origin: Path, tmp_path: Path, env: dict[str, str], reads: list[str],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    clone = clone_of(origin, tmp_path, env)
    (clone / "params.yaml").write_text(PARAMS + "  group: parent\n", encoding="utf-8")
    sh("dvc", "repro", "-q", cwd=clone, env=env)  # group = folders; dvc.lock records the param
    sh("git", "commit", "-qam", "group by folder", cwd=clone, env=env)
    shutil.rmtree(clone / ".dvc" / "tmp" / "dvc-cuvis")  # as on a fresh clone of this
    reads.clear()
    enumerate_cli(clone, monkeypatch, capsys)
    assert len(reads) == n_frames(clone)  # the group column says nothing of the frames
    (clone / "params.yaml").write_text(PARAMS, encoding="utf-8")  # back to the member
    enumerate_cli(clone, monkeypatch, capsys)
    assert (clone / "universe.csv").read_text(encoding="utf-8") == plain(clone)[0]


def test_no_git_or_no_vouched_stage_is_a_plain_run(tmp_path: Path) -> None:
    data = tmp_path / "npz"
    data.mkdir()
    (data / "a.npz").write_bytes(npz_frame("rec", [2]))
    assert seed.vouched_values(str(tmp_path / "universe.csv"), str(tmp_path / "m.json")) == {}
    cache = StatCache(None)
    seed.attach(cache, "npz", tmp_path / "universe.csv", tmp_path / "m.json")
    assert cache.memo_lookup("npz-frame/v1", "0" * 32) == (False, None)
    assert cache.seeded == 0


def test_a_row_gives_back_exactly_what_the_frame_parser_derived(tmp_path: Path) -> None:
    frames = {"labeled": npz_frame("rec a", [4, 1]), "clean": npz_frame("rec,b", []),
              "ws": npz_frame(" padded", [1])}
    buf = io.BytesIO()
    np.savez(buf, cube=np.ones((2, 2, 2), np.float32),  # no mask, no source: unlabeled
             wavelengths=np.arange(2, dtype=np.int32))
    frames["bare"] = buf.getvalue()
    for name, data in frames.items():
        (tmp_path / f"{name}.npz").write_bytes(data)
    import csv

    text, _ = plain(tmp_path, ".")
    rows = {r["source"]: r for r in csv.DictReader(io.StringIO(text))}
    for name in frames:
        got = frame_info_from_row(rows[f"{name}.npz"])
        if name == "ws":
            assert got is None  # the universe's columns would not keep the blank: not exact
        else:
            assert got == frame_info(tmp_path / f"{name}.npz"), name
    assert frame_info_from_row({**rows["labeled.npz"], "category_ids": "4;1"}) is None
    assert frame_info_from_row({**rows["labeled.npz"], "tags": "normal"}) is None
    assert frame_info_from_row({**rows["bare.npz"], "tags": "normal"}) == {
        "source": "", "ids": []}


def test_rows_are_read_with_the_universe_reader_and_keep_the_per_row_rule() -> None:
    """The seed's rows come from the universe reader (not a csv module of its own) and give
    what the per-row rule gives: exact rows only, npz rows only, md5s whose rows agree."""
    import csv

    from dvc_cuvis.errors import UniverseError
    from dvc_cuvis.sources.npz import FRAME_INFO

    md5 = [f"{k:032x}" for k in range(8)]
    rows = [
        ("a/0.npz", "npz", "rec a", md5[0], "anomalous", "1;4"),
        ("a/1.npz", "npz", "rec a", md5[1], "normal", ""),
        ("b/0.npz", "npz", "rec,b", md5[2], "unlabeled", ""),  # quoted on write
        ("c/0.npz", "npz", " padded", md5[3], "normal", ""),  # the reader strips it: skipped
        ("c/1.npz", "npz", "tail ", md5[4], "normal", ""),  # likewise
        ("d/0.npz", "tiff", "rec a", md5[5], "normal", ""),  # not an npz row
        ("d/1.npz", "npz", "rec a", md5[6], "normal", "1"),  # tags disagree: not exact
        ("e/0.npz", "npz", "rec a", md5[7], "normal", ""),
        ("e/1.npz", "npz", "rec e", md5[7], "normal", ""),  # one md5, two values: neither
        ("f/0.npz", "npz", "rec a", "abc", "normal", ""),  # not an md5
    ]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["source", "index", "format", "group", "md5", "tags", "category_ids"])
    for src, fmt, group, digest, tags, ids in rows:
        writer.writerow([src, "", fmt, group, digest, tags, ids])
    data = buf.getvalue().encode("utf-8")
    got = seed._row_values(data, "universe.csv")[FRAME_INFO]
    want = {}
    for _src, fmt, group, digest, tags, ids in rows:  # the rule, row by row
        value = frame_info_from_row({"group": group, "tags": tags, "category_ids": ids})
        if fmt == "npz" and len(digest) == 32 and value is not None:
            want.setdefault(digest, []).append(value)
    want = {d: v[0] for d, v in want.items() if all(x == v[0] for x in v)}
    assert got == want
    assert set(got) == {md5[0], md5[1], md5[2]}  # the rule above, spelled out
    assert got[md5[2]] == {"source": "rec,b", "ids": None}
    with pytest.raises(UniverseError, match=r"universe\.csv:2: expected 7 fields"):
        seed._row_values(data.replace(b",npz,", b",npz,,", 1), "universe.csv")  # strict reader
    assert seed._row_values(data.replace(b"md5", b"sum", 1), "universe.csv") == {}


@pytest.mark.parametrize("cmd,params,expected", [
    ("dvc-cuvis enumerate --format npz --root d --group parent", {}, "parent"),
    ("dvc-cuvis enumerate --group=parent --format npz", {}, "parent"),
    ("dvc-cuvis enumerate --group none --group auto", {}, "auto"),  # the last one wins
    ("dvc-cuvis enumerate --group sideways", {}, None),  # the verb would refuse it
    ("dvc-cuvis enumerate --grup parent", {}, None),  # an unknown flag: nothing vouched
    ("dvc-cuvis enumerate --group", {}, None),
    ("dvc-cuvis enumerate --no-params --format npz", {}, "auto"),
    ("dvc-cuvis enumerate --params p.yaml", {"p.yaml": {"enumerate": {"group": "none"}}},
     "none"),
    ("dvc-cuvis enumerate --params p.yaml", {"p.yaml": {"enumerate.group": "parent"}},
     "parent"),
    ("dvc-cuvis enumerate --params other.yaml", {}, None),  # not tracked for the stage
])
def test_the_recorded_group_setting_is_read_with_the_verbs_own_parser(
        tmp_path: Path, cmd: str, params: dict, expected: str | None) -> None:
    from dvc_cuvis.repo.lockfile import Stage
    from dvc_cuvis.sources.seed import _group_setting

    stage = Stage("enumerate", cmd, [], [], params)
    assert _group_setting(stage, str(tmp_path), str(tmp_path), lambda rel: None) == expected


def test_a_frame_dvc_vouches_for_is_never_read_for_its_verdict(
    origin: Path, tmp_path: Path, env: dict[str, str], reads: list[str],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """The seed gives a frame's values and its verdict: a fresh clone reads no frame, nor does
    a checkout of another vouched revision, away and back."""
    import dvc_cuvis.sources.npz as npz_source

    verdicts: list[str] = []
    real = npz_source.npz_verdict
    monkeypatch.setattr(npz_source, "npz_verdict",
                        lambda p: verdicts.append(str(p)) or real(p))
    clone = clone_of(origin, tmp_path, env)
    err = enumerate_cli(clone, monkeypatch, capsys)
    assert reads == [] and "frames parsed 0" in err and "hashed 0" in err
    assert verdicts == []
    enumerate_cli(clone, monkeypatch, capsys)
    assert verdicts == []
    sh("dvc", "fetch", "-q", "-T", cwd=clone, env=env)  # every revision's data, not checked out
    sh("git", "checkout", "-q", "v1", cwd=clone, env=env)
    sh("dvc", "checkout", "-q", "data.dvc", cwd=clone, env=env)
    enumerate_cli(clone, monkeypatch, capsys)
    assert verdicts == []  # other bytes, vouched by v1's dvc.lock and universe.csv
    sh("git", "checkout", "-q", "v2", cwd=clone, env=env)
    sh("dvc", "checkout", "-q", "data.dvc", cwd=clone, env=env)
    enumerate_cli(clone, monkeypatch, capsys)
    assert verdicts == []  # bytes checked before, rewritten by DVC: the memo answers
