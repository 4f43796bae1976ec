"""The per-sample comparison of two split versions: which samples moved between stages, came,
went or changed content.

Two versions of a split are aligned by ``uid`` (source and read index) and every transition is
counted.  ``diff`` and ``log`` show it for a code review, the report draws it, and lineage
uses it to tell whether a model's data is still the data in the repository.  It reads no git
and no file: a :class:`Version` is already a split resolved against its universe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dvc_cuvis.errors import UniverseError
from dvc_cuvis.model.resolution import stage_codes
from dvc_cuvis.model.splits import STAGE_CODE_NAMES, STAGES
from dvc_cuvis.model.universe import Universe

#: A sample's state: its stage code (:func:`~dvc_cuvis.model.resolution.stage_codes`).
STATE_NAMES: tuple[str, ...] = STAGE_CODE_NAMES
#: params.yaml sections whose changes a comparison lists.
TRACKED_PARAMS: tuple[str, ...] = ("enumerate", "bake", "materialize")



@dataclass
class Version:
    """A split and its universe at one revision, resolved."""

    label: str
    universe: Universe
    stages: dict[str, np.ndarray]
    universe_hash_pinned: str | None
    constraints: list[dict[str, object]]
    params: dict[str, Any] = field(default_factory=dict)
    #: category id -> name at this revision (empty when no name map is known)
    categories: dict[int, str] = field(default_factory=dict)

    def category_counts(self) -> dict[str, dict[int, int]]:
        """Per stage: samples carrying each category id (a sample counts once per id)."""
        if not self.universe.has_column("category_ids"):
            return {}
        try:
            parsed, inverse = self.universe.category_table
        except UniverseError:  # a malformed cell: the counts are left out, the diff stands
            return {}
        out: dict[str, dict[int, int]] = {}
        for s in STAGES:
            if s not in self.stages:  # a version built from the exclusive stages alone
                continue
            cells = np.bincount(inverse[self.stages[s]], minlength=len(parsed))
            counts: dict[int, int] = {}
            for cell, n in zip(parsed, cells.tolist(), strict=True):
                for cid in cell:
                    counts[cid] = counts.get(cid, 0) + n
            out[s] = {cid: n for cid, n in sorted(counts.items()) if n}
        return out

    def state(self) -> np.ndarray:
        """Per row: the stage code of :func:`~dvc_cuvis.model.resolution.stage_codes` (tie rule)."""
        return stage_codes(self.stages, len(self.universe))

    def counts(self) -> dict[str, int]:
        """Samples per stage (predict counted as resolved)."""
        return {s: len(self.stages[s]) for s in STAGES}


def recording_of(source: str) -> str:
    """The recording a source belongs to: an npz frame's folder (one folder per recording),
    else the source itself (a cu3s session is one file)."""
    head, sep, _ = source.rpartition("/")
    return head if sep and source.endswith(".npz") else source


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
    params: list[tuple[str, object, object]]
    #: samples present at both ends whose bytes changed (``md5`` or ``annotation_md5``):
    #: positions in ``b``'s universe, sorted, and which digest changed (1 md5, 2 annotation,
    #: 3 both)
    content: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    content_what: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    #: ``(id, name before, name after)`` for each category id named at both ends, differently
    category_renames: list[tuple[int, str, str]] = field(default_factory=list)
    #: ``(stage, id, before, after)`` for each per-stage per-category count that changed
    category_counts: list[tuple[str, int, int, int]] = field(default_factory=list)

    def category_name(self, cid: int) -> str:
        """The name of ``cid`` (the newer end's first), or ``#id`` when neither end names it."""
        return self.b.categories.get(cid) or self.a.categories.get(cid) or f"#{cid}"

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

    def to_dict(self, *, limit: int | None = 200) -> dict[str, object]:
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
            "categories": {
                "renamed": [{"id": i, "a": na, "b": nb} for i, na, nb in self.category_renames],
                "counts": [{"stage": s, "id": i, "name": self.category_name(i), "a": ca,
                            "b": cb} for s, i, ca, cb in self.category_counts],
            },
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
    from dvc_cuvis.config.params import diff_params

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
        category_renames=[(cid, a.categories[cid], b.categories[cid])
                          for cid in sorted(set(a.categories) & set(b.categories))
                          if a.categories[cid] != b.categories[cid]],
        category_counts=_category_count_changes(a, b),
    )


def _category_count_changes(a: Version, b: Version) -> list[tuple[str, int, int, int]]:
    """Per stage and category id: the sample counts at both ends, where they differ."""
    ca, cb = a.category_counts(), b.category_counts()
    out: list[tuple[str, int, int, int]] = []
    for s in STAGES:
        before, after = ca.get(s, {}), cb.get(s, {})
        out.extend((s, cid, before.get(cid, 0), after.get(cid, 0))
                   for cid in sorted(set(before) | set(after))
                   if before.get(cid, 0) != after.get(cid, 0))
    return out


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
