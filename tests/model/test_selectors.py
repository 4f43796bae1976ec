"""Selector resolution (dvc_cuvis.model.selectors), example by example: every kind, every message.

The differential tests (tests/model/test_differential.py) compare with cuvis-ai-core on random
cases; these pin the exact results and the exact texts a user reads (the stage and position
of a selector, the partial-match warning, the zero-match hint), so that a change to any of
them fails here with a readable diff.
"""

from __future__ import annotations

import enum
import logging
from typing import Any

import numpy as np
import pytest
from cuvis_ai_schemas.training.data import DataSplitConfig, SampleRef, Selector

from dvc_cuvis.errors import SelectorError
from dvc_cuvis.model.ids import MAX_RANGE_IDS, parse_id_range
from dvc_cuvis.model.selectors import (
    PartialMatch,
    Resolver,
    dedup_first,
    describe,
    expand_ids,
    norm_source,
    norm_sources,
    required_attrs,
    resolve_selectors,
    split_ids,
    walk,
)
from dvc_cuvis.model.universe import Universe

pytest.importorskip("cuvis_ai_core")  # the upstream reference implementation (plugin extra)
from cuvis_ai_core.data.selectors import _norm_source as upstream_norm_source
from cuvis_ai_core.data.selectors import required_attrs as upstream_required_attrs

HUGE = 2**62
LOGGER = "dvc_cuvis.model.selectors"
TAIL = " (a selector must match at least one sample; fix or remove it)"


def S(kind: str, **fields: Any) -> Selector:
    return Selector(kind=kind, **fields)


def small_universe() -> Universe:
    """d/a.cu3s 0..4 (dense), d/b.cu3s 1,3,5 (sparse), e/a.cu3s 0 (stem 'a' again)."""
    recs: list[dict[str, Any]] = [
        {"source": "d/a.cu3s", "index": i, "tags": "x" if i % 2 else "y",
         "category_ids": str(i % 3)} for i in range(5)]
    recs += [{"source": "d/b.cu3s", "index": i, "tags": "x;z", "category_ids": ""}
             for i in (1, 3, 5)]
    recs += [{"source": "e/a.cu3s", "index": 0, "tags": "", "category_ids": "2"}]
    return Universe.from_records(recs)


def uids(uni: Universe, positions: Any) -> list[str]:
    return uni.uids(np.asarray(positions, dtype=np.int64))


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


# -- PartialMatch.message -------------------------------------------------------------------


def test_partial_message_singular_and_plural_nouns_per_kind() -> None:
    one_index = PartialMatch("train[0]", "file_indices", "d/a.cu3s", 1, (7,))
    assert one_index.message() == (
        "train[0]: selector 'file_indices' of 'd/a.cu3s' matched 0 of 1 requested index; "
        "missing: 7")
    two_indices = PartialMatch("val[2]", "file_indices", "d/a.cu3s", 3, (7, 9))
    assert two_indices.message() == (
        "val[2]: selector 'file_indices' of 'd/a.cu3s' matched 1 of 3 requested indices; "
        "missing: 7, 9")
    one_source = PartialMatch("test[1]", "files", None, 1, ("x",))
    assert one_source.message() == (
        "test[1]: selector 'files' matched 0 of 1 requested source; missing: x")
    two_sources = PartialMatch("test[1]", "files", None, 2, ("x",))
    assert two_sources.message() == (
        "test[1]: selector 'files' matched 1 of 2 requested sources; missing: x")


def test_partial_message_names_the_source_only_when_there_is_one() -> None:
    assert PartialMatch("w", "files", "", 2, ("p",)).message() == (
        "w: selector 'files' matched 1 of 2 requested sources; missing: p")
    assert PartialMatch("w", "files", "s", 2, ("p",)).message() == (
        "w: selector 'files' of 's' matched 1 of 2 requested sources; missing: p")


@pytest.mark.parametrize(("n_missing", "shown", "more"), [
    (10, "0, 1, 2, 3, 4, 5, 6, 7, 8, 9", ""),
    (11, "0, 1, 2, 3, 4, 5, 6, 7, 8, 9", " (+1 more)"),
    (13, "0, 1, 2, 3, 4, 5, 6, 7, 8, 9", " (+3 more)"),
])
def test_partial_message_shows_ten_missing_ids_and_counts_the_rest(
        n_missing: int, shown: str, more: str) -> None:
    pm = PartialMatch("train[0]", "file_indices", "a", 20, tuple(range(n_missing)))
    assert pm.message() == (
        f"train[0]: selector 'file_indices' of 'a' matched {20 - n_missing} of 20 requested "
        f"indices; missing: {shown}{more}")


# -- path normalization ---------------------------------------------------------------------

PATHS = [
    "", "a", "d/a.cu3s", "./d/a.cu3s", "d/./a", "d//a", "d/a/", "d/x/../a", ".hidden/a",
    "d/.cfg", "C:/Data/A.cu3s", "c:\\data\\a.CU3S", "d\\A.cu3s", "C:relative", "x:/", "/abs/p",
    "//net/share", "a/..", "..", ".", "1:/not-a-drive", "Z:\\",
]


@pytest.mark.parametrize("path", PATHS)
def test_norm_source_is_upstreams_normalization(path: str) -> None:
    assert norm_source(path) == upstream_norm_source(path)


def test_norm_source_exact_values() -> None:
    assert norm_source("d/a.cu3s") == "d/a.cu3s"
    assert norm_source("./d/x/../A.cu3s") == "d/A.cu3s"  # posix-looking: case kept
    assert norm_source("C:\\Data\\A.cu3s") == "c:/data/a.cu3s"  # windows-looking: casefolded
    assert norm_source("D\\A") == "d/a"
    assert norm_source("C:/Data/A") == "c:/data/a"
    assert norm_source("") == "."
    assert norm_source("d/a/") == "d/a"


@pytest.mark.parametrize("paths", [
    [], ["a", "b/c"], ["a", ""], ["./a", "b"], ["a", "b/"], ["a\\b", "c"], ["a//b"],
    ["a/./b"], ["a", ".b"], ["a/", "b"], ["x", "C:/A"], ["x", "c:\\a"], ["ab:/c"],
    ["a", "b/.."], ["q:/Z"], ["a/b", "1:/x"],
])
def test_norm_sources_is_norm_source_of_each(paths: list[str]) -> None:
    assert norm_sources(paths) == [upstream_norm_source(p) for p in paths]


def test_norm_sources_returns_a_new_list_in_the_common_case() -> None:
    paths = ["d/a.cu3s", "d/b.cu3s"]
    out = norm_sources(paths)
    assert out == paths and out is not paths


# -- ids --------------------------------------------------------------------------------------


def test_parse_id_range_grammar() -> None:
    assert parse_id_range("3") is None
    assert parse_id_range("a-b") is None
    assert parse_id_range("1-2:") is None
    assert parse_id_range("-1-2") is None
    assert parse_id_range("2-4") == range(2, 5)
    assert parse_id_range(" 2-4 ") == range(2, 5)
    assert parse_id_range("0-10:3") == range(0, 11, 3)
    assert parse_id_range("5-5") == range(5, 6)
    assert parse_id_range("\u0663-\u0665") == range(3, 6)  # Arabic-Indic digits, as upstream


def test_parse_id_range_errors() -> None:
    with pytest.raises(SelectorError) as info:
        parse_id_range("1-4:0")
    assert str(info.value) == "range selector '1-4:0': step must be > 0"
    with pytest.raises(SelectorError) as info:
        parse_id_range("5-4")
    assert str(info.value) == "range selector '5-4': start 5 must be <= stop 4"


def test_parse_id_range_limit_is_exactly_max_range_ids() -> None:
    assert MAX_RANGE_IDS == 10_000_000
    assert len(parse_id_range(f"0-{MAX_RANGE_IDS - 1}") or ()) == MAX_RANGE_IDS
    assert len(parse_id_range(f"1-{2 * MAX_RANGE_IDS}:2") or ()) == MAX_RANGE_IDS
    with pytest.raises(SelectorError) as info:
        parse_id_range(f"0-{MAX_RANGE_IDS}")
    assert str(info.value) == (
        "range selector '0-10000000' expands to 10000001 ids (at most 10,000,000); split it up")


def test_split_ids_keeps_order_and_duplicates() -> None:
    small, huge = split_ids([5, 1, 1, "2-3", "7-9:2", 0])
    assert small.dtype == np.int64
    assert small.tolist() == [5, 1, 1, 2, 3, 7, 9, 0] and huge == []
    small, huge = split_ids([])
    assert small.tolist() == [] and small.dtype == np.int64 and huge == []


def test_split_ids_long_and_stepped_ranges() -> None:
    small, _ = split_ids([3, "10-5009", 1])  # a long run between single ids
    assert small.tolist() == [3, *range(10, 5010), 1]
    small, _ = split_ids(["0-4096", "0-4097"])
    assert small.tolist() == [*range(4097), *range(4098)]
    small, _ = split_ids(["0-20000:5000", 2])
    assert small.tolist() == [0, 5000, 10000, 15000, 20000, 2]
    small, _ = split_ids(["1-8193:2"])  # a long stepped range: 4097 ids
    assert small.dtype == np.int64 and small.tolist() == list(range(1, 8194, 2))
    small, _ = split_ids([5, "0-8192:2", "7-7"])
    assert small.dtype == np.int64 and small.tolist() == [5, *range(0, 8193, 2), 7]


def test_long_stepped_dir_indices_resolve_to_rows() -> None:
    uni = Universe.from_records({"source": "s", "index": i} for i in range(8200))
    got = Resolver(uni).resolve([S("dir_indices", ids=["8199-8199", "0-8192:2"])])
    assert got.dtype == np.int64
    assert uni.uids(got)[:3] == ["s#8199", "s#0", "s#2"] and len(got) == 4098


def test_split_ids_sets_huge_ids_aside() -> None:
    small, huge = split_ids([HUGE + 1, 3, HUGE - 1, f"{HUGE - 1}-{HUGE + 1}"])
    assert small.tolist() == [3, HUGE - 1, HUGE - 1] and huge == [HUGE + 1, HUGE, HUGE + 1]
    small, huge = split_ids([f"{2**53}-{2**53 + 2}"])  # beyond float64's exact integers
    assert small.tolist() == [2**53, 2**53 + 1, 2**53 + 2] and huge == []
    # only huge ids (ranges reaching 2**62, no int to send the ids down the slow path)
    small, huge = split_ids([f"{HUGE}-{HUGE + 1}"])
    assert small.dtype == np.int64 and small.tolist() == [] and huge == [HUGE, HUGE + 1]
    small, huge = split_ids([f"{HUGE - 1}-{HUGE}"])
    assert small.tolist() == [HUGE - 1] and huge == [HUGE]
    small, huge = split_ids([HUGE, HUGE - 1])  # 2**62 itself is set aside, as an int too
    assert small.tolist() == [HUGE - 1] and huge == [HUGE]
    big = enum.IntEnum("Big", {"X": HUGE + 3}).X  # an int subclass comes back a plain int
    small, huge = split_ids([big])
    assert huge == [HUGE + 3] and [type(h) for h in huge] == [int]
    with pytest.raises(SelectorError, match=f"id {HUGE} is too large to be a read position"):
        expand_ids([HUGE])


def test_split_ids_error_messages_name_the_kind() -> None:
    with pytest.raises(SelectorError) as info:
        split_ids([1, "abc"], kind="dir_indices")
    assert str(info.value) == "selector 'dir_indices' ids must be ints or 'a-b' ranges, got 'abc'"
    with pytest.raises(SelectorError) as info:
        split_ids([1, -2])
    assert str(info.value) == "selector 'file_indices' index -2 must be >= 0"
    with pytest.raises(SelectorError) as info:
        split_ids([1.5])  # type: ignore[list-item]
    assert str(info.value) == "selector 'file_indices' ids must be ints or 'a-b' ranges, got 1.5"
    with pytest.raises(SelectorError, match="step must be > 0"):
        split_ids([-1, "abc", "3-1:0"])  # every range first, as upstream
    with pytest.raises(SelectorError, match="got 'abc'"):
        split_ids(["abc", -1])
    with pytest.raises(SelectorError) as info:
        split_ids(["5-4"])  # only ranges: the error all the same
    assert str(info.value) == "range selector '5-4': start 5 must be <= stop 4"
    with pytest.raises(SelectorError) as info:
        split_ids([2, "3-1"])
    assert str(info.value) == "range selector '3-1': start 3 must be <= stop 1"


def test_expand_ids() -> None:
    assert expand_ids([2, "4-5"]).tolist() == [2, 4, 5]
    with pytest.raises(SelectorError) as info:
        expand_ids([1, HUGE + 7, HUGE + 3])
    assert str(info.value) == (
        f"selector 'file_indices' id {HUGE + 7} is too large to be a read position")
    with pytest.raises(SelectorError) as info:
        expand_ids([HUGE], kind="dir_indices")
    assert str(info.value) == f"selector 'dir_indices' id {HUGE} is too large to be a read position"
    with pytest.raises(SelectorError) as info:
        expand_ids(["x"], kind="dir_indices")
    assert str(info.value) == "selector 'dir_indices' ids must be ints or 'a-b' ranges, got 'x'"
    with pytest.raises(SelectorError) as info:
        expand_ids(["x"])
    assert str(info.value) == "selector 'file_indices' ids must be ints or 'a-b' ranges, got 'x'"


# -- the tree -------------------------------------------------------------------------------


def test_required_attrs_per_kind_agrees_with_upstream() -> None:
    cases = [
        DataSplitConfig(train=[S("all")]),
        DataSplitConfig(val=[S("tag", any_of=["x"])]),
        DataSplitConfig(test=[S("categories", any_of=["c"])]),
        DataSplitConfig(predict=[S("union", of=[S("all"), S("tag", any_of=["x"])])]),
        DataSplitConfig(train=[S("tag", any_of=["x"])], val=[S("categories", any_of=["c"])]),
    ]
    got = [required_attrs(c) for c in cases]
    assert got == [frozenset(), {"tags"}, {"category_ids"}, {"tags"}, {"tags", "category_ids"}]
    assert got == [upstream_required_attrs(c) for c in cases]


def test_walk_visits_stages_in_order_and_operands_depth_first() -> None:
    cfg = DataSplitConfig(
        predict=[S("glob", pattern="p")],
        test=[S("glob", pattern="t")],
        val=[S("intersect", of=[S("glob", pattern="v1"),
                                S("union", of=[S("glob", pattern="v2"),
                                               S("glob", pattern="v3")])]),
             S("glob", pattern="v4")],
        train=[S("glob", pattern="r")],
    )
    assert [s.pattern or s.kind.value for s in walk(cfg)] == [
        "r", "intersect", "v1", "union", "v2", "v3", "v4", "t", "p"]


def test_describe_every_kind() -> None:
    assert describe(S("file_indices", source="d/a", ids=[1])) == "file_indices(source='d/a')"
    assert describe(S("files", paths=["a"])) == "files('a')"
    assert describe(S("files", paths=["a", "b", "c"])) == "files('a', 'b', 'c')"
    assert describe(S("files", paths=["a", "b", "c", "d"])) == "files('a', 'b', 'c', ...)"
    assert describe(S("glob", pattern="*.cu3s")) == "glob('*.cu3s')"
    assert describe(S("tag", any_of=["x", "y"])) == "tag(x, y)"
    assert describe(S("categories", any_of=["dent"])) == "categories(dent)"
    assert describe(S("stems", stems=["a", "b", "c"])) == "stems(a, b, c)"
    assert describe(S("stems", stems=["a", "b", "c", "d"])) == "stems(a, b, c, ...)"
    assert describe(S("dir_indices", ids=[0])) == "dir_indices"
    assert describe(S("all")) == "all"
    assert describe(S("union", of=[S("all")])) == "union"


# -- resolution, one kind at a time ---------------------------------------------------------


def test_leaf_kinds_select_in_universe_order() -> None:
    uni = small_universe()
    r = Resolver(uni, {"bg": 0, "one": 1, "two": 2})
    got = {
        "all": r.select(S("all")),
        "stems": r.select(S("stems", stems=["a", "nope"])),
        "stems_b": r.select(S("stems", stems=["b"])),
        "tag": r.select(S("tag", any_of=["x"])),
        "tags": r.select(S("tag", any_of=["z", "y"])),
        "cats": r.select(S("categories", any_of=["two", "one"])),
        "glob_source": r.select(S("glob", pattern="d/*")),
        "glob_stem": r.select(S("glob", pattern="b")),
    }
    assert {k: v.tolist() for k, v in got.items()} == {
        "all": list(range(9)),
        "stems": [0, 1, 2, 3, 4, 8],
        "stems_b": [5, 6, 7],
        "tag": [1, 3, 5, 6, 7],
        "tags": [0, 2, 4, 5, 6, 7],
        "cats": [1, 2, 4, 8],
        "glob_source": [0, 1, 2, 3, 4, 5, 6, 7],
        "glob_stem": [5, 6, 7],
    }
    assert all(v.dtype == np.int64 for v in got.values())
    assert r.warnings == []


def test_an_empty_glob_matches_nothing_as_upstream() -> None:
    from cuvis_ai_core.data.selectors import resolve_selectors as upstream

    uni = Universe.from_records([{"source": s, "index": 0} for s in ("XXXX", "d/XXXX.cu3s")])
    refs = [SampleRef(source=uni.source(p), index=0) for p in range(len(uni))]
    sel = S("glob", pattern="")
    with pytest.raises(ValueError, match="matched 0 samples"):
        upstream([sel], refs)
    with pytest.raises(SelectorError) as info:
        Resolver(uni).resolve([sel])
    assert str(info.value) == "stage[0]: selector glob('') matched 0 samples" + TAIL


def test_tag_index_is_built_once_per_attribute() -> None:
    uni = small_universe()
    r = Resolver(uni, {"two": 2})
    assert r.select(S("tag", any_of=["z"])).tolist() == [5, 6, 7]
    assert r.select(S("categories", any_of=["two"])).tolist() == [2, 8]
    assert r.select(S("tag", any_of=["y"])).tolist() == [0, 2, 4]
    assert r.select(S("tag", any_of=["missing"])).tolist() == []


def test_files_selects_whole_sources_and_reports_the_missing_ones(
        caplog: pytest.LogCaptureFixture) -> None:
    uni = small_universe()
    r = Resolver(uni)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    got = r.resolve([S("files", paths=["e/a.cu3s", "./d/b.cu3s", "nope", "zz/q"])],
                    stage="val")
    assert uids(uni, got) == ["d/b.cu3s#1", "d/b.cu3s#3", "d/b.cu3s#5", "e/a.cu3s#0"]
    text = ("val[0]: selector 'files' matched 2 of 4 requested sources; "
            "missing: nope, zz/q")
    assert [w.message() for w in r.warnings] == [text]
    assert r.warnings[0] == PartialMatch("val[0]", "files", None, 4, ("nope", "zz/q"))
    assert messages(caplog) == [text]


def test_files_all_present_or_all_absent_gives_no_warning() -> None:
    uni = small_universe()
    r = Resolver(uni)
    assert r.select(S("files", paths=["d/a.cu3s", "e/a.cu3s"])).tolist() == [0, 1, 2, 3, 4, 8]
    assert r.select(S("files", paths=["x", "y"])).tolist() == []
    assert r.warnings == []


def test_file_indices_dense_sparse_unsorted_and_repeated_ids() -> None:
    uni = small_universe()
    r = Resolver(uni)
    assert r.select(S("file_indices", source="d/a.cu3s", ids=[4, 0, 2, 2])).tolist() == [0, 2, 4]
    assert r.select(S("file_indices", source="d/a.cu3s", ids=["0-4"])).tolist() == [0, 1, 2, 3, 4]
    assert r.select(S("file_indices", source="d/a.cu3s", ids=[3])).tolist() == [3]
    assert r.select(S("file_indices", source="d/b.cu3s", ids=[1, 5])).tolist() == [5, 7]
    assert r.select(S("file_indices", source="d/b.cu3s", ids=[0, 1, 2])).tolist() == [5]
    assert r.select(S("file_indices", source="./d/b.cu3s", ids=[3])).tolist() == [6]
    assert r.select(S("file_indices", source="e/a.cu3s", ids=[0])).tolist() == [8]
    assert r.select(S("file_indices", source="nope", ids=[0])).tolist() == []
    assert [w.missing for w in r.warnings] == [(0, 2)]


def test_file_indices_partial_lists_missing_ids_sorted_then_huge_ones(
        caplog: pytest.LogCaptureFixture) -> None:
    uni = small_universe()
    r = Resolver(uni)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    sel = S("file_indices", source="d/b.cu3s", ids=[HUGE + 2, 9, 5, 2, HUGE + 2, HUGE])
    assert r.resolve([sel], stage="train").tolist() == [7]
    text = ("train[0]: selector 'file_indices' of 'd/b.cu3s' matched 1 of 5 requested "
            f"indices; missing: 2, 9, {HUGE}, {HUGE + 2}")
    assert messages(caplog) == [text]
    (w,) = r.warnings
    assert w == PartialMatch("train[0]", "file_indices", "d/b.cu3s", 5, (2, 9, HUGE, HUGE + 2))
    # every plain id found but a huge one asked for: still partial
    r2 = Resolver(uni)
    assert r2.select(S("file_indices", source="d/a.cu3s", ids=[0, HUGE]), "w").tolist() == [0]
    assert [x.missing for x in r2.warnings] == [(HUGE,)]


def test_file_indices_over_sources_sharing_a_normalized_name() -> None:
    # two spellings of one Windows path are two sources that normalize alike
    uni = Universe.from_records([
        {"source": "C:/D/a.cu3s", "index": 0}, {"source": "C:/D/a.cu3s", "index": 2},
        {"source": "c:/d/A.cu3s", "index": 1}, {"source": "c:/d/A.cu3s", "index": 2},
        {"source": "c:/e/b.cu3s", "index": 0},
    ])
    r = Resolver(uni)
    got = r.select(S("file_indices", source="C:\\D\\A.CU3S", ids=[2, 1]))
    assert uids(uni, got) == ["C:/D/a.cu3s#2", "c:/d/A.cu3s#1", "c:/d/A.cu3s#2"]
    assert r.warnings == []
    got = r.select(S("file_indices", source="c:/d/a.cu3s", ids=[0, 3]), "w")
    assert uids(uni, got) == ["C:/D/a.cu3s#0"]
    assert [w.message() for w in r.warnings] == [
        "w: selector 'file_indices' of 'c:/d/a.cu3s' matched 1 of 2 requested indices; "
        "missing: 3"]
    both = r.select(S("files", paths=["c:/d/a.cu3s"]))
    assert uids(uni, both) == ["C:/D/a.cu3s#0", "C:/D/a.cu3s#2", "c:/d/A.cu3s#1",
                               "c:/d/A.cu3s#2"]
    assert uids(uni, r.select(S("files", paths=["C:/E/B.cu3s"]))) == ["c:/e/b.cu3s#0"]


def test_shared_normalized_names_count_as_found(caplog: pytest.LogCaptureFixture) -> None:
    uni = Universe.from_records([
        {"source": "C:/D/a.cu3s", "index": 0}, {"source": "c:/d/A.cu3s", "index": 1},
        {"source": "c:/e/b.cu3s", "index": 0},
    ])
    r = Resolver(uni)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    got = r.resolve([S("files", paths=["c:\\d\\a.cu3s", "C:/E/b.cu3s", "c:/nope"])],
                    stage="train")
    assert got.tolist() == [0, 1, 2]
    text = "train[0]: selector 'files' matched 2 of 3 requested sources; missing: c:/nope"
    assert messages(caplog) == [text]
    assert r.resolve([S("files", paths=["c:/d/a.cu3s", "c:/nope"])], stage="val").tolist() == [
        0, 1]
    assert [w.missing for w in r.warnings] == [("c:/nope",), ("c:/nope",)]
    with pytest.raises(SelectorError) as info:
        r.resolve([S("file_indices", source="C:/D/A.CU3S", ids=[5])], stage="test")
    assert str(info.value) == (
        "test[0]: selector file_indices(source='C:/D/A.CU3S') matched 0 samples — none of its "
        "ids exist in that source" + TAIL)


def test_file_indices_sorted_repeats_and_out_of_order_ids() -> None:
    uni = small_universe()
    r = Resolver(uni)
    assert r.select(S("file_indices", source="d/a.cu3s", ids=[1, 2, 2])).tolist() == [1, 2]
    assert r.select(S("file_indices", source="d/a.cu3s", ids=[1, 3, 2])).tolist() == [1, 2, 3]
    assert r.select(S("file_indices", source="d/b.cu3s", ids=[3, 3])).tolist() == [6]
    assert r.warnings == []
    with pytest.raises(SelectorError) as info:
        r.resolve([S("file_indices", source="d/a.cu3s", ids=[1, "abc"])])
    assert str(info.value) == "selector 'file_indices' ids must be ints or 'a-b' ranges, got 'abc'"


def test_file_indices_over_two_dense_sources_sharing_a_name() -> None:
    uni = Universe.from_records([{"source": s, "index": i}
                                 for s in ("C:/D/a.cu3s", "c:/d/A.cu3s") for i in (0, 1)])
    got = Resolver(uni).select(S("file_indices", source="c:/d/a.cu3s", ids=[1]))
    assert uids(uni, got) == ["C:/D/a.cu3s#1", "c:/d/A.cu3s#1"]


def test_an_empty_source_names_no_source() -> None:
    uni = Universe.from_records([{"source": s, "index": 0} for s in ("XXXX", "d/a")])
    with pytest.raises(SelectorError) as info:
        Resolver(uni).resolve([S("file_indices", source="", ids=[0])])
    assert str(info.value).startswith("stage[0]: selector file_indices(source='') matched 0")


@pytest.mark.parametrize(("layout", "source", "ids", "expected"), [
    ({"a": (0, 1), "b": (0, 3)}, "a", [0, 3], ["a#0"]),
    ({"s": (0, 2, 5)}, "s", [0, 1], ["s#0"]),
    ({"s": (0, 1, 4)}, "s", [0, 2], ["s#0"]),
    ({"a": (0, 1, 2), "b": (0, 1, 8)}, "b", [0, 2], ["b#0"]),
    ({"a": (0, 1, 2), "b": (0, 1)}, "a", [0, 3], ["a#0"]),
    ({"a": (0, 1, 2), "b": (0,)}, "b", [0, 1], ["b#0"]),
    ({"a": (0, 1, 2), "b": (0, 1)}, "b", [0, 1], ["b#0", "b#1"]),
])
def test_file_indices_on_dense_blocks_match_exactly_the_ids_they_hold(
        layout: dict[str, tuple[int, ...]], source: str, ids: list[int],
        expected: list[str]) -> None:
    uni = Universe.from_records([{"source": s, "index": i} for s, idx in layout.items()
                                 for i in idx])
    r = Resolver(uni)
    assert uids(uni, r.select(S("file_indices", source=source, ids=ids), "w")) == expected
    assert [w.missing for w in r.warnings] == ([] if len(expected) == len(ids) else [
        tuple(i for i in ids if f"{source}#{i}" not in expected)])


def test_file_indices_never_match_a_whole_file_sample() -> None:
    uni = Universe.from_records([{"source": "w.npz", "index": None},
                                 {"source": "x.cu3s", "index": 0}])
    r = Resolver(uni)
    assert r.select(S("file_indices", source="w.npz", ids=[0])).tolist() == []
    assert r.select(S("file_indices", source="x.cu3s", ids=[0])).tolist() == [1]
    assert r.select(S("files", paths=["w.npz"])).tolist() == [0]


def test_file_indices_on_a_block_not_starting_at_zero() -> None:
    uni = Universe.from_records({"source": "s", "index": i} for i in (2, 3, 4))
    r = Resolver(uni)
    assert r.select(S("file_indices", source="s", ids=[2])).tolist() == [0]
    assert r.select(S("file_indices", source="s", ids=[0, 1, 2]), "w").tolist() == [0]
    uni = Universe.from_records({"source": "s", "index": i} for i in (0, 1, 5))
    r = Resolver(uni)
    assert r.select(S("file_indices", source="s", ids=[1, 2]), "w").tolist() == [1]
    assert r.select(S("file_indices", source="s", ids=[5])).tolist() == [2]


def test_stems_shared_by_several_sources_select_all_of_them() -> None:
    uni = Universe.from_records([{"source": s, "index": 0}
                                 for s in ("p/a.cu3s", "q/a.cu3s", "q/b.cu3s", "r/a.npz")])
    r = Resolver(uni)
    assert r.select(S("stems", stems=["a"])).tolist() == [0, 1, 3]
    assert r.select(S("stems", stems=["b", "a"])).tolist() == [0, 1, 2, 3]
    assert r.select(S("stems", stems=["b"])).tolist() == [2]


def test_multi_frame_blocks_come_out_whole_and_in_order() -> None:
    uni = Universe.from_records([{"source": s, "index": i}
                                 for s, n in (("a", 3), ("b", 1), ("c", 2)) for i in range(n)])
    r = Resolver(uni)
    assert r.select(S("files", paths=["c", "a"])).tolist() == [0, 1, 2, 4, 5]
    assert r.select(S("files", paths=["b", "c"])).tolist() == [3, 4, 5]
    assert r.select(S("files", paths=["b"])).tolist() == [3]
    assert r.select(S("glob", pattern="[bc]")).tolist() == [3, 4, 5]


def test_dir_indices_keep_request_order_and_drop_repeats() -> None:
    uni = small_universe()
    r = Resolver(uni)
    assert r.select(S("dir_indices", ids=[8, 0, 0, "2-3", 8])).tolist() == [8, 0, 2, 3]


def test_dir_indices_out_of_range_names_the_positions_and_the_fix() -> None:
    uni = small_universe()
    fix = ("; positions count rows of the canonical universe — regenerate the split "
           "(`dvc-cuvis bake --rule`) after the data changed")
    with pytest.raises(SelectorError) as info:
        Resolver(uni).resolve([S("all"), S("dir_indices", ids=[9, 1, 12, HUGE])], stage="val")
    assert str(info.value) == (
        f"val[1]: dir_indices positions [9, 12, {HUGE}] out of range (universe size 9)" + fix)
    with pytest.raises(SelectorError) as info:
        Resolver(uni).select(S("dir_indices", ids=["9-18"]), "w")
    assert str(info.value) == (
        "w: dir_indices positions [9, 10, 11, 12, 13, 14, 15, 16, 17, 18] out of range "
        "(universe size 9)" + fix)
    with pytest.raises(SelectorError) as info:
        Resolver(uni).select(S("dir_indices", ids=["9-19"]), "w")
    assert str(info.value) == (
        "w: dir_indices positions [9, 10, 11, 12, 13, 14, 15, 16, 17, 18] (+1 more) out of "
        "range (universe size 9)" + fix)
    with pytest.raises(SelectorError) as info:
        Resolver(uni).select(S("dir_indices", ids=["9-21"]), "w")
    assert "(+3 more) out of range" in str(info.value)
    with pytest.raises(SelectorError) as info:
        Resolver(uni).select(S("dir_indices", ids=[0, "x"]), "w")
    assert str(info.value) == "selector 'dir_indices' ids must be ints or 'a-b' ranges, got 'x'"


def test_categories_need_a_map_and_known_names() -> None:
    uni = small_universe()
    with pytest.raises(SelectorError) as info:
        Resolver(uni).resolve([S("categories", any_of=["one"])], stage="test")
    assert str(info.value) == (
        "test[0]: a 'categories' selector needs a category name->id map, but none was given "
        "(pass --categories with a COCO json or the enumerate metrics)")
    with pytest.raises(SelectorError) as info:
        Resolver(uni, {"one": 1, "bg": 0}).resolve(
            [S("all"), S("categories", any_of=["one", "dent"])], stage="train")
    assert str(info.value) == (
        "train[1]: category 'dent' not in dataset categories ['bg', 'one']")
    assert Resolver(uni, {"one": 1}).select(S("categories", any_of=["one", "one"])).tolist() == [
        1, 4]


# -- set operations -------------------------------------------------------------------------


def test_set_operations_with_three_operands() -> None:
    uni = small_universe()
    r = Resolver(uni)
    a_rows = S("files", paths=["d/a.cu3s"])
    tag_x = S("tag", any_of=["x"])
    dirs = S("dir_indices", ids=[7, 3, 1, 0])
    union = r.select(S("union", of=[dirs, tag_x, a_rows]))
    assert union.tolist() == [7, 3, 1, 0, 5, 6, 2, 4]
    assert r.select(S("union", of=[tag_x])).tolist() == [1, 3, 5, 6, 7]
    exc = r.select(S("except", of=[dirs, tag_x, S("files", paths=["nope"])]))
    assert exc.tolist() == [0]
    exc = r.select(S("except", of=[S("all"), tag_x, a_rows]))
    assert exc.tolist() == [8]
    inter = r.select(S("intersect", of=[dirs, a_rows, tag_x]))
    assert inter.tolist() == [3, 1]
    inter = r.select(S("intersect", of=[S("all"), a_rows, S("dir_indices", ids=[4, 5, 0])]))
    assert inter.tolist() == [0, 4]
    inter = r.select(S("intersect", of=[tag_x, S("files", paths=["nope"])]))
    assert inter.tolist() == []


def test_a_set_operation_always_has_operands() -> None:
    """Why ``_setop`` has no branch for a union without operands: the schema refuses one."""
    from pydantic import ValidationError

    for kind in ("union", "except", "intersect"):
        with pytest.raises(ValidationError, match=f"selector kind '{kind}' requires non-empty"):
            S(kind)


def test_operands_matching_nothing_keep_integer_positions() -> None:
    uni = small_universe()
    r = Resolver(uni, {"nine": 9})
    nothing = [S("tag", any_of=["missing"]), S("categories", any_of=["nine"]),
               S("files", paths=["nope"]), S("stems", stems=["nope"]),
               S("file_indices", source="nope", ids=[0]), S("glob", pattern="nope")]
    for empty in nothing:
        got = r.resolve([S("union", of=[empty, S("files", paths=["e/a.cu3s"])])])
        assert got.dtype == np.int64 and uids(uni, got) == ["e/a.cu3s#0"], describe(empty)
        got = r.resolve([S("union", of=[S("files", paths=["e/a.cu3s"]),
                                        S("except", of=[empty, S("all")])])])
        assert got.dtype == np.int64 and got.tolist() == [8], describe(empty)
        got = r.select(S("intersect", of=[empty, S("all")]))
        assert got.dtype == np.int64 and got.tolist() == [], describe(empty)


def test_operands_are_named_by_their_path_in_messages(caplog: pytest.LogCaptureFixture) -> None:
    uni = small_universe()
    r = Resolver(uni)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    sel = S("except", of=[S("all"), S("union", of=[
        S("files", paths=["nope"]), S("file_indices", source="d/a.cu3s", ids=[1, 70])])])
    assert r.resolve([S("all"), sel], stage="train").tolist() == list(range(9))
    text = ("train[1].of[1].of[1]: selector 'file_indices' of 'd/a.cu3s' matched 1 of 2 "
            "requested indices; missing: 70")
    assert messages(caplog) == [text]
    assert [w.where for w in r.warnings] == ["train[1].of[1].of[1]"]
    bad = S("intersect", of=[S("all"), S("dir_indices", ids=[99])])
    with pytest.raises(SelectorError) as info:
        r.resolve([bad], stage="val")
    assert str(info.value).startswith(
        "val[0].of[1]: dir_indices positions [99] out of range (universe size 9)")


# -- a stage ----------------------------------------------------------------------------------


def test_a_stage_is_the_union_of_its_selectors_first_occurrence_wins() -> None:
    uni = small_universe()
    r = Resolver(uni)
    got = r.resolve([S("files", paths=["e/a.cu3s"]), S("dir_indices", ids=[3, 8, 2]),
                     S("all")])
    assert got.tolist() == [8, 3, 2, 0, 1, 4, 5, 6, 7]
    assert r.resolve([S("files", paths=["d/b.cu3s"])]).tolist() == [5, 6, 7]
    empty = r.resolve([])
    assert empty.tolist() == [] and empty.dtype == np.int64


def test_zero_match_messages_name_the_selector_and_the_fix() -> None:
    uni = small_universe()
    r = Resolver(uni)

    def error(sel: Selector, stage: str = "train") -> str:
        with pytest.raises(SelectorError) as info:
            r.resolve([S("all"), sel], stage=stage)
        return str(info.value)

    assert error(S("files", paths=["d/c.cu3s"])) == (
        "train[1]: selector files('d/c.cu3s') matched 0 samples — source 'd/c.cu3s' is not "
        "in the universe; did you mean 'd/b.cu3s'?" + TAIL)
    # a source as far as 'd/qqqq.c' (difflib 0.5 to 'd/b.cu3s') gets no path suggestion:
    # sources take the stricter 0.6, not the 0.5 keys and flags take
    assert error(S("files", paths=["d/qqqq.c"])) == (
        "train[1]: selector files('d/qqqq.c') matched 0 samples — source 'd/qqqq.c' is not "
        "in the universe" + TAIL)
    assert error(S("files", paths=["zzzzzzzz", "d/c.cu3s"])) == (
        "train[1]: selector files('zzzzzzzz', 'd/c.cu3s') matched 0 samples — source "
        "'zzzzzzzz' is not in the universe" + TAIL)
    assert error(S("file_indices", source="e/b.cu3s", ids=[0]), "val") == (
        "val[1]: selector file_indices(source='e/b.cu3s') matched 0 samples — source "
        "'e/b.cu3s' is not in the universe; did you mean 'e/a.cu3s'?" + TAIL)
    assert error(S("file_indices", source="./d/a.cu3s", ids=[77])) == (
        "train[1]: selector file_indices(source='./d/a.cu3s') matched 0 samples — none of "
        "its ids exist in that source" + TAIL)
    assert error(S("glob", pattern="zz")) == (
        "train[1]: selector glob('zz') matched 0 samples" + TAIL)
    assert error(S("stems", stems=["q"])) == "train[1]: selector stems(q) matched 0 samples" + TAIL
    assert error(S("except", of=[S("all"), S("all")]), "test") == (
        "test[1]: selector except matched 0 samples" + TAIL)


def test_resolve_selectors_defaults_and_category_map() -> None:
    uni = small_universe()
    got = resolve_selectors([S("categories", any_of=["one"]), S("dir_indices", ids=[0])], uni,
                            name_to_id={"one": 1})
    assert got.tolist() == [1, 4, 0]
    got = resolve_selectors([S("glob", pattern="b")], uni, stage="val")
    assert got.tolist() == [5, 6, 7]
    with pytest.raises(SelectorError) as info:
        resolve_selectors([S("glob", pattern="q")], uni)
    assert str(info.value) == "stage[0]: selector glob('q') matched 0 samples" + TAIL
    with pytest.raises(SelectorError) as info:
        resolve_selectors([S("glob", pattern="q")], uni, stage="predict")
    assert str(info.value).startswith("predict[0]: selector glob('q')")


def test_library_defaults_name_a_stage_and_a_selector() -> None:
    uni = small_universe()
    r = Resolver(uni)
    with pytest.raises(SelectorError) as info:
        r.resolve([S("stems", stems=["q"])])
    assert str(info.value) == "stage[0]: selector stems(q) matched 0 samples" + TAIL
    with pytest.raises(SelectorError) as info:
        r.select(S("dir_indices", ids=[9]))
    assert str(info.value).startswith("selector: dir_indices positions [9] out of range")
    r.select(S("files", paths=["d/a.cu3s", "q"]))
    assert [w.message() for w in r.warnings] == [
        "selector: selector 'files' matched 1 of 2 requested sources; missing: q"]


def test_dedup_first_keeps_first_occurrences_in_place() -> None:
    def dd(values: list[int]) -> list[int]:
        return dedup_first(np.asarray(values, dtype=np.int64)).tolist()

    assert dd([]) == [] and dd([4]) == [4] and dd([1, 2, 9]) == [1, 2, 9]
    assert dd([3, 1, 3, 2, 1, 0]) == [3, 1, 2, 0]
    assert dd([1, 1]) == [1]
    assert dd([2, 1]) == [2, 1]
    assert dd([0, 5, 3, 3, 5, 1]) == [0, 5, 3, 1]  # all above the first, not increasing


def test_a_stage_matches_upstream_on_the_small_universe() -> None:
    from cuvis_ai_core.data.selectors import resolve_selectors as upstream

    uni = small_universe()
    refs = [SampleRef(source=uni.source(p), index=uni.index(p), tags=list(uni.tags[p]),
                      category_ids=list(uni.category_ids[p])) for p in range(len(uni))]
    stage = [S("dir_indices", ids=[6, 2]), S("tag", any_of=["z"]),
             S("except", of=[S("stems", stems=["a"]), S("categories", any_of=["two"])]),
             S("file_indices", source="d/b.cu3s", ids=["1-5:2"])]
    names = {"two": 2}
    ours = uni.uids(resolve_selectors(stage, uni, name_to_id=names))
    assert ours == [r.uid for r in upstream(stage, refs, name_to_id=names)]
    assert ours == ["d/b.cu3s#3", "d/a.cu3s#2", "d/b.cu3s#1", "d/b.cu3s#5", "d/a.cu3s#0",
                    "d/a.cu3s#1", "d/a.cu3s#3", "d/a.cu3s#4"]
