"""The door: every frame is checked at enumerate, before any stage builds on it.

Under ``dvc repro``, DVC commits the raw data (``data/npz.dvc``) before any stage runs, so no
stage of ours can keep damaged bytes out of DVC's cache; ``enumerate`` is the first one that
can see them.  It refuses a frame that ``materialize`` would trip on -- a zip member whose
CRC fails, a missing member, a cube that is not a numeric 3-D array, wavelengths that are
not one per band, a mask that is not the cube's height x width -- and lists every such frame
at once, with the command that brings the last good data back.

A verdict is a pure function of the frame's bytes, so it is kept in the stat cache's content
memo by md5 (:data:`NPZ_VERDICT`, a :func:`~dvc_cuvis.digests.stat_cache.content_key` of the
``check`` kind): an unchanged frame is never read again, and a frame whose md5 DVC vouches
for (a checkout) is read once, for its verdict -- unless HEAD's committed universe.csv, vouched
by dvc.lock and written by this same door (:data:`NPZ_DOOR`), lists that md5: every row of it
passed the door, so a fresh clone reads no byte (:mod:`dvc_cuvis.sources.seed`).  Dtypes
that materialize converts (a float64 cube, float wavelengths) are not checked.
"""

from __future__ import annotations

import io
import os
import shlex
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dvc_cuvis.digests.stat_cache import CacheMiss, StatCache, content_key
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.limits import OVER_CEILING, LimitError

# the cache keys of the verdicts; bump a version when its verdict function changes
NPZ_VERDICT = content_key("npz-verdict", 2, check=True)
TIFF_VERDICT = content_key("tiff-verdict", 3, check=True)
#: the recipe version of the npz door, recorded in enumerate's metrics (``door``): a fresh
#: clone takes "passed" for a vouched row's md5 only from a run of this same door
NPZ_DOOR: dict[str, int] = {"npz-verdict": 2}
#: the key a scanner's row carries instead of its cells when the door refused the file
REFUSED = "__refused__"
#: the most bad frames the error lists one by one (the count says how many more)
LISTED = 50

_NEEDED = {
    "cube": "a numeric array [H, W, C]",
    "wavelengths": "one wavelength per band of the cube [C]",
}


@dataclass(frozen=True)
class BadFrame:
    """A file the door refused: its path as the user named it, and what is wrong with it."""

    path: str
    problems: tuple[str, ...]


class DoorError(DvcCuvisError):
    """Frames that materialize would trip on (exit 2: nothing is written)."""


def npz_verdict(path: Path) -> list[str]:
    """What is wrong with one npz frame ([] when materialize can read it): one entry per
    member, each naming the member and what was expected (no path: a function of bytes)."""
    from dvc_cuvis.model.frame_read import load_npz_bytes

    data = Path(path).read_bytes()
    problems: list[str] = []
    try:  # the fast path (one zip parse, stored members in place, CRCs by libdeflate)
        arrays = load_npz_bytes(data)
    except Exception:  # damaged, or over a ceiling: find out which member and how
        try:
            infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
        except Exception as exc:  # whatever a damaged file makes zipfile raise: unreadable
            return [f"not a readable npz frame ({exc}); expected a zip of .npy members"]
        arrays, problems = _members_one_by_one(data, infos)
    return problems + _shape_problems(arrays, problems)


def _members_one_by_one(data: bytes, infos: list[zipfile.ZipInfo]
                        ) -> tuple[dict[str, np.ndarray], list[str]]:
    """Every array member read on its own (within its declared sizes, as materialize reads
    it), to name the one that fails and how."""
    from dvc_cuvis.model.npz_members import npy_members, read_member
    from dvc_cuvis.model.zip_crc import crc32

    arrays: dict[str, np.ndarray] = {}
    problems: list[str] = []
    for info in npy_members(infos):
        name = info.filename.removesuffix(".npy")
        try:
            arr, stored = read_member(data, info)
            if stored is not None and crc32(stored.span) != stored.crc:
                raise zipfile.BadZipFile(f"Bad CRC-32 for file {info.filename!r}")
        except LimitError as exc:  # names the ceiling and its variable
            problems.append(str(exc))
        except (zipfile.BadZipFile, zlib.error, ValueError) as exc:  # names its member
            said = str(exc)
            problems.append(said if said.startswith("member ")
                            else f"member {name!r}: damaged bytes ({said})")
        else:
            arrays[name] = arr
    return arrays, problems


def _numeric(arr: np.ndarray) -> bool:
    return bool(np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_)


def _shape_problems(arrays: dict[str, np.ndarray], read: list[str]) -> list[str]:
    """The members materialize needs, and their shapes against the cube's."""
    # a damaged frame says so; what seems missing from it may only be unreadable
    out = [] if read else [f"member '{m}' missing; expected {what}"
                           for m, what in _NEEDED.items() if m not in arrays]
    cube = arrays.get("cube")
    if cube is None:
        return out
    if not _numeric(cube):
        return [*out, f"member 'cube': expected numbers, got dtype {cube.dtype}"]
    if cube.ndim != 3:
        return [*out, f"member 'cube': expected a 3-D array [H, W, C], got shape "
                      f"{tuple(cube.shape)}"]
    h, w, c = (int(n) for n in cube.shape)
    wl = arrays.get("wavelengths")
    if wl is not None and (not _numeric(wl) or wl.size != c):
        got = f"dtype {wl.dtype}" if not _numeric(wl) else f"shape {tuple(wl.shape)}"
        out.append(f"member 'wavelengths': expected {c} numbers (one per band of the cube "
                   f"{(h, w, c)}), got {got}")
    for name in ("class_mask", "mask"):
        mask = arrays.get(name)
        if mask is None:
            continue
        if not _numeric(mask) or tuple(mask.shape) != (h, w):
            got = f"dtype {mask.dtype}" if not _numeric(mask) else f"shape {tuple(mask.shape)}"
            out.append(f"member '{name}': expected the cube's height x width {(h, w)}, "
                       f"got {got}")
        elif name == "class_mask" and mask.size and not 0 <= int(mask.min()) <= int(
                mask.max()) <= 255:
            out.append(f"member 'class_mask': expected category ids 0-255, got "
                       f"{int(mask.min())}..{int(mask.max())}")
    return out


def remembered(cache: StatCache, path: Path | str, key: str,
               verdict: Callable[[Path], list[str]], st: os.stat_result | None,
               cached_only: bool) -> list[str]:
    """The verdict on ``path`` from the memo, but a refusal over a ceiling is taken again:
    a ceiling may have been raised since (and such a refusal read no more than headers)."""
    problems: list[str] = cache.get(path, key, verdict, st, cached_only=cached_only)
    if not any(OVER_CEILING in p for p in problems):
        return problems
    if cached_only:
        raise CacheMiss(os.fspath(path))
    return verdict(Path(path))


def collect(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[BadFrame]]:
    """The scanner's rows split into admitted rows and refused files (rows with
    :data:`REFUSED`), in scan order."""
    rows, bad = [], []
    for r in records:
        if REFUSED in r:
            bad.append(BadFrame(r["path"], tuple(r[REFUSED])))
        else:
            rows.append(r)
    return rows, bad


def refuse(bad: list[BadFrame], total: int, fmt: str, root: Path) -> DoorError:
    """The error for ``bad`` frames out of ``total``: every file and problem, and how to
    get the last good data back."""
    kind = {"npz": "npz frames", "tiff": "TIFF cubes"}.get(fmt, f"{fmt} files")
    count = f"{len(bad)} of {total} {kind} in {root} would fail materialize"
    if len(bad) == 1:  # one line, as every other error
        (b,) = bad
        return DoorError(f"{b.path}: {'; '.join(b.problems)}; enumerate refuses it ({count}) "
                         f"and writes nothing; {restore_hint(root, bad, fmt)}")
    lines = [f"{count}; enumerate refuses them and writes nothing:"]
    for b in bad[:LISTED]:
        lines += [f"  {b.path}: {p}" for p in b.problems]
    if len(bad) > LISTED:
        lines.append(f"  ... and {len(bad) - LISTED} more")
    lines.append(restore_hint(root, bad, fmt))
    return DoorError("\n".join(lines))


def restore_hint(root: Path, bad: Sequence[BadFrame] = (), fmt: str = "npz") -> str:
    """How to get the last good bytes of the ``bad`` files under ``root`` back, as fits what
    tracks them: each file from the newest version whose bytes the door passed, and nothing
    else (:mod:`dvc_cuvis.repo.restore`)."""
    from dvc_cuvis.errors import RepoError
    from dvc_cuvis.repo.git import tracked_by

    fix = "or replace the damaged files and run enumerate again"
    try:
        found = tracked_by(root)
    except RepoError:
        found = None
    if found is None:
        return f"to go on: {fix.removeprefix('or ')}"
    kind, what = found
    if kind == "stage":
        return f"the data is {what}: rerun that stage (`dvc repro`), {fix}"
    files = sorted({b.path for b in bad})
    if kind == "git":
        return _git_hint(root, files, fmt, fix)
    return _dvc_file_hint(root, what, fix, files, fmt)


def _vouched(root: Path, fmt: str) -> Callable[[str, Path], bool]:
    """Whether the bytes with an md5 (in a file at a path) are intact: the door's own verdict
    on them, remembered by md5 in the stat cache, else taken now (npz frames)."""
    from dvc_cuvis.digests.stat_cache import StatCache, default_cache_path

    key = {"npz": NPZ_VERDICT, "tiff": TIFF_VERDICT}.get(fmt)
    cache = StatCache(default_cache_path(Path(os.path.abspath(root))))

    def vouched(md5: str, path: Path) -> bool:
        if key is None:
            return False
        known, verdict = cache.memo_lookup(key, md5)
        if known:
            return verdict == []
        return fmt == "npz" and not npz_verdict(path)

    return vouched


def _said(commands: list[str], never: Sequence[str], lost: Sequence[str], where: str,
          fix: str) -> str:
    """The hint: the restore commands, then the files nothing can restore, in words."""
    out = []
    if commands:
        shown = " and ".join(f"`{c}`" for c in commands)
        out.append("to get the last good data back (this overwrites the damaged files and "
                   f"nothing else, committed or not): {shown}, then run enumerate again")
    if never:
        out.append(f"{', '.join(never)}: never added to {where}, so there is nothing to "
                   "restore from: replace it with a good copy (or remove it)")
    if lost:
        out.append(f"{', '.join(lost)}: no version that {where} records is intact and at "
                   "hand (the local cache): replace it with a good copy")
    if not commands:
        if out:
            return f"to go on: {'; '.join(out)}; {fix.removeprefix('or ')}"
        return f"to go on: {fix.removeprefix('or ')}"
    return f"{'; '.join(out)}; {fix}"


def _git_hint(root: Path, files: list[str], fmt: str, fix: str) -> str:
    """The restore of files git tracks: each from the newest commit with intact bytes, into
    the work tree only (``git restore``; the index and every other file stay)."""
    from dvc_cuvis.repo.git import Git
    from dvc_cuvis.repo.restore import git_intact

    try:
        with Git(root) as git:
            top = git.top.resolve()
        rels = [Path(os.path.relpath(os.path.abspath(f), top)).as_posix() for f in files]
        intact = git_intact(top, rels, _vouched(root, fmt))
    except (DvcCuvisError, OSError):  # the git client's one error (RepoError), a verdict
        # the door cannot take, a file that cannot be read: nothing to name
        return f"to go on: {fix.removeprefix('or ')}"
    back = {rel: Path(os.path.relpath(top / rel)).as_posix() for rel in rels}
    commands = [f"git restore --source={rev} -- "
                + " ".join(shlex.quote(back[f]) for f in fs) for rev, fs in intact.by_rev.items()]
    return _said(commands, [back[f] for f in intact.never], [back[f] for f in intact.lost],
                 "git", fix)


def _dvc_file_hint(root: Path, dvc_file: str, fix: str, files: Sequence[str] = (),
                   fmt: str = "npz") -> str:
    """The restore of files under data tracked by ``dvc_file`` (relative to the repository):
    ``dvc checkout --force FILE`` where the .dvc file as it is records the intact bytes,
    ``dvc get . FILE --rev REV -o FILE --force`` where an earlier version does; never a
    checkout of the whole .dvc file."""
    from dvc_cuvis.paths.roots import repo_root
    from dvc_cuvis.repo.restore import WORK_TREE, dvc_intact

    base = (repo_root(Path(os.path.abspath(root))) or Path(".")).resolve()
    local = os.path.relpath(base / dvc_file)
    rels = [Path(os.path.relpath(os.path.abspath(f), base)).as_posix() for f in files]
    intact = dvc_intact(base, dvc_file, rels, _vouched(root, fmt))
    back = {rel: Path(os.path.relpath(base / rel)).as_posix() for rel in rels}
    into = ("" if base == Path.cwd().resolve() else
        f"cd {shlex.quote(Path(os.path.relpath(base)).as_posix())} && ")
    commands = []
    for rev, fs in intact.by_rev.items():
        if rev == WORK_TREE:  # dvc checkout reads a path from the folder it runs in
            commands.append("dvc checkout --force " + " ".join(shlex.quote(back[f]) for f in fs))
        else:  # dvc get reads the path in the repository from its root
            commands.append(into + " && ".join(
                f"dvc get . {shlex.quote(f)} --rev {rev} -o {shlex.quote(f)} --force"
                for f in fs))
    return _said(commands, [back[f] for f in intact.never], [back[f] for f in intact.lost],
                 f"DVC ({local})", fix)
