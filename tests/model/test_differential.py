"""Differential property tests: dvc_cuvis against cuvis-ai-core's reference implementation.

Upstream (the oracle) is ``cuvis_ai_core.data.selectors`` (``resolve_selectors``,
``evaluate_constraints``) and ``cuvis_ai_core.data.splits_io`` (``universe_hash``,
``verify_universe``).  Both sides get the *same* refs in the *same* (canonical) order: the
upstream ``SampleRef`` list is built by walking our canonical universe, so any difference in
resolution, errors, partial-match warnings or constraint results is a behavioural mismatch.

What is compared:

1. ``universe_hash`` and canonical order for random universes (plus duplicate detection).
2. Random selector trees of all eleven kinds, per stage: same uid list in the same order, or
   the same error (ours ``SelectorError``, upstream ``ValueError``) — its kind (zero match,
   bounds, negative or malformed id, bad range, category map/name), the detail the message
   names, and the offending selector; the same partial-match warnings (kind, source,
   requested count, missing items), in the same order.
3. Whole ``DataSplitConfig`` files: every stage (empty predict = the whole universe), the
   pinned-``universe_hash`` guard, the constraint results; errors as in 2, plus the stage.
4. The golden ``constraint_cases.json`` fixture, through both implementations.
5. universe.csv bytes parsed by upstream's ``parse_universe`` and by ours (the refs above are
   built from our parse; this compares the parsers themselves).

Regression tests for mismatches found (and fixed) are at the end of the file.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from cuvis_ai_schemas.training.data import (
    Constraint,
    ConstraintKind,
    ConstraintSeverity,
    DataSplitConfig,
    SampleRef,
    Selector,
)
from hypothesis import HealthCheck, currently_in_test_context, event, given, reject, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from dvc_cuvis.errors import SelectorError, UniverseError
from dvc_cuvis.model.constraints import evaluate_constraints
from dvc_cuvis.model.resolution import Resolution, check_pinned_universe, resolve
from dvc_cuvis.model.selectors import PartialMatch, Resolver
from dvc_cuvis.model.splits import STAGES
from dvc_cuvis.model.universe import Universe, universe_hash
from dvc_cuvis.model.universe_io import parse_universe_bytes

pytest.importorskip("cuvis_ai_dataloader")  # the upstream reference implementation (plugin extra)
from cuvis_ai_core.data import selectors as upstream
from cuvis_ai_core.data.splits_io import universe_hash as upstream_universe_hash
from cuvis_ai_core.data.splits_io import verify_universe as upstream_verify_universe
from cuvis_ai_dataloader.data._universe import parse_universe as upstream_parse_universe

#: Under mutation testing (scripts/mutation.sh sets DVC_CUVIS_HYPOTHESIS_EXAMPLES) each
#: mutant runs these tests again, so a smaller, derandomized budget keeps a survivor cheap
#: and its verdict repeatable; the example-based tests beside these carry the exact cases.
_EXAMPLES = os.environ.get("DVC_CUVIS_HYPOTHESIS_EXAMPLES")
SETTINGS = settings(
    max_examples=int(_EXAMPLES) if _EXAMPLES else 200,
    derandomize=bool(_EXAMPLES),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

UPSTREAM_LOGGER = "cuvis_ai_core.data.selectors"

# -- alphabets ------------------------------------------------------------------------------

#: Source spellings: Windows-looking (both cases, both separators), relative, ``.``/``..``,
#: candidates that collide after backslash normalization, unicode (incl. casefold-equal
#: ``ß``/``SS``), names containing ``#`` and glob metacharacters.
SOURCE_PIECES: tuple[str, ...] = (
    "C:/Data/a.cu3s",
    "c:/data/A.cu3s",
    "C:\\Data\\b.cu3s",
    "C:/Data/b.cu3s",
    "day1/a.cu3s",
    "day1\\a.cu3s",
    "day2/a.cu3s",
    "day2/b.npz",
    "./x/../y.npz",
    "y.npz",
    "x/./y.npz",
    "rel/dir/c.tiff",
    "/abs/data/z.cu3s",
    "d:/über/straße.cu3s",
    "D:/ÜBER/STRASSE.cu3s",
    "日本/データ.npz",
    "İ/x.cu3s",
    "has#hash.cu3s",
    "a#1",
    "[x]/q.npz",
)
UNKNOWN_PATHS: tuple[str, ...] = ("missing/nothing.cu3s", "C:/Nope/a.cu3s", "y.NPZ", "")
RESPELLINGS: tuple[str, ...] = (
    "as_is",
    "backslash",
    "swapcase",
    "dot_prefix",
    "dotdot",
    "double_slash",
    "trailing_slash",
)
TAGS: tuple[str, ...] = ("day", "night", "wet", "ß", "tag#1")
NAME_TO_ID: dict[str, int] = {"background": 0, "scratch": 1, "dent": 2, "rust": 3, "dent2": 2}
UNKNOWN_NAMES: tuple[str, ...] = ("unknown", "Scratch")
GLOBS: tuple[str, ...] = (
    "*", "a*", "*.npz", "day?/*", "*a*", "C:/*", "c:/data/*", "[ab]*", "*/*", "y", "*.cu3s",
    "日本/*", "?", "[", "*#*",
)
BAD_ID_ITEMS: tuple[Any, ...] = (
    "5-2", "1-4:0", "0-", "abc", "3", "-1-2", "1-2:", " 1-3 ", "١-٣", "2-2", "0-6:2", -1, -7,
)
LEAF_KINDS: tuple[str, ...] = (
    "files", "file_indices", "dir_indices", "stems", "glob", "tag", "categories", "all",
)
SET_KINDS: tuple[str, ...] = ("union", "except", "intersect")
MAX_DEPTH = 3


def posix(path: str) -> str:
    return path.replace("\\", "/")


def respell(source: str, how: str) -> str:
    """Spell a universe source the way a hand-written / Windows-authored selector might."""
    if how == "backslash":
        return source.replace("/", "\\")
    if how == "swapcase":
        return source.swapcase()
    if how == "dot_prefix":
        return "./" + source
    if how == "dotdot":
        return "zz/../" + source
    if how == "double_slash":
        return source.replace("/", "//")
    if how == "trailing_slash":
        return source + "/"
    return source


# -- universes --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    source: str
    index: int
    tags: tuple[str, ...]
    category_ids: tuple[int, ...]


@dataclass(frozen=True)
class RawUniverse:
    rows: tuple[Row, ...]
    with_tags: bool
    with_cats: bool
    as_strings: bool  # ';'-joined cells instead of lists

    def records(self, rows: Sequence[Row] | None = None) -> list[dict[str, Any]]:
        out = []
        for r in self.rows if rows is None else rows:
            rec: dict[str, Any] = {"source": r.source, "index": r.index}
            if self.with_tags:
                rec["tags"] = ";".join(r.tags) if self.as_strings else list(r.tags)
            if self.with_cats:
                rec["category_ids"] = (
                    ";".join(str(c) for c in r.category_ids)
                    if self.as_strings
                    else list(r.category_ids)
                )
            out.append(rec)
        return out

    def deduped(self) -> list[Row]:
        """Rows with the first occurrence of each normalized identity kept."""
        seen: set[tuple[str, int]] = set()
        out = []
        for r in self.rows:
            key = (posix(r.source), r.index)
            if key not in seen:
                seen.add(key)
                out.append(r)
        return out


def _rows(pieces: list[str], min_size: int = 0) -> st.SearchStrategy[tuple[Row, ...]]:
    row = st.builds(
        Row,
        source=st.sampled_from(pieces),
        index=st.integers(0, 6),
        tags=st.lists(st.sampled_from(TAGS), max_size=3, unique=True).map(tuple),
        category_ids=st.lists(st.integers(0, 4), max_size=3).map(tuple),
    )
    return st.lists(row, min_size=min_size, max_size=14).map(tuple)


raw_universes = st.builds(
    RawUniverse,
    # a few sources per universe, so that sources hold several frames
    rows=st.lists(st.sampled_from(SOURCE_PIECES), min_size=1, max_size=5, unique=True).flatmap(
        _rows
    ),
    with_tags=st.booleans(),
    with_cats=st.booleans(),
    as_strings=st.booleans(),
)
#: The same, never empty (deduplication keeps at least the first row).
nonempty_raw_universes = st.builds(
    RawUniverse,
    rows=st.lists(st.sampled_from(SOURCE_PIECES), min_size=1, max_size=5, unique=True).flatmap(
        lambda pieces: _rows(pieces, min_size=1)
    ),
    with_tags=st.booleans(),
    with_cats=st.booleans(),
    as_strings=st.booleans(),
)


def build(raw: RawUniverse) -> tuple[Universe, list[SampleRef]]:
    """Our universe from the deduped rows, and upstream's refs in our canonical order.

    The refs carry the tags / category ids of the *input rows* (not our parsed columns), so
    a parsing difference shows up as a resolution difference.
    """
    rows = raw.deduped()
    uni = Universe.from_records(raw.records(rows))
    by_key = {(posix(r.source), r.index): r for r in rows}
    refs = []
    for c, i in zip(uni.codes.tolist(), uni.indices.tolist(), strict=True):
        src = uni.source_names[c]
        row = by_key[(src, i)]
        refs.append(
            SampleRef(
                source=src,
                index=i,
                tags=list(row.tags) if raw.with_tags else [],
                category_ids=list(row.category_ids) if raw.with_cats else [],
            )
        )
    return uni, refs


# -- selectors --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ctx:
    """What the selector strategy may name: the universe's sources, stems and size."""

    sources: tuple[str, ...]
    stems: tuple[str, ...]
    size: int
    valid_bias: bool = False  # prefer selectors that resolve (for whole-config tests)


def ctx_of(uni: Universe, *, valid_bias: bool = False) -> Ctx:
    return Ctx(tuple(uni.source_names), tuple(uni.stems), len(uni), valid_bias)


@st.composite
def paths(draw: st.DrawFn, ctx: Ctx) -> str:
    choices = []
    if ctx.sources:
        choices.append(
            st.builds(respell, st.sampled_from(ctx.sources), st.sampled_from(RESPELLINGS))
        )
        choices.append(st.sampled_from(ctx.sources))
    if not ctx.valid_bias or not ctx.sources:
        choices += [st.sampled_from(SOURCE_PIECES), st.sampled_from(UNKNOWN_PATHS)]
    return draw(st.one_of(choices))


def range_str(a: int, b: int, step: int | None) -> str:
    return f"{a}-{b}" if step is None else f"{a}-{b}:{step}"


@st.composite
def id_items(draw: st.DrawFn, ctx: Ctx, *, top: int) -> int | str:
    """One ``ids`` item: an int, an ``a-b[:step]`` range (valid or not) or junk."""
    ints = st.integers(0, top)
    ranges = st.builds(range_str, ints, ints, st.one_of(st.none(), st.integers(0, 3)))
    if ctx.valid_bias:
        ok_ranges = st.builds(
            lambda a, d, s: range_str(a, a + d, s),
            ints, st.integers(0, 3), st.one_of(st.none(), st.integers(1, 3)),
        )
        return draw(st.one_of(ints, ok_ranges))
    return draw(st.one_of(ints, ranges, st.sampled_from(BAD_ID_ITEMS)))


@st.composite
def selectors(draw: st.DrawFn, ctx: Ctx, depth: int = 0) -> Selector:
    kinds = LEAF_KINDS + (SET_KINDS if depth < MAX_DEPTH else ())
    kind = draw(st.sampled_from(kinds))
    data: dict[str, Any] = {}
    if kind == "files":
        data["paths"] = draw(st.lists(paths(ctx), min_size=1, max_size=3))
    elif kind == "file_indices":
        data["source"] = draw(paths(ctx))
        data["ids"] = draw(st.lists(id_items(ctx, top=8), min_size=1, max_size=4))
    elif kind == "dir_indices":
        top = max(ctx.size - 1, 0) if ctx.valid_bias else ctx.size + 2
        data["ids"] = draw(st.lists(id_items(ctx, top=top), min_size=1, max_size=4))
    elif kind == "stems":
        pool = [*ctx.stems, "nope", *(s.upper() for s in ctx.stems)]
        data["stems"] = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
    elif kind == "glob":
        pool = [*GLOBS, *(s + "*" for s in ctx.stems)]
        data["pattern"] = draw(st.sampled_from(pool))
    elif kind == "tag":
        data["any_of"] = draw(
            st.lists(st.sampled_from([*TAGS, "no_such_tag"]), min_size=1, max_size=3)
        )
    elif kind == "categories":
        pool = list(NAME_TO_ID) if ctx.valid_bias else [*NAME_TO_ID, *UNKNOWN_NAMES]
        data["any_of"] = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
    elif kind in SET_KINDS:
        low = 1 if kind == "union" else 2
        data["of"] = draw(
            st.lists(selectors(ctx, depth + 1), min_size=low, max_size=3)
        )
    try:
        return Selector(kind=kind, **data)
    except ValidationError:  # the schema refuses it at construction: not a resolver input
        reject()


name_maps = st.sampled_from([NAME_TO_ID, NAME_TO_ID, NAME_TO_ID, None, {}])


# -- running both sides -------------------------------------------------------------------------


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def upstream_warnings() -> Iterator[list[logging.LogRecord]]:
    """Collect the partial-match warnings upstream logs (a handler, not caplog: hypothesis)."""
    log = logging.getLogger(UPSTREAM_LOGGER)
    handler = _ListHandler()
    old_level, old_disabled = log.level, log.disabled
    log.addHandler(handler)
    log.setLevel(logging.WARNING)
    log.disabled = False
    try:
        yield handler.records
    finally:
        log.removeHandler(handler)
        log.setLevel(old_level)
        log.disabled = old_disabled


WarnKey = tuple[str, str, int, str]


def upstream_warn_key(record: logging.LogRecord) -> WarnKey:
    """(kind, " of 'source'" or "", requested count, missing items joined) of a log record."""
    assert record.msg.startswith("selector '%s'%s matched"), record.getMessage()
    args = cast(tuple[Any, ...], record.args)
    kind, where, _matched, requested, _noun, _noun2, missing = args
    return (kind, where, requested, missing)


def our_warn_key(pm: PartialMatch) -> WarnKey:
    where = f" of {pm.source!r}" if pm.source else ""
    return (pm.kind, where, pm.requested, ", ".join(str(m) for m in pm.missing))


Outcome = tuple[str, Any]  # ("ok", [uid, ...]) or ("error", (kind, detail..., offending))

#: Error kinds by message, with the detail both sides must agree on (regex groups).
_ERROR_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("zero_match", re.compile(r"selector '?(\w+).* matched 0 samples")),
    ("bounds", re.compile(r"dir_indices positions \[(-?\d+).* out of range "
                          r"\(universe size (\d+)\)")),
    ("negative", re.compile(r"selector '(\w+)' index (-?\d+) must be >= 0")),
    ("bad_id", re.compile(r"selector '(\w+)' ids must be ints or 'a-b' ranges, got (.*)$")),
    ("bad_range", re.compile(r"range selector (.+?): (step|start)")),
    ("no_category_map", re.compile(r"a 'categories' selector needs a category name->id map")),
    ("unknown_category", re.compile(r"category '?(.+?)'? not in dataset categories")),
    ("pinned_hash", re.compile(r"universe changed since")),
)


def error_kind(message: str) -> tuple[str, ...]:
    """(kind, details...) of a resolution error message, from either implementation."""
    for kind, pattern in _ERROR_KINDS:
        m = pattern.search(message)
        if m:
            return (kind, *m.groups())
    return ("other", message)


def _first_failing(run: Any, sels: Sequence[Selector]) -> int | None:
    """Index of the selector a stage fails on: the shortest failing prefix."""
    for i in range(len(sels)):
        try:
            run(list(sels[: i + 1]))
        except (ValueError, SelectorError):
            return i
    return None


def run_upstream_stage(
    sels: Sequence[Selector], refs: list[SampleRef], name_to_id: dict[str, int] | None
) -> tuple[Outcome, list[WarnKey]]:
    def run(some: list[Selector]) -> list[SampleRef]:
        return upstream.resolve_selectors(some, refs, name_to_id=name_to_id)

    with upstream_warnings() as records:
        try:
            outcome: Outcome = ("ok", [r.uid for r in run(list(sels))])
        except ValueError as exc:
            outcome = ("error", error_kind(str(exc)))
    warns = [upstream_warn_key(r) for r in records]
    if outcome[0] == "error":
        with upstream_warnings():  # a sink: the prefix runs repeat the warnings
            outcome = ("error", (*outcome[1], _first_failing(run, sels)))
    return outcome, warns


def run_our_stage(
    sels: Sequence[Selector], uni: Universe, name_to_id: dict[str, int] | None, stage: str
) -> tuple[Outcome, list[WarnKey]]:
    resolver = Resolver(uni, name_to_id)
    try:
        pos = resolver.resolve(sels, stage=stage)
        assert pos.dtype == np.int64, f"positions dtype {pos.dtype}, expected int64"
        assert len(np.unique(pos)) == len(pos), f"repeated positions {pos.tolist()}"
        outcome: Outcome = ("ok", uni.uids(pos))
    except SelectorError as exc:
        first = _first_failing(
            lambda some: Resolver(uni, name_to_id).resolve(some, stage=stage), sels)
        where = re.match(rf"{stage}\[(\d+)\]", str(exc))  # where ours says it failed
        assert where is None or int(where.group(1)) == first, (str(exc), first)
        outcome = ("error", (*error_kind(str(exc)), first))
    return outcome, [our_warn_key(w) for w in resolver.warnings]


def explain(uni: Universe, sels: Sequence[Selector], name_to_id: Any) -> str:
    dumped = [s.model_dump(mode="json", exclude_defaults=True) for s in sels]
    return (
        f"\n  universe ({len(uni)}): {uni.uids()}"
        f"\n  name_to_id: {name_to_id}"
        f"\n  selectors: {json.dumps(dumped, ensure_ascii=False)}"
    )


def assert_same_stage(
    ours: tuple[Outcome, list[WarnKey]],
    theirs: tuple[Outcome, list[WarnKey]],
    context: str,
) -> None:
    (o_status, o_val), o_warn = ours
    (u_status, u_val), u_warn = theirs
    if currently_in_test_context():  # coverage statistics (--hypothesis-show-statistics)
        event(f"upstream {u_status}, {'with' if u_warn else 'no'} partial-match warning")
    if u_status == "error" and currently_in_test_context():
        event(f"upstream error: {u_val[0]}")
    # the same uids, or the same error: kind, detail (selector kind, id, size, name) and the
    # index of the offending top-level selector
    assert (o_status, o_val) == (u_status, u_val), (
        f"resolution differs:{context}\n  ours:     {o_status} {o_val}"
        f"\n  upstream: {u_status} {u_val}"
    )
    assert o_warn == u_warn, (
        f"partial-match warnings differ:{context}\n  ours:     {o_warn}\n  upstream: {u_warn}"
    )


# -- 1. universe hash and canonical order -------------------------------------------------------


@SETTINGS
@given(raw=raw_universes)
def test_universe_canonical_order_and_hash(raw: RawUniverse) -> None:
    keys = [(posix(r.source), r.index) for r in raw.rows]
    if len(set(keys)) != len(keys):
        with pytest.raises(UniverseError, match="duplicate"):
            Universe.from_records(raw.records())
    uni, refs = build(raw)
    expected = sorted(set(keys))
    assert uni.uids() == [f"{s}#{i}" for s, i in expected], "not in canonical (source, index) order"
    assert [r.uid for r in refs] == uni.uids()
    # upstream's own notion of canonical order: sorted by (source, index)
    assert sorted(refs, key=lambda r: (r.source, r.index)) == refs
    assert len(uni) == len(refs)
    assert uni.source_names == sorted({s for s, _ in expected})
    want = upstream_universe_hash(refs)
    assert uni.hash == want, f"universe hash differs for {uni.uids()}"
    assert universe_hash(r.uid for r in refs) == want
    assert universe_hash(iter(uni.uids())) == want
    # parsed attribute columns round-trip the input lists
    if raw.with_tags:
        assert [list(t) for t in uni.tags] == [r.tags for r in refs]
    if raw.with_cats:
        assert [list(c) for c in uni.category_ids] == [r.category_ids for r in refs]


# -- 2. selector trees, stage by stage --------------------------------------------------------


@st.composite
def universe_and_stage(draw: st.DrawFn) -> tuple[RawUniverse, list[Selector], Any]:
    raw = draw(raw_universes)
    uni, _ = build(raw)
    ctx = ctx_of(uni, valid_bias=draw(st.booleans()))
    sels = draw(st.lists(selectors(ctx), min_size=1, max_size=3))
    return raw, sels, draw(name_maps)


@pytest.mark.slow  # ~2 s of examples
@SETTINGS
@given(case=universe_and_stage())
def test_selectors_match_upstream(case: tuple[RawUniverse, list[Selector], Any]) -> None:
    raw, sels, name_to_id = case
    uni, refs = build(raw)
    context = explain(uni, sels, name_to_id)
    assert_same_stage(
        run_our_stage(sels, uni, name_to_id, "train"),
        run_upstream_stage(sels, refs, name_to_id),
        context,
    )


@st.composite
def partial_selectors(draw: st.DrawFn, ctx: Ctx, depth: int = 0) -> Selector:
    """``files`` / ``file_indices`` that name some present and some absent things."""
    kind = draw(st.sampled_from(("files", "file_indices", "union", "except") if depth == 0
                                else ("files", "file_indices")))
    if kind in ("union", "except"):
        of = draw(st.lists(partial_selectors(ctx, depth + 1), min_size=2, max_size=3))
        return Selector(kind=kind, of=of)
    if kind == "files":
        present = st.one_of(
            st.sampled_from(ctx.sources),
            st.builds(respell, st.sampled_from(ctx.sources), st.sampled_from(RESPELLINGS)),
        )
        absent = st.sampled_from((*UNKNOWN_PATHS, *SOURCE_PIECES))
        found = draw(st.lists(present, min_size=1, max_size=2))
        return Selector(kind="files", paths=found + draw(st.lists(absent, max_size=2)))
    ids = st.one_of(
        st.integers(0, 9),
        st.builds(lambda a, d: f"{a}-{a + d}", st.integers(0, 9), st.integers(0, 4)),
    )
    return Selector(
        kind="file_indices",
        source=draw(paths(ctx)),
        ids=draw(st.lists(ids, min_size=1, max_size=4)),
    )


@pytest.mark.slow  # ~2 s of examples
@SETTINGS
@given(raw=nonempty_raw_universes, data=st.data())
def test_partial_match_warnings_match_upstream(raw: RawUniverse, data: st.DataObject) -> None:
    uni, refs = build(raw)
    assert len(uni) >= 1  # every example is used: no early return thins the sample
    sels = data.draw(st.lists(partial_selectors(ctx_of(uni)), min_size=1, max_size=3))
    assert_same_stage(
        run_our_stage(sels, uni, None, "val"),
        run_upstream_stage(sels, refs, None),
        explain(uni, sels, None),
    )


# -- 3. whole split configs: stages, pinned hash, constraints ------------------------------------


@st.composite
def split_configs(draw: st.DrawFn) -> tuple[RawUniverse, DataSplitConfig, Any, frozenset[str]]:
    raw = draw(raw_universes)
    uni, refs = build(raw)
    name_to_id = draw(name_maps)
    # Mostly keep only top-level selectors upstream resolves, so that most configs get as far
    # as the constraints; the rest are left as drawn (error paths, the pinned-hash guard).
    keep_resolvable = draw(st.integers(0, 3)) > 0
    ctx = ctx_of(uni, valid_bias=keep_resolvable)
    stage_lists = {}
    for s in STAGES:
        sels = draw(st.lists(selectors(ctx), max_size=3 if s != "predict" else 2))
        if keep_resolvable:
            sels = [sel for sel in sels if _upstream_resolves(sel, refs, name_to_id)]
        stage_lists[s] = sels
    kinds = draw(st.lists(st.sampled_from(list(ConstraintKind)), unique=True, max_size=3))
    constraints = [
        Constraint(kind=k, severity=draw(st.sampled_from(list(ConstraintSeverity))))
        for k in kinds
    ]
    pinned = draw(st.sampled_from([None, None, uni.hash, "0" * 64]))
    try:
        cfg = DataSplitConfig(universe_hash=pinned, constraints=constraints, **stage_lists)
    except ValidationError:
        reject()
    attrs = frozenset(draw(st.sets(st.sampled_from(["category_ids", "tags"]))))
    return raw, cfg, name_to_id, attrs


def _upstream_resolves(sel: Selector, refs: list[SampleRef], name_to_id: Any) -> bool:
    with upstream_warnings():  # a sink: these are not the warnings under test
        try:
            upstream.resolve_selectors([sel], refs, name_to_id=name_to_id)
        except ValueError:
            return False
    return True


def constraint_rows(results: Sequence[Any], *, with_reason: bool) -> list[tuple[Any, ...]]:
    rows = []
    for r in results:
        row: tuple[Any, ...] = (r.kind, r.severity, r.status, r.count, tuple(r.offending))
        if with_reason and r.status != "unavailable":  # unavailable wording is ours to choose
            row += (r.reason,)
        rows.append(row)
    return rows


@pytest.mark.slow  # ~3 s of examples
@SETTINGS
@given(case=split_configs())
def test_split_config_matches_upstream(
    case: tuple[RawUniverse, DataSplitConfig, Any, frozenset[str]],
) -> None:
    raw, cfg, name_to_id, attrs = case
    uni, refs = build(raw)
    context = (
        f"\n  universe ({len(uni)}): {uni.uids()}\n  name_to_id: {name_to_id}"
        f"\n  available_attrs: {sorted(attrs)}"
        f"\n  splits.json: {json.dumps(cfg.to_dict(), ensure_ascii=False)}"
    )

    # upstream: pinned-universe guard, then each stage; empty predict = every ref
    up_stages: dict[str, list[SampleRef]] = {}
    up_error: tuple[Any, ...] | None = None
    failing = "universe_hash"
    with upstream_warnings() as records:
        try:
            upstream_verify_universe(cfg, refs)
            for s in STAGES:
                failing = s
                up_stages[s] = upstream.resolve_selectors(
                    getattr(cfg, s), refs, name_to_id=name_to_id
                )
            if not cfg.predict:
                up_stages["predict"] = list(refs)
        except ValueError as exc:
            up_error = (*error_kind(str(exc)), failing)
    up_warn = [upstream_warn_key(r) for r in records]
    if up_error is not None and failing != "universe_hash":
        with upstream_warnings():
            up_error += (_first_failing(lambda some: upstream.resolve_selectors(
                some, refs, name_to_id=name_to_id), getattr(cfg, failing)),)

    ours: Resolution | None = None
    our_error: tuple[Any, ...] | None = None
    try:
        ours = resolve(cfg, uni, name_to_id=name_to_id)
    except SelectorError as exc:
        # which stage and selector failed, found independently of the message
        where = "universe_hash"
        try:
            check_pinned_universe(cfg, uni)
            for s in STAGES:
                where = s
                Resolver(uni, name_to_id).resolve(getattr(cfg, s), stage=s)
        except SelectorError:
            pass
        our_error = (*error_kind(str(exc)), where)
        if where != "universe_hash":
            our_error += (_first_failing(lambda some: Resolver(uni, name_to_id).resolve(
                some, stage=where), getattr(cfg, where)),)

    event(f"config: upstream {up_error[0] if up_error else 'ok'}")
    if up_error is not None or our_error is not None:
        # the same error: kind, detail, the stage and the selector it names
        assert our_error == up_error, (
            f"errors differ:{context}\n  ours:     {our_error}\n  upstream: {up_error}"
        )
        return
    assert ours is not None
    up_uids = {s: [r.uid for r in refs_] for s, refs_ in up_stages.items()}
    got = ours.as_uid_lists()
    for s in STAGES:
        assert got[s] == up_uids[s], (
            f"stage {s!r} differs:{context}\n  ours:     {got[s]}\n  upstream: {up_uids[s]}"
        )
    assert ours.predict_is_all == (not cfg.predict)
    our_warn = [our_warn_key(w) for w in ours.warnings]
    assert our_warn == up_warn, (
        f"partial-match warnings differ:{context}\n  ours:     {our_warn}\n  upstream: {up_warn}"
    )

    # the file's constraints as drawn, plus every kind against the labels-available variant
    every_kind = [Constraint(kind=k, severity=ConstraintSeverity.WARN) for k in ConstraintKind]
    for constraints, attrs_ in ((cfg.constraints, attrs), (every_kind, attrs | {"category_ids"})):
        mine = evaluate_constraints(
            ours, constraints, available_attrs=attrs_, group_leakage="off"
        )
        theirs = upstream.evaluate_constraints(
            up_stages["train"], up_stages["val"], up_stages["test"],
            constraints=constraints, available_attrs=attrs_,
        )
        for r in theirs:
            event(f"constraint {r.kind}: {r.status}")
        o_rows = constraint_rows(mine, with_reason=True)
        u_rows = constraint_rows(theirs, with_reason=True)
        assert o_rows == u_rows, (
            f"constraint results differ:{context}\n  constraints: {constraints}"
            f"\n  available_attrs: {sorted(attrs_)}\n  stages: {got}"
            f"\n  ours:     {o_rows}\n  upstream: {u_rows}"
        )


# -- 4. golden constraint fixture ---------------------------------------------------------------


def _fixture_path() -> Path:
    shared = Path("/work/shared/fixtures/constraint_cases.json")
    own = Path(__file__).parents[1] / "fixtures/constraint_cases.json"
    return shared if shared.is_file() else own


GOLDEN_CASES: list[dict[str, Any]] = json.loads(_fixture_path().read_text("utf-8"))["cases"]


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=[c["name"] for c in GOLDEN_CASES])
def test_golden_constraint_cases(case: dict[str, Any]) -> None:
    uni = Universe.from_records(case["universe"])
    refs = [
        SampleRef(source=r["source"], index=r["index"], category_ids=r.get("category_ids", []))
        for r in sorted(case["universe"], key=lambda r: (r["source"], r["index"]))
    ]
    assert uni.uids() == [r.uid for r in refs]
    pos_of = {u: p for p, u in enumerate(uni.uids())}
    ref_of = {r.uid: r for r in refs}

    def uids(stage: str) -> list[str]:
        return [f"{s}#{i}" for s, i in case[stage]]

    stages = {s: np.asarray([pos_of[u] for u in uids(s)], dtype=np.int64) for s in STAGES[:3]}
    stages["predict"] = np.arange(len(uni), dtype=np.int64)
    res = Resolution(uni, stages, predict_is_all=True)
    constraints = [Constraint.model_validate(c) for c in case["constraints"]]
    attrs = frozenset(case["available_attrs"])

    mine = evaluate_constraints(res, constraints, available_attrs=attrs, group_leakage="off")
    theirs = upstream.evaluate_constraints(
        *([ref_of[u] for u in uids(s)] for s in STAGES[:3]),
        constraints=constraints, available_attrs=attrs,
    )
    expected = [
        (e["kind"], e["status"], e["count"], tuple(e["offending"])) for e in case["expected"]
    ]
    for who, results in (("ours", mine), ("upstream", theirs)):
        got = [(r.kind, r.status, r.count, tuple(r.offending)) for r in results]
        assert got == expected, f"{case['name']}: {who} {got} != expected {expected}"
    assert constraint_rows(mine, with_reason=True) == constraint_rows(theirs, with_reason=True)


# -- regressions: known mismatches ----------------------------------------------------------------

_BIG = 2**64  # beyond int64
_F53 = 2**53  # where float64 stops representing every integer


def _compare_on_three_frames(kind: str, ids: list[int | str]) -> None:
    """One selector over the universe a.cu3s#0..2, ours vs upstream."""
    raw = RawUniverse(
        tuple(Row("a.cu3s", i, (), ()) for i in range(3)),
        with_tags=False, with_cats=False, as_strings=False,
    )
    uni, refs = build(raw)
    sel = Selector(kind=kind, ids=ids, source="a.cu3s" if kind == "file_indices" else None)
    assert_same_stage(
        run_our_stage([sel], uni, None, "train"),
        run_upstream_stage([sel], refs, None),
        explain(uni, [sel], None),
    )


@pytest.mark.parametrize(
    ("kind", "ids"),
    [
        ("dir_indices", [_BIG]),  # was an OverflowError before "Fast path for plain-int ids"
        ("dir_indices", [2**62]),
        ("dir_indices", [-_BIG]),
        ("file_indices", [-_BIG]),
        ("file_indices", [0, 2**62 - 1]),
    ],
    ids=["dir-int-2^64", "dir-int-2^62", "dir-int-neg", "file-int-neg", "file-int-below-2^62"],
)
def test_huge_ids_agree(kind: str, ids: list[int | str]) -> None:
    _compare_on_three_frames(kind, ids)


# Regression: huge ids. Range strings used to be expanded with np.arange (int64, length in
# float64) and plain ids >= 2**62 were rejected; upstream expands with Python ints, so a
# bound >= 2**63 is simply out of range / unmatched and "0-2**53:2**53" has two elements.
@pytest.mark.parametrize(
    ("kind", "ids"),
    [
        ("dir_indices", [f"{_BIG}-{_BIG}"]),
        ("file_indices", [f"{_BIG}-{_BIG}"]),
        ("dir_indices", [f"0-{_F53}:{_F53}"]),
        ("file_indices", [f"0-{_F53}:{_F53}"]),
        ("file_indices", [0, 2**62]),
        ("file_indices", [0, _BIG]),
    ],
    ids=["dir-range-over-int64", "file-range-over-int64", "dir-range-float-len",
         "file-range-float-len", "file-int-2^62", "file-int-2^64"],
)
def test_huge_range_and_int_ids_match_upstream(kind: str, ids: list[int | str]) -> None:
    _compare_on_three_frames(kind, ids)


# -- 5. universe.csv parsed by both sides from the same bytes ------------------------------------

#: CSV-safe source spellings: Windows-looking (backslashes, drive letters), ``.``
#: spellings, absolute, unicode, names with ``#`` (``..`` ones are injected as faults).
CSV_SOURCES: tuple[str, ...] = (
    "day1/a.cu3s", "day2\\a.cu3s", "C:\\Data\\b.cu3s", "C:/Data/c.cu3s", "c:/data/B.cu3s",
    "./x/y.npz", "x/./z.npz", "/abs/data/z.cu3s", "日本/データ.npz", "has#hash.cu3s",
    "d:/über/straße.cu3s",
)
CSV_PATHS: tuple[str, ...] = ("frames/a.npz", "frames\\b.npz", "./c.npz", "e/f.npz")
#: One fault per case, so each side's error kind (and the offending cell) can be compared.
FAULTS: tuple[str, ...] = ("none", "none", "duplicate", "dotdot_path", "dotdot_source",
                           "bad_index", "missing_column", "absolute_path")
BAD_INDEX_CELLS: tuple[str, ...] = ("x", "3-1", "1-2:0", "-1", "1.5")


@dataclass(frozen=True)
class CsvCase:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    bom: bool
    crlf: bool
    fault: str
    offending: str  # the cell the fault put there ("" for none)

    def data(self) -> bytes:
        nl = "\r\n" if self.crlf else "\n"
        text = nl.join(",".join(r) for r in (self.header, *self.rows)) + nl
        return ("\ufeff" if self.bom else "").encode() + text.encode("utf-8")


def _index_cell(a: int, d: int | None, step: int | None) -> str:
    if d is None:
        return str(a)
    return f"{a}-{a + d}" if step is None else f"{a}-{a + d}:{step}"


@st.composite
def csv_cases(draw: st.DrawFn) -> CsvCase:
    fault = draw(st.sampled_from(FAULTS))
    extra = draw(st.lists(st.sampled_from(["materialized_path", "group", "tags", "format"]),
                          unique=True, max_size=3))
    if fault in ("dotdot_path", "absolute_path") and "materialized_path" not in extra:
        extra.append("materialized_path")
    if fault == "dotdot_source" and "materialized_path" in extra:
        extra.remove("materialized_path")  # the source is the physical path
    header = ("source", "index", *extra) if draw(st.booleans()) else ("index", "source", *extra)
    # never empty (an empty universe is an error on both sides); one row per source, so
    # identities are unique unless the fault says otherwise
    sources = draw(st.lists(st.sampled_from(CSV_SOURCES), min_size=1, max_size=5,
                            unique_by=posix))
    pad = draw(st.sampled_from(["", " "]))
    rows: list[dict[str, str]] = []
    for src in sources:
        rows.append({
            "source": src,
            "index": _index_cell(draw(st.integers(0, 4)),
                                 draw(st.one_of(st.none(), st.integers(0, 3))),
                                 draw(st.one_of(st.none(), st.integers(1, 2)))),
            "materialized_path": draw(st.sampled_from(CSV_PATHS)),
            "group": draw(st.sampled_from(["", "g1", "line2"])),
            "tags": draw(st.sampled_from(["", "day", "a;b"])),
            "format": draw(st.sampled_from(["", "npz", "cu3s"])),
        })
    at = draw(st.integers(0, len(rows) - 1))
    offending = ""
    if fault == "duplicate":  # the same identity again, maybe spelled with backslashes
        dup = dict(rows[at])
        first = dup["index"].partition("-")[0]
        dup["source"] = draw(st.sampled_from([dup["source"], dup["source"].replace("/", "\\")]))
        dup["index"] = first
        rows.insert(draw(st.integers(0, len(rows))), dup)
        offending = posix(dup["source"])
    elif fault == "dotdot_path":
        offending = rows[at]["materialized_path"] = draw(st.sampled_from(
            ["sub/../d.npz", "..\\up.npz", "../up.npz"]))
    elif fault == "dotdot_source":
        offending = rows[at]["source"] = draw(st.sampled_from(["x/../y.npz", "../up.npz"]))
    elif fault == "absolute_path":
        offending = rows[at]["materialized_path"] = "/abs/frames/a.npz"
    elif fault == "bad_index":
        offending = rows[at]["index"] = draw(st.sampled_from(BAD_INDEX_CELLS))
    if fault == "missing_column":
        header = tuple(c for c in header if c != "index")
    cells = tuple(tuple(pad + r[c] + pad for c in header) for r in rows)
    return CsvCase(header, cells, draw(st.booleans()), draw(st.booleans()), fault, offending)


def _universe_error_kind(message: str) -> str:
    for kind, needle in (("duplicate", "duplicate identity"), ("dotdot", "'..'"),
                         ("missing_column", "missing required column"),
                         ("missing_column", "header must start"),
                         ("bad_index", "invalid literal"), ("bad_index", "non-negative integer"),
                         ("bad_index", "range"), ("absolute", "absolute path")):
        if needle in message:
            return kind
    return f"other: {message}"


Parsed = tuple[str, Any, str]  # ("ok", rows or Universe, "") | ("error", kind, message)


def _upstream_rows(data: bytes, folder: Path) -> Parsed:
    csv_path = folder / "universe.csv"
    csv_path.write_bytes(data)
    try:
        rows = upstream_parse_universe(csv_path, require_materialized_path=False,
                                       accept_split=False, unique_materialized_path=False,
                                       allow_index_ranges=True)
    except ValueError as exc:
        return "error", _universe_error_kind(str(exc)), str(exc)
    return "ok", rows, ""


def _ours(data: bytes, folder: Path) -> Parsed:
    try:
        uni = parse_universe_bytes(data, path=folder / "universe.csv",
                                   unique_materialized_path=False)
    except UniverseError as exc:
        return "error", _universe_error_kind(str(exc)), str(exc)
    return "ok", uni, ""


def names(cell: str, message: str) -> bool:
    """``message`` names ``cell`` (as written, or as Python's repr quotes it)."""
    return cell.strip() in message or repr(cell.strip())[1:-1] in message


FAULT_KIND = {"duplicate": "duplicate", "dotdot_path": "dotdot", "bad_index": "bad_index",
              "missing_column": "missing_column"}


@SETTINGS
@given(case=csv_cases())
def test_universe_csv_parsed_as_upstream(case: CsvCase, tmp_path_factory) -> None:
    """The same bytes through upstream's ``parse_universe`` and ours: the same uids in
    canonical order, hash, physical paths and groups — or the same kind of error, naming the
    same offending cell.

    Deliberate differences, each asserted rather than skipped:
    - a UTF-8 BOM (Excel's "CSV UTF-8"): upstream reads ``\\ufeffsource`` as a column name
      and reports it missing; ours reads the file as it would without the BOM;
    - a ``..`` component in a source that is also the physical path (no materialized_path):
      upstream refuses it when it resolves the file; ours keeps the identity as written and
      refuses an escape when the file is opened (materialize's path guard);
    - a negative index: upstream keeps ``-1`` (Python would read the last measurement);
      ours refuses it as not a read position;
    - an absolute ``materialized_path``: upstream accepts it; ours refuses it (a universe.csv
      must stay valid when the dataset folder moves);
    - a physical path spelled with backslashes (``materialized_path``, or the source standing
      in for it): upstream opens the raw spelling (on Linux, a file whose *name* contains
      ``\\``); ours opens the posix path the Windows author meant, so ``..\\x`` is an
      escape ours refuses where upstream sees a file name.
    """
    folder = tmp_path_factory.mktemp("u")
    data = case.data()
    theirs = _upstream_rows(data, folder)
    ours = _ours(data, folder)
    event(f"fault {case.fault}: upstream {theirs[0]} {theirs[1] if theirs[0] == 'error' else ''}")
    if case.bom and case.header[0] == "source":
        assert theirs[:2] == ("error", "missing_column"), theirs
        theirs = _upstream_rows(data[3:], folder)  # upstream's answer for the same text
    elif case.bom and theirs[0] == "ok":
        pytest.fail("upstream accepted a BOM before a non-source first column?")
    elif case.bom:
        theirs = _upstream_rows(data[3:], folder)
    if case.fault == "dotdot_source":
        assert theirs[:2] == ("error", "dotdot") and names(case.offending, theirs[2]), theirs
        assert ours[0] == "ok", ours
        return
    if case.fault == "absolute_path":
        assert theirs[0] == "ok", theirs
        assert ours[:2] == ("error", "absolute") and names(case.offending, ours[2]), ours
        return
    if case.fault == "bad_index" and case.offending == "-1":
        assert theirs[0] == "ok" and -1 in [r["index"] for r in theirs[1]], theirs
        assert ours[:2] == ("error", "bad_index") and names("-1", ours[2]), ours
        return
    if case.fault == "dotdot_path" and "\\" in case.offending:  # a name to upstream
        assert theirs[0] == "ok", theirs
        assert ours[:2] == ("error", "dotdot") and names(case.offending, ours[2]), ours
        return
    if case.fault in FAULT_KIND:
        kind = FAULT_KIND[case.fault]
        assert theirs[:2] == ("error", kind), f"upstream: {theirs}"
        assert ours[:2] == ("error", kind), f"ours: {ours} (upstream: {theirs[2]})"
        if case.fault == "missing_column":
            assert "index" in ours[2] and "index" in theirs[2]
        else:  # both name the offending cell (a duplicate: its source)
            assert names(case.offending, ours[2]), ours
            assert names(case.offending, theirs[2]), theirs
        return
    assert ours[0] == theirs[0] == "ok", f"for {data!r}:\n  ours: {ours}\n  upstream: {theirs}"
    uni, rows = ours[1], theirs[1]
    canon = sorted(rows, key=lambda r: (r["source"], r["index"]))
    refs = [SampleRef(source=r["source"], index=r["index"]) for r in canon]
    assert len(refs) >= 1
    assert uni.uids() == [r.uid for r in refs]
    assert uni.hash == upstream_universe_hash(refs)
    for pos, r in enumerate(canon):
        rel = uni.value("materialized_path", pos) if uni.has_column("materialized_path") else ""
        assert str((folder / posix(rel or uni.source(pos))).resolve()) == posix(
            r["materialized_path"])
        group = uni.value("group", pos) if uni.has_column("group") else ""
        assert group == (r["group"] or "")
