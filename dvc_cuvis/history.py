"""Split versions in git: what a change does to a split, per sample (``diff``, ``log``).

DVC's ``dvc diff`` works at file level and its ``.dir`` listings are not in git; a reviewer
needs per-sample transitions.  Both ends are read from git (gitpython; DVC-tracked files
through ``dvc.api``), resolved against their own universe, and aligned by ``uid``.

A sample's *stage* here is its train/val/test membership (``unassigned`` when in none;
predict may overlap anything and is reported by count only).  Transitions use two more
names: ``new`` (only in the newer universe) and ``removed`` (only in the older one).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.splits import (
    STAGE_CODE_NAMES,
    STAGES,
    evaluate_constraints,
    parse_splits,
    resolve,
    stage_codes,
)
from dvc_cuvis.universe import Universe, parse_universe_bytes

WORKSPACE = "workspace"
STATE_NAMES: tuple[str, ...] = STAGE_CODE_NAMES
TRACKED_PARAMS: tuple[str, ...] = ("enumerate", "bake", "materialize")


# -- reading files at a revision ----------------------------------------------------------


class GitTree:
    """Read files of one repository at any revision (or the workspace)."""

    def __init__(self, path: Path | str = ".") -> None:
        """Open the git repository containing ``path``."""
        try:
            import git
        except ImportError:  # pragma: no cover - a runtime dependency
            raise DvcCuvisError("diff/log need gitpython: pip install gitpython") from None
        try:
            self.repo = git.Repo(path, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise DvcCuvisError(
                f"{Path(path).resolve()}: not a git repository (diff and log read split "
                "versions from git history)"
            ) from None
        self.root = Path(self.repo.working_tree_dir or ".")
        self._git = git

    def rel(self, path: Path | str) -> str:
        """``path`` (relative to the cwd or absolute) as a repository-relative posix path."""
        p = Path(path)
        absolute = p if p.is_absolute() else Path.cwd() / p
        try:
            return Path(os.path.relpath(absolute.resolve(), self.root.resolve())).as_posix()
        except ValueError:
            raise DvcCuvisError(f"{path}: not inside the repository {self.root}") from None

    def commit(self, rev: str) -> Any:
        """The commit object for ``rev`` (clear errors for unknown/shallow revisions)."""
        try:
            commit = self.repo.commit(rev)
            _ = commit.tree.hexsha  # force the lookup: a shallow clone fails only here
            return commit
        except (self._git.BadName, ValueError, self._git.GitCommandError):
            shallow = (Path(self.repo.git_dir) / "shallow").exists()
            hint = (" — this is a shallow clone: fetch more history (`git fetch --unshallow`)"
                    if shallow else "")
            raise DvcCuvisError(f"unknown revision {rev!r}{hint}") from None

    def read(self, rev: str | None, path: str) -> bytes:
        """Bytes of repository path ``path`` at ``rev`` (None = the workspace)."""
        if rev is None:
            try:
                return (self.root / path).read_bytes()
            except FileNotFoundError:
                raise DvcCuvisError(f"{path} does not exist in the workspace") from None
            except OSError as exc:
                raise DvcCuvisError(f"{path}: cannot read ({exc.strerror})") from None
        commit = self.commit(rev)
        try:
            blob = commit.tree / path
            data: bytes = blob.data_stream.read()
            return data
        except KeyError:
            pass
        return self._read_dvc(rev, path, commit)

    def _read_dvc(self, rev: str, path: str, commit: Any) -> bytes:
        """A DVC-tracked file at ``rev`` (through ``dvc.api``), or a clear error.

        Only a path that no ``.dvc`` file or ``dvc.lock`` output of that revision declares
        "does not exist at revision"; a declared one that DVC cannot read (data neither in
        the cache nor on a remote, a broken ``.dvc`` file, no remote configured) is another
        error, so a missing ``dvc pull`` is never reported as a missing file.
        """
        where = f"{rev} ({commit.hexsha[:8]})"
        if not _dvc_declares(commit, path):
            raise DvcCuvisError(f"{path} does not exist at revision {where}")
        try:
            import dvc.api
            from dvc.exceptions import PathMissingError
        except ImportError:  # pragma: no cover - a runtime dependency
            raise DvcCuvisError(f"{path} is tracked by DVC: reading it needs dvc") from None
        try:
            data: bytes = dvc.api.read(path, repo=str(self.root), rev=rev, mode="rb")
            return data
        except Exception as exc:  # dvc raises many kinds; each becomes one clear line
            if isinstance(exc, PathMissingError):  # dvc's wording for "no data" misleads
                reason = "its data is neither in the DVC cache nor on a remote"
            else:
                first = (str(exc).strip().splitlines() or [""])[0]
                reason = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
            raise DvcCuvisError(
                f"{path} is tracked by DVC at revision {where} but cannot be read ({reason}); "
                f"fetch its data (`dvc fetch --rev {rev}` or `dvc pull`) or check the DVC remote"
            ) from None


def _dvc_declares(commit: Any, path: str) -> bool:
    """Whether a ``.dvc`` file or the root ``dvc.lock`` at ``commit`` tracks ``path``
    (itself or a folder above it)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:k]) for k in range(len(parts), 0, -1)]
    if any(_exists(commit, f"{p}.dvc") for p in prefixes):
        return True
    try:
        lock = yaml.safe_load((commit.tree / "dvc.lock").data_stream.read()) or {}
    except (KeyError, yaml.YAMLError):
        return False
    stages = lock.get("stages") if isinstance(lock, dict) else None
    if not isinstance(stages, dict):
        return False
    for stage in stages.values():
        outs = stage.get("outs") if isinstance(stage, dict) else None
        for out in outs if isinstance(outs, list) else []:
            out_path = str(out.get("path", "")) if isinstance(out, dict) else ""
            if out_path and os.path.normpath(out_path) in prefixes:
                return True
    return False


def _exists(commit: Any, path: str) -> bool:
    try:
        commit.tree / path
        return True
    except KeyError:
        return False


# -- one version of a split ---------------------------------------------------------------


@dataclass
class Version:
    """A split and its universe at one revision, resolved."""

    label: str
    universe: Universe
    stages: dict[str, np.ndarray]
    universe_hash_pinned: str | None
    constraints: list[dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)

    def state(self) -> np.ndarray:
        """Per row: the stage code of :func:`~dvc_cuvis.splits.stage_codes` (its tie rule)."""
        return stage_codes(self.stages, len(self.universe))

    def counts(self) -> dict[str, int]:
        """Samples per stage (predict counted as resolved)."""
        return {s: len(self.stages[s]) for s in STAGES}


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
        try:
            loaded = yaml.safe_load(tree.read(rev, params_path)) or {}
            params = loaded if isinstance(loaded, dict) else {}
        except (DvcCuvisError, yaml.YAMLError):
            params = {}
    return Version(label, uni, res.stages, cfg.universe_hash, constraints, params)


def load_pair(
    tree: GitTree, rev_a: str | None, rev_b: str | None, splits_path: str, universe_path: str,
    params_path: str | None = None,
) -> tuple[Version, Version]:
    """Both ends of a comparison (None = workspace); a universe.csv they share is parsed once."""
    parsed: dict[str, Universe] = {}
    return (load_version(tree, rev_a, splits_path, universe_path, params_path, parsed),
            load_version(tree, rev_b, splits_path, universe_path, params_path, parsed))


# -- diff ---------------------------------------------------------------------------------


ALL_NAMES: tuple[str, ...] = (*STATE_NAMES, "new", "removed")
NEW, REMOVED = 4, 5


@dataclass
class SplitDiff:
    """Everything ``dvc-cuvis diff`` reports; changed samples are kept as sorted arrays."""

    a: Version
    b: Version
    sources: list[str]  # union of both ends' source names (sorted)
    src: np.ndarray  # per changed sample: index into ``sources``
    index: np.ndarray  # per changed sample: read index
    frm: np.ndarray  # per changed sample: code into ALL_NAMES
    to: np.ndarray
    transitions: dict[str, int]
    source_transitions: dict[str, int]
    moved: int
    params: list[tuple[str, Any, Any]]
    #: samples present at both ends whose bytes changed (``md5`` or ``annotation_md5``):
    #: positions in ``b``'s universe, sorted, and which digest changed (1 md5, 2 annotation,
    #: 3 both)
    content: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    content_what: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))

    def content_by_stage(self) -> dict[str, int]:
        """Changed-content samples per stage at ``b`` (the stage code's tie rule)."""
        codes = self.b.state()[self.content]
        names = list(STATE_NAMES)
        return {names[c]: int(n) for c, n in zip(*np.unique(codes, return_counts=True),
                                                 strict=True)}

    def content_samples(self, limit: int | None) -> list[dict[str, Any]]:
        """The first ``limit`` changed-content samples: uid, stage at ``b``, what changed."""
        n = len(self.content) if limit is None else min(limit, len(self.content))
        state = self.b.state()
        what = {1: ["md5"], 2: ["annotation_md5"], 3: ["md5", "annotation_md5"]}
        return [{"uid": self.b.universe.uid(p), "stage": STATE_NAMES[state[p]],
                 "changed": what[int(w)]}
                for p, w in zip(self.content[:n].tolist(), self.content_what[:n].tolist(),
                                strict=True)]

    def to_dict(self, *, limit: int | None = 200) -> dict[str, Any]:
        """The ``--json`` object (``moved`` and ``transitions`` always present)."""
        n = len(self.src) if limit is None else min(limit, len(self.src))
        samples = [{"source": self.sources[s], "index": i, "from": ALL_NAMES[f],
                    "to": ALL_NAMES[t]}
                   for s, i, f, t in zip(self.src[:n].tolist(),
                                         [None if i < 0 else i for i in self.index[:n].tolist()],
                                         self.frm[:n].tolist(), self.to[:n].tolist(),
                                         strict=True)]
        return {
            "a": self.a.label,
            "b": self.b.label,
            "moved": self.moved,
            "transitions": self.transitions,
            "source_transitions": self.source_transitions,
            "counts": {"a": self.a.counts(), "b": self.b.counts()},
            "universe": {
                "a": {"samples": len(self.a.universe), "hash": self.a.universe.hash},
                "b": {"samples": len(self.b.universe), "hash": self.b.universe.hash},
                "added": self.transitions_total("new"),
                "removed": self.transitions_total("removed"),
            },
            "changed_samples": samples,
            "changed_samples_total": len(self.src),
            "params": [{"key": k, "a": va, "b": vb} for k, va, vb in self.params],
            "constraints": {"a": self.a.constraints, "b": self.b.constraints},
            "content_changed": {
                "total": len(self.content),
                "by_stage": self.content_by_stage(),
                "samples": self.content_samples(limit),
            },
        }

    def transitions_total(self, name: str) -> int:
        """Samples entering from ``new`` or leaving to ``removed``."""
        return sum(v for k, v in self.transitions.items()
                   if k.startswith(f"{name}->") or k.endswith(f"->{name}"))

    def by_source(self, limit: int | None) -> tuple[list[tuple[str, list[tuple[str, list[str]]]]],
                                                    int]:
        """Changed samples grouped by source then transition (first ``limit`` sources)."""
        if len(self.src) == 0:
            return [], 0
        bounds = np.flatnonzero(np.diff(self.src)) + 1
        starts = np.concatenate(([0], bounds))
        ends = np.concatenate((bounds, [len(self.src)]))
        total = len(starts)
        shown = total if limit is None else min(limit, total)
        out = []
        for lo, hi in zip(starts[:shown].tolist(), ends[:shown].tolist(), strict=True):
            groups: dict[str, list[str]] = {}
            for i, f, t in zip(self.index[lo:hi].tolist(), self.frm[lo:hi].tolist(),
                               self.to[lo:hi].tolist(), strict=True):
                groups.setdefault(f"{ALL_NAMES[f]}->{ALL_NAMES[t]}", []).append(
                    "(whole file)" if i < 0 else str(i))
            out.append((self.sources[int(self.src[lo])], list(groups.items())))
        return out, total


def diff_versions(a: Version, b: Version) -> SplitDiff:
    """Align two resolved versions by uid and count every transition (vectorized)."""
    names = sorted(set(a.universe.source_names) | set(b.universe.source_names))
    rank = {n: i for i, n in enumerate(names)}
    ka = np.asarray([rank[n] for n in a.universe.source_names], dtype=np.int64)[a.universe.codes]
    kb = np.asarray([rank[n] for n in b.universe.source_names], dtype=np.int64)[b.universe.codes]
    # a whole-file sample (no index) is not its source's frame 0: it is index -1 here, so a
    # universe that moves from `x.tif` to `x.tif#0` shows a removal and an addition
    ia_idx, ib_idx = _ref_index(a.universe), _ref_index(b.universe)
    # one integer key per (source, index + 1): sources are ranked in the union of names
    width = int(max(ia_idx.max(initial=0), ib_idx.max(initial=0))) + 2
    if width * max(len(names), 1) < 2**62:
        key_a, key_b = ka * width + ia_idx + 1, kb * width + ib_idx + 1
    else:  # huge read indices: rank the (source, index) pairs instead
        pairs = sorted(set(zip(ka.tolist(), ia_idx.tolist(), strict=True))
                       | set(zip(kb.tolist(), ib_idx.tolist(), strict=True)))
        pos = {p: i for i, p in enumerate(pairs)}
        key_a = np.asarray([pos[p] for p in zip(ka.tolist(), ia_idx.tolist(), strict=True)],
                           dtype=np.int64)
        key_b = np.asarray([pos[p] for p in zip(kb.tolist(), ib_idx.tolist(), strict=True)],
                           dtype=np.int64)
    _, ia, ib = np.intersect1d(key_a, key_b, assume_unique=True, return_indices=True)
    only_a = np.setdiff1d(np.arange(len(key_a)), ia, assume_unique=True)
    only_b = np.setdiff1d(np.arange(len(key_b)), ib, assume_unique=True)
    sa, sb = a.state(), b.state()
    moved_mask = sa[ia] != sb[ib]
    ia_m, ib_m = ia[moved_mask], ib[moved_mask]
    src = np.concatenate([ka[ia_m], kb[only_b], ka[only_a]])
    index = np.concatenate([ia_idx[ia_m], ib_idx[only_b], ia_idx[only_a]])
    frm = np.concatenate([sa[ia_m], np.full(len(only_b), NEW), sa[only_a]]).astype(np.int8)
    to = np.concatenate([sb[ib_m], sb[only_b], np.full(len(only_a), REMOVED)]).astype(np.int8)
    order = np.lexsort((index, src))
    src, index, frm, to = src[order], index[order], frm[order], to[order]
    pair = frm.astype(np.int64) * 6 + to
    codes, counts = np.unique(pair, return_counts=True)
    transitions = {f"{ALL_NAMES[c // 6]}->{ALL_NAMES[c % 6]}": int(n)
                   for c, n in zip(codes.tolist(), counts.tolist(), strict=True)}
    per_source = np.unique(pair * (len(names) + 1) + src)
    src_codes, src_counts = np.unique(per_source // (len(names) + 1), return_counts=True)
    source_transitions = {f"{ALL_NAMES[c // 6]}->{ALL_NAMES[c % 6]}": int(n)
                          for c, n in zip(src_codes.tolist(), src_counts.tolist(), strict=True)}
    content, what = _content_changes(a.universe, b.universe, ia, ib)
    from dvc_cuvis.params import diff_params

    params = []
    for section in TRACKED_PARAMS:
        params.extend(diff_params(section, a.params.get(section), b.params.get(section)))
    return SplitDiff(
        a, b, names, src, index, frm, to,
        transitions=dict(sorted(transitions.items())),
        source_transitions=dict(sorted(source_transitions.items())),
        moved=int(moved_mask.sum()),
        params=params,
        content=content,
        content_what=what,
    )


def _ref_index(uni: Universe) -> np.ndarray:
    """Per row: the read index, or -1 for a whole-file sample (upstream's ``index=None``)."""
    idx = uni.indices.astype(np.int64, copy=True)
    if uni.indexless is not None:
        idx[uni.indexless] = -1
    return idx


def _content_changes(
    ua: Universe, ub: Universe, ia: np.ndarray, ib: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Samples at both ends (rows ``ia`` of ``ua`` = rows ``ib`` of ``ub``) whose digests differ.

    Read from universe.csv's ``md5`` / ``annotation_md5`` columns alone, so a reviewer sees a
    re-labelled or re-processed frame without pulling any data. A column missing at either
    end compares as unknown, not as changed.
    """
    what = np.zeros(len(ib), dtype=np.int8)
    for bit, col in ((1, "md5"), (2, "annotation_md5")):
        ca, cb = ua.raw_column(col), ub.raw_column(col)
        if ca is None or cb is None or len(ca) == 0 or len(cb) == 0:
            continue
        va, vb = ca[ia], cb[ib]
        differ = (va != vb) & (va != b"") & (vb != b"")
        what[differ] |= bit
    changed = np.flatnonzero(what)
    pos = ib[changed]
    order = np.argsort(pos, kind="stable")
    return pos[order].astype(np.int64), what[changed][order]


def _constraint_line(constraints: list[dict[str, Any]]) -> str:
    if not constraints:
        return "none declared"
    return ", ".join(f"{c['kind']} {c['status']}" for c in constraints)


def render_text(d: SplitDiff, *, limit: int | None = 20) -> str:
    """The readable report."""
    a, b = d.a, d.b
    out = [f"split diff {a.label} -> {b.label}"]
    ha, hb = a.universe.hash[:12], b.universe.hash[:12]
    hash_part = f"hash {ha} (unchanged)" if ha == hb else f"hash {ha} -> {hb}"
    out.append(f"universe: {len(a.universe)} -> {len(b.universe)} samples "
               f"(+{d.transitions_total('new')} new, -{d.transitions_total('removed')} removed); "
               + hash_part)
    out.append(f"{'stage':<10}{'before':>9}{'after':>9}{'delta':>9}")
    ca, cb = a.counts(), b.counts()
    for s in STAGES:
        out.append(f"{s:<10}{ca[s]:>9}{cb[s]:>9}{cb[s] - ca[s]:>+9}")
    out.append(f"moved: {d.moved} sample(s) present at both ends changed stage")
    if d.transitions:
        out.append("transitions (samples / sources):")
        for k, v in d.transitions.items():
            out.append(f"  {k:<22}{v:>8} / {d.source_transitions.get(k, 0)}")
    out.extend(_change_lines(d, limit))
    out.extend(_content_lines(d, limit))
    if d.params:
        out.append("params:")
        out.extend(f"  {k}: {va!r} -> {vb!r}" for k, va, vb in d.params)
    out.append(f"constraints before: {_constraint_line(a.constraints)}")
    out.append(f"constraints after:  {_constraint_line(b.constraints)}")
    return "\n".join(out) + "\n"


def _content_lines(d: SplitDiff, limit: int | None) -> list[str]:
    if not len(d.content):
        return []
    stages = ", ".join(f"{k} {v}" for k, v in d.content_by_stage().items())
    out = [f"content changed: {len(d.content)} sample(s) present at both ends have new bytes "
           f"({stages})"]
    shown = d.content_samples(limit)
    out += [f"  {c['uid']} [{c['stage']}]: {', '.join(c['changed'])}" for c in shown]
    if len(shown) < len(d.content):
        out.append(f"  ... {len(d.content) - len(shown)} more (use --all)")
    return out


def _change_lines(d: SplitDiff, limit: int | None) -> list[str]:
    groups, total = d.by_source(limit)
    if not groups:
        return []
    out = ["changed samples by source:"]
    for src, items in groups:
        parts = []
        for k, idx in items:
            cut = idx if limit is None else idx[:limit]
            more = f" (+{len(idx) - len(cut)})" if len(cut) < len(idx) else ""
            parts.append(f"{k} #{', #'.join(cut)}{more}")
        out.append(f"  {src}: " + "; ".join(parts))
    if len(groups) < total:
        out.append(f"  ... {total - len(groups)} more source(s) (use --all)")
    return out


def render_markdown(d: SplitDiff, *, limit: int | None = 20) -> str:
    """A pull-request comment."""
    a, b = d.a, d.b
    lines = [f"### Split diff `{a.label}` → `{b.label}`", ""]
    ha, hb = a.universe.hash[:12], b.universe.hash[:12]
    lines.append(f"Universe: **{len(a.universe)} → {len(b.universe)}** samples "
                 f"(+{d.transitions_total('new')} new, −{d.transitions_total('removed')} "
                 f"removed), hash `{ha}`" + ("" if ha == hb else f" → `{hb}`") + ". "
                 f"**{d.moved}** sample(s) moved between stages.")
    lines += ["", "| stage | before | after | Δ |", "|---|---:|---:|---:|"]
    ca, cb = a.counts(), b.counts()
    for s in STAGES:
        lines.append(f"| {s} | {ca[s]} | {cb[s]} | {cb[s] - ca[s]:+d} |")
    if d.transitions:
        lines += ["", "| transition | samples | sources |", "|---|---:|---:|"]
        for k, v in d.transitions.items():
            lines.append(f"| {k.replace('->', ' → ')} | {v} | {d.source_transitions.get(k, 0)} |")
    changes = _change_lines(d, limit)
    if changes:
        lines += ["", "<details><summary>Changed samples by source</summary>", "", "```"]
        lines += [c.strip() for c in changes[1:]]
        lines += ["```", "", "</details>"]
    content = _content_lines(d, limit)
    if content:
        lines += ["", f"**Content changed:** {content[0].split(': ', 1)[1]}", "",
                  "<details><summary>Samples with new bytes</summary>", "", "```"]
        lines += [c.strip() for c in content[1:]]
        lines += ["```", "", "</details>"]
    if d.params:
        lines += ["", "| param | before | after |", "|---|---|---|"]
        lines += [f"| `{k}` | `{va!r}` | `{vb!r}` |" for k, va, vb in d.params]
    lines += ["", f"Constraints before: {_constraint_line(a.constraints)}  ",
              f"Constraints after: {_constraint_line(b.constraints)}"]
    return "\n".join(lines) + "\n"


# -- log ----------------------------------------------------------------------------------


@dataclass
class LogEntry:
    """One commit that changed the split."""

    sha: str
    date: str
    author: str
    subject: str
    counts: dict[str, int]
    universe_hash: str
    moved: int | None
    added: int | None
    removed: int | None
    content: int | None = None


def split_log(
    tree: GitTree, splits_path: str, universe_path: str, *, rev: str = "HEAD",
    max_count: int | None = None,
) -> Iterator[LogEntry]:
    """Commits (newest first) that changed ``splits_path``, each compared with its predecessor."""
    tree.commit(rev)
    # a re-processed frame changes universe.csv's md5 column but not the split: list both
    commits = list(tree.repo.iter_commits(rev, paths=[splits_path, universe_path]))
    if not commits:
        raise DvcCuvisError(f"no commit in {rev} touches {splits_path}")
    cache: dict[tuple[str, str], Version] = {}
    parsed: dict[str, Universe] = {}

    def version(commit: Any) -> Version | None:
        try:
            split_sha = (commit.tree / splits_path).hexsha
            uni_sha = (commit.tree / universe_path).hexsha
        except KeyError:
            return None  # the split was deleted in this commit, or has no universe yet
        key = (split_sha, uni_sha)
        if key not in cache:
            cache[key] = load_version(tree, commit.hexsha, splits_path, universe_path, None,
                                      parsed)
        return cache[key]

    chosen = commits if max_count is None else commits[: max_count + 1]
    versions = [version(c) for c in chosen]
    for k, commit in enumerate(chosen[: max_count or len(chosen)]):
        v = versions[k]
        if v is None:
            continue
        prev = versions[k + 1] if k + 1 < len(versions) else None
        moved = added = removed = content = None
        if prev is not None:
            d = diff_versions(prev, v)
            moved, added, removed = (d.moved, d.transitions_total("new"),
                                     d.transitions_total("removed"))
            content = len(d.content)
        when = datetime.fromtimestamp(commit.committed_date, tz=UTC).strftime("%Y-%m-%d")
        yield LogEntry(commit.hexsha[:8], when, str(commit.author.name),
                       commit.summary if isinstance(commit.summary, str) else str(commit.summary),
                       v.counts(), v.universe.hash[:12], moved, added, removed, content)
