"""Hostile counts and ranges: a small file must never make a verb allocate, fork or spin
without bound (issue #39; docs/robustness.md, "Resource budget: counts and ranges").

Each hostile input comes from a generator below (``*_file`` / ``*_params``).  The cases that
would allocate gigabytes on a regression run together in one child process under an address
space cap (``RLIMIT_AS``), so a regression fails the test instead of taking the machine down.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dvc_cuvis import limits
from dvc_cuvis.baking import BakeOptions
from dvc_cuvis.errors import DvcCuvisError, ParamsError, SelectorError, UniverseError
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe_io import parse_universe_bytes, read_universe

REPO = Path(__file__).resolve().parents[1]
#: the child's address space: imports take ~130 MB; a regression asks for gigabytes
CHILD_AS_BYTES = 1 << 30

# -- generators of hostile inputs ---------------------------------------------------------


def small_universe_file(folder: Path, groups: int = 10, frames: int = 5) -> Path:
    """A universe.csv of ``groups`` recordings of ``frames`` frames each (one group each)."""
    rows = "".join(f"s{g}.cu3s,0-{frames - 1},g{g}\n" for g in range(groups))
    path = folder / "universe.csv"
    path.write_text("source,index,group\n" + rows)
    return path


def range_bomb_file(folder: Path, rows: int = 40, last: int = 9_999_999) -> Path:
    """763 bytes that describe 400 M samples: ``rows`` cells of ``0-<last>``."""
    path = folder / "bomb.csv"
    path.write_text("source,index\n" + "".join(f"s{r}.cu3s,0-{last}\n" for r in range(rows)))
    return path


def selector_bomb_file(folder: Path, ranges: int = 3, per_selector: int = 1) -> Path:
    """A splits.json whose train selectors name ``ranges`` ten-million-id ranges of a
    five-frame recording (each range within the per-range limit)."""
    sel = {"kind": "file_indices", "source": "s0.cu3s", "ids": ["0-9999999"] * ranges}
    path = folder / "bomb.json"
    path.write_text(json.dumps({"train": [sel] * per_selector, "val": [], "test": []}))
    return path


def folds_params(folder: Path, folds: str) -> Path:
    """A params.yaml whose ``bake.folds`` is ``folds`` as written."""
    path = folder / "params.yaml"
    path.write_text(f"bake:\n  folds: {folds}\n  out_dir: folds\n")
    return path


def npz_inputs(folder: Path, n: int) -> Path:
    """``n`` tiny npz input frames and their universe.csv (one task each for materialize)."""
    rng = np.random.default_rng(3)
    for i in range(n):
        np.savez(folder / f"in{i}.npz", cube=rng.random((4, 4, 3)).astype(np.float32),
                 wavelengths=np.arange(400, 403, dtype=np.int32))
    path = folder / "universe.csv"
    path.write_text("source,index,format\n" + "".join(f"in{i}.npz,0,npz\n" for i in range(n)))
    return path


# -- the cases that would allocate gigabytes: one child, capped ---------------------------

_CHILD = """
import json, sys
from dvc_cuvis.cli import main
out = {}
for name, argv in json.loads(sys.argv[1]):
    code = main(argv)
    out[name] = code
print(json.dumps(out))
"""


def _cap_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_AS_BYTES, CHILD_AS_BYTES))


def test_hostile_counts_are_refused_in_a_capped_child(tmp_path: Path) -> None:
    uni = small_universe_file(tmp_path)
    bomb, sel = range_bomb_file(tmp_path), selector_bomb_file(tmp_path)
    params = folds_params(tmp_path, "1000000000000000000")
    cases = [
        ("folds-params", ["bake", "--params", str(params), "--universe", str(uni)]),
        ("folds-flag", ["bake", "--no-params", "--universe", str(uni), "--folds", "100000",
                        "--out-dir", str(tmp_path / "f")]),
        ("range-bomb", ["bake", "--no-params", "--universe", str(bomb),
                        "--out", str(tmp_path / "s.json")]),
        ("selector-bomb", ["resolve", "--no-params", "--universe", str(uni),
                           "--splits", str(sel)]),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1",
           "DVC_CUVIS_DEBUG": ""}
    env = {k: v for k, v in env.items() if not k.startswith("DVC_CUVIS_MAX_")}
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(cases)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60,
                          preexec_fn=_cap_address_space, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == dict.fromkeys(dict(cases), 2)
    lines = proc.stderr.splitlines()
    assert len(lines) == len(cases), lines  # one line each, no traceback, no internal error
    folds_p, folds_f, ranges, selectors = lines
    assert folds_p.startswith(f"dvc-cuvis: error: {params}: bake.folds: ")
    assert "over the ceiling of 1,000" in folds_p and "DVC_CUVIS_MAX_FOLDS" in folds_p
    assert folds_f.startswith("dvc-cuvis: error: --folds: 100,000 folds is over the ceiling")
    assert ranges.startswith(f"dvc-cuvis: error: {bomb}:3: column 'index': range '0-9999999'")
    assert "DVC_CUVIS_MAX_SAMPLES" in ranges
    assert "train[0]: selector 'file_indices' asks for 30,000,000 ids" in selectors
    assert not (tmp_path / "f").exists() and not (tmp_path / "folds").exists()


# -- folds --------------------------------------------------------------------------------


def test_more_folds_than_groups_is_refused_before_any_fold_is_built(
        tmp_path: Path, cli: Any) -> None:
    uni = small_universe_file(tmp_path)  # 10 groups, 4 of them held out for test
    r = cli("bake", "--no-params", "--universe", uni, "--folds", "7", "--out-dir",
            tmp_path / "f")
    assert r.code == 2 and r.err.count("\n") == 1
    assert "7 folds, but only 6 of 10 groups remain outside the test holdout" in r.err
    assert "--folds" in r.err and not (tmp_path / "f").exists()
    assert cli("bake", "--no-params", "--universe", uni, "--folds", "6", "--out-dir",
               tmp_path / "f").code == 0


@pytest.mark.parametrize("folds", [1e18, 2.0, "3", True, -2])
def test_folds_that_are_no_whole_number_are_refused_by_the_library(folds: Any) -> None:
    with pytest.raises(ParamsError, match=r"^folds\b"):
        BakeOptions(folds=folds).check()


def test_the_folds_ceiling_is_raised_by_its_environment_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DVC_CUVIS_MAX_FOLDS", "3")
    with pytest.raises(ParamsError, match="4 folds is over the ceiling of 3"):
        BakeOptions(folds=4).check()
    monkeypatch.setenv("DVC_CUVIS_MAX_FOLDS", "4")
    BakeOptions(folds=4).check()


# -- jobs ---------------------------------------------------------------------------------


def test_a_huge_jobs_forks_no_more_than_the_tasks_and_cpus(
        tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import concurrent.futures

    real = concurrent.futures.ProcessPoolExecutor
    tasks = 3
    bound = min(tasks, limits.cpus())
    forked: list[int] = []

    class Counted(real):  # type: ignore[misc, valid-type]
        """The real pool; refuses (before forking) a size over the bound, counts workers."""

        def __init__(self, max_workers: int) -> None:
            assert max_workers <= bound, f"a pool of {max_workers} workers asked for"
            super().__init__(max_workers=max_workers)

        def submit(self, *args: Any, **kw: Any) -> Any:
            future = super().submit(*args, **kw)
            forked.append(len(self._processes or {}))
            return future

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Counted)
    npz_inputs(tmp_path, tasks)
    monkeypatch.chdir(tmp_path)
    r = cli("materialize", "--no-params", "--universe", "universe.csv", "--select", "all",
            "--out-dir", "out", "--stat-cache", "none", "--jobs", "1000000")
    assert r.code == 0, r.err
    assert 1 <= max(forked) <= bound
    assert len(read_universe(tmp_path / "out" / "universe.csv")) == tasks
    note = [ln for ln in r.err.splitlines() if "--jobs" in ln]
    assert note == [f"dvc-cuvis: warning: --jobs 1,000,000 is more than the {limits.cpus()} "
                    f"CPUs this process may use: at most {limits.cpus()} worker processes "
                    "run (never more than the frames to write)"]


def test_pool_size_is_bounded_by_jobs_tasks_and_cpus() -> None:
    cpus = limits.cpus()
    assert limits.pool_size(10**9, 10**9) == cpus
    assert limits.pool_size(10**9, 2) == min(2, cpus)
    assert limits.pool_size(0, 5) == 1 and limits.pool_size(2, 0) == 1


# -- ranges: universe.csv -----------------------------------------------------------------


_CELLS = st.one_of(
    st.integers(0, 30).map(str),
    st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(1, 7)).map(
        lambda t: f"{min(t[:2])}-{max(t[:2])}" + (f":{t[2]}" if t[2] > 1 else "")),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cells=st.lists(_CELLS, min_size=1, max_size=12), budget=st.integers(1, 120))
def test_range_files_are_refused_or_expanded_exactly_within_the_budget(
        cells: list[str], budget: int) -> None:
    expected: list[tuple[str, int]] = []
    for r, cell in enumerate(cells):
        lo, _, rest = cell.partition("-")
        hi, _, step = rest.partition(":")
        ids = range(int(lo), int(hi or lo) + 1, int(step or 1))
        expected.extend((f"s{r:02d}", i) for i in ids)
    data = ("source,index\n" + "".join(f"s{r:02d},{c}\n" for r, c in enumerate(cells))).encode()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DVC_CUVIS_MAX_SAMPLES", str(budget))
        if len(expected) > budget:
            with pytest.raises(UniverseError, match="DVC_CUVIS_MAX_SAMPLES"):
                parse_universe_bytes(data, path=Path("u.csv"))
            return
        uni = parse_universe_bytes(data, path=Path("u.csv"))
    assert len(uni) == len(expected) <= budget
    assert uni.uids() == [f"{s}#{i}" for s, i in sorted(expected)]


def test_a_range_beyond_int64_is_one_line_naming_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "u.csv").write_text(f"source,index\na,0\nb,0-{10**23}\nc,{10**23}-{10**23}\n")
    with pytest.raises(UniverseError, match=r"u\.csv:3: column 'index': bad range '0-1"):
        read_universe(tmp_path / "u.csv")
    (tmp_path / "v.csv").write_text(f"source,index\na,0\nc,{10**23}-{10**23}\n")
    with pytest.raises(UniverseError, match=r"v\.csv:3: .*too large for a read position"):
        read_universe(tmp_path / "v.csv")


# -- ranges: splits.json selectors --------------------------------------------------------


def test_selector_ranges_share_one_budget_and_int64_ranges_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uni = read_universe(small_universe_file(tmp_path))
    monkeypatch.setenv("DVC_CUVIS_MAX_SAMPLES", "100")
    cfg = load_splits(selector_bomb_file(tmp_path, ranges=1, per_selector=1))
    cfg.train[0].ids = ["0-59"]
    cfg.train.append(cfg.train[0].model_copy(update={"ids": ["0-39"]}))
    assert len(resolve(cfg, uni).uids("train")) == 5  # 60 + 40 ids: within the budget
    cfg.train.append(cfg.train[0].model_copy(update={"ids": [7]}))
    with pytest.raises(SelectorError, match=r"train\[2\]: .* asks for 1 ids, beyond the 100"):
        resolve(cfg, uni)
    cfg.train[:] = [cfg.train[0].model_copy(update={"ids": [f"0-{10**23}"]})]
    with pytest.raises(DvcCuvisError, match=f"expands to {10**23 + 1} ids"):
        resolve(cfg, uni)


# -- NUL bytes in path settings -----------------------------------------------------------


def test_a_nul_in_a_path_setting_names_the_flag_or_key(tmp_path: Path, cli: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    small_universe_file(tmp_path)
    r = cli("bake", "--params", "a\0b", "--universe", "universe.csv", "--out", "s.json")
    assert (r.code, r.err) == (2, "dvc-cuvis: error: --params: path 'a\\x00b' holds a NUL "
                                  "byte, which no file name can hold; fix the path\n")
    r = cli("materialize", "--no-params", "--universe", "universe.csv", "--out-dir", "o\0")
    assert r.code == 2 and r.err.startswith("dvc-cuvis: error: --out-dir: path 'o\\x00'")
    (tmp_path / "params.yaml").write_text('bake:\n  out: "s\\0.json"\n')
    r = cli("bake", "--universe", "universe.csv")
    assert r.code == 2 and r.err.count("\n") == 1
    assert r.err.startswith("dvc-cuvis: error: params.yaml: bake.out: path 's\\x00.json' holds")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml", "universe.csv"]
