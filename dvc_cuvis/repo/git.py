"""The one git client, and what tracks a path.

:class:`Git` reads a repository through GitPython: commits (one error for a revision it
lacks, :func:`unknown_revision`), files at revisions through GitPython's ``cat-file --batch``
client (one process per repository, however many files), what git tracks.  A remote is
asked through the same client (:func:`remote_commit`, :func:`mirror`).  A path is tracked by
git, by a ``.dvc`` file, or as the output of a dvc.yaml stage as DVC resolves the file
(:func:`~dvc_cuvis.repo.lockfile.stage_definitions`: ``foreach`` and ``matrix`` stages too).

GitPython is imported on first use only, and no GitPython object leaves this module: every
method returns plain values (bytes, commit ids, :class:`CommitInfo`), so the rest of the
package cannot come to depend on GitPython's types (an import-linter contract keeps it so).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, NamedTuple, TypeVar, cast

from dvc_cuvis.errors import RepoError, first_line
from dvc_cuvis.paths.roots import ancestors, repo_root
from dvc_cuvis.repo.lockfile import LockReadError, declared_outs, stage_definitions

if TYPE_CHECKING:
    from git.objects.commit import Commit


class Git:
    """One git repository, read through GitPython: the one git client of the package
    (commits, files at revisions, tracking; remotes through :func:`remote_commit` and
    :func:`mirror`)."""

    def __init__(self, path: Path | str,
                 purpose: str = "git init, or pass the dataset repository's path") -> None:
        """Open the repository containing ``path`` (:class:`RepoError` when there is none;
        ``purpose`` says why one is needed)."""
        git = _gitpython()
        try:
            self._repo = git.Repo(path, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise RepoError(f"{Path(path).resolve()}: not a git repository ({purpose})"
                            ) from None
        self.top = Path(self._repo.working_tree_dir or path)

    @property
    def shallow(self) -> bool:
        """True for a shallow clone (its history stops at some commit)."""
        return (Path(self._repo.git_dir) / "shallow").exists()

    def _revision(self, rev: str) -> Commit:
        """GitPython's commit object for ``rev``, kept inside this class (:class:`RepoError`
        naming an unknown revision, with a hint in a shallow clone)."""
        try:
            commit = self._repo.commit(rev)
            _ = commit.tree.hexsha  # force the lookup: a shallow clone fails only here
            return commit
        except Exception:  # BadName, ValueError, GitCommandError, ...: all "not here"
            empty = not self._repo.head.is_valid()  # no commit at all yet
            raise RepoError(unknown_revision(rev, shallow=self.shallow, empty=empty)) from None

    def commit(self, rev: str) -> str:
        """The full commit id ``rev`` names (the error of :meth:`revision`)."""
        return str(self._revision(rev).hexsha)

    def read(self, rev: str, rel: str) -> bytes | None:
        """The bytes of the file ``rel`` (posix, relative to the top) at ``rev``; None if it is
        absent there or no file (a folder, a submodule)."""
        if "\n" in rel or "\n" in rev:
            return None  # one request per line: such a name cannot be asked for
        try:
            _, kind, _, data = self._repo.git.get_object_data(f"{rev}:{rel}")
        except ValueError:  # "<rev>:<path> missing" (or ambiguous)
            return None
        return bytes(data) if kind in (b"blob", "blob") else None  # (bytes in GitPython 3)

    def read_many(self, rev: str, rels: list[str]) -> dict[str, bytes | None]:
        """``read`` for several files, through one ``cat-file --batch`` process."""
        return {rel: self.read(rev, rel) for rel in rels}

    def staged(self, rel: str) -> bytes | None:
        """The bytes ``git commit`` would record for ``rel`` (the index's blob, as the hook
        of a commit sees it through ``GIT_INDEX_FILE``); None if the index has no such file."""
        return self.read(":0", rel)

    def unstaged(self) -> list[str]:
        """The tracked files whose working-tree copy differs from the index (posix, relative
        to the top; deleted ones too): where the working tree is not what a commit records."""
        out = self._repo.git.diff("--name-only", "-z", "--no-renames", "--no-ext-diff")
        return sorted(name for name in str(out).split("\0") if name)

    def hooks_dir(self) -> Path:
        """The folder git runs hooks from (``git rev-parse --git-path hooks``: it follows
        ``core.hooksPath`` and, in a linked worktree, the main repository's hooks)."""
        out = str(self._repo.git.rev_parse("--git-path", "hooks"))
        return Path(os.path.abspath(Path(self._repo.working_dir) / out))

    def config(self, key: str) -> str | None:
        """The value of git's setting ``key`` (None when it is unset)."""
        try:
            return str(self._repo.git.config("--get", key)) or None
        except _gitpython().GitCommandError:  # git config exits 1 for an unset key
            return None

    def tracks(self, rel: str) -> bool:
        """True if git tracks the file ``rel`` (relative to the top) in the index."""
        return bool(self._repo.git.ls_files("--", rel).strip())

    # -- history as plain values (h-clients: no GitPython object leaves repo/) ------------

    def commits_touching(self, rev: str, paths: Sequence[str], limit: int | None = None
                         ) -> list[CommitInfo]:
        """The commits reachable from ``rev`` that changed any of ``paths`` (newest first, at
        most ``limit``), each with its author, subject and the blob of every path in it;
        an unknown ``rev`` is the one error of :meth:`commit`."""
        self.commit(rev)
        found = self._repo.iter_commits(rev, paths=list(paths), max_count=limit)
        return [_commit_info(c, paths) for c in found]

    def last_commits(self, paths: Sequence[str], depth: int) -> list[str]:
        """The ids of the last ``depth`` commits (from HEAD) that changed any of ``paths``,
        newest first; :class:`RepoError` when git cannot list them (no commit yet)."""
        try:
            out = self._repo.git.log(f"-{depth}", "--format=%H", "--", *paths)
        except _gitpython().GitCommandError as exc:
            raise RepoError(f"{self.top}: git log cannot list the commits of "
                            f"{', '.join(paths)} ({first_line(exc.stderr, 'git failed')})"
                            ) from None
        return [str(sha) for sha in str(out).split()]

    def close(self) -> None:
        """Stop the git processes kept for reading (GitPython's persistent ``cat-file``)."""
        self._repo.close()

    def __enter__(self) -> Git:
        """This repository, closed at the end of the ``with`` block."""
        return self

    def __exit__(self, *exc: object) -> None:
        """:meth:`close`."""
        self.close()


def unknown_revision(rev: str, *, shallow: bool = False, empty: bool = False) -> str:
    """The one message for a revision a repository does not have (a shallow clone, or a
    repository with no commit yet, says so)."""
    if empty:
        hint = (": this repository has no commit yet, so there is no version to compare; "
                "commit the split (its splits.json, universe.csv, dvc.lock) first")
    elif shallow:
        hint = " — this is a shallow clone: fetch more history (`git fetch --unshallow`)"
    else:
        hint = " (a tag, branch or commit; `git tag` lists the tags)"
    return f"unknown revision {rev!r}{hint}"


def _gitpython() -> ModuleType:
    """The ``git`` package (GitPython), imported on first use."""
    try:
        import git
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise RepoError(f"GitPython is needed to read git history ({exc})") from None
    return git


def _run(args: list[str], what: str) -> str:
    """``git ARGS`` without a terminal prompt; its output, or :class:`RepoError` ``what
    (git's last line)``."""
    git = _gitpython()
    try:
        out: str = git.cmd.Git().execute(["git", *args], env={"GIT_TERMINAL_PROMPT": "0"})
        return out
    except git.GitCommandError as exc:
        text = str(exc.stderr or "").strip().removeprefix("stderr: '").removesuffix("'")
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        why = next((ln for ln in lines if ln.startswith("fatal:")),
                   lines[-1] if lines else f"git exited with {exc.status}")
        raise RepoError(f"{what} ({why})") from None


def remote_commit(url: str, rev: str) -> str | None:
    """The commit the branch or tag ``rev`` names in the repository at ``url`` (an
    annotated tag peeled to its commit; None when no ref of that name exists)."""
    out = _run(["ls-remote", "--", url, rev, f"{rev}^{{}}"], f"{url}: cannot read the "
               "repository")
    refs = [line.split("\t") for line in out.splitlines() if "\t" in line]
    peeled = [sha for sha, ref in refs if ref.endswith("^{}")]
    return (peeled or [refs[0][0]])[0] if refs else None


def mirror(url: str, folder: Path, what: str) -> Path:
    """``folder`` as a bare mirror of ``url``: cloned once, then fetched (branches, tags);
    :class:`RepoError` ``what (git's reason)`` when git cannot read it."""
    if (folder / "HEAD").is_file():
        _run(["--git-dir", str(folder), "fetch", "--quiet", "--prune", "--tags", "--force",
              url, "+refs/heads/*:refs/heads/*"], what)
    else:
        folder.parent.mkdir(parents=True, exist_ok=True)
        _run(["clone", "--quiet", "--bare", "--", url, str(folder)], what)
    return folder


def tracked_by(path: Path | str) -> tuple[str, str] | None:
    """What tracks ``path`` (a file or a folder): ``(kind, description)`` or None.

    ``kind`` is ``"dvc-file"`` (a ``.dvc`` file for it or a folder above it; the description
    names that file), ``"git"`` (git tracks it, or a file under it), or ``"stage"`` (it is,
    or lies inside, an output of a dvc.yaml stage as DVC resolves it, ``foreach`` and
    ``matrix`` stages included; the description names the stage).
    """
    target = Path(os.path.abspath(path))
    root = repo_root(target)
    if root is None:
        return None
    for folder in (target, *target.parents):
        if folder == root:
            break
        dvc_file = folder.parent / f"{folder.name}.dvc"
        if dvc_file.is_file():
            return "dvc-file", dvc_file.relative_to(root).as_posix()
    if (root / ".git").exists():
        try:
            if Git(root).tracks(target.relative_to(root).as_posix()):
                return "git", "git"
        except RepoError:
            pass
    for folder in ancestors(target.parent):
        name = _stage_writing(folder, target)
        if name is not None:
            return "stage", f"the output of stage '{name}' in dvc.yaml"
        if folder == root:
            break
    return None


def _stage_writing(folder: Path, target: Path) -> str | None:
    """The stage of ``folder``'s dvc.yaml whose output is ``target`` or a folder above it."""
    try:
        stages = stage_definitions(folder)
    except LockReadError:  # DVC cannot resolve that dvc.yaml: DVC itself says so
        return None
    for name, stage in sorted(stages.items()):
        if not isinstance(stage, dict):
            continue
        wdir = folder / str(stage.get("wdir", "."))
        for rel in sorted(declared_outs(stage)):
            out = Path(os.path.normpath(wdir / rel))
            if out == target or out in target.parents:
                return str(name)
    return None


# -- commits as plain values (h-clients) ------------------------------------------------


@dataclass(frozen=True)
class CommitInfo:
    """One commit as the rest of the package sees it: plain values, never GitPython's
    object, so history readers need no git library of their own."""

    sha: str
    #: Seconds since the epoch at which the commit was made (git's committer date).
    committed: int
    author: str
    subject: str
    #: ``(path, blob id)`` for each path asked about; None where the commit has no such path.
    blobs: tuple[tuple[str, str | None], ...]

    def blob(self, path: str) -> str | None:
        """The object id of ``path`` in this commit (None: absent there)."""
        return dict(self.blobs).get(path)


def _commit_info(commit: Commit, paths: Sequence[str]) -> CommitInfo:
    """GitPython's ``commit`` as a :class:`CommitInfo` with the blobs of ``paths``."""
    blobs: list[tuple[str, str | None]] = []
    for path in paths:
        try:
            blobs.append((path, str((commit.tree / path).hexsha)))
        except KeyError:  # not in this commit (deleted, or not yet added)
            blobs.append((path, None))
    summary = commit.summary
    return CommitInfo(str(commit.hexsha), int(commit.committed_date), str(commit.author.name),
                      summary if isinstance(summary, str) else str(summary), tuple(blobs))
# -- the fast reader: HEAD, origin and dirty from git's own files --------------------------
# A guarded DataModule takes a dataset record at every ``setup()``; a git process (or
# GitPython's import) there would cost more than the record's budget, so HEAD, its ref and
# origin are read from git's files, each parsed once per change of its stamp.

T = TypeVar("T")


class Stamp(NamedTuple):
    """A file's (inode, size, mtime): while it holds, what was read from the file stands
    (a tuple, so that comparing stamps costs no more than comparing numbers)."""

    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path | str) -> Stamp | None:
        """The stamp of ``path`` now (None when it cannot be stat'ed)."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        return cls(st.st_ino, st.st_size, st.st_mtime_ns)


class FileMemo:
    """Small files parsed once per change of their stamp; owned by whoever owns its lifetime
    (a DataModule's record keeper), never a module-level cache."""

    def __init__(self) -> None:
        """An empty memo."""
        self._known: dict[tuple[str, str], tuple[Stamp, object]] = {}

    def parsed(self, path: Path, parse: Callable[[Path], T]) -> T | None:
        """``parse(path)``, remembered until the file's stamp changes (None: no such file)."""
        stamp = Stamp.of(path)
        if stamp is None:
            return None
        key = (parse.__qualname__, str(path))
        known = self._known.get(key)
        if known is not None and known[0] == stamp:
            return cast(T, known[1])
        value = parse(path)
        self._known[key] = (stamp, value)
        return value


@dataclass(frozen=True)
class GitDirs:
    """A work tree's top, its git folder and the common folder (refs, config) it shares
    with its other worktrees."""

    top: Path
    git_dir: Path | None
    common: Path | None


@dataclass(frozen=True)
class HeadFacts:
    """What the dataset record says of a repository (dirty: see :func:`worktree_dirty`)."""

    root: str | None
    origin: str | None
    commit: str | None


def _read_text(path: Path | str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _git_dirs(top: Path) -> tuple[Path | None, Path | None]:
    """The git folder of the work tree ``top`` (``.git`` or where its ``gitdir:`` points)
    and its common folder."""
    dot = top / ".git"
    if dot.is_dir():
        git_dir = dot
    else:
        text = _read_text(dot)
        if not text or not text.startswith("gitdir:"):
            return None, None
        git_dir = (top / text[len("gitdir:"):].strip()).resolve()
    common = git_dir
    if (git_dir / "commondir").is_file():
        common = (git_dir / (git_dir / "commondir").read_text().strip()).resolve()
    return git_dir, common


def packed_refs(path: Path) -> dict[str, str]:
    """Ref name -> commit, from a ``packed-refs`` file (peeled lines skipped)."""
    refs: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line and line[0] not in "#^" and " " in line:
            sha, name = line.split(" ", 1)
            refs[name.strip()] = sha
    return refs


def origin_url(path: Path) -> str | None:
    """The ``url`` of ``[remote "origin"]`` in a git config file."""
    section = None
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]").replace('"', "").split()
            continue
        if section == ["remote", "origin"] and "=" in line:
            key, value = line.split("=", 1)
            if key.strip().lower() == "url":
                return value.strip()
    return None


class HeadReader:
    """HEAD's commit and origin of the work tree holding a folder, read from git's files (no
    git process, no GitPython); files and work trees are remembered by this reader only."""

    def __init__(self, files: FileMemo | None = None) -> None:
        """A reader remembering parsed files in ``files`` (a fresh memo by default)."""
        self.files = files if files is not None else FileMemo()
        self._tops: dict[str, GitDirs] = {}

    def dirs(self, anchor: Path) -> GitDirs | None:
        """The work tree holding ``anchor`` and its git folders (remembered while it exists)."""
        known = self._tops.get(str(anchor))
        if known is not None and os.path.exists(os.path.join(known.top, ".git")):
            return known
        top = next((f for f in ancestors(anchor) if (f / ".git").exists()), None)
        if top is None:
            return None
        found = GitDirs(top, *_git_dirs(top))
        self._tops[str(anchor)] = found
        return found

    def commit(self, git_dir: Path, common: Path) -> str | None:
        """The commit HEAD names (a detached HEAD, a loose ref, a packed one); None unborn."""
        head = _read_text(git_dir / "HEAD")
        if not head or not head.startswith("ref:"):
            return head or None
        ref = head[4:].strip()
        for folder in (git_dir, common):
            sha = _read_text(folder / ref)
            if sha:
                return sha
        return (self.files.parsed(common / "packed-refs", packed_refs) or {}).get(ref)

    def facts(self, anchor: Path) -> HeadFacts | None:
        """Top, origin and commit of the work tree holding ``anchor`` (None: no git here)."""
        found = self.dirs(anchor)
        if found is None:
            return None
        if found.git_dir is None or found.common is None:
            return HeadFacts(str(found.top), None, None)
        return HeadFacts(str(found.top), self.files.parsed(found.common / "config", origin_url),
                         self.commit(found.git_dir, found.common))

    def witnesses(self, anchor: Path) -> list[str]:
        """git's files the commit and origin are read from (HEAD, its ref, packed-refs,
        config): while none changes, neither do they."""
        found = self.dirs(anchor)
        if found is None or found.git_dir is None or found.common is None:
            return [os.path.join(a, ".git") for a in map(str, ancestors(anchor))]
        git_dir, common = str(found.git_dir), str(found.common)
        head = _read_text(os.path.join(git_dir, "HEAD")) or ""
        paths = [os.path.join(git_dir, "HEAD"), os.path.join(common, "packed-refs"),
                 os.path.join(common, "config")]
        if head.startswith("ref:"):
            ref = head[4:].strip()
            paths += sorted({os.path.join(git_dir, ref), os.path.join(common, ref)})
        return paths


def worktree_dirty(root: str) -> bool | None:
    """Whether tracked files of the work tree ``root`` differ from HEAD (one ``git status``;
    None when git cannot say)."""
    import subprocess

    try:
        proc = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(proc.stdout.strip()) if proc.returncode == 0 else None
