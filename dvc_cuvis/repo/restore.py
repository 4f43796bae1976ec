"""Which revision last held intact bytes of damaged files, so a restore touches only them.

A restore that reverts a whole ``.dvc`` file (``git checkout REV -- data.dvc && dvc checkout
--force data.dvc``) also reverts every other change recorded since: a committed category
rename, frames added since, an uncommitted edit.  Here each damaged file is looked up on its
own, newest first -- the work tree's ``.dvc`` file, then every commit that changed it (or,
for files git tracks, every commit that changed the file) -- and the first version whose
bytes are *vouched* (the caller's test: the door passed those bytes) and at hand (in DVC's
local cache, or in git) is the one to restore.  Files no version records were never added:
there is nothing to restore them from.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dvc_cuvis._io import parse_yaml
from dvc_cuvis.limits import LimitError, loads_json
from dvc_cuvis.repo.git import Git

__all__ = ["Intact", "dvc_intact", "git_intact"]

#: the work tree's record (the ``.dvc`` file as it is now): no revision to name
WORK_TREE = ""
#: how many revisions back a damaged file is looked for
DEPTH = 50

#: ``vouched(md5, path of those bytes)``: True when the bytes are intact
Vouched = Callable[[str, Path], bool]


@dataclass(frozen=True)
class Intact:
    """Where each damaged file's last intact bytes are (paths relative to the repository)."""

    #: revision -> files whose last intact bytes it records (WORK_TREE: the .dvc file as is)
    by_rev: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: files no version records (never added to DVC, or never committed to git)
    never: tuple[str, ...] = ()
    #: files recorded, but with no version whose bytes are intact and at hand
    lost: tuple[str, ...] = ()


def _cache_dir(root: Path) -> Path:
    """DVC's local cache folder for the repository at ``root`` (its ``cache.dir`` setting)."""
    try:
        from dvc.config import Config

        where = (Config(dvc_dir=os.fspath(root / ".dvc")).get("cache") or {}).get("dir")
    except Exception:  # an unreadable configuration: DVC's default
        where = None
    return Path(root / ".dvc" / str(where)) if where else root / ".dvc" / "cache"


def _object(cache: Path, md5: str, legacy: bool) -> Path:
    """The cache file holding the bytes with ``md5`` (DVC 3's layout, or DVC 2's)."""
    base = cache if legacy else cache / "files" / "md5"
    return base / md5[:2] / md5[2:]


def _recorded(text: bytes | None, dvc_dir: str, cache: Path, wanted: set[str]
              ) -> dict[str, tuple[str, Path]]:
    """What one version of a ``.dvc`` file records for ``wanted`` files: rel -> (md5, the
    cache file of those bytes)."""
    if text is None:
        return {}
    try:
        outs = parse_yaml(text, "a .dvc file").get("outs") or []
    except Exception:  # an unreadable version records nothing we can use
        return {}
    found: dict[str, tuple[str, Path]] = {}
    for out in outs if isinstance(outs, list) else []:
        if not isinstance(out, dict) or not isinstance(out.get("md5"), str):
            continue
        legacy = out.get("hash") != "md5"
        path = posixpath.normpath(posixpath.join(dvc_dir, str(out.get("path", ""))))
        md5 = out["md5"]
        if path in wanted and not md5.endswith(".dir"):
            found[path] = (md5, _object(cache, md5, legacy))
        inside = {w for w in wanted if w.startswith(path + "/")}
        if inside and md5.endswith(".dir"):
            for rel, m in _listing(_object(cache, md5, legacy), path, inside).items():
                found[rel] = (m, _object(cache, m, legacy))
    return found


def _listing(dir_object: Path, out: str, wanted: set[str]) -> dict[str, str]:
    """The md5s a ``.dir`` object records for ``wanted`` files of the output ``out``."""
    try:
        entries = loads_json(dir_object.read_bytes(), dir_object)  # nesting bounded
    except (OSError, ValueError, LimitError):  # not in the local cache: that version cannot be read
        return {}
    found: dict[str, str] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            rel = f"{out}/{entry.get('relpath')}"
            if rel in wanted and isinstance(entry.get("md5"), str):
                found[rel] = entry["md5"]
    return found


def _label(git: Git, commit: str, rel: str, head: bytes | None) -> str:
    """How a command names ``commit``: ``HEAD`` when it holds HEAD's version of ``rel``."""
    return "HEAD" if git.read(commit, rel) == head else commit[:12]


def dvc_intact(root: Path, dvc_file: str, files: Sequence[str], vouched: Vouched,
               depth: int = DEPTH) -> Intact:
    """Where the last intact bytes of ``files`` (posix, relative to the DVC repository
    ``root``) are among the versions of ``dvc_file`` (relative to ``root``): the work
    tree's, then each commit that changed it, newest first."""
    wanted = set(files)
    cache, dvc_dir = _cache_dir(root), posixpath.dirname(dvc_file)
    versions: list[tuple[str, bytes | None]] = []
    with contextlib.suppress(OSError):  # no .dvc file in the work tree: history alone
        versions.append((WORK_TREE, (root / dvc_file).read_bytes()))
    try:
        with Git(root) as git:
            rel = Path(os.path.relpath(root / dvc_file, git.top)).as_posix()
            head = git.read("HEAD", rel)
            log = git.last_commits([rel], depth)
            versions += [(_label(git, c, rel, head), git.read(c, rel)) for c in log]
    except Exception:  # no git, no commit yet: the work tree's record alone
        pass
    return _first_vouched(files, [(lab, _recorded(text, dvc_dir, cache, wanted))
                                  for lab, text in versions], vouched)


def _first_vouched(files: Sequence[str], versions: list[tuple[str, dict[str, tuple[str, Path]]]],
                   vouched: Vouched) -> Intact:
    """Each file's newest version whose bytes are vouched (asked once per md5)."""
    verdicts: dict[str, bool] = {}

    def ok(md5: str, path: Path) -> bool:
        if md5 not in verdicts:
            verdicts[md5] = path.is_file() and vouched(md5, path)
        return verdicts[md5]

    by_rev: dict[str, list[str]] = {}
    never: list[str] = []
    lost: list[str] = []
    for rel in sorted(files):
        seen = [(label, rec[rel]) for label, rec in versions if rel in rec]
        label = next((lab for lab, (md5, path) in seen if ok(md5, path)), None)
        if label is not None:
            by_rev.setdefault(label, []).append(rel)
        else:
            (lost if seen else never).append(rel)
    return Intact({k: tuple(v) for k, v in by_rev.items()}, tuple(never), tuple(lost))


def git_intact(top: Path, files: Sequence[str], vouched: Vouched, depth: int = DEPTH
               ) -> Intact:
    """Where the last intact bytes of ``files`` (posix, relative to git's top ``top``) are
    among the commits that changed them, newest first (HEAD's version included)."""
    versions: list[tuple[str, dict[str, tuple[str, Path]]]] = []
    with tempfile.TemporaryDirectory(prefix="dvc-cuvis-restore-") as tmp, Git(top) as git:
        head = git.commit("HEAD")
        log = git.last_commits(files, depth)
        for n, commit in enumerate(dict.fromkeys([head, *log])):
            recorded: dict[str, tuple[str, Path]] = {}
            for k, rel in enumerate(files):
                data = git.read(commit, rel)
                if data is not None:
                    path = Path(tmp) / f"{n}-{k}"
                    path.write_bytes(data)
                    recorded[rel] = (hashlib.md5(data).hexdigest(), path)
            versions.append(("HEAD" if commit == head else commit[:12], recorded))
        return _first_vouched(files, versions, vouched)

