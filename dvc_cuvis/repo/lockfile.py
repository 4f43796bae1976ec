"""dvc.lock: find it, read its stages, and compare what it recorded with the workspace.

DVC records, per stage, the md5 of every dependency and output and the params values the
stage read.  The drift check asks two things of that record: does the workspace still
match it (the *staleness* check), and is the stage that wrote universe.csv entirely
unchanged — then DVC vouches that the data under its inputs is exactly what universe.csv
was enumerated from, and the content check need not hash those files again.

Hashes are DVC's own (plain md5 of a file; the ``.dir`` hash of a folder), computed
through the stat cache so an unchanged folder costs its ``stat`` calls.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, cast

from dvc_cuvis._io import parse_yaml, read_yaml
from dvc_cuvis.config.params import diff_params
from dvc_cuvis.digests.hashing import dir_hash, is_folder_hash
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError, RepoError, YamlError
from dvc_cuvis.paths.guard import PathGuard, is_within
from dvc_cuvis.paths.roots import ancestors
from dvc_cuvis.repo.resolved import resolved_stages

#: Stages whose own record is not the pipeline's state (a previous check or report).
REPORTING_COMMANDS: tuple[str, ...] = ("dvc-cuvis check", "dvc-cuvis report")


def find_lock(start: Path | str) -> Path | None:
    """The dvc.lock of the project containing ``start``: the nearest one at or above it, not
    looking past the repository root (None outside DVC projects)."""
    for folder in ancestors(Path(start).resolve()):
        if (folder / "dvc.lock").is_file():
            return folder / "dvc.lock"
        if (folder / ".dvc").is_dir() or (folder / ".git").exists():
            return None
    return None


class LockReadError(DvcCuvisError):
    """dvc.lock exists but cannot be read or parsed."""


def _norm(path: object) -> str:
    return os.path.normpath(str(path))


class LockEntry(TypedDict, total=False):
    """One ``deps``/``outs`` entry of a dvc.lock stage (the keys this package reads; DVC may
    write more, which are kept as read)."""

    path: str
    md5: str
    hash: str
    size: int
    nfiles: int


def _lock_entries(raw: list[object]) -> list[LockEntry]:
    """The mapping entries of a stage's ``deps``/``outs`` list (anything else left out)."""
    return [cast(LockEntry, e) for e in raw if isinstance(e, dict)]


@dataclass
class Stage:
    """One stage of dvc.lock: its command, recorded deps/outs and params."""

    name: str
    cmd: str
    deps: list[LockEntry]
    outs: list[LockEntry]
    params: dict[str, dict[str, object] | None]

    @property
    def entries(self) -> list[LockEntry]:
        """Dependencies then outputs."""
        return [*self.deps, *self.outs]

    @property
    def reports(self) -> bool:
        """True for a check/report stage (its record describes an earlier check)."""
        return self.cmd.startswith(REPORTING_COMMANDS)

    def touches(self, wanted: set[str]) -> bool:
        """True if the stage reads or writes one of ``wanted`` (or a folder holding one)."""
        paths = {_norm(e.get("path", "")) for e in self.entries}
        return any(w == p or w.startswith(p + os.sep) for w in wanted for p in paths)

    def output(self, rel: str) -> LockEntry | None:
        """The recorded entry of the output ``rel`` (relative to the lock's folder), or None."""
        want = _norm(rel)
        return next((e for e in self.outs if _norm(e.get("path", "")) == want), None)

    def writes(self, rel: str | None) -> bool:
        """True if ``rel`` (relative to the lock's folder) is one of the stage's outputs."""
        return rel is not None and self.output(rel) is not None


@dataclass
class LockFile:
    """A parsed dvc.lock (stages sorted by name; malformed entries left out)."""

    path: Path
    stages: list[Stage]

    @property
    def root(self) -> Path:
        """The folder dvc.lock's paths are relative to."""
        return self.path.parent

    @classmethod
    def read(cls, path: Path) -> LockFile:
        """Parse ``path``; :class:`LockReadError` when it cannot be read or is not YAML."""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise LockReadError(f"{path}: unreadable dvc.lock ({exc})") from None
        return cls.parse(text, path)

    @classmethod
    def parse(cls, text: str, path: Path) -> LockFile:
        """Parse dvc.lock's ``text`` (e.g. read from git) as the file at ``path``;
        :class:`LockReadError` when it is not YAML."""
        try:
            data = parse_yaml(text, path) or {}
        except YamlError as exc:
            raise LockReadError(f"{path}{exc.line}: unreadable dvc.lock (not valid YAML: "
                                f"{exc.problem})") from None
        raw = data.get("stages") or {} if isinstance(data, dict) else None
        if not isinstance(raw, dict):
            raise LockReadError(f"{path}: unreadable dvc.lock (expected a mapping of stages)")
        stages = []
        for name, st in sorted(raw.items()):
            if not isinstance(st, dict):
                continue
            deps, outs = st.get("deps") or [], st.get("outs") or []
            if not (isinstance(deps, list) and isinstance(outs, list)):
                raise LockReadError(f"{path}: unreadable dvc.lock (stage {name!r}: deps and "
                                    "outs must be lists)")
            stages.append(Stage(
                name, str(st.get("cmd", "")),
                _lock_entries(deps),
                _lock_entries(outs),
                st.get("params") or {},
            ))
        return cls(path, stages)

    def rel(self, path: Path) -> str:
        """``path`` relative to the lock's folder, normalized as dvc.lock writes it."""
        return _norm(os.path.relpath(path.absolute(), self.root.absolute()))


@dataclass(frozen=True)
class Change:
    """One way the workspace differs from what a stage of dvc.lock recorded: an entry's
    ``path`` (its hash, or ``problem``: missing, a folder now a file...), or, without a
    path, the stage's definition in dvc.yaml (``problem``: its command, deps or outs)."""

    stage: str
    path: str | None = None
    problem: str = ""

    def __str__(self) -> str:
        """As the check shows it: ``data/npz (stage enumerate): missing``."""
        if self.path is None:
            return f"stage {self.stage}: {self.problem}"
        where = f"{self.path} (stage {self.stage})"
        return f"{where}: {self.problem}" if self.problem else where


@dataclass
class Comparison:
    """dvc.lock against the workspace, for the stages that read or write some files."""

    relevant: list[str] = field(default_factory=list)
    #: the relevant stages that differ (an entry, their definition or a param)
    stale: list[str] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)
    params_changed: list[str] = field(default_factory=list)
    #: dependency (absolute path) of the unchanged stage that wrote universe.csv -> the files
    #: below it that its recorded hash covers (relative; ``""`` for a file dependency)
    vouched: dict[str, list[str]] = field(default_factory=dict)


def compare(
    lock: LockFile, targets: Sequence[Path], cache: StatCache, universe: Path | None = None,
    staged: Mapping[str, str | None] | None = None,
) -> Comparison:
    """Compare the stages that read or write ``targets`` with the workspace.

    ``staged`` (absolute path -> md5, None for a deleted file) stands for the workspace
    where a commit records a file differently (the pre-commit hook's check).

    Only files the matching hashes actually cover are vouched for (a folder reached
    through a symlink is not part of DVC's folder hash), and only by the stage that wrote
    ``universe`` when its output, every input hash and its params are unchanged.
    """
    out = Comparison()
    wanted = {lock.rel(t) for t in targets}
    universe_rel = lock.rel(universe) if universe is not None else None
    hashed: dict[str, tuple[str, list[str]]] = {}  # several stages may read one folder
    params: dict[str, object] = {}
    definitions: dict[str, Any] | None = None  # dvc.yaml's stages, read once if needed
    for stage in lock.stages:
        if stage.reports or not stage.touches(wanted):
            continue
        out.relevant.append(stage.name)
        changed, covered = _compare_entries(lock, stage, cache, hashed, staged or {})
        if definitions is None:
            definitions = stage_definitions(lock.root)
        changed += _compare_definition(stage, definitions)
        params_changed = _compare_params(lock, stage, params)
        out.changed += changed
        out.params_changed += params_changed
        if changed or params_changed:
            out.stale.append(stage.name)
        if stage.writes(universe_rel) and not changed and not params_changed:
            for e in stage.deps:
                top = os.path.abspath(lock.root / str(e.get("path", "")))
                if top in covered:
                    out.vouched[top] = covered[top]
    return out


def _compare_entries(
    lock: LockFile, stage: Stage, cache: StatCache, hashed: dict[str, tuple[str, list[str]]],
    staged: Mapping[str, str | None],
) -> tuple[list[Change], dict[str, list[str]]]:
    """What differs from the recorded hashes, and the entries that match (with their files)."""
    changed: list[Change] = []
    covered: dict[str, list[str]] = {}
    for e in stage.entries:
        rel, recorded = str(e.get("path", "")), e.get("md5")
        if not recorded:
            continue
        p = lock.root / rel
        top = os.path.abspath(p)
        if top in staged:  # the commit's bytes, not the working tree's
            md5 = staged[top]
            if md5 != recorded:
                changed.append(Change(stage.name, rel, "" if md5 else "missing"))
            else:
                covered[top] = [""]
        elif not p.exists():
            changed.append(Change(stage.name, rel, "missing"))
        elif is_folder_hash(recorded):
            if not p.is_dir():
                changed.append(Change(stage.name, rel, "a folder in dvc.lock, now a file"))
                continue
            if top not in hashed:
                hashed[top] = dir_hash(top, cache)
            value, listed = hashed[top]
            if value != recorded:
                changed.append(Change(stage.name, rel))
            else:
                covered[top] = listed
        elif not p.is_file():
            changed.append(Change(stage.name, rel, "a file in dvc.lock, now a folder"))
        elif cache.md5(p) != recorded:
            changed.append(Change(stage.name, rel))
        else:
            covered[top] = [""]
    return changed, covered


def stage_definitions(root: Path) -> dict[str, Any]:
    """The stages of the dvc.yaml in ``root`` as DVC resolves them (name -> definition;
    ``foreach``/``matrix`` stages under their ``name@key`` names); ``{}`` when there is no
    readable dvc.yaml.

    A dvc.yaml without templating (no ``${``, ``foreach`` or ``matrix``) is its own
    resolution and is read as YAML; otherwise DVC's own resolver (``dvc.parsing``) expands
    it, with the repository's ``vars`` and params files, exactly as ``dvc status`` does; the
    resolution is kept (:mod:`dvc_cuvis.repo.resolved`) until one of those files changes.
    """
    path = root / "dvc.yaml"
    try:
        text = path.read_text(encoding="utf-8")
        data = parse_yaml(text, path)
    except (OSError, UnicodeDecodeError, RepoError):
        return {}
    stages = data.get("stages") if isinstance(data, dict) else None
    if not isinstance(stages, dict):
        return {}
    templated = "${" in text or any(
        isinstance(d, dict) and ("foreach" in d or "matrix" in d) for d in stages.values())
    if not templated:
        return stages
    return resolved_stages(root, text, data, lambda: _resolve(root, path, data))


def _resolve(root: Path, path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """DVC's own resolution of the stages of the dvc.yaml ``path`` (parsed: ``data``)."""
    try:
        from dvc.parsing import DataResolver
        from dvc.repo import Repo

        with Repo(os.fspath(root)) as repo:
            resolved = DataResolver(repo, os.path.abspath(root), data).resolve()
    except Exception as exc:  # DVC itself cannot resolve it: dvc status fails alike
        raise LockReadError(f"{path}: DVC cannot resolve this dvc.yaml ({exc})") from None
    found = resolved.get("stages") if isinstance(resolved, dict) else None
    return found if isinstance(found, dict) else {}


def _paths(entries: Iterable[object] | None) -> set[str]:
    """The paths of a dvc.yaml ``deps``/``outs`` list (plain or ``{path: options}``)."""
    out: set[str] = set()
    for e in entries or []:
        if isinstance(e, str):
            out.add(_norm(e))
        elif isinstance(e, dict):
            out.update(_norm(k) for k in e)
    return out


def declared_outs(definition: Mapping[str, Any]) -> set[str]:
    """The outputs a dvc.yaml stage definition declares (``outs``, ``metrics``, ``plots``),
    normalized, relative to its ``wdir``."""
    return (_paths(definition.get("outs")) | _paths(definition.get("metrics"))
            | _paths(definition.get("plots")))


def _compare_definition(stage: Stage, definitions: dict[str, Any]) -> list[Change]:
    """What dvc.yaml now defines differently from what ran (``dvc status``'s "changed
    command" / "changed deps" / "changed outs" of a stage)."""
    d = definitions.get(stage.name)
    if not isinstance(d, dict):
        return []  # not in dvc.yaml (any more): dvc status does not report it either
    changed: list[Change] = []
    cmd = d.get("cmd")
    if isinstance(cmd, list) and len(cmd) == 1:
        cmd = cmd[0]
    if cmd is not None and str(cmd) != stage.cmd:
        changed.append(Change(stage.name, None, "command changed in dvc.yaml"))
    deps = _paths(d.get("deps"))
    if deps != {_norm(e.get("path", "")) for e in stage.deps}:
        changed.append(Change(stage.name, None, "dependencies changed in dvc.yaml"))
    if declared_outs(d) != {_norm(e.get("path", "")) for e in stage.outs}:
        changed.append(Change(stage.name, None, "outputs changed in dvc.yaml"))
    return changed


def _compare_params(lock: LockFile, stage: Stage, loaded: dict[str, object]) -> list[str]:
    """Recorded params values that differ from the params files now (``file:key (stage)``)."""
    changed = []
    for pfile, values in stage.params.items():
        if pfile not in loaded:
            try:
                loaded[pfile] = read_yaml(lock.root / pfile)
            except RepoError:  # missing or unreadable: every recorded value differs
                loaded[pfile] = {}
        for key, value in (values or {}).items():
            for leaf, _, _ in diff_params(key, value, lookup(loaded[pfile], key)):
                changed.append(f"{pfile}:{leaf} (stage {stage.name})")
    return changed


def lookup(tree: object, dotted: str) -> object:
    """The value at ``a.b.c`` in nested dicts (None when any part is missing)."""
    node = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def vouched_below(vouched: Mapping[str, Sequence[str]], base: Path) -> set[str]:
    """The vouched files below folder ``base``, relative to it.

    A dependency reached through a symlink out of ``base`` vouches for nothing here: the
    path guard must see those files.
    """
    guard = PathGuard(base)
    prefix = guard.base_abs + "/"
    covered: set[str] = set()
    for top, rels in vouched.items():
        if not is_within(guard.root_real, os.path.realpath(top)):
            continue
        if top.startswith(prefix):
            sub = top[len(prefix):]
            covered.update([f"{sub}/{r}" if r else sub for r in rels])
        elif top == guard.base_abs:
            covered.update(rels)
    return covered
