"""Selector resolution with cuvis-ai-core's exact semantics, but indexed.

The reference resolver (``cuvis_ai_core.data.selectors.resolve_selectors``) scans the
whole universe once per selector.  A baked split carries one ``file_indices`` selector
per source and stage, so that is O(selectors x universe), which grows too slow for a large split.
Here the universe is already in canonical order with sources dictionary-encoded, so a
``file_indices`` selector is a dictionary lookup plus a binary search inside one
contiguous block of rows, and a whole stage costs O(universe + ids).

What is identical to upstream, and tested differentially against it:

* a stage is its selectors unioned in order, first occurrence wins (identity = uid,
  which is one-to-one with a universe position);
* matches of one selector come in universe order, except ``dir_indices`` (requested order);
* a top-level selector matching nothing raises; set-operation operands may be empty;
* ``dir_indices`` positions are bounds-checked against the universe size;
* ids accept ints and inclusive ``"a-b[:step]"`` ranges, with upstream's error order;
* ``files`` / ``file_indices`` compare paths normalized (``\\`` -> ``/``, ``normpath``,
  casefold only for Windows-looking paths) while identities stay untouched;
* ``glob`` matches the stem or the source; ``tag`` / ``categories`` match any listed name;
* a partial match (some requested ids or sources missing) is reported, not fatal.

Errors are :class:`~dvc_cuvis.errors.SelectorError` (a ``ValueError``) and name the stage,
the selector's position and what to change.
"""

from __future__ import annotations

import fnmatch
import functools
import itertools
import logging
import posixpath
import re
from array import array
from collections.abc import Hashable, Iterable, Iterator, Sequence, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from dvc_cuvis import limits
from dvc_cuvis.config.options import closest, did_you_mean
from dvc_cuvis.errors import SelectorError, and_more
from dvc_cuvis.model.ids import parse_id_range

if TYPE_CHECKING:
    from cuvis_ai_schemas.training.data import DataSplitConfig, Selector

    from dvc_cuvis.model.universe import Universe

logger = logging.getLogger(__name__)

Positions = npt.NDArray[np.int64]

_WINDOWS_RE = re.compile(r"[A-Za-z]:[/\\]")

#: Kinds whose meaning depends on the universe's current content or order.
LIVE_KINDS = frozenset({"dir_indices", "stems", "glob", "tag", "categories", "all"})
#: Kinds that name samples by identity (what a baked split holds).
CONCRETE_KINDS = frozenset({"file_indices", "files"})


@dataclass(frozen=True)
class PartialMatch:
    """A selector that matched some, but not all, of the ids or sources it names."""

    where: str
    kind: str
    source: str | None
    requested: int
    missing: tuple[Any, ...]

    def message(self) -> str:
        """One readable line (the missing list truncated to 10 entries)."""
        of = f" of {self.source!r}" if self.source else ""
        shown = ", ".join(str(m) for m in self.missing[:10])
        more = and_more(len(self.missing), 10)
        noun, plural = (("index", "indices") if self.kind == "file_indices"
                        else ("source", "sources"))
        return (
            f"{self.where}: selector '{self.kind}'{of} matched "
            f"{self.requested - len(self.missing)} of {self.requested} requested "
            f"{noun if self.requested == 1 else plural}; missing: {shown}{more}"
        )


def norm_source(path: str) -> str:
    """Normalize a source path for comparison only (never for identity), as upstream does."""
    if (path and "\\" not in path and "//" not in path and "/." not in path
            and not path.startswith(".") and not path.endswith("/")
            and not _WINDOWS_RE.match(path)):
        return path  # already what posixpath.normpath would return (the common case)
    windowsish = bool(_WINDOWS_RE.match(path)) or "\\" in path
    normalized = posixpath.normpath(path.replace("\\", "/"))
    return normalized.casefold() if windowsish else normalized


def norm_sources(paths: Sequence[str]) -> list[str]:
    """:func:`norm_source` of every path (a new list)."""
    return [norm_source(p) for p in paths]


#: Ids at or above this cannot be positions or read indices; they are kept aside as
#: Python ints so they still count as requested-but-missing, exactly as upstream sees them.
_HUGE = 2**62

def _id_runs(text: str) -> tuple[range, range] | None:
    """The range ``text`` names split at 2**62: (read positions, larger ids), or None."""
    expanded = parse_id_range(text)
    if expanded is None:
        return None
    below = range(expanded.start, min(expanded.stop, _HUGE), expanded.step)
    return below, expanded[len(below):]


#: A baked split repeats the same few range texts ("0-99", "3-5") over thousands of
#: selectors: each is parsed once.  Errors are raised again each time (never cached).
_cached_id_runs = functools.lru_cache(maxsize=1 << 16)(_id_runs)


def split_ids(
    ids: Sequence[int | str], *, kind: str = "file_indices"
) -> tuple[Positions, list[int]]:
    """Expand ints and inclusive ``"a-b[:step]"`` ranges: (ids < 2**62 in order, larger ids).

    Errors come in upstream's order: every range is checked first, then the other items
    (the first bad item is remembered and raised after the last range).  The ids stream
    into one int64 buffer, from a baked split's short runs to a ten-million-id range alike
    (8 bytes an id, never a Python list of them).
    """
    buf = array("q")
    huge: list[int] = []
    problems: list[str] = []
    for item in ids:
        runs = _cached_id_runs(item) if isinstance(item, str) else None
        if runs is not None:
            buf.extend(runs[0])
            huge.extend(runs[1])
        elif not isinstance(item, int):
            problems.append(f"selector '{kind}' ids must be ints or 'a-b' ranges, got {item!r}")
        elif item < 0:
            problems.append(f"selector '{kind}' index {item} must be >= 0")
        elif item < _HUGE:
            buf.append(item)
        else:
            huge.append(int(item))  # a plain int, as upstream reports it
    if problems:
        raise SelectorError(problems[0])
    return np.frombuffer(buf, dtype=np.int64), huge


def count_ids(ids: Sequence[int | str]) -> int:
    """How many ids ``ids`` asks for, ranges counted without expanding them (so a budget is
    checked before anything is allocated); range errors are raised as :func:`split_ids`
    raises them, other bad items count one and are left to it."""
    total = 0
    for item in ids:
        runs = _cached_id_runs(item) if isinstance(item, str) else None
        total += 1 if runs is None else len(runs[0]) + len(runs[1])
    return total


def expand_ids(ids: Sequence[int | str], *, kind: str = "file_indices") -> Positions:
    """Expanded ids as an int64 array (ids beyond 2**62 are an error here)."""
    small, huge = split_ids(ids, kind=kind)
    if huge:
        raise SelectorError(f"selector '{kind}' id {huge[0]} is too large to be a read position")
    return small


def walk(cfg: DataSplitConfig) -> Iterator[Selector]:
    """Every selector of ``cfg``, set-operation operands included, in file order.

    Stages in file order (train, val, test, predict), each selector before its operands
    (depth first, without recursion: nesting depth is the file's business, not Python's).
    The one walker of the selector tree: kinds, tokens and attribute needs all use it.
    """
    stack: list[Selector] = [s for stage in (cfg.predict, cfg.test, cfg.val, cfg.train)
                             for s in reversed(stage)]
    while stack:
        sel = stack.pop()
        yield sel
        stack.extend(reversed(sel.of))


def required_attrs(splits: DataSplitConfig) -> frozenset[str]:
    """Sample attributes the selectors need (``tags`` for tag, ``category_ids`` for categories)."""
    kinds = {sel.kind.value for sel in walk(splits)}
    return frozenset(attr for kind, attr in (("tag", "tags"), ("categories", "category_ids"))
                     if kind in kinds)


def describe(sel: Selector) -> str:
    """Short human description of a selector, for messages."""
    k = sel.kind.value
    if k == "file_indices":
        return f"file_indices(source={sel.source!r})"
    if k == "files":
        shown = ", ".join(repr(p) for p in sel.paths[:3])
        return f"files({shown}{', ...' if len(sel.paths) > 3 else ''})"
    if k == "glob":
        return f"glob({sel.pattern!r})"
    if k in ("tag", "categories"):
        return f"{k}({', '.join(sel.any_of)})"
    if k == "stems":
        return f"stems({', '.join(sel.stems[:3])}{', ...' if len(sel.stems) > 3 else ''})"
    return k


_K = TypeVar("_K", bound=Hashable)


def _positions_of(values: Iterable[Iterable[_K]]) -> dict[_K, list[int]]:
    """Each value's positions, ascending; the ``p``-th item lists the values ``p`` holds.

    The one inverted index of the resolver: source codes by name or stem (several sources
    may share a stem or a Windows spelling) and rows by tag or category id.
    """
    out: dict[_K, list[int]] = {}
    for pos, vals in enumerate(values):
        for v in vals:
            out.setdefault(v, []).append(pos)
    return out


_NONE = np.zeros(0, dtype=np.int64)


@dataclass
class Resolver:
    """Resolves selectors against one universe; indexes are built once, on first need."""

    universe: Universe
    name_to_id: dict[str, int] | None = None
    warnings: list[PartialMatch] = field(default_factory=list)
    #: ids the selectors' ranges may expand to, all selectors of this resolver together
    #: (``limits.max_samples``): a small splits.json must not make it allocate gigabytes
    id_budget: int = field(default_factory=lambda: limits.current().max_samples)
    ids_spent: int = 0

    def resolve(self, selectors: Sequence[Selector], *, stage: str = "stage") -> Positions:
        """Positions selected by a stage's selector list (union in order, first wins)."""
        parts = [_NONE]
        for i, sel in enumerate(selectors):
            where = f"{stage}[{i}]"
            got = self.select(sel, where)
            if len(got) == 0:
                raise SelectorError(self._zero_match_message(sel, where))
            parts.append(got)
        return dedup_first(np.concatenate(parts))

    # -- indexes ----------------------------------------------------------------------

    @functools.cached_property
    def _by_source(self) -> dict[str, list[int]]:
        """Source codes by normalized source name."""
        return _positions_of((n,) for n in norm_sources(self.universe.source_names))

    @functools.cached_property
    def _by_stem(self) -> dict[str, list[int]]:
        """Source codes by file stem."""
        return _positions_of((s,) for s in self.universe.stems)

    @functools.cached_property
    def _by_tag(self) -> dict[str, list[int]]:
        """Rows by tag."""
        return _positions_of(self.universe.tags)

    @functools.cached_property
    def _by_category(self) -> dict[int, list[int]]:
        """Rows by category id."""
        return _positions_of(self.universe.category_ids)

    @staticmethod
    def _codes(index: dict[str, list[int]], values: Iterable[str]) -> tuple[list[int], set[str]]:
        """Codes of every source matching one of ``values``, and the values that matched."""
        found = set(values) & index.keys()
        return [c for v in found for c in index[v]], found

    def _blocks(self, codes: Sequence[int]) -> Positions:
        """The rows of the given sources, in universe order."""
        off = self.universe.offsets
        picked = np.unique(np.asarray(codes, dtype=np.int64))
        starts = off[picked]
        lengths = off[picked + 1] - starts
        # start of each block, repeated over its rows, plus the row's rank inside the block
        ends = np.cumsum(lengths)
        return np.repeat(starts - (ends - lengths), lengths) + np.arange(lengths.sum())

    @staticmethod
    def _rows_with(index: dict[_K, list[int]], wanted: set[_K]) -> Positions:
        """The rows holding any of the ``wanted`` values, ascending."""
        hits = itertools.chain.from_iterable(index[w] for w in wanted if w in index)
        return np.unique(np.fromiter(hits, dtype=np.int64))

    def _split_ids(self, sel: Selector, where: str) -> tuple[Positions, list[int]]:
        """:func:`split_ids` of ``sel``, once its ids are counted against :attr:`id_budget`."""
        asked = count_ids(sel.ids)
        if self.ids_spent + asked > self.id_budget:
            env = limits.Limits.env_name("max_samples")
            raise SelectorError(
                f"{where}: selector '{sel.kind.value}' asks for {asked:,} ids, beyond the "
                f"{self.id_budget:,} that one split's selectors may name together ("
                f"{self.ids_spent:,} before it); name fewer ids (a range per run of real "
                f"frames), or if the split is genuine raise {env}=<n> (docs/robustness.md)")
        self.ids_spent += asked
        return split_ids(sel.ids, kind=sel.kind.value)

    # -- one selector -----------------------------------------------------------------

    def select(self, sel: Selector, where: str = "selector") -> Positions:
        """Positions matched by one selector (no zero-match check: that is the stage's job)."""
        kind = sel.kind.value
        uni = self.universe
        if kind == "all":
            return np.arange(len(uni))
        if kind == "file_indices":
            return self._file_indices(sel, where)
        if kind == "files":
            wanted = set(norm_sources(sel.paths))
            codes, found = self._codes(self._by_source, wanted)
            if found and len(found) < len(wanted):
                self._partial(sel, where, sorted(wanted), found)
            return self._blocks(codes)
        if kind == "dir_indices":
            positions, huge = self._split_ids(sel, where)
            size = len(uni)
            beyond = positions >= size
            n_bad = int(np.count_nonzero(beyond)) + len(huge)
            if n_bad:  # only the first few become Python ints, for the message
                shown = (positions[beyond][:10].tolist() + huge[:10])[:10]
                raise SelectorError(
                    f"{where}: dir_indices positions {shown}{and_more(n_bad, len(shown))} "
                    "out of range "
                    f"(universe size {size}); positions count rows of the canonical universe "
                    "— regenerate the split (`dvc-cuvis bake --rule`) after the data changed"
                )
            return dedup_first(positions)
        if kind == "stems":
            return self._blocks(self._codes(self._by_stem, sel.stems)[0])
        if kind == "glob":
            pat = sel.pattern or ""
            names, stems = uni.source_names, uni.stems
            codes = [
                c for c in range(len(names))
                if fnmatch.fnmatch(stems[c], pat) or fnmatch.fnmatch(names[c], pat)
            ]
            return self._blocks(codes)
        if kind == "tag":
            return self._rows_with(self._by_tag, set(sel.any_of))
        if kind == "categories":
            return self._rows_with(self._by_category, set(self._category_ids(sel, where)))
        return self._setop(sel, where)  # union, except, intersect: the schema admits no other

    def _file_indices(self, sel: Selector, where: str) -> Positions:
        uni = self.universe
        wanted, huge = self._split_ids(sel, where)
        if not np.all(wanted[1:] > wanted[:-1]):  # baked ids are already sorted and unique
            wanted = np.unique(wanted)
        codes = self._by_source.get(norm_source(sel.source or ""), [])
        off, indices = uni.offsets, uni.indices
        if uni.indexless is not None:  # a whole-file sample has no index to match (as upstream)
            codes = [c for c in codes if not uni.indexless[off[c]]]
        if len(codes) == 1 and not huge and len(wanted):
            lo, hi = int(off[codes[0]]), int(off[codes[0] + 1])
            if (indices[hi - 1] - indices[lo] == hi - lo - 1 and indices[lo] <= wanted[0]
                    and wanted[-1] <= indices[hi - 1]):
                # a dense block holding every id (a session's frames 0..n-1): no search
                return lo - indices[lo] + wanted
        parts = [_NONE]
        found = np.zeros(len(wanted), dtype=bool)
        for c in codes:  # codes are ascending: blocks come out in universe order
            lo, hi = int(off[c]), int(off[c + 1])
            block = indices[lo:hi]
            at = np.searchsorted(block, wanted)
            hit = at < len(block)
            hit[hit] = block[at[hit]] == wanted[hit]
            parts.append(lo + at[hit])
            found |= hit
        if found.any() and not (found.all() and not huge):
            beyond = sorted(set(huge))  # the missing ids as ints, from the array (no set of all)
            missing = tuple(wanted[~found].tolist() + beyond)
            pm = PartialMatch(where, "file_indices", sel.source, len(wanted) + len(beyond),
                              missing)
            self.warnings.append(pm)
            logger.warning(pm.message())
        return np.concatenate(parts)

    def _category_ids(self, sel: Selector, where: str) -> list[int]:
        if self.name_to_id is None:
            raise SelectorError(
                f"{where}: a 'categories' selector needs a category name->id map, but none was "
                "given (pass --categories with a COCO json or the enumerate metrics)"
            )
        out: list[int] = []
        for name in sel.any_of:
            if name not in self.name_to_id:
                raise SelectorError(
                    f"{where}: category {name!r} not in dataset categories "
                    f"{sorted(self.name_to_id)}"
                )
            out.append(self.name_to_id[name])
        return out

    def _setop(self, sel: Selector, where: str) -> Positions:
        kind = sel.kind.value
        parts = [self.select(child, f"{where}.of[{j}]") for j, child in enumerate(sel.of)]
        if kind == "union":  # the schema refuses a set operation without operands
            return dedup_first(np.concatenate(parts))
        kept = parts[0]
        for part in parts[1:]:
            inside = np.zeros(len(self.universe), dtype=bool)
            inside[part] = True
            hit = inside[kept]
            kept = kept[~hit] if kind == "except" else kept[hit]
        return kept

    # -- reporting --------------------------------------------------------------------

    def _partial(self, sel: Selector, where: str, requested: Sequence[object],
                 matched: Set[object]) -> None:
        missing = tuple(x for x in requested if x not in matched)
        pm = PartialMatch(where, sel.kind.value, sel.source, len(requested), missing)
        self.warnings.append(pm)
        logger.warning(pm.message())

    def _zero_match_message(self, sel: Selector, where: str) -> str:
        msg = f"{where}: selector {describe(sel)} matched 0 samples"
        # only file_indices names a source; only files lists paths
        asked = [sel.source] if sel.source is not None else list(sel.paths)
        unknown = [a for a in asked if norm_source(a) not in self._by_source]
        if unknown:
            hint = did_you_mean(closest(unknown[0], self.universe.source_names, cutoff=0.6))
            msg += f" — source {unknown[0]!r} is not in the universe{hint}"
        elif sel.kind.value == "file_indices":
            msg += " — none of its ids exist in that source"
        return msg + " (a selector must match at least one sample; fix or remove it)"


def dedup_first(arr: Positions) -> Positions:
    """Drop repeated positions, keeping each first occurrence in place (a new array)."""
    _, first = np.unique(arr, return_index=True)
    return arr[np.sort(first)]


def resolve_selectors(
    selectors: Sequence[Selector],
    universe: Universe,
    *,
    name_to_id: dict[str, int] | None = None,
    stage: str = "stage",
) -> Positions:
    """Resolve one stage's selectors to universe positions (see :class:`Resolver`)."""
    return Resolver(universe, name_to_id).resolve(selectors, stage=stage)

