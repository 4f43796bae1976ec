"""Hardening: fuzzed parsers and CLI (never a traceback), path safety, crashes, concurrency."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dvc_cuvis.cli import main
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.universe_io import parse_universe_bytes
from dvc_cuvis.paths.guard import resolve_inside
from examples.generate import generate
from tests.helpers import crashpoints, forked

CORPUS = Path(__file__).parents[1] / "fuzz_corpus"
FUZZ = settings(max_examples=120, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def assert_clean_failure(code: int, err: str, *, names: str | None = None) -> None:
    assert code in (0, 1, 2), code
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 2 and names is not None:
        assert names in err, err


VALID_SPLITS = json.dumps({"train": [{"kind": "all"}]})

cells = st.lists(st.sampled_from([*"ab/\\.,\"\n\r \t#:é0123456789-", "\x00", "..", "C:"]),
                 max_size=8).map("".join)


@pytest.mark.slow  # ~1.5 s of examples
@FUZZ
@given(header=st.sampled_from(["source,index", "source,index,materialized_path",
                               "\ufeffsource,index,group,category_ids", "index,source,tags",
                               "source", "source,index,source", ""]),
       rows=st.lists(st.lists(cells, min_size=1, max_size=5), max_size=6),
       crlf=st.booleans(), raw=st.binary(max_size=40))
def test_fuzz_universe_csv(tmp_path: Path, capsys, header, rows, crlf, raw) -> None:
    nl = "\r\n" if crlf else "\n"
    text = header + nl + nl.join(",".join(r) for r in rows)
    for data in (text.encode("utf-8", "surrogatepass"), raw, text.encode()[:17] + raw):
        u = tmp_path / "u.csv"
        u.write_bytes(data)
        s = tmp_path / "s.json"
        s.write_text(VALID_SPLITS)
        code, _, err = run(["resolve", "--universe", str(u), "--splits", str(s), "--json"], capsys)
        assert_clean_failure(code, err, names="u.csv")


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 2**70), st.floats(),
                      st.text(max_size=8), st.sampled_from(["file_indices", "all", "glob", "0-3",
                                                            "5-1", "a.npz", "train"]))
json_value = st.recursive(json_leaf, lambda ch: st.one_of(
    st.lists(ch, max_size=4), st.dictionaries(st.sampled_from(
        ["kind", "source", "ids", "paths", "of", "pattern", "any_of", "stems", "train", "val",
         "test", "predict", "constraints", "universe_hash", "severity", "x"]), ch, max_size=4)),
    max_leaves=20)


@FUZZ
@given(doc=json_value)
def test_fuzz_splits_json(tmp_path: Path, capsys, doc) -> None:
    u = tmp_path / "u.csv"
    u.write_text("source,index\na.npz,0\na.npz,1\nb.npz,0\n")
    s = tmp_path / "s.json"
    s.write_text(json.dumps(doc))
    code, _, err = run(["resolve", "--universe", str(u), "--splits", str(s)], capsys)
    assert_clean_failure(code, err)
    if code == 2:
        assert "s.json" in err or "selector" in err, err


@pytest.mark.slow  # ~1.5 s of examples
@FUZZ
@given(section=st.dictionaries(st.sampled_from(
    ["strategy", "seed", "val_ratio", "test_ratio", "group_by", "folds", "constraints",
     "predict", "universe", "out", "ad_aware", "bogus"]), json_value, max_size=5),
    raw=st.text(max_size=30))
def test_fuzz_params_yaml(tmp_path: Path, capsys, monkeypatch, section, raw) -> None:
    import yaml

    monkeypatch.chdir(tmp_path)
    Path("u.csv").write_text("source,index\na.npz,0\nb.npz,0\nc.npz,0\n")
    for text in (yaml.safe_dump({"bake": {**section, "universe": "u.csv"}}), raw):
        Path("p.yaml").write_text(text)
        code, _, err = run(["bake", "--params", "p.yaml", "--out", "s.json"], capsys)
        assert_clean_failure(code, err)


@FUZZ
@given(doc=json_value)
def test_fuzz_coco_json(tmp_path: Path, doc) -> None:
    from dvc_cuvis.sources.coco import coco_summary

    p = tmp_path / "a.json"
    p.write_text(json.dumps(doc))
    try:
        coco_summary(p)
    except DvcCuvisError as exc:
        assert "a.json" in str(exc)


@pytest.mark.slow  # ~1.5 s of examples
@FUZZ
@given(doc=json_value, soma=st.lists(st.lists(cells, min_size=1, max_size=4), max_size=5))
def test_fuzz_glovita_and_soma(tmp_path: Path, capsys, doc, soma) -> None:
    u = tmp_path / "u.csv"
    u.write_text("source,index\na.npz,0\na.npz,1\nb.npz,0\n")
    g = tmp_path / "g.json"
    g.write_text(json.dumps(doc))
    code, _, err = run(["bake", "--universe", str(u), "--from-glovita", str(g), "--out",
                        str(tmp_path / "o.json")], capsys)
    assert_clean_failure(code, err, names="g.json")
    sm = tmp_path / "splits.csv"
    sm.write_text("sample_id,split,fold\n" + "\n".join(",".join(r) for r in soma))
    code, _, err = run(["bake", "--universe", str(u), "--from-soma", str(sm), "--out-dir",
                        str(tmp_path / "f")], capsys)
    assert_clean_failure(code, err, names="splits.csv")


VERBS = ["resolve", "enumerate", "bake", "materialize", "check", "diff", "log", "export",
         "init", "install-hook", "--version", "bogus"]
FLAGS = ["--universe", "--splits", "--out", "--out-dir", "--format", "--root", "--strategy",
         "--seed", "--val-ratio", "--folds", "--json", "--crop", "--compress", "--jobs", "--to",
         "--params", "--checks", "--deep", "--fold", "-n", "--id-column", "--select"]
VALUES = ["u.csv", "s.json", "nope", "-1", "0.5", "2", "npz", "hash", "1,1,1,1", "deflate:99",
          "glovita", "", "x" * 300, "..", "/etc/passwd", "universe,bogus", "\u00e9"]


@FUZZ
@given(verb=st.sampled_from(VERBS),
       args=st.lists(st.one_of(st.sampled_from(FLAGS), st.sampled_from(VALUES)), max_size=6))
def test_fuzz_cli_arguments(tmp_path: Path, capsys, monkeypatch, verb, args) -> None:
    monkeypatch.chdir(tmp_path)
    Path("u.csv").write_text("source,index\na.npz,0\n")
    Path("s.json").write_text(VALID_SPLITS)
    code, _, err = run([verb, *args], capsys)
    assert_clean_failure(code, err)


def test_fuzz_corpus_regressions(tmp_path: Path, capsys) -> None:
    """Inputs that once misbehaved (or are nasty on purpose) stay clean failures."""
    files = sorted(CORPUS.glob("*"))
    assert files
    valid = tmp_path / "s.json"
    valid.write_text(VALID_SPLITS)
    uni = tmp_path / "u.csv"
    uni.write_text("source,index\na.npz,0\n")
    for f in files:
        if f.suffix == ".yaml":
            argv = ["bake", "--params", str(f), "--universe", str(uni), "--out",
                    str(tmp_path / "o.json")]
        elif f.suffix == ".csv":
            argv = ["resolve", "--universe", str(f), "--splits", str(valid)]
        else:
            argv = ["resolve", "--universe", str(uni), "--splits", str(f)]
        code, _, err = run(argv, capsys)
        assert_clean_failure(code, err, names=f.name)
        assert code == 2, f.name


# -- path safety ---------------------------------------------------------------------------


@pytest.mark.parametrize(("cell", "message"), [
    ("../outside.npz", "contains '..'"),
    ("/etc/passwd", "is an absolute path"),
    ("C:/data/x.npz", "is an absolute path"),
    ("c:\\\\data\\\\x.npz", "is an absolute path"),
    ("\\\\\\\\server\\\\share\\\\x.npz", "is an absolute path"),
    ("sub/../../x.npz", "contains '..'"),
])
def test_universe_refuses_paths_leaving_the_csv_folder(cell: str, message: str) -> None:
    data = f"source,index,materialized_path\na,0,{cell}\n".encode()
    with pytest.raises(DvcCuvisError, match=message):
        parse_universe_bytes(data, path=Path("u.csv"))


def test_symlinks_out_of_the_dataset_are_refused(tmp_path: Path, cli) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    np.savez(outside / "secret.npz", cube=np.zeros((2, 2, 2), np.float32),
             wavelengths=np.arange(2, dtype=np.int32))
    root = tmp_path / "ds" / "data"
    root.mkdir(parents=True)
    (root / "link.npz").symlink_to(outside / "secret.npz")
    r = cli("enumerate", "--format", "npz", "--root", root, "--out", tmp_path / "ds/u.csv",
            "--stat-cache", "none")
    assert r.code == 2 and "leads outside the dataset root" in r.err
    (root / "link.npz").unlink()
    (root / "dirlink").symlink_to(outside, target_is_directory=True)
    r = cli("enumerate", "--format", "npz", "--root", root, "--out", tmp_path / "ds/u.csv",
            "--stat-cache", "none")
    assert r.code == 2 and "leads outside the dataset root" in r.err
    # a universe.csv pointing through a symlink that leaves its folder
    (tmp_path / "ds/u.csv").write_text(
        "source,index,materialized_path\na,0,data/dirlink/secret.npz\n")
    r = cli("materialize", "--universe", tmp_path / "ds/u.csv", "--out-dir", tmp_path / "ds/m",
            "--stat-cache", "none")
    assert r.code == 2 and "leads outside" in r.err
    with pytest.raises(DvcCuvisError, match="NUL"):
        resolve_inside(tmp_path, "a\x00b")


def test_nul_and_separators_are_never_written(tmp_path: Path) -> None:
    from dvc_cuvis.model.frame_names import frame_name

    for source in ["../../x", "/abs/x", "C:\\\\x", "a\x00b", "a/./b"]:
        name = frame_name(source, 0)
        assert "\x00" not in name and ".." not in name.split("/")
        assert name.startswith("frames/") and "//" not in name


# -- crash safety: kill -9 at named points -------------------------------------------------
#
# ``tests.helpers.crashpoints`` lets a child process die by SIGKILL at the k-th hit of a
# named point (a patch it puts on the package from outside; docs/robustness.md lists them).
# A clean run logs the points it passes; the harness kills a run at points chosen from that
# log, asserts the kill left a *partial* state (else the point proved nothing), that
# everything under a final name is whole (the old bytes or the new ones, never a
# mixture), then reruns and asserts the folder ends byte-identical to a clean run in a fresh
# folder, with no stray temp file.
#
# Not compared byte for byte, with the reason: the stat cache (``cache/``) holds inode and
# mtime stamps, which differ between two folders by nature; it is checked by loading it
# instead (never corrupt; after the rerun it loads with entries).

DVC_CUVIS = Path(sys.executable).with_name("dvc-cuvis")
TEMP_NAME = re.compile(r"^\..+\.tmp$")  # _io's temp siblings: .<name>.tmp
IO_POINTS = {"io.before-lock", "io.before-rename", "io.after-rename"}

ENUMERATE = ("enumerate", "--format", "npz", "--root", "data/npz", "--out", "universe.csv",
             "--metrics", "um.json", "--stat-cache", "cache/sc.bin")
BAKE = ("bake", "--universe", "universe.csv", "--out", "splits.json", "--metrics", "m.json",
        "--no-params", "--strategy", "random", "--val-ratio", "0.3", "--test-ratio", "0.3",
        "--seed", "0")
MATERIALIZE = ("materialize", "--universe", "universe.csv", "--splits", "splits.json",
               "--out-dir", "out", "--stat-cache", "cache/sc.bin", "--compress", "deflate:1",
               "--jobs", "1")


def _cmd(*args: str, **points: str | Path) -> list[str]:
    """The console script; with ``points`` (crashpoints' kill, pause, log), the CLI with the
    crash points in place."""
    return crashpoints.command(*args, **points) if points else [str(DVC_CUVIS), *args]


def _env() -> dict[str, str]:
    return crashpoints.child_env()


def _killed(args: tuple[str, ...], cwd: Path, point: str) -> subprocess.CompletedProcess[str]:
    """The CLI with the kill at ``point`` in place, in a child forked from this process: the
    kill -9 is real, and the child starts with the imports paid for."""

    def child() -> int:
        crashpoints.install(crashpoints.Hits(kill=point))
        return main(list(args))

    return forked.call(child, cwd, _env(), argv=["dvc-cuvis", *args])


def _run(args: tuple[str, ...] | list[str], cwd: Path, **points: str | Path
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_cmd(*args, **points), cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("crash")
    generate(root / "data", sessions=3, frames=3, size=(8, 8), bands=4, seed=8)
    return root


def _state(root: Path) -> dict[str, bytes]:
    """Every file of a work folder except the inputs (data/) and the stat cache file itself
    (its temp files count: a stray one must not survive)."""
    out = {}
    for q in sorted(root.rglob("*")):
        rel = q.relative_to(root)
        if not q.is_file() or rel.parts[0] == "data" or rel.as_posix() == "cache/sc.bin":
            continue
        out[rel.as_posix()] = q.read_bytes()
    return out


def _set_state(root: Path, state: dict[str, bytes]) -> None:
    import shutil

    for p in sorted(root.iterdir()):
        if p.name not in ("data",):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    for name, data in state.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def _cache_entries(root: Path) -> int | None:
    """Entries in the stat cache file (None: no file).  A corrupt file fails the test."""
    from dvc_cuvis.digests.stat_cache import _read

    path = root / "cache/sc.bin"
    if not path.exists():
        return None
    stored = _read(path)
    assert stored is not None, "the stat cache file is corrupt (it would be a silent miss)"
    return len(stored.paths)


def _points(log: list[str]) -> list[tuple[str, int]]:
    """Kill points from a clean run's log: each named point's first, middle and last hit;
    for atomic writes the first and the last four (the non-frame outputs, each before and
    after its rename).  Not the run's final event: after it nothing is left to write."""
    hits: dict[str, int] = {}
    for name in log:
        hits[name] = hits.get(name, 0) + 1
    chosen = set()
    for name, h in hits.items():
        if name == "io.before-rename":
            ks = {1, h - 3, h - 2, h - 1, h}
        elif name == "io.after-rename":
            ks = {h - 3, h - 2, h - 1, h}
        else:
            ks = {1, (h + 1) // 2, h}
        chosen |= {(name, k) for k in ks if k >= 1}
    chosen.discard((log[-1], hits[log[-1]]))
    return sorted(chosen)


def _crash_harness(dataset: Path, tmp_path: Path, cli, monkeypatch, before: list[tuple[str, ...]],
                   command: tuple[str, ...], old_args: tuple[str, ...] | None,
                   reaches: set[str]) -> int:
    """Kill ``command`` at points from its own log; returns how many points were tried.

    ``reaches``: the points a clean run must pass (a patch whose code moved would never
    fire, and the moment it stood for would go untested).

    Only the killed runs are child processes (the kill is real), forked from this one; the
    setup, the clean reference and the reruns run in-process, where the imports are paid for.
    A forked run starts with what those left in this process's caches, not cold as a fresh
    process; a point that such a cache made it skip would show as exit 0, not as the kill.
    """
    import shutil

    def run_here(args: tuple[str, ...], where: Path) -> None:
        monkeypatch.chdir(where)
        r = cli(*args)
        assert r.code == 0, (args, r.err)

    def fresh(name: str) -> Path:
        work = tmp_path / name
        shutil.copytree(dataset / "data", work / "data")
        for step in before:
            run_here(step, work)
        return work

    clean_dir = fresh("clean")  # the reference: a clean run in a fresh folder
    log_file = tmp_path / "points.log"
    with crashpoints.installed(log=log_file):  # log the points this run passes
        run_here(command, clean_dir)
    clean = _state(clean_dir)
    log = log_file.read_text().split()
    assert reaches <= set(log), f"never reached: {sorted(reaches - set(log))}"
    uses_cache = "stat_cache.save" in log

    work = fresh("work")
    if old_args is not None:  # an older output in place: a kill must never leave a mixture
        run_here(old_args, work)
    shutil.rmtree(work / "cache", ignore_errors=True)
    old = _state(work)
    assert old != clean
    points = _points(log)
    for name, k in points:
        _set_state(work, old)
        point = f"{name}:{k}"
        killed = _killed(command, work, point)
        assert killed.returncode == -signal.SIGKILL, (point, killed.returncode, killed.stderr)
        after = _state(work)
        temps = [n for n in after if TEMP_NAME.match(Path(n).name)]
        whole = {n: b for n, b in after.items() if n not in temps}
        for n, data in whole.items():  # under a final name: old bytes or new, nothing else
            assert data in (clean.get(n), old.get(n)), f"{point}: {n} is neither old nor new"
        entries = _cache_entries(work)
        partial = bool(temps) or whole != clean or (uses_cache and entries is None)
        assert partial, f"{point}: the kill left no partial state (the point proves nothing)"
        run_here(command, work)
        assert _state(work) == clean, (
            f"{point}: the rerun differs from a clean run: "
            f"{sorted(set(_state(work)) ^ set(clean))} or bytes")
        if uses_cache:
            assert (_cache_entries(work) or 0) > 0, f"{point}: rerun left no readable cache"
    return len(points)


@pytest.mark.slow  # a child process per point, 2-6 s
def test_kill_9_at_named_points_of_enumerate(dataset: Path, tmp_path: Path, cli,
                                             monkeypatch) -> None:
    n = _crash_harness(dataset, tmp_path, cli, monkeypatch, [], ENUMERATE,
                       ("enumerate", "--format", "npz", "--root", "data/npz/day1_line-a_s01",
                        "--out", "universe.csv", "--metrics", "um.json", "--stat-cache",
                        "none"), {*IO_POINTS, "stat_cache.save"})
    assert n >= 6


@pytest.mark.slow  # a child process per point, 2-6 s
def test_kill_9_at_named_points_of_bake(dataset: Path, tmp_path: Path, cli,
                                        monkeypatch) -> None:
    n = _crash_harness(dataset, tmp_path, cli, monkeypatch, [ENUMERATE], BAKE,
                       (*BAKE[:-1], "1"), IO_POINTS)
    assert n >= 3


@pytest.mark.slow  # a child process per point, 2-6 s
def test_kill_9_at_named_points_of_materialize(dataset: Path, tmp_path: Path, cli,
                                               monkeypatch) -> None:
    n = _crash_harness(dataset, tmp_path, cli, monkeypatch, [ENUMERATE, BAKE], MATERIALIZE,
                       (*MATERIALIZE[:-4], "--compress", "none", "--jobs", "1"),
                       set(crashpoints.POINTS))
    assert n >= 12


def test_the_package_holds_no_crash_points() -> None:
    """The crash points live in the tests alone: no variable of a user's environment can
    make the installed package kill a run or append to a file."""
    import dvc_cuvis

    root = Path(dvc_cuvis.__file__).parent
    files = [p for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    assert len(files) > 50 and root / "_io.py" in files
    found = [p.relative_to(root).as_posix() for p in files
             if re.search(rb"testpoint|crashpoint", p.read_bytes(), re.IGNORECASE)]
    assert found == []


def test_crash_points_are_gone_after_the_block(tmp_path: Path) -> None:
    """Inside ``installed`` every point fires (logged here); after it the package's own
    functions are back, so nothing fires and no later test runs patched code."""
    from dvc_cuvis import _io

    before = {(owner, attr): vars(owner)[attr] for owner, attr, _ in
              crashpoints._patches(crashpoints.Hits())}
    log = tmp_path / "points.log"
    with crashpoints.installed(log=log):
        assert all(vars(o)[a] is not f for (o, a), f in before.items())
        _io.atomic_write_text(tmp_path / "x.txt", "x")
    assert log.read_text().split() == ["io.before-lock", "io.before-rename", "io.after-rename"]
    assert all(vars(o)[a] is f for (o, a), f in before.items())
    _io.atomic_write_text(tmp_path / "x.txt", "y")
    assert len(log.read_text().split()) == 3 and (tmp_path / "x.txt").read_text() == "y"


# -- concurrency ---------------------------------------------------------------------------
#
# A run is held at a named crash point (its pause mode) while the others start, so the
# overlap is certain rather than a matter of timing.


def _paused(args: tuple[str, ...] | list[str], cwd: Path, point: str, gate: Path
            ) -> subprocess.Popen[str]:
    """Start ``args`` held at ``point`` (until ``gate/<name>.go`` exists); wait for it."""
    gate.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(_cmd(*args, kill=point, pause=gate), cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    reached = gate / f"{point.rpartition(':')[0] or point}.reached"
    deadline = time.monotonic() + 60
    while not reached.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached its pause point"
        time.sleep(0.01)
    return proc


def _started(args: tuple[str, ...] | list[str], cwd: Path, log: Path, point: str
             ) -> subprocess.Popen[str]:
    """Start ``args`` and wait until it has passed ``point`` (read from its crash-point log)."""
    proc = subprocess.Popen(_cmd(*args, log=log), cwd=cwd, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env())
    deadline = time.monotonic() + 60
    while not (log.exists() and point in log.read_text().split()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"the run never reached {point}"
        time.sleep(0.01)
    return proc


def _release(gate: Path, point: str) -> None:
    (gate / f"{point.rpartition(':')[0] or point}.go").touch()


def _work(dataset: Path, tmp_path: Path, name: str, cli, monkeypatch,
          steps: tuple[tuple[str, ...], ...] = ()) -> Path:
    import shutil

    work = tmp_path / name
    shutil.copytree(dataset / "data", work / "data")
    monkeypatch.chdir(work)
    for step in steps:
        r = cli(*step)
        assert r.code == 0, r.err
    return work


def test_two_materialize_runs_on_one_folder(dataset: Path, tmp_path: Path, cli,
                                            monkeypatch) -> None:
    """Run 1 holds the lock; run 2 fails at once (exit 2, names the lock) having written
    nothing; run 3 waits (--lock-wait) and finds nothing left to write."""
    work = _work(dataset, tmp_path, "w", cli, monkeypatch, (ENUMERATE, BAKE))
    mat = [*MATERIALIZE[:-6], "--stat-cache", "none", "--compress", "deflate:1"]
    ref = _work(dataset, tmp_path, "ref", cli, monkeypatch, (ENUMERATE, BAKE))
    assert cli(*mat).code == 0
    clean = _state(ref)

    gate = tmp_path / "gate"
    first = _paused(mat, work, "materialize.locked", gate)
    second = _run(mat, work)
    assert second.returncode == 2, second.stderr
    assert "another `dvc-cuvis materialize` is writing this folder" in second.stderr
    assert "--lock-wait" in second.stderr and "Traceback" not in second.stderr
    assert sorted(p.name for p in (work / "out").iterdir()) == [".materialize.lock"]
    third = subprocess.Popen(_cmd(*mat, "--lock-wait", "60"), cwd=work, env=_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    assert third.poll() is None  # waiting for the lock, not failing
    _release(gate, "materialize.locked")
    out1, err1 = first.communicate(timeout=120)
    out3, err3 = third.communicate(timeout=120)
    assert first.returncode == 0 and third.returncode == 0, (err1, err3)
    assert "9 written" in out1 and "0 written, 9 unchanged" in out3, (out1, out3)
    assert _state(work) == clean


def _solo_bake(dataset: Path, tmp_path: Path, cli, monkeypatch, seed: int) -> bytes:
    work = _work(dataset, tmp_path, f"solo{seed}", cli, monkeypatch, (ENUMERATE,))
    r = cli("bake", "--universe", "universe.csv", "--out", "s.json", *BAKE[7:-1], str(seed))
    assert r.code == 0, r.err
    return (work / "s.json").read_bytes()


def test_concurrent_bakes_to_one_path(dataset: Path, tmp_path: Path, cli, monkeypatch) -> None:
    """Three bakes with different seeds race for one file: the file is whole and is exactly
    one writer's output; no temp file is left."""
    solo: dict[int, bytes] = {}
    for k in range(10):  # three seeds whose outputs differ (9 samples: some seeds agree)
        out = _solo_bake(dataset, tmp_path, cli, monkeypatch, k)
        if out not in solo.values():
            solo[k] = out
        if len(solo) == 3:
            break
    assert len(solo) == 3
    seeds = sorted(solo)
    work = _work(dataset, tmp_path, "race", cli, monkeypatch, (ENUMERATE,))
    cmd = ("bake", "--universe", "universe.csv", "--out", "s.json", *BAKE[7:-1])
    gate = tmp_path / "gate"
    held = _paused((*cmd, str(seeds[0])), work, "io.before-rename", gate)  # temp written
    # the others are at the same file (waiting for the held one's temp file) before it goes
    others = [_started((*cmd, str(k)), work, tmp_path / f"log{k}", "io.before-lock")
              for k in seeds[1:]]
    time.sleep(0.1)
    _release(gate, "io.before-rename")
    for p in (held, *others):
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    final = (work / "s.json").read_bytes()
    assert final in solo.values()
    assert not [p.name for p in work.iterdir() if p.name.endswith(".tmp")]


def test_concurrent_stat_cache_writers_leave_a_readable_cache(dataset: Path, tmp_path: Path,
                                                              cli, monkeypatch) -> None:
    """enumerate and check save one shared stat cache at the same moment: the file loads
    (with entries) afterwards, and a next run is served from it."""
    from dvc_cuvis.digests.stat_cache import StatCache, _read

    work = _work(dataset, tmp_path, "w", cli, monkeypatch)
    shared = tmp_path / "shared-cache.bin"
    enum = ("enumerate", "--format", "npz", "--root", "data/npz", "--out", "universe.csv",
            "--stat-cache", str(shared))
    assert _run(("enumerate", *enum[1:-2], "--stat-cache", "none"), work).returncode == 0
    assert _run(BAKE, work).returncode == 0
    check = ("check", "--universe", "universe.csv", "--splits", "splits.json",
             "--stat-cache", str(shared), "--no-params")
    gate = tmp_path / "gate"
    held = _paused(enum, work, "io.before-rename:1", gate)  # enumerate's cache save, held
    racer = _started(check, work, tmp_path / "check.log", "stat_cache.save")
    time.sleep(0.1)  # check is saving the same cache file while enumerate is held in its save
    _release(gate, "io.before-rename")
    for p in (held, racer):
        _, err = p.communicate(timeout=120)
        assert p.returncode in (0, 1), err  # check may report findings; never a crash
    stored = _read(shared)
    assert stored is not None, "the shared stat cache is corrupt"
    assert len(stored.paths) >= 9
    cache = StatCache(shared)
    for p in sorted((work / "data/npz").rglob("*.npz")):
        cache.md5(p)
    assert cache.misses == 0 and cache.hits >= 9  # served from the file, not re-hashed
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
