"""Hardening: fuzzed parsers and CLI (never a traceback), path safety, crashes, concurrency."""

from __future__ import annotations

import json
import os
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
from dvc_cuvis.paths import resolve_inside
from dvc_cuvis.universe import parse_universe_bytes, read_universe
from examples.generate import generate

CORPUS = Path(__file__).parent / "fuzz_corpus"
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
    from dvc_cuvis.materialize import frame_name

    for source in ["../../x", "/abs/x", "C:\\\\x", "a\x00b", "a/./b"]:
        name = frame_name(source, 0)
        assert "\x00" not in name and ".." not in name.split("/")
        assert name.startswith("frames/") and "//" not in name


# -- crash safety and concurrency ----------------------------------------------------------


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "dvc_cuvis", *args]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("crash")
    generate(root / "data", sessions=6, frames=10, size=(24, 24), bands=16, seed=8)
    return root


def test_kill_9_at_random_points_of_enumerate_bake_materialize(dataset: Path) -> None:
    rng = np.random.default_rng(12)
    steps = [
        ("universe.csv", _cmd("enumerate", "--format", "npz", "--root", "data/npz", "--out",
                              "universe.csv", "--stat-cache", "none")),
        ("splits.json", _cmd("bake", "--universe", "universe.csv", "--out", "splits.json",
                             "--metrics", "m.json")),
        ("out", _cmd("materialize", "--universe", "universe.csv", "--splits", "splits.json",
                     "--out-dir", "out", "--stat-cache", "none", "--compress", "deflate:9")),
    ]
    clean: dict[str, bytes] = {}
    for target, cmd in steps:
        subprocess.run(cmd, cwd=dataset, check=True, capture_output=True)
        clean.update(_snapshot(dataset, target))
    for _ in range(2):
        for target, cmd in steps:
            _remove(dataset / target)
            proc = subprocess.Popen(cmd, cwd=dataset, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            time.sleep(float(rng.uniform(0.05, 0.6)))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            for name, data in _snapshot(dataset, target).items():
                if not name.endswith(".tmp") and not name.endswith(".lock"):
                    assert data == clean.get(name, data) or name.endswith("manifest.json"), name
            subprocess.run(cmd, cwd=dataset, check=True, capture_output=True)
        snap = {}
        for target, _ in steps:
            snap.update(_snapshot(dataset, target))
        assert snap == clean


def _snapshot(root: Path, target: str) -> dict[str, bytes]:
    p = root / target
    if p.is_file():
        return {target: p.read_bytes()}
    if p.is_dir():
        return {q.relative_to(root).as_posix(): q.read_bytes() for q in sorted(p.rglob("*"))
                if q.is_file() and q.name != ".materialize.lock"}
    return {}


def _remove(p: Path) -> None:
    import shutil

    if p.is_dir():
        shutil.rmtree(p)
    elif p.exists():
        p.unlink()


def test_two_writers_on_one_output(dataset: Path, tmp_path: Path) -> None:
    import shutil

    work = tmp_path / "w"
    shutil.copytree(dataset, work, ignore=shutil.ignore_patterns("out"))
    subprocess.run(_cmd("enumerate", "--format", "npz", "--root", "data/npz", "--out",
                        "universe.csv", "--stat-cache", "none"), cwd=work, check=True)
    mat = _cmd("materialize", "--universe", "universe.csv", "--out-dir", "out", "--stat-cache",
               "none", "--compress", "deflate:9")
    a = subprocess.Popen(mat, cwd=work, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    b = subprocess.run(mat, cwd=work, capture_output=True, text=True)
    a_err = a.communicate()[1]
    codes = sorted([a.returncode, b.returncode])
    assert codes in ([0, 0], [0, 2]), (a_err, b.stderr)
    if codes == [0, 2]:
        assert "another `dvc-cuvis materialize` is writing this folder" in a_err + b.stderr
    waited = subprocess.run([*mat, "--lock-wait", "60"], cwd=work, capture_output=True, text=True)
    assert waited.returncode == 0
    uni = read_universe(work / "out/universe.csv")
    for p in range(len(uni)):
        with np.load(work / "out" / uni.value("materialized_path", p)) as z:
            assert z["cube"].dtype == np.float32
    bakes = [subprocess.Popen(_cmd("bake", "--universe", "universe.csv", "--out", "s.json",
                                   "--seed", str(k)), cwd=work) for k in range(3)]
    assert [p.wait() for p in bakes] == [0, 0, 0]
    json.loads((work / "s.json").read_text())  # whichever won, the file is whole
