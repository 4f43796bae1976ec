"""universe.csv reading, validation, canonical order, hash and writing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from cuvis_ai_schemas.training.data import SampleRef
from hypothesis import given, settings
from hypothesis import strategies as st

from dvc_cuvis.errors import UniverseError
from dvc_cuvis.model.universe import Universe, uid, universe_hash
from dvc_cuvis.model.universe_io import (
    format_universe,
    parse_universe_bytes,
    read_universe,
    write_universe,
)
from tests.helpers.files import FIXTURES

pytest.importorskip("cuvis_ai_core")  # the upstream reference implementation (plugin extra)
from cuvis_ai_core.data.splits_io import universe_hash as upstream_hash


def parse(text: str, **kw) -> Universe:
    return parse_universe_bytes(text.encode("utf-8"), path=Path("u.csv"), **kw)


def test_uid_follows_sampleref_rule() -> None:
    for source, index, label in [("a.cu3s", 3, None), ("a.cu3s", 3, 3), ("a.cu3s", 3, 7),
                                 ("x.tif", None, None)]:
        ref = SampleRef(source=source, index=index, label_id=label)
        assert uid(source, index, label) == ref.uid


def test_empty_hash_is_sha256_of_nothing() -> None:
    assert universe_hash([]) == hashlib.sha256(b"").hexdigest()


def test_golden_hash_of_gui_fixture() -> None:
    pinned = json.loads((FIXTURES / "gui_authored_splits.json").read_text())["universe_hash"]
    rows = [{"source": f"{{DATA_DIR}}/{d}", "index": i}
            for d in ("day3/b.cu3s", "day2/a.cu3s") for i in reversed(range(7))]
    uni = Universe.from_records(rows)
    assert uni.hash == pinned == "cecbeb06efa14c0d406421ea31eba1c56d806318297c2f886a454ed83a07ab73"


def test_hash_matches_upstream_on_canonical_refs() -> None:
    uni = parse("source,index\nb.npz,2\na.npz,10\na.npz,9\nä/ü.npz,0\n")
    refs = [SampleRef(source=uni.source(p), index=uni.index(p)) for p in range(len(uni))]
    assert uni.uids() == ["a.npz#9", "a.npz#10", "b.npz#2", "ä/ü.npz#0"]
    assert uni.hash == upstream_hash(refs)


def test_canonical_order_is_source_then_numeric_index() -> None:
    uni = parse("source,index\nb,1\na,10\na,2\nB,0\n")
    assert uni.uids() == ["B#0", "a#2", "a#10", "b#1"]


def test_bom_crlf_and_extra_columns_roundtrip(tmp_path: Path) -> None:
    raw = ("\ufeffsource,index,camera,md5,materialized_path\r\n"
           "s/b.cu3s,1,cam2,ffff,\r\ns/a.cu3s,0,cam1,eeee,\r\n").encode()
    p = tmp_path / "universe.csv"
    p.write_bytes(raw)
    uni = read_universe(p)
    assert uni.columns == ["source", "index", "materialized_path", "md5", "camera"]
    assert uni.column("camera") == ["cam1", "cam2"]
    out = tmp_path / "out.csv"
    write_universe(uni, out)
    data = out.read_bytes()
    assert b"\r" not in data and not data.startswith(b"\xef\xbb\xbf")
    assert data.decode() == (
        "source,index,materialized_path,md5,camera\n"
        "s/a.cu3s,0,,eeee,cam1\ns/b.cu3s,1,,ffff,cam2\n"
    )
    again = read_universe(out)
    assert format_universe(again) == data.decode()


def test_quoted_fields_and_commas_survive(tmp_path: Path) -> None:
    uni = parse('source,index,note\n"a,b.cu3s",0,"say ""hi"""\nplain.cu3s,1,x\n')
    assert uni.source_names == ["a,b.cu3s", "plain.cu3s"]
    assert uni.value("note", 0) == 'say "hi"'
    text = format_universe(uni)
    assert parse(text).uids() == uni.uids()
    assert '"a,b.cu3s"' in text


def test_backslash_sources_become_posix_and_whitespace_is_stripped() -> None:
    uni = parse("source,index\n day1\\a.cu3s , 3 \n")
    assert uni.uids() == ["day1/a.cu3s#3"]


def test_index_ranges_expand_like_cu3s_multi() -> None:
    uni = parse("source,index,annotation\na.cu3s,0-4:2,a.json\nb.cu3s,1,\n")
    assert uni.uids() == ["a.cu3s#0", "a.cu3s#2", "a.cu3s#4", "b.cu3s#1"]
    assert uni.column("annotation") == ["a.json", "a.json", "a.json", ""]


def test_blank_lines_are_skipped_but_line_numbers_stay_true() -> None:
    with pytest.raises(UniverseError, match=r"u.csv:5: column 'index': 'x'"):
        parse("source,index\na,0\n\nb,1\nc,x\n")


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("", "empty file"),
        ("index,materialized_path\n0,a.npz\n", r"missing required column\(s\) \['source'\]"),
        ("source,index,source\na,0,a\n", "duplicate column 'source'"),
        ("source,index\n", "no rows"),
        ("source,index\na,0\na,0\n", r"duplicate identity.*lines 2 and 3"),
        ("source,index\na,-1\n", "'-1' is not a non-negative integer"),
        ("source,index\na,1.5\n", "'1.5' is not a non-negative integer"),
        ("source,index\na,5-2\n", "bad range '5-2'"),
        ("source,index\na,0,extra\n", r"u.csv:2: expected 2 fields"),
        ("source,index\n,0\n", "empty 'source' cell"),
        ("source,index,materialized_path\na,0,../x.npz\n", r"u.csv:2: .*contains '\.\.'"),
        ("source,index,annotation\na,0,sub\\..\\..\\x.json\n", "contains '..'"),
        ("source,index,materialized_path\na,0,f/x.npz\nb,0,f/./x.npz\n",
         "duplicate materialized_path"),
    ],
)
def test_bad_universe_is_rejected_with_file_and_line(text: str, pattern: str) -> None:
    with pytest.raises(UniverseError, match=pattern) as info:
        parse(text)
    assert str(info.value).startswith("u.csv")


def test_nul_and_invalid_utf8_name_the_line() -> None:
    with pytest.raises(UniverseError, match=r"u.csv:3: NUL byte"):
        parse_universe_bytes(b"source,index\na,0\nb\x00,1\n", path=Path("u.csv"))
    with pytest.raises(UniverseError, match=r"u.csv:2: not valid UTF-8"):
        parse_universe_bytes(b"source,index\n\xff,0\n", path=Path("u.csv"))


def test_shared_materialized_path_allowed_for_cu3s_not_npz() -> None:
    cu3s = "source,index,materialized_path\na.cu3s,0,a.cu3s\na.cu3s,1,a.cu3s\n"
    assert len(parse(cu3s)) == 2
    with pytest.raises(UniverseError, match="one file per row"):
        parse(cu3s, unique_materialized_path=True)
    npz = "source,index,materialized_path,format\na,0,x.bin,npz\na,1,x.bin,npz\n"
    with pytest.raises(UniverseError, match=r"duplicate materialized_path 'x\.bin'"):
        parse(npz)
    assert len(parse(npz, unique_materialized_path=False)) == 2


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(UniverseError, match="universe file not found"):
        read_universe(tmp_path / "nope.csv")
    with pytest.raises(FileNotFoundError, match=r"nope\.csv: universe file not found"):
        read_universe(tmp_path / "nope.csv")  # as upstream's loaders: also a FileNotFoundError
    with pytest.raises(UniverseError, match="cannot read"):
        read_universe(tmp_path)


def test_large_file_spanning_chunks_matches_small_parser(tmp_path: Path, monkeypatch) -> None:
    import dvc_cuvis.model.universe_io as mod

    rng = np.random.default_rng(7)
    rows = [(f"s{int(s):03d}/rec.cu3s", int(i)) for s in rng.integers(0, 50, 3000)
            for i in rng.integers(0, 10**6, 1)]
    rows = list(dict.fromkeys(rows))
    lines = [f"{s},{i},frames/{s}/{i}.npz\n" for s, i in rows]
    lines.insert(100, "\n")
    p = tmp_path / "u.csv"
    p.write_text("source,index,materialized_path\n" + "".join(lines))
    monkeypatch.setattr(mod, "_CHUNK_BYTES", 512)  # force many chunks and regrowth
    small = read_universe(p)
    monkeypatch.setattr(mod, "_CHUNK_BYTES", 1 << 22)
    big = read_universe(p)
    assert small.uids() == big.uids() == [f"{s}#{i}" for s, i in sorted(rows)]
    assert small.column("materialized_path") == big.column("materialized_path")
    assert small.line_of(0) == big.line_of(0)


def test_provenance_columns_parse() -> None:
    uni = parse("source,index,tags,category_ids\na,0,day1; sunny,0;3\na,1,,\n")
    assert uni.tags == [("day1", "sunny"), ()]
    assert uni.category_ids == [(0, 3), ()]
    bad = parse("source,index,category_ids\na,0,x\n")
    with pytest.raises(UniverseError, match=r"u.csv:2: column 'category_ids': 'x'"):
        _ = bad.category_ids


def test_groups_default_to_source() -> None:
    uni = parse("source,index,group\na,0,g1\nb,0,\nc,0,g1\n")
    names, codes = uni.groups()
    assert names == ["b", "g1"]
    assert [names[c] for c in codes] == ["g1", "b", "g1"]


def test_from_records_and_take() -> None:
    uni = Universe.from_records([{"source": "b", "index": 0, "tags": ["x", "y"]},
                                 {"source": "a", "index": 1, "tags": []}])
    assert uni.uids() == ["a#1", "b#0"]
    assert uni.value("tags", 1) == "x;y"
    sub = uni.take([1])
    assert sub.uids() == ["b#0"] and sub.source_names == ["b"]
    with pytest.raises(UniverseError, match="duplicate identity"):
        Universe.from_records([{"source": "a", "index": 0}, {"source": "a", "index": 0}])


# -- whole-file samples (upstream ``SampleRef.index is None``) ---------------------------------


def test_empty_index_cell_is_a_whole_file_sample_with_upstream_uid() -> None:
    uni = parse("source,index\nimg/b.tif,\nx.cu3s,1\nimg/a.tif, \nx.cu3s,0\n")
    refs = [SampleRef(source="img/a.tif"), SampleRef(source="img/b.tif"),
            SampleRef(source="x.cu3s", index=0), SampleRef(source="x.cu3s", index=1)]
    assert uni.uids() == [r.uid for r in refs] == ["img/a.tif", "img/b.tif", "x.cu3s#0",
                                                    "x.cu3s#1"]
    assert uni.hash == upstream_hash(refs) == universe_hash(uni.uids())
    assert uni.ref_indices() == [None, None, 0, 1] and uni.indices.tolist() == [0, 0, 0, 1]
    assert [uni.uid(p) for p in range(4)] == uni.uids() and uni.uids([1, 3]) == [
        "img/b.tif", "x.cu3s#1"]
    assert uni.column("index") == ["", "", "0", "1"] and uni.value("index", 0) == ""
    assert [s.uid for s in uni] == uni.uids() and uni.sample(0).index is None
    assert format_universe(uni) == "source,index\nimg/a.tif,\nimg/b.tif,\nx.cu3s,0\nx.cu3s,1\n"
    assert uni.take([1, 2]).uids() == ["img/b.tif", "x.cu3s#0"]


def test_whole_file_samples_round_trip_every_way(tmp_path: Path, monkeypatch) -> None:
    import dvc_cuvis.model.universe_io as mod

    rows = [{"source": f"t/{k:03d}.tif", "index": None, "md5": f"{k:x}"} for k in range(300)]
    rows += [{"source": "s.cu3s", "index": i, "md5": ""} for i in range(5)]
    uni = Universe.from_records(rows[::-1])
    write_universe(uni, tmp_path / "u.csv")
    monkeypatch.setattr(mod, "_CHUNK_BYTES", 256)  # many chunks: fast and slow paths
    again = read_universe(tmp_path / "u.csv")
    assert again.uids() == uni.uids() and again.hash == uni.hash
    assert again.indexless is not None and int(again.indexless.sum()) == 300
    quoted = (tmp_path / "u.csv").read_text().replace("t/000.tif,,", '"t/000.tif","",')
    assert parse(quoted).hash == uni.hash  # the csv-module path reads it too
    assert Universe.from_columns({"source": ["a", "b"], "index": ["", 3]}).uids() == ["a", "b#3"]


def test_a_source_is_either_whole_file_or_indexed() -> None:
    for text in ("source,index\na.tif,\na.tif,0\n", "source,index\na.tif,\na.tif,4\n",
                 "source,index\na.tif,\na.tif,\n", "source,index\na.tif,2\nb,0\na.tif,\n"):
        with pytest.raises(UniverseError, match=r"u.csv: source 'a.tif' has a row with an empty "
                                                r"index .*\(line \d\)"):
            parse(text)
    with pytest.raises(UniverseError, match="empty index"):
        Universe.from_records([{"source": "a", "index": None}, {"source": "a", "index": 1}])
    with pytest.raises(UniverseError, match=r"'-' is not a non-negative integer .*empty for a "
                                            r"whole-file sample"):
        parse("source,index\na,-\n")


@given(st.lists(st.tuples(st.sampled_from(["a.tif", "b/c.tif", "a", "ä.tif", "z#1", "a.tif0"]),
                          st.one_of(st.none(), st.integers(0, 12))), max_size=25))
@settings(max_examples=150, deadline=None)
def test_mixed_universe_hash_equals_upstream(rows: list[tuple[str, int | None]]) -> None:
    """Random universes of whole-file and indexed sources: ours == upstream's SampleRef rule."""
    kind: dict[str, bool] = {}
    keep = []
    for src, ix in rows:  # one kind per source; a whole-file source has one row
        if kind.setdefault(src, ix is None) != (ix is None) or (ix is None and (src, ix) in keep):
            continue
        keep.append((src, ix))
    keep = list(dict.fromkeys(keep))
    if not keep:
        return
    text = "source,index\n" + "".join(f"{s},{'' if i is None else i}\n" for s, i in keep)
    uni = parse(text)
    refs = [SampleRef(source=s, index=i)
            for s, i in sorted(keep, key=lambda r: (r[0], -1 if r[1] is None else r[1]))]
    assert uni.uids() == [r.uid for r in refs]
    assert uni.hash == upstream_hash(refs)
    assert parse(format_universe(uni)).hash == uni.hash


# -- a missing input file is a FileNotFoundError too (upstream's loaders raise that) -------


def test_missing_inputs_are_file_not_found_and_ours(tmp_path: Path) -> None:
    from cuvis_ai_core.data.splits_io import load_splits as upstream_load_splits

    from dvc_cuvis.errors import DvcCuvisError, MissingFileError, SplitsFileError
    from dvc_cuvis.interop.indices import read_indices
    from dvc_cuvis.model.categories import load_category_map
    from dvc_cuvis.model.splits import load_splits

    gone = tmp_path / "gone.json"
    with pytest.raises(FileNotFoundError):
        upstream_load_splits(gone)
    uni = parse("source,index\na,0\n")
    for call, kind in ((lambda: load_splits(gone), SplitsFileError),
                       (lambda: read_universe(gone), UniverseError),
                       (lambda: load_category_map(gone), DvcCuvisError),
                       (lambda: read_indices(gone, uni), DvcCuvisError)):
        with pytest.raises(MissingFileError) as info:
            call()
        assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, kind)
        assert isinstance(info.value, ValueError) and info.value.exit_code == 2
        assert str(info.value).startswith(str(gone)) and "not found" in str(info.value)


@pytest.mark.parametrize("args", [
    ("bake", "--universe", "{d}/nope.csv", "--out", "{d}/s.json"),
    ("check", "--universe", "{d}/u.csv", "--splits", "{d}/nope.json"),
    ("resolve", "--universe", "{d}/u.csv", "--splits", "{d}/nope.json"),
])
def test_cli_missing_file_is_one_line_exit_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    from tests.helpers.cli import run_subprocess
    from tests.helpers.files import write_universe_csv

    write_universe_csv(tmp_path / "u.csv", [("a.cu3s", 0), ("a.cu3s", 1)])
    r = run_subprocess(*(a.format(d=tmp_path) for a in args), "--no-params", cwd=tmp_path)
    assert r.code == 2, (r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dvc-cuvis: error: "), r.err
    assert "nope." in lines[0] and "not found" in lines[0]


# -- one range grammar, one limit; one uid formatter; the model apart from its file ---------


@pytest.mark.slow  # ~2 s
def test_one_range_limit_in_selectors_and_in_the_universe_reader() -> None:
    from cuvis_ai_schemas.training.data import Selector

    from dvc_cuvis.errors import SelectorError
    from dvc_cuvis.model.ids import MAX_RANGE_IDS, parse_id_range
    from dvc_cuvis.model.selectors import split_ids

    at_limit = f"0-{MAX_RANGE_IDS - 1}"
    over = f"0-{MAX_RANGE_IDS}"
    assert len(parse_id_range(at_limit) or ()) == MAX_RANGE_IDS
    assert parse_id_range(" 2-8:3 ") == range(2, 9, 3) and parse_id_range("7") is None
    # the selector path: the limit holds, one id more is refused with what to do
    assert len(split_ids([at_limit])[0]) == MAX_RANGE_IDS
    with pytest.raises(SelectorError, match=r"expands to 10000001 ids \(at most 10,000,000\)"):
        split_ids([over])
    sel = Selector(kind="file_indices", source="a", ids=[over])  # the schema takes it ...
    with pytest.raises(SelectorError, match="expands to"):
        split_ids(sel.ids)  # ... the resolver refuses it
    # the universe path: the same limit (a step counts ids, not the span)
    stepped = f"0-{2 * MAX_RANGE_IDS - 2}:2"
    assert len(parse_id_range(stepped) or ()) == MAX_RANGE_IDS
    with pytest.raises(UniverseError, match=r"u\.csv:2: column 'index': bad range '0-10000000' "
                       r"\(.*at most 10,000,000 ids\)"):
        parse(f"source,index\na,{over}\n")
    with pytest.raises(UniverseError, match=r"u\.csv:3: .*bad range '0-20000000:2'"):
        parse(f"source,index\nb,0\na,0-{2 * MAX_RANGE_IDS}:2\n")
    assert len(parse(f"source,index\na,0-{2 * MAX_RANGE_IDS - 2}:2\n")) == MAX_RANGE_IDS


def test_range_cells_keep_ascii_digits_and_the_int64_bound() -> None:
    with pytest.raises(UniverseError, match="is not a non-negative integer"):
        parse("source,index\na,١-٣\n")  # selectors accept Unicode digits, as upstream; cells not
    with pytest.raises(UniverseError, match="bad range"):
        parse(f"source,index\na,{10**18}-{10**18}\n")
    assert parse("source,index\na, 3-5 \n").uids() == ["a#3", "a#4", "a#5"]


def test_every_uid_comes_from_the_one_formatter() -> None:
    from dvc_cuvis.check.drift import tokenized_hash
    from dvc_cuvis.model.universe import uid_block

    rows = [{"source": f"/d/s{k}/r.cu3s", "index": i} for k in (2, 0, 1) for i in (5, 0, 3)]
    rows += [{"source": "/d/t.tif", "index": None}, {"source": "/e/z.cu3s", "index": 1}]
    uni = Universe.from_records(rows)
    refs = uni.ref_indices()
    by_rule = [uid(uni.source(p), refs[p]) for p in range(len(uni))]
    assert uni.uids() == by_rule == [uni.uid(p) for p in range(len(uni))]
    assert uni.uids([4, 0]) == [by_rule[4], by_rule[0]]
    upstream_refs = [SampleRef(source=uni.source(p), index=refs[p]) for p in range(len(uni))]
    assert uni.hash == universe_hash(by_rule) == upstream_hash(upstream_refs)
    assert uid_block("a", [0, 2]) == "a#0\na#2\n" and uid_block("t.tif", None) == "t.tif\n"
    # tokenized: the uids spelled with {DATA_DIR}, sorted as such, hashed as any universe
    spelled = sorted(u.replace("/d/", "{DATA_DIR}/", 1) for u in by_rule)
    spelled.sort(key=lambda u: (u.split("#")[0], int(u.split("#")[1]) if "#" in u else -1))
    assert tokenized_hash(uni, "/d") == universe_hash(spelled)
    assert uni.spelled_hash(uni.source_names) == uni.hash
    with pytest.raises(ValueError, match="names for"):
        uni.spelled_hash(["x"])


def test_the_model_does_not_import_its_file_format() -> None:
    """universe.py is the model alone: the file format (universe_io) imports it, never the
    reverse, and no module ``__getattr__`` re-exports the reader from it."""
    import ast

    import dvc_cuvis.model.universe as mod

    tree = ast.parse(Path(mod.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "dvc_cuvis.model.universe_io" not in imported
    assert not any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body)
    with pytest.raises(AttributeError, match="no attribute 'read_universe'"):
        _ = mod.read_universe


def test_columns_keeps_only_the_named_optional_columns_and_still_checks_every_row() -> None:
    text = "source,index,materialized_path,md5,group\nb,0,f/b.cu3s,x,g\na,0-1,f/a.cu3s,y,h\n"
    full = parse(text)
    some = parse(text, columns=("md5",))
    assert some.columns == ["source", "index", "md5"] and some.uids() == full.uids()
    assert some.column("md5") == full.column("md5") and some.line_of(0) == full.line_of(0)
    assert some.hash == full.hash
    with pytest.raises(UniverseError, match=r"u\.csv:3: expected 5 fields"):
        parse(text.replace("h\n", "h,extra\n"), columns=("md5",))
    with pytest.raises(UniverseError, match="duplicate identity"):
        parse(text + "b,0,f/c.cu3s,z,g\n", columns=())


def test_a_row_names_its_materialized_path_else_its_source() -> None:
    uni = parse("source,index,materialized_path,annotation\n"
                "a.cu3s,0,f/a0.npz,\na.cu3s,1,,l/a1.json\nb.cu3s,0,f/b0.npz,\n")
    assert [uni.frame_file(p) for p in range(len(uni))] == ["f/a0.npz", "a.cu3s", "f/b0.npz"]
    assert uni.frame_files() == uni.files_in("materialized_path") == \
        ["f/a0.npz", "a.cu3s", "f/b0.npz"]
    assert uni.files_in("annotation") == ["", "l/a1.json", ""]
    bare = parse("source,index\nb.cu3s,0\na.cu3s,3\n")
    assert bare.frame_files() == ["a.cu3s", "b.cu3s"] == [bare.frame_file(0), bare.frame_file(1)]
    assert bare.files_in("annotation") == ["", ""]
    full = parse("source,index,materialized_path\na,0,x.npz\n")
    assert full.frame_files() == ["x.npz"]


def test_one_home_decides_which_file_a_row_names() -> None:
    """No module outside the model spells the ``materialized_path``-else-``source`` rule."""
    import re

    pattern = re.compile(r'value\("materialized_path", *\w+\) or|'
                         r'column == "materialized_path"')
    pkg = Path(__file__).resolve().parents[2] / "dvc_cuvis"
    spelled = sorted(str(f.relative_to(pkg)) for f in pkg.rglob("*.py")
                     if f.name != "universe.py" and pattern.search(f.read_text("utf-8")))
    assert spelled == []


def test_the_header_is_read_by_the_universe_reader_rules(tmp_path: Path) -> None:
    from dvc_cuvis.model.universe_io import read_header

    f = tmp_path / "u.csv"
    f.write_bytes(b'\xef\xbb\xbfsource, index ,"data_module"\r\na,0,npz_multi\r\n')
    assert read_header(f) == ["source", "index", "data_module"]
    assert read_header(f) == parse_universe_bytes(f.read_bytes()).columns
    f.write_bytes(b"source,index\ra,0\r")  # old Mac line endings, as the reader takes them
    assert read_header(f) == ["source", "index"]
    f.write_bytes(b"source,ind\xffex\na,0\n")
    assert read_header(f) == []
    assert read_header(tmp_path / "nowhere.csv") == []
    f.write_bytes(b"")
    assert read_header(f) == []


def test_the_module_rules_read_the_header_with_the_universe_reader() -> None:
    import ast

    import dvc_cuvis.interop.modules as mod

    tree = ast.parse(Path(mod.__file__).read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "csv" not in imported
