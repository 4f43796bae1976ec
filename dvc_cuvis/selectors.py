"""Selector resolution with cuvis-ai-core's exact semantics, but indexed.

The reference resolver (``cuvis_ai_core.data.selectors.resolve_selectors``) scans the
whole universe once per selector.  A baked split carries one ``file_indices`` selector
per source and stage, so that is O(selectors x universe): 24 s for a 50k-sample split.
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

import difflib
import fnmatch
import logging
import posixpath
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dvc_cuvis.errors import SelectorError

if TYPE_CHECKING:
    from cuvis_ai_schemas.training.data import DataSplitConfig, Selector

    from dvc_cuvis.universe import Universe

logger = logging.getLogger(__name__)

Positions = npt.NDArray[np.int64]

#: Upstream's range grammar (note: ``\d`` is Unicode-aware there, so it is here too).
_RANGE_RE = re.compile(r"^(\d+)-(\d+)(?::(\d+))?$")
_WINDOWS_RE = re.compile(r"[A-Za-z]:[/\\]")

#: Kinds whose meaning depends on the universe's current content or order.
LIVE_KINDS = frozenset({"dir_indices", "stems", "glob", "tag", "categories", "all"})
#: Kinds that name samples by identity (what a baked split holds).
CONCRETE_KINDS = frozenset({"file_indices", "files"})
#: Set-algebra kinds.
SET_KINDS = frozenset({"union", "except", "intersect"})


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
        more = f" (+{len(self.missing) - 10} more)" if len(self.missing) > 10 else ""
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


_WINDOWS_START = re.compile(r"(?:^|\n)[A-Za-z]:/")


def norm_sources(paths: Sequence[str]) -> list[str]:
    """:func:`norm_source` of every path; one scan of the joined text finds the common case.

    A baked split lists every source once, so this runs over 100k paths per check: when
    no path holds anything normalization would change, the list is returned as it is.
    """
    blob = "\n".join(paths)
    if (all(paths) and not blob.startswith(".") and not blob.endswith("/")
            and not any(t in blob for t in ("\\", "//", "/.", "\n.", "/\n"))
            and not (":/" in blob and _WINDOWS_START.search(blob))):
        return list(paths)
    return [norm_source(p) for p in paths]


#: Ids at or above this cannot be positions or read indices; they are kept aside as
#: Python ints so they still count as requested-but-missing, exactly as upstream sees them.
_HUGE = 2**62

#: The most ids one ``a-b[:step]`` range may expand to, in a selector's ``ids`` and in a
#: universe.csv ``index`` cell alike (:func:`parse_id_range`, the one home of the grammar).
#:
#: Why 10 million: a range costs memory in proportion to its length, not to the text that
#: asks for it, so a ten-character cell must not be able to demand gigabytes.  In a
#: universe.csv every id becomes a row that carries copies of all the row's other cells (a
#: 10M-id cell is about 1 GB of rows with typical columns; 10**8 would be 10 GB on a 24 GiB
#: machine); in a selector the ids are an int64 array (80 MB at 10M).  Ten times the
#: largest universe the benchmarks target (1M rows) leaves ample room for any real split,
#: and a longer run is written as several ranges.
MAX_RANGE_IDS = 10_000_000


def parse_id_range(text: str) -> range | None:
    """The inclusive ``"a-b[:step]"`` id range ``text`` names, or None if it is no range.

    Upstream's grammar (``cuvis_ai_core.utils.general.expand_range_selectors``, which its
    universe reader uses too): blanks around the text are ignored, ``\\d`` is
    Unicode-aware.  Used by :func:`split_ids` and by the universe.csv reader's ``index``
    cells, with one limit, :data:`MAX_RANGE_IDS`.

    Raises
    ------
    SelectorError
        ``step`` is 0, ``start > stop``, or the range holds more than
        :data:`MAX_RANGE_IDS` ids (upstream's messages for the first two).
    """
    m = _RANGE_RE.match(text.strip())
    if m is None:
        return None
    start, stop = int(m.group(1)), int(m.group(2))
    step = int(m.group(3)) if m.group(3) is not None else 1
    if step <= 0:
        raise SelectorError(f"range selector {text!r}: step must be > 0")
    if start > stop:
        raise SelectorError(f"range selector {text!r}: start {start} must be <= stop {stop}")
    expanded = range(start, stop + 1, step)
    if len(expanded) > MAX_RANGE_IDS:
        raise SelectorError(f"range selector {text!r} expands to {len(expanded)} ids (at most "
                            f"{MAX_RANGE_IDS:,}); split it up")
    return expanded


def split_ids(
    ids: Sequence[int | str], *, kind: str = "file_indices"
) -> tuple[Positions, list[int]]:
    """Expand ints and inclusive ``"a-b[:step]"`` ranges: (ids < 2**62 in order, larger ids).

    Errors come in upstream's order: every range is checked first, then the other items.
    """
    if all(type(i) is int and 0 <= i < _HUGE for i in ids):  # the common baked form
        return np.asarray(ids, dtype=np.int64), []
    fast = _fast_ids(ids)
    if fast is not None:
        return fast, []
    segments: list[range | int | str] = []
    for item in ids:
        expanded = parse_id_range(item) if isinstance(item, str) else None
        segments.append(item if expanded is None else expanded)
    pieces: list[Positions] = []
    plain: list[int] = []
    huge: list[int] = []
    for seg in segments:
        if isinstance(seg, range):
            if len(seg) <= 4096 and seg.stop <= _HUGE:
                plain.extend(seg)  # short runs (the baked form): no per-range numpy array
            elif seg.stop <= 2**53:  # exact in numpy's float64 length computation
                pieces.append(np.asarray(plain, dtype=np.int64))
                plain = []
                pieces.append(np.arange(seg.start, seg.stop, seg.step, dtype=np.int64))
            else:
                for v in seg:
                    (plain if v < _HUGE else huge).append(v)
        elif not isinstance(seg, int):
            raise SelectorError(f"selector '{kind}' ids must be ints or 'a-b' ranges, got {seg!r}")
        elif seg < 0:
            raise SelectorError(f"selector '{kind}' index {seg} must be >= 0")
        else:
            (plain if seg < _HUGE else huge).append(int(seg))
    pieces.append(np.asarray(plain, dtype=np.int64))
    return (pieces[0] if len(pieces) == 1 else np.concatenate(pieces)), huge


def _fast_ids(ids: Sequence[int | str]) -> Positions | None:
    """One pass over valid ints and short ranges (baked files); None means "take the slow,
    exactly-upstream path" (an error to report in upstream's order, or a huge range)."""
    plain: list[int] = []
    for item in ids:
        if type(item) is int:
            if not 0 <= item < _HUGE:
                return None
            plain.append(item)
            continue
        if not isinstance(item, str):
            return None
        # "a-b" exactly as _RANGE_RE reads it (\d is isdecimal); a step or anything else
        # takes the slow path
        a, dash, b = item.strip().partition("-")
        if not (dash and a.isdecimal() and b.isdecimal()):
            return None
        start, stop = int(a), int(b)
        if start > stop or stop - start > 4096 or stop >= _HUGE:
            return None
        plain.extend(range(start, stop + 1))
    return np.asarray(plain, dtype=np.int64)


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


@dataclass
class Resolver:
    """Resolves selectors against one universe; indexes are built once, on first need."""

    universe: Universe
    name_to_id: dict[str, int] | None = None
    warnings: list[PartialMatch] = field(default_factory=list)

    def resolve(self, selectors: Sequence[Selector], *, stage: str = "stage") -> Positions:
        """Positions selected by a stage's selector list (union in order, first wins)."""
        parts: list[Positions] = []
        for i, sel in enumerate(selectors):
            where = f"{stage}[{i}]"
            got = self.select(sel, where)
            if len(got) == 0:
                raise SelectorError(self._zero_match_message(sel, where))
            parts.append(got)
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return dedup_first(np.concatenate(parts) if len(parts) > 1 else parts[0])

    # -- indexes ----------------------------------------------------------------------

    def _codes_by(self, key: str) -> tuple[dict[str, int], dict[str, list[int]]]:
        """Source codes by normalized name (``norm``) or stem: ``(unique, shared)``.

        A value held by one source maps to its code in the first dict; a value several
        sources share (stems, Windows spellings) maps to all their codes in the second.
        """
        cache = self.__dict__.setdefault("_cache", {})
        if key not in cache:
            values = (norm_sources(self.universe.source_names) if key == "norm"
                      else self.universe.stems)
            unique = dict(zip(values, range(len(values)), strict=True))
            shared: dict[str, list[int]] = {}
            if len(unique) < len(values):
                for code, v in enumerate(values):
                    shared.setdefault(v, []).append(code)
                shared = {v: c for v, c in shared.items() if len(c) > 1}
                for v in shared:
                    del unique[v]
            cache[key] = (unique, shared)
        result: tuple[dict[str, int], dict[str, list[int]]] = cache[key]
        return result

    def _codes(self, key: str, values: Iterable[str]) -> tuple[list[int], set[str]]:
        """Codes of every source matching one of ``values``, and the values that matched."""
        unique, shared = self._codes_by(key)
        wanted = set(values)
        codes = [unique[v] for v in wanted if v in unique]
        found = wanted & unique.keys() if len(codes) < len(wanted) else wanted
        if shared:
            more = wanted & shared.keys()
            codes += [c for v in more for c in shared[v]]
            found = found | more
        return codes, found

    def _inverted(self, attr: str) -> dict[Any, Positions]:
        cache = self.__dict__.setdefault("_cache", {})
        if attr not in cache:
            values = self.universe.tags if attr == "tags" else self.universe.category_ids
            lists: dict[Any, list[int]] = {}
            for pos, vals in enumerate(values):
                for v in vals:
                    lists.setdefault(v, []).append(pos)
            cache[attr] = {k: np.asarray(v, dtype=np.int64) for k, v in lists.items()}
        result: dict[Any, Positions] = cache[attr]
        return result

    def _blocks(self, codes: Sequence[int]) -> Positions:
        """The rows of the given sources, in universe order."""
        if not codes:
            return np.zeros(0, dtype=np.int64)
        off = self.universe.offsets
        picked = np.unique(np.asarray(codes, dtype=np.int64))
        starts = off[picked]
        lengths = off[picked + 1] - starts
        if bool(np.all(lengths == 1)):
            return starts  # one sample per source (npz frames, single-frame cubes)
        # start of each block, repeated over its rows, plus the row's rank inside the block
        ends = np.cumsum(lengths)
        return np.repeat(starts - (ends - lengths), lengths) + np.arange(int(ends[-1]))

    def _rows_with(self, attr: str, wanted: set[Any]) -> Positions:
        index = self._inverted(attr)
        hits = [index[w] for w in wanted if w in index]
        if not hits:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(hits))

    # -- one selector -----------------------------------------------------------------

    def select(self, sel: Selector, where: str = "selector") -> Positions:
        """Positions matched by one selector (no zero-match check: that is the stage's job)."""
        kind = sel.kind.value
        uni = self.universe
        if kind == "all":
            return np.arange(len(uni), dtype=np.int64)
        if kind == "file_indices":
            return self._file_indices(sel, where)
        if kind == "files":
            wanted = set(norm_sources(sel.paths))
            codes, found = self._codes("norm", wanted)
            if found and len(found) < len(wanted):
                self._partial(sel, where, sorted(wanted), found)
            return self._blocks(codes)
        if kind == "dir_indices":
            positions, huge = split_ids(sel.ids, kind=kind)
            size = len(uni)
            bad = positions[positions >= size].tolist() + huge
            if bad:
                raise SelectorError(
                    f"{where}: dir_indices positions {_short(bad)} out of range "
                    f"(universe size {size}); positions count rows of the canonical universe "
                    "— regenerate the split (`dvc-cuvis bake --rule`) after the data changed"
                )
            return dedup_first(positions)
        if kind == "stems":
            return self._blocks(self._codes("stem", sel.stems)[0])
        if kind == "glob":
            pat = sel.pattern or ""
            names, stems = uni.source_names, uni.stems
            codes = [
                c for c in range(len(names))
                if fnmatch.fnmatch(stems[c], pat) or fnmatch.fnmatch(names[c], pat)
            ]
            return self._blocks(codes)
        if kind == "tag":
            return self._rows_with("tags", set(sel.any_of))
        if kind == "categories":
            return self._rows_with("category_ids", set(self._category_ids(sel, where)))
        if kind in SET_KINDS:
            return self._setop(sel, where)
        raise SelectorError(f"{where}: unknown selector kind {kind!r}")  # pragma: no cover

    def _file_indices(self, sel: Selector, where: str) -> Positions:
        uni = self.universe
        small, huge = split_ids(sel.ids, kind="file_indices")
        strictly_up = len(small) < 2 or bool(np.all(small[1:] > small[:-1]))
        wanted = small if strictly_up else np.unique(small)  # baked ids are already sorted
        unique, shared = self._codes_by("norm")
        name = norm_source(sel.source or "")
        code = unique.get(name)
        codes = [code] if code is not None else shared.get(name, [])
        off, indices = uni.offsets, uni.indices
        if uni.indexless is not None:  # a whole-file sample has no index to match (as upstream)
            codes = [c for c in codes if not uni.indexless[off[c]]]
        if len(codes) == 1 and not huge and len(wanted):
            lo, hi = int(off[codes[0]]), int(off[codes[0] + 1])
            if indices[lo] == 0 and indices[hi - 1] == hi - lo - 1 and wanted[-1] < hi - lo:
                return lo + wanted  # a dense block 0..n-1 holding every id: no search needed
        parts: list[Positions] = []
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
            requested = wanted.tolist() + sorted(set(huge))
            self._partial(sel, where, requested, set(wanted[found].tolist()))
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

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
        first = parts[0]
        mask = np.zeros(len(self.universe), dtype=bool)
        if kind == "except":
            for part in parts[1:]:
                mask[part] = True
            return first[~mask[first]]
        keep = np.ones(len(first), dtype=bool)
        for part in parts[1:]:
            mask[:] = False
            mask[part] = True
            keep &= mask[first]
        return first[keep]

    # -- reporting --------------------------------------------------------------------

    def _partial(self, sel: Selector, where: str, requested: list[Any], matched: set[Any]) -> None:
        missing = tuple(x for x in requested if x not in matched)
        pm = PartialMatch(where, sel.kind.value, sel.source, len(requested), missing)
        self.warnings.append(pm)
        logger.warning("%s", pm.message())

    def _zero_match_message(self, sel: Selector, where: str) -> str:
        msg = f"{where}: selector {describe(sel)} matched 0 samples"
        names = self.universe.source_names
        asked: list[str] = []
        if sel.kind.value == "file_indices" and sel.source is not None:
            asked = [sel.source]
        elif sel.kind.value == "files":
            asked = list(sel.paths)
        unknown = [a for a in asked if not self._codes("norm", [norm_source(a)])[1]]
        if unknown:
            close = difflib.get_close_matches(unknown[0], names, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            msg += f" — source {unknown[0]!r} is not in the universe{hint}"
        elif sel.kind.value == "file_indices":
            msg += " — none of its ids exist in that source"
        return msg + " (a selector must match at least one sample; fix or remove it)"


def dedup_first(arr: Positions) -> Positions:
    """Drop repeated positions, keeping each first occurrence in place."""
    if len(arr) < 2 or bool(np.all(arr[1:] > arr[:-1])):
        return arr
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


def _short(values: list[int], limit: int = 10) -> str:
    if len(values) <= limit:
        return str(values)
    return f"{values[:limit]} (+{len(values) - limit} more)"
