"""The drift check's tests: running ``dvc-cuvis check`` as a user does, reading its report, and
the small universes and splits the contract tests build by hand."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from dvc_cuvis.model.universe import Universe

ALL_OK = {"universe": "ok", "content": "ok", "selection": "ok", "constraints": "ok",
          "staleness": "ok"}


def check(cli, repo: Path, monkeypatch, *extra: str):
    """``dvc-cuvis check`` in ``repo`` as a user runs it; the run and its --json checks."""
    monkeypatch.chdir(repo)
    base = ("check", "--params", "params.yaml", "--stat-cache", "none", *extra)
    text = cli(*base)
    r = cli(*base, "--json")
    assert r.code == text.code, (text.out, r.out)
    return text, r.code, json.loads(r.out)["checks"]


def statuses(checks: dict) -> dict[str, str]:
    """Each check's status word."""
    return {k: v["status"] for k, v in checks.items()}


def verdict(out: str) -> str:
    """The verdict word of the report's first line."""
    first = out.splitlines()[0]
    assert first.startswith("check ") and " against " in first, first
    return first.rsplit(": ", 1)[1]


def md5(path: Path) -> str:
    """The md5 of a file, as universe.csv records it."""
    return hashlib.md5(path.read_bytes()).hexdigest()


def stage_of(splits: Path) -> dict[str, str]:
    """source -> stage, read straight from a baked splits.json (files selectors)."""
    doc = json.loads(splits.read_text())
    out = {}
    for stage in ("train", "val", "test"):
        for sel in doc[stage]:
            assert sel["kind"] == "files", sel
            for p in sel["paths"]:
                out[p] = stage
    return out


def rewrite(path: Path, data: bytes) -> None:
    """New bytes with an mtime one second on (file clocks can be coarse)."""
    before = path.stat().st_mtime_ns
    path.write_bytes(data)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def flip(path: Path) -> None:
    """Flip one byte near the end of the file (a new mtime too)."""
    data = path.read_bytes()
    rewrite(path, data[:-7] + bytes([data[-7] ^ 1]) + data[-6:])


def small(root: Path, split: dict, *, group: bool = False, categories: bool = False) -> None:
    """A 6-row universe.csv (optional group and category columns) and ``split`` pinned to it."""
    root.mkdir(parents=True, exist_ok=True)
    cols = ["source", "index"] + (["group"] if group else []) + (
        ["category_ids"] if categories else [])
    rows = []
    for k in range(6):
        cells = [f"s{k}.cu3s", "0"] + ([f"g{k // 2}"] if group else []) + (
            [str(1 + k % 2)] if categories else [])
        rows.append(",".join(cells))
    (root / "universe.csv").write_text(",".join(cols) + "\n" + "\n".join(rows) + "\n")
    from dvc_cuvis.model.universe_io import read_universe as ru

    split = {**split, "universe_hash": ru(root / "universe.csv").hash}
    (root / "splits.json").write_text(json.dumps(split))


def run_small(cli, root: Path, monkeypatch, *extra: str):
    """``dvc-cuvis check`` of a small universe without params or a lock; the run and its checks."""
    monkeypatch.chdir(root)
    args = ("check", "--no-params", "--stat-cache", "none", "--no-lock", *extra)
    text = cli(*args)
    j = cli(*args, "--json")
    assert j.code == text.code, text.err
    return text, json.loads(j.out)["checks"] if j.out.strip() else {}


def sha(uids: list[str]) -> str:
    """sha256 of the uids, one per line: the hash a split pins."""
    return hashlib.sha256("".join(u + "\n" for u in uids).encode()).hexdigest()


def records(uni: Universe) -> list[dict]:
    """The universe's rows as records."""
    return [{"source": s.source, "index": s.index, **s.extra}
            for s in (uni.sample(p) for p in range(len(uni)))]


LEAKY = {"constraints": [{"kind": "no_split_overlap", "severity": "error"}],
          "train": [{"kind": "files", "paths": ["s0.cu3s", "s2.cu3s", "s3.cu3s"]}],
          "val": [{"kind": "files", "paths": ["s1.cu3s"]}],
          "test": [{"kind": "files", "paths": ["s4.cu3s", "s5.cu3s"]}]}  # g0 = s0 + s1
