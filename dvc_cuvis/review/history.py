"""Split versions in git: what a change does to a split, per sample (``diff``, ``log``).

DVC's ``dvc diff`` works at file level and its ``.dir`` listings are not in git; a reviewer
needs per-sample transitions.  Both ends are read from git (gitpython; DVC-tracked files
through ``dvc.api``), resolved against their own universe, and aligned by ``uid``.

A sample's *stage* here is its train/val/test membership (``unassigned`` when in none;
predict may overlap anything and is reported by count only).  Transitions use two more
names: ``new`` (only in the newer universe) and ``removed`` (only in the older one).

This module reads (:class:`GitTree`, :func:`load_version`, :func:`load_pair`: a split and
its universe at a revision); the per-sample comparison is the model's
(:mod:`dvc_cuvis.model.compare`), :mod:`dvc_cuvis.review.log` walks the commits that changed a
split, and :mod:`dvc_cuvis.review.render` writes text and markdown.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from pathlib import Path
from typing import Any

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.limits import LimitError
from dvc_cuvis.model.compare import Version
from dvc_cuvis.model.constraints import evaluate_constraints
from dvc_cuvis.model.resolution import resolve
from dvc_cuvis.model.splits import parse_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import parse_universe_bytes
from dvc_cuvis.repo.git import Git, mirror
from dvc_cuvis.repo.lockfile import LockFile, LockReadError

WORKSPACE = "workspace"


# -- reading files at a revision ----------------------------------------------------------


class GitTree:
    """Read files of one repository at any revision (or the workspace): git's through the
    one git client (:class:`~dvc_cuvis.repo.git.Git`), DVC-tracked ones through the one DVC
    client (:func:`~dvc_cuvis.repo.dvc_client.read_at`)."""

    def __init__(self, path: Path | str = ".") -> None:
        """Open the git repository containing ``path``."""
        self.git = Git(path, "diff and log read split versions from git history")
        self.root = self.git.top
        #: Read git alone: a DVC-tracked path is an error instead of a data read (``--repo``).
        self.git_only = False
        #: How the repository was named (a path or URL), for messages.
        self.name = str(path)

    def rel(self, path: Path | str) -> str:
        """``path`` (relative to the cwd or absolute) as a repository-relative posix path."""
        p = Path(path)
        absolute = p if p.is_absolute() else Path.cwd() / p
        try:
            return Path(os.path.relpath(absolute.resolve(), self.root.resolve())).as_posix()
        except ValueError:
            raise DvcCuvisError(f"{path}: not inside the repository {self.root}") from None

    def commit(self, rev: str) -> str:
        """The full commit id of ``rev`` (the git client's one error for an unknown one)."""
        return self.git.commit(rev)

    def read(self, rev: str | None, path: str) -> bytes:
        """Bytes of repository path ``path`` at ``rev`` (None = the workspace)."""
        if rev is None:
            try:
                return (self.root / path).read_bytes()
            except FileNotFoundError:
                raise DvcCuvisError(f"{path} does not exist in the workspace") from None
            except OSError as exc:
                raise DvcCuvisError(f"{path}: cannot read ({exc.strerror})") from None
        commit = self.git.commit(rev)
        data = self.git.read(commit, path)
        return data if data is not None else self._read_dvc(rev, path, commit)

    def _read_dvc(self, rev: str, path: str, commit: str) -> bytes:
        """A DVC-tracked file at ``rev`` (through ``dvc.api``), or a clear error.

        Only a path that no ``.dvc`` file or ``dvc.lock`` output of that revision declares
        "does not exist at revision"; a declared one that DVC cannot read (data neither in
        the cache nor on a remote, a broken ``.dvc`` file, no remote configured) is another
        error, so a missing ``dvc pull`` is never reported as a missing file.
        """
        where = f"{rev} ({commit[:8]})"
        if not _dvc_declares(self.git, commit, path):
            raise DvcCuvisError(f"{path} does not exist at revision {where}")
        if self.git_only:
            raise DvcCuvisError(f"{self.name}: {path} is tracked by DVC at revision {where}, "
                                "not by git; --repo reads git alone (no data is pulled): "
                                "name a git-tracked file")
        from dvc_cuvis.repo.dvc_client import DvcReadError, read_at

        try:
            return read_at(self.root, path, rev)
        except DvcReadError as exc:
            if exc.missing_dvc:  # pragma: no cover - a runtime dependency
                raise DvcCuvisError(f"{path} is tracked by DVC: reading it needs dvc") from None
            raise DvcCuvisError(
                f"{path} is tracked by DVC at revision {where} but cannot be read "
                f"({exc.reason}); fetch its data (`dvc fetch --all-commits {shlex.quote(path)}`: "
                "every revision's copy of it; DVC's fetch has no single-revision option) or "
                "check the DVC remote"
            ) from None


def open_tree(repo: str | os.PathLike[str] | None = None) -> GitTree:
    """The repository whose history ``diff``/``log``/``report --base`` read.

    None: the one holding the current folder.  A local path: that repository, read in place.
    Anything else is a git URL: a bare mirror of it (git history only, no working tree and
    no data) is kept under the user's cache folder and refreshed with ``git fetch``.  Both
    read git alone (:attr:`GitTree.git_only`).
    """
    if repo is None:
        return GitTree(".")
    name = os.fspath(repo)
    tree = GitTree(name) if os.path.isdir(name) else GitTree(_mirror(name))
    tree.git_only, tree.name = True, name
    return tree


def _mirror(url: str) -> Path:
    """A bare mirror of ``url`` in the user cache (cloned once, then fetched)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "dvc-cuvis" / "git" / (hashlib.sha256(url.encode()).hexdigest()[:16]
                                          + ".git")
    return mirror(url, folder, f"--repo {url}: cannot read its git history")


def _dvc_declares(git: Git, commit: str, path: str) -> bool:
    """Whether a ``.dvc`` file or the root ``dvc.lock`` at ``commit`` tracks ``path``
    (itself or a folder above it)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:k]) for k in range(len(parts), 0, -1)]
    if any(git.read(commit, f"{p}.dvc") is not None for p in prefixes):
        return True
    text = git.read(commit, "dvc.lock")
    if text:  # a pushed dvc.lock is read within the alias and nesting budget
        from dvc_cuvis.config.bounded_yaml import check_yaml_budget

        check_yaml_budget(text, f"{commit[:8]}:dvc.lock")
    try:  # the one dvc.lock reader
        lock = LockFile.parse(text.decode("utf-8"), Path("dvc.lock")) if text else None
    except (UnicodeDecodeError, LockReadError):
        return False
    return lock is not None and any(stage.writes(p) for stage in lock.stages
                                    for p in prefixes)


def load_version(
    tree: GitTree, rev: str | None, splits_path: str, universe_path: str,
    params_path: str | None = "params.yaml", parsed: dict[str, Universe] | None = None,
) -> Version:
    """Read, parse and resolve the split at ``rev`` (None = workspace).

    ``parsed`` remembers universes by the digest of their bytes across calls: revisions
    that share universe.csv (most of a split's history) parse and hash it once.
    """
    label = rev or WORKSPACE
    splits_bytes = tree.read(rev, splits_path)
    universe_bytes = tree.read(rev, universe_path)
    try:
        cfg = parse_splits(splits_bytes.decode("utf-8-sig"), path=f"{label}:{splits_path}")
    except UnicodeDecodeError:
        raise DvcCuvisError(f"{label}:{splits_path}: not UTF-8 text") from None
    key = hashlib.sha256(universe_bytes).hexdigest()
    uni = parsed.get(key) if parsed is not None else None
    if uni is None:
        uni = parse_universe_bytes(universe_bytes, path=Path(f"{label}:{universe_path}"))
        if parsed is not None:
            parsed[key] = uni
    res = resolve(cfg, uni, where=f"{label}:{splits_path}")
    constraints = [r.to_dict() for r in evaluate_constraints(res, cfg.constraints)]
    params: dict[str, Any] = {}
    if params_path:
        from dvc_cuvis.config.bounded_yaml import load_bounded_yaml

        try:  # the one YAML reader, within the alias and nesting budget of a pushed file
            loaded = load_bounded_yaml(tree.read(rev, params_path), f"{label}:{params_path}")
            params = loaded if isinstance(loaded, dict) else {}
        except LimitError:
            raise
        except DvcCuvisError:
            params = {}
    return Version(label, uni, res.stages, cfg.universe_hash, constraints, params,
                   categories=_category_names(tree, rev, params, params_path, label))


#: params sections whose ``categories`` names the category name map (first one set wins).
_NAMES_FROM = ("bake", "report", "materialize", "resolve", "enumerate")


def _category_names(tree: GitTree, rev: str | None, params: dict[str, Any],
                    params_path: str | None, label: str) -> dict[int, str]:
    """Category id -> name at ``rev``, from the map params.yaml names (empty when none is
    readable: names only label the counts, so a missing map never fails the diff)."""
    import json
    import posixpath

    from dvc_cuvis.model.categories import parse_category_map

    for section in _NAMES_FROM:
        path = (params.get(section) or {}).get("categories") if isinstance(
            params.get(section), dict) else None
        if not isinstance(path, str) or not path:
            continue
        path = posixpath.normpath(posixpath.join(posixpath.dirname(params_path or ""), path))
        try:
            data = json.loads(tree.read(rev, path).decode("utf-8-sig"))
            names = parse_category_map(data, where=f"{label}:{path}")
        except (DvcCuvisError, OSError, ValueError):
            return {}
        return {cid: name for name, cid in sorted(names.items(), key=lambda kv: kv[1])}
    return {}


def load_pair(
    tree: GitTree, rev_a: str | None, rev_b: str | None, splits_path: str, universe_path: str,
    params_path: str | None = None,
) -> tuple[Version, Version]:
    """Both ends of a comparison (None = workspace); a universe.csv they share is parsed once."""
    parsed: dict[str, Universe] = {}
    return (load_version(tree, rev_a, splits_path, universe_path, params_path, parsed),
            load_version(tree, rev_b, splits_path, universe_path, params_path, parsed))
