"""What the last enumerate run that DVC vouches for says about files, by md5.

A fresh ``git clone`` + ``dvc pull`` (or a ``dvc checkout`` of a revision this machine never
enumerated) has no content memo of ours, so enumerate would parse every frame again -- yet
the universe.csv committed at ``HEAD`` already pairs each frame's md5 with the values
enumerate derived from those bytes.  A committed file alone proves nothing (a hand-edited
row looks like a true one, and the file names no code version), so it is used only when
DVC vouches for it, all of these at ``HEAD`` (read from git, never from the workspace:
``dvc repro`` deletes ``cache: false`` outputs before it runs the stage; through
:class:`dvc_cuvis.repo.git.Git`, one ``git cat-file --batch``):

1. ``dvc.lock`` has a stage whose command is ``dvc-cuvis enumerate`` and whose outputs are
   the universe.csv and the metrics file this run writes (matched by path);
2. the committed universe.csv and metrics file have exactly the md5s that stage recorded
   (a row edited after the run changes the file's md5);
3. the metrics say ``format: npz`` and, under ``derived``, the same version of each content
   key (:func:`~dvc_cuvis.digests.stat_cache.content_key`) as the running code;
4. that run's group setting (its command's ``--group``, else the params it recorded) was one
   under which the ``group`` column is the frame's ``source`` member.

Then the universe.csv is read with the universe reader (:mod:`dvc_cuvis.model.universe_io`, the
one parser of the format), and each row whose cells give the value back exactly
(:func:`~dvc_cuvis.sources.npz.frame_info_from_row`; a cell the reader stripped of blanks is
not exact) seeds the stat cache's content memo:
md5 -> (source member, category ids).  The seed is consulted only as the memo is -- for a
file whose md5 is known without reading it (our stat cache, DVC's state db, both validated
by the file's stamp) -- so a frame whose bytes changed is read as usual.  Any condition that
fails, or any error reading git, means no seed: enumerate then parses the frames.

Verdicts of the door (:mod:`dvc_cuvis.sources.door`) are seeded too, under conditions 1-2
only and one more: the metrics name the same door recipe (``door``, :data:`NPZ_DOOR`) as the
running code.  Enumerate writes nothing when the door refuses any frame, so every md5 such a
universe.csv lists passed that door: each seeds the verdict memo with "passed".  A frame whose
bytes differ has another md5 (or none DVC vouches for) and is read and checked.

The limit is DVC's own: whoever edits universe.csv *and* the md5 in dvc.lock (by hand, or
with ``dvc commit``) makes DVC vouch for the edit, and the seed believes it too.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import posixpath
import shlex
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dvc_cuvis._io import parse_yaml
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.paths.roots import ancestors
from dvc_cuvis.repo.git import Git
from dvc_cuvis.repo.lockfile import LockFile, Stage

#: the command prefix of the stage whose outputs may seed the memo
COMMAND = ("dvc-cuvis", "enumerate")


def attach(cache: StatCache, fmt: str, out: Path | str, metrics: Path | str | None) -> None:
    """Let ``cache`` take vouched values from HEAD's run of the stage writing ``out`` and
    ``metrics`` (read from git only on the first content-memo miss; npz only)."""
    if fmt != "npz" or metrics is None:
        return
    out_abs, metrics_abs = os.path.abspath(out), os.path.abspath(metrics)
    cache.add_seed(lambda: vouched_values(out_abs, metrics_abs))


def vouched_values(out: str, metrics: str) -> dict[str, dict[str, object]]:
    """``{content key: {md5: value}}`` from HEAD's vouched enumerate run; ``{}`` when any
    condition fails or git cannot be read (the seed only saves work, it never decides)."""
    try:
        return _vouched(out, metrics)
    except Exception:  # no git, no commit, a damaged file: enumerate reads the frames
        return {}


def _vouched(out: str, metrics: str) -> dict[str, dict[str, object]]:
    from dvc_cuvis.sources.door import NPZ_DOOR
    from dvc_cuvis.sources.npz import DERIVED, SOURCE_GROUPS

    with Git(os.path.dirname(out)) as git:
        top = os.path.realpath(git.top)  # as git names it (out and metrics are real paths)
        read = functools.partial(git.read, "HEAD")
        out_r, metrics_r = os.path.realpath(out), os.path.realpath(metrics)
        found = _find_stage(read, top, out_r, metrics_r)
        if found is None:
            return {}
        lock_dir, stage = found
        files = {}
        for path in (out_r, metrics_r):
            rel = os.path.relpath(path, top).replace(os.sep, "/")
            data = read(rel)
            want = (stage.output(os.path.relpath(path, lock_dir)) or {}).get("md5")
            if data is None or not want or hashlib.md5(data).hexdigest() != want:
                return {}  # not committed, or not what the stage wrote
            files[path] = data
        info = json.loads(files[metrics_r])
        derived = info.get("derived") if isinstance(info, dict) else None
        if info.get("format") != "npz" or not isinstance(derived, dict):
            return {}
        values = {}
        if info.get("door") == NPZ_DOOR:  # every row passed this very door on that run
            values = _passed(files[out_r], out_r)
        if any(derived.get(name) != version for name, version in DERIVED.items()):
            return values  # written by another version of the code that derives the values
        if _group_setting(stage, lock_dir, top, read) not in SOURCE_GROUPS:
            return values
    return {**values, **_row_values(files[out_r], out_r)}


def _passed(data: bytes, path: str) -> dict[str, dict[str, object]]:
    """``{NPZ_VERDICT: {md5: []}}`` for every npz row of a vouched universe.csv: enumerate
    writes no row (and no file) when the door refused any frame, so each listed md5 passed."""
    from dvc_cuvis.model.universe_io import parse_universe_bytes
    from dvc_cuvis.sources.door import NPZ_VERDICT

    uni = parse_universe_bytes(data, path=Path(path), unique_materialized_path=False,
                               columns=("md5", "format"))
    md5 = uni.raw_column("md5")
    if md5 is None:
        return {}
    keep = np.strings.str_len(md5) == 32
    fmt = uni.raw_column("format")
    if fmt is not None:
        keep &= fmt == b"npz"
    sums = np.unique(md5[keep])
    if not len(sums):
        return {}
    text = b"\0".join(sums.tolist()).decode("ascii").split("\0")
    return {NPZ_VERDICT: {m: [] for m in text}}


#: Where a cell begins or ends with a blank, quoted or not (the universe reader strips it).
_BLANK_EDGES = (b" ,", b", ", b' ",', b'," ', b" \n", b"\n ", b' "\n', b'\n" ', b" \r", b"\t")


def _blank_edges(data: bytes) -> list[int]:
    """Offsets in ``data`` of each cell edge that is a blank (a few ``bytes.find`` scans)."""
    hits = [len(data) - 1] if data.endswith((b" ", b' "')) else []
    for needle in _BLANK_EDGES:
        at = data.find(needle)
        while at >= 0:
            hits.append(at + 1 if needle.startswith(b"\n") else at)
            at = data.find(needle, at + 1)
    return hits


def _row_values(data: bytes, path: str) -> dict[str, dict[str, object]]:
    """``{FRAME_INFO: {md5: value}}`` from the rows of a vouched universe.csv, read with the
    universe reader (the one parser of the format): each npz row whose cells give the value
    back exactly; an md5 whose rows disagree gives nothing."""
    from dvc_cuvis.model.universe_io import parse_universe_bytes
    from dvc_cuvis.sources.npz import FRAME_INFO, frame_info_from_row

    names = ("group", "tags", "category_ids")
    uni = parse_universe_bytes(data, path=Path(path), unique_materialized_path=False,
                               columns=("md5", "format", *names))
    got = [uni.raw_column(c) for c in ("md5", *names)]
    if any(c is None for c in got):
        return {}
    md5, *cells = [c for c in got if c is not None]
    keep = np.strings.str_len(md5) == 32  # not an md5: never asked for anyway
    fmt = uni.raw_column("format")
    if fmt is not None:
        keep &= fmt == b"npz"
    if b" " in data or b"\t" in data:  # the reader stripped those cells: not exact, skip them
        hits = _blank_edges(data)
        if hits and uni.lines is not None:
            newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
            keep &= ~np.isin(uni.lines, np.searchsorted(newlines, hits) + 1)  # 1-based lines
    rows = np.flatnonzero(keep)
    if not len(rows):
        return {}
    # rows share few (group, tags, category_ids) triples: each is turned into a value once
    key = np.zeros(len(rows), dtype=np.int64)
    for col in cells:
        distinct, codes = np.unique(col[rows], return_inverse=True)
        _, key = np.unique(key * len(distinct) + codes.reshape(-1), return_inverse=True)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    parsed = [frame_info_from_row({n: bytes(col[r]).decode("utf-8")
                                   for n, col in zip(names, cells, strict=True)})
              for r in rows[first].tolist()]
    ok = np.array([v is not None for v in parsed], dtype=bool)[inverse]
    sums, which = md5[rows[ok]], inverse[ok]
    if not len(sums):
        return {}
    digests, of_row = np.unique(sums, return_inverse=True)
    lo = np.full(len(digests), len(parsed), dtype=np.int64)
    hi = np.full(len(digests), -1, dtype=np.int64)
    np.minimum.at(lo, of_row, which)
    np.maximum.at(hi, of_row, which)
    agree = lo == hi  # one md5, two values: trust neither
    text = b"\0".join(digests[agree].tolist()).decode("ascii").split("\0")
    values: dict[str, object] = dict(zip(text, map(parsed.__getitem__, lo[agree].tolist()),
                                         strict=True))
    return {FRAME_INFO: values} if values else {}


def _find_stage(read: Callable[[str], bytes | None], top: str, out: str, metrics: str
                ) -> tuple[str, Stage] | None:
    """The nearest dvc.lock at HEAD (from ``out``'s folder up to the repository root) with
    an enumerate stage writing ``out`` and ``metrics``, and that stage (no ``wdir``)."""
    for folder in ancestors(os.path.dirname(out)):
        d = str(folder)
        rel = os.path.relpath(d, top)
        if rel.startswith(".."):
            return None
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        text = read(prefix + "dvc.lock")
        if text is not None:
            lock = LockFile.parse(text.decode("utf-8"), Path(d) / "dvc.lock")
            want = [os.path.relpath(p, d) for p in (out, metrics)]
            for stage in lock.stages:
                if all(map(stage.writes, want)) and _argv(stage.cmd)[:2] == list(COMMAND):
                    return (d, stage) if _plain_wdir(read(prefix + "dvc.yaml"), stage) else None
        if d == top:
            return None
    return None


def _plain_wdir(dvc_yaml: bytes | None, stage: Stage) -> bool:
    """True if HEAD's dvc.yaml defines ``stage`` without a ``wdir`` of its own (so its
    paths and params files are relative to dvc.lock's folder)."""
    if dvc_yaml is None:
        return False
    spec = parse_yaml(dvc_yaml, "HEAD:dvc.yaml").get("stages", {}).get(stage.name)
    return isinstance(spec, dict) and os.path.normpath(str(spec.get("wdir", "."))) == "."


def _argv(cmd: str) -> list[str]:
    """The stage's command as words ([] for a shell pipeline or anything shlex refuses)."""
    try:
        words = shlex.split(cmd)
    except ValueError:
        return []
    return [] if {"&&", "||", ";", "|", ">", "<"} & set(words) else words


def _group_setting(stage: Stage, lock_dir: str, top: str, read: Callable[[str], bytes | None]
                   ) -> str | None:
    """The group setting the recorded run used, from what DVC vouches for: the command's
    ``--group``, else its params file's recorded ``enumerate`` values, else the default
    when no params file was committed; None when it cannot be told."""
    from dvc_cuvis.config.specs import ENUMERATE

    ns = ENUMERATE.parse(_argv(stage.cmd)[2:])  # the verb's own parser, from its spec
    if ns is None:
        return None
    group, params, no_params = ns.group, ns.params, ns.no_params
    if group is not None:
        return group
    if no_params:
        return str(ENUMERATE.default("group"))
    pfile = os.path.normpath(params or "params.yaml")
    recorded = stage.params.get(pfile)
    if isinstance(recorded, dict):
        section = recorded.get("enumerate")
        if isinstance(section, dict):
            return str(section.get("group") or ENUMERATE.default("group"))
        if "enumerate.group" in recorded:
            return str(recorded["enumerate.group"])
    if params is not None:
        return None  # a params file DVC does not track for this stage: not vouched
    # no --params: ./params.yaml, else the repository root's; committed ones are not vouched
    here = os.path.relpath(os.path.join(lock_dir, "params.yaml"), top).replace(os.sep, "/")
    if read(posixpath.normpath(here)) is not None or read("params.yaml") is not None:
        return None
    return str(ENUMERATE.default("group"))
