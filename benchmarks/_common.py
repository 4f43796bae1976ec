"""Shared helpers for the benchmarks: result rows, the report table, timing, environment.

This file is also the child process used to measure universe.csv readers in isolation
(``python -m benchmarks._common read {ours,upstream,numpy,python} PATH``), so its
top-level imports are standard library only: a child's peak RSS must not include
anything the measured reader would not load by itself.
"""

from __future__ import annotations

import contextlib
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
UPSTREAM_UNIVERSE_MODULE = "cuvis_ai_dataloader/data/_universe.py"
#: A child's environment: this venv's bin first on PATH, a git identity, no DVC analytics.
ENV = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep
       + os.environ.get("PATH", ""),
       "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.com",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.com",
       "DVC_NO_ANALYTICS": "1"}


def sh(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command in ``cwd`` with ``ENV`` (or ``env``); its stdout and stderr (raises on
    failure)."""
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=ENV if env is None else env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout + proc.stderr


# -- result rows ---------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the report: ours vs a baseline (or an absolute goal, or information)."""

    key: str
    label: str
    ours: float | None
    unit: str = "s"
    baseline: float | None = None
    baseline_note: str = ""  # e.g. "*" when extrapolated
    goal_kind: str = "info"  # "min_ratio" | "max_abs" | "info"
    goal_value: float | None = None
    enforce: bool = True  # False in --quick mode
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        """baseline / ours (how many times better ours is)."""
        if self.baseline is None or not self.ours:
            return None
        return self.baseline / self.ours

    @property
    def goal(self) -> str:
        if self.goal_kind == "min_ratio":
            return f">={self.goal_value:g}x"
        if self.goal_kind == "max_abs":
            return f"<={self.goal_value:g} {self.unit}"
        return "info"

    @property
    def passed(self) -> bool | None:
        """True/False against the goal; None for information rows and --quick mode."""
        if not self.enforce or self.goal_kind == "info" or self.goal_value is None:
            return None
        if self.goal_kind == "min_ratio":
            r = self.ratio
            return r is not None and r >= self.goal_value
        return self.ours is not None and self.ours <= self.goal_value

    @property
    def result(self) -> str:
        if self.goal_kind == "info":
            return "-"
        p = self.passed
        if p is None:
            return "n/a"
        return "PASS" if p else "FAIL"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(ratio=self.ratio, goal=self.goal, passed=self.passed, result=self.result)
        return d


def fmt_value(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "s":
        if v < 0.001:
            return f"{v * 1e6:.0f} us"
        if v < 1:
            return f"{v * 1e3:.1f} ms"
        return f"{v:.2f} s"
    if unit == "MiB":
        return f"{v:.0f} MiB"
    return f"{v:g} {unit}"


def fmt_ratio(r: float | None) -> str:
    if r is None:
        return "-"
    if r >= 100:
        return f"{r:.0f}x"
    return f"{r:.1f}x" if r >= 0.1 else f"{r:.4f}x"


def table(rows: list[Row]) -> str:
    head = ("target", "ours", "baseline", "ratio", "goal", "result")
    body = [
        (
            r.label,
            fmt_value(r.ours, r.unit),
            fmt_value(r.baseline, r.unit) + r.baseline_note,
            fmt_ratio(r.ratio),
            r.goal,
            r.result,
        )
        for r in rows
    ]
    widths = [max(len(x[i]) for x in (head, *body)) for i in range(len(head))]
    lines = []
    for j, cells in enumerate((head, *body)):
        parts = [cells[0].ljust(widths[0])]
        parts += [c.rjust(w) for c, w in zip(cells[1:4], widths[1:4], strict=True)]
        parts += [cells[4].rjust(widths[4]), cells[5].ljust(widths[5])]
        lines.append("  ".join(parts).rstrip())
        if j == 0:
            lines.append("-" * len(lines[0]))
    return "\n".join(lines)


def bare_args(description: str) -> Any:
    """An argparse parser with no options yet: the one place a benchmark's parser is made,
    for the few that print their own format rather than the shared table."""
    import argparse

    return argparse.ArgumentParser(description=description)


def standard_args(description: str, *, seed: bool = False, profile: bool = False) -> Any:
    """An argparse parser with the options every benchmark takes (``--seed`` and
    ``--profile`` for those that use them); a benchmark adds its own on top."""
    ap = bare_args(description)
    ap.add_argument("--quick", action="store_true",
                    help="small sizes, no PASS/FAIL enforcement (CI smoke test)")
    ap.add_argument("--json", type=Path, metavar="PATH", help="write the figures as JSON")
    ap.add_argument("--strict", action="store_true", help="exit 1 if any target fails")
    ap.add_argument("--workdir", type=Path, help="parent folder for the generated data")
    ap.add_argument("--keep", action="store_true", help="keep the generated data")
    if seed:
        ap.add_argument("--seed", type=int, default=20240601)
    if profile:
        ap.add_argument("--profile", action="store_true",
                        help="print cProfile top entries for our side of every target")
    return ap


class Clock:
    """Seconds since the run started; calling it logs a line prefixed with them."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def __call__(self, msg: str) -> None:
        print(f"{self.elapsed:7.1f}s  {msg}", flush=True)


@contextlib.contextmanager
def workspace(args: Any, prefix: str, log: Callable[[str], None] | None = None) -> Iterator[Path]:
    """A fresh temporary folder under ``--workdir`` (absolute), kept with ``--keep``."""
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=args.workdir)).absolute()
    try:
        yield work
    finally:
        if args.keep:
            print(f"kept generated data in {work}")
        else:
            t = time.perf_counter()
            shutil.rmtree(work, ignore_errors=True)
            if log is not None:
                log(f"removed {work} in {time.perf_counter() - t:.1f} s")


def finish(
    rows: list[Row],
    args: Any,
    *,
    total: float | None = None,
    notes: list[str] | None = None,
    profiles: dict[str, str] | None = None,
    quick_note: str = "(--quick: small sizes; targets not enforced)",
    extra_json: dict[str, Any] | None = None,
) -> int:
    """Print the table, notes, failures and profiles; write ``--json``; the ``--strict`` code."""
    import textwrap

    notes, profiles = notes or [], profiles or {}
    print(table(rows))
    for note in notes:
        print(textwrap.fill(note, width=100, subsequent_indent="  "))
    if getattr(args, "quick", False):
        print(quick_note)
    failed = [r.key for r in rows if r.passed is False]
    spent = f"total {total:.1f} s; " if total is not None else ""
    print(f"{spent}{len(failed)} target(s) failed" + (f": {', '.join(failed)}" if failed else ""))
    for key, text in profiles.items():
        print(f"\n=== profile: ours, {key} ===\n{text}")
    if args.json:
        write_json(args.json, {
            "mode": "quick" if getattr(args, "quick", False) else "full",
            "seed": getattr(args, "seed", None),
            "total_seconds": total,
            "environment": environment(),
            **(extra_json or {}),
            "results": [r.to_dict() for r in rows],
            "notes": notes,
            "failed": failed,
            "profiles": profiles,
        })
        print(f"wrote {args.json}")
    return 1 if (args.strict and failed) else 0


# -- timing / profiling --------------------------------------------------------------------


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """Wall time of one call (after a gc.collect so a pending collection is not billed)."""
    gc.collect()
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def rounds(fn: Callable[..., Any], n: int, *args: Any, **kwargs: Any) -> list[float]:
    """Wall times of ``n`` calls of ``fn`` (each as ``timed``), so a benchmark reports every
    round and not only its summary."""
    return [timed(fn, *args, **kwargs)[0] for _ in range(n)]


def warm_median(one: Callable[[], float], n: int) -> float:
    """One untimed warm-up call of ``one`` (which returns its own seconds), then the median
    of ``n`` more: the steady state, without the first call's cold caches."""
    one()
    return median([one() for _ in range(n)])


def profile_top(fn: Callable[[], Any], limit: int = 15) -> str:
    """cProfile ``fn()`` and return the top entries by total and cumulative time."""
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    out = io.StringIO()
    for key in ("tottime", "cumulative"):
        out.write(f"--- sorted by {key} ---\n")
        stats = pstats.Stats(prof, stream=out)
        stats.strip_dirs().sort_stats(key).print_stats(limit)
    return out.getvalue()


# -- environment ---------------------------------------------------------------------------


def environment() -> dict[str, Any]:
    from importlib import metadata

    versions = {}
    for dist in ("numpy", "cuvis-ai-core", "cuvis-ai-dataloader", "cuvis-ai-schemas",
                 "pydantic", "dvc-cuvis"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    commit = None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "versions": versions,
        "git_commit": commit,
    }


def write_json(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")


def print_json(payload: dict[str, Any]) -> None:
    """Write ``payload`` to stdout as sorted, indented JSON (for benchmarks whose figures
    are read by another program rather than from the table)."""
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=True) + "\n")


# -- isolated reader measurement (child process) -------------------------------------------


# Linux keeps ``ru_maxrss`` across execve and seeds it with the RSS of the forked (or, with
# vfork, the very same) address space the exec replaces, so a child started directly from
# this big benchmark process would report *our* RSS.  A tiny launcher interpreter forks the
# measured child instead: its starting point is the launcher's ~10 MiB, below any reader.
_LAUNCHER = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execv(sys.argv[1], sys.argv[1:])\n"
    "sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
)


def run_read_child(what: str, csv_path: Path | None = None, timeout: float = 600) -> dict:
    """Run one reader in a fresh interpreter; returns its JSON report (seconds, rows, RSS)."""
    cmd = [sys.executable, "-S", "-c", _LAUNCHER,
           sys.executable, str(Path(__file__).resolve()), "read", what]
    if csv_path is not None:
        cmd.append(str(csv_path))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"child {what!r} failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _load_upstream_universe_module() -> Any:
    """cuvis_ai_dataloader's _universe.py, loaded by file (its package __init__ needs torch)."""
    import importlib.util
    import sysconfig

    candidates = [Path(p) / UPSTREAM_UNIVERSE_MODULE
                  for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}]
    candidates += [Path(p) / UPSTREAM_UNIVERSE_MODULE for p in sys.path if p]
    for cand in candidates:
        if cand.is_file():
            spec = importlib.util.spec_from_file_location("_upstream_universe", cand)
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
    raise FileNotFoundError(f"cannot find {UPSTREAM_UNIVERSE_MODULE} in site-packages")


def _read_upstream(what: str, path: str) -> tuple[float, int]:
    """cuvis_ai_dataloader's parse_universe on ``path`` (``upstream-text``: with text-only
    path normalization); its seconds and rows."""
    mod = _load_upstream_universe_module()
    if what == "upstream-text":
        # upstream resolves every row's path on the file system (Path.resolve); ours checks
        # the path text only.  This variant swaps in a text-only normalization, so the
        # comparison is of the same work (the README names both figures).
        def text_resolve(self: Path, strict: bool = False) -> Path:
            return Path(os.path.normpath(self.absolute()))

        Path.resolve = text_resolve  # type: ignore[method-assign]
    t0 = time.perf_counter()
    out = mod.parse_universe(
        Path(path),
        require_materialized_path=True,
        accept_split=False,
        unique_materialized_path=True,
        allow_index_ranges=False,
    )
    return time.perf_counter() - t0, len(out)


def _peak_rss_mib() -> tuple[float, float | None]:
    """This process's peak RSS in MiB (getrusage), and /proc's VmHWM as a cross-check."""
    # ru_maxrss is KiB on Linux, bytes on macOS
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    maxrss_mib = maxrss / (1 << 20) if sys.platform == "darwin" else maxrss / 1024
    hwm_mib = None
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                hwm_mib = int(line.split()[1]) / 1024  # cross-check (per address space)
    return maxrss_mib, hwm_mib


def _child_read(what: str, path: str | None) -> dict[str, Any]:
    t_start = time.perf_counter()
    rows = 0
    seconds = 0.0
    if what == "python":
        pass
    elif what == "numpy":
        import numpy  # noqa: F401
    elif what == "ours":
        from dvc_cuvis.model.universe_io import read_universe

        assert path is not None
        t0 = time.perf_counter()
        uni = read_universe(path)
        seconds = time.perf_counter() - t0
        rows = len(uni)
    elif what == "pandas":  # the general-purpose readers, every cell as text (no checks)
        import pandas

        assert path is not None
        t0 = time.perf_counter()
        frame = pandas.read_csv(path, dtype=str, keep_default_na=False)
        seconds = time.perf_counter() - t0
        rows = len(frame)
    elif what == "pyarrow":
        import pyarrow as pa
        from pyarrow import csv as pa_csv

        assert path is not None
        with open(path, encoding="utf-8") as fh:
            header = fh.readline().rstrip("\n").split(",")
        t0 = time.perf_counter()
        table = pa_csv.read_csv(path, convert_options=pa_csv.ConvertOptions(
            column_types={c: pa.string() for c in header}))
        seconds = time.perf_counter() - t0
        rows = table.num_rows
    elif what in ("upstream", "upstream-text"):
        assert path is not None
        seconds, rows = _read_upstream(what, path)
    else:
        raise SystemExit(f"unknown reader {what!r}")
    maxrss_mib, hwm_mib = _peak_rss_mib()
    return {
        "reader": what,
        "seconds": seconds,
        "rows": rows,
        "peak_rss_mib": maxrss_mib,
        "vm_hwm_mib": hwm_mib,
        "process_seconds": time.perf_counter() - t_start,
    }


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "read":
        raise SystemExit("usage: python -m benchmarks._common read "
                         "{ours,upstream,upstream-text,pandas,pyarrow,"
                         "numpy,python} [PATH]")
    print(json.dumps(_child_read(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)))
