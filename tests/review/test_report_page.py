"""The report page read as a reviewer and a script read it: every section's tables, notes and
``data-*`` attributes, worked out by hand from small in-memory splits (no CLI, no repository).

The universe of most tests (``_universe``): five sources in four leakage groups, eleven samples.

====  =======  =====  ============  ======  ==================
uid   group    stage  category_ids  (ids)   why
====  =======  =====  ============  ======  ==================
a#0   line1    train  1             {1}
a#1   line1    train  2             {2}
a#2   line1    train
a#3   line1    train
b#0   line1    train  1;2           {1,2}
b#1   line1    test
b#2   line1    --                           unassigned
c#0   line2    val    0             {0}     background only
c#1   line2    val
d#0   (d)      test   7             {7}     an id without a name
e#0   (e)      --                           a group wholly unassigned
====  =======  =====  ============  ======  ==================
"""

from __future__ import annotations

import html as html_lib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np

from dvc_cuvis.check.report import DriftReport, Finding
from dvc_cuvis.model.compare import Version, diff_versions
from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.review import svg
from dvc_cuvis.review.report import ReportInput, render, write
from dvc_cuvis.review.spectra import GridSpectra, SplitSpectra, StageSpectrum
from dvc_cuvis.review.spectra_html import section
from tests.helpers.golden import assert_pinned

COLORS = {"train": "#4C72B0", "val": "#DD8452", "test": "#55A868"}  # the stages' colours
CATEGORIES = {"scratch": 1, "dent <&>": 2}  # id 7 has no name; a name that needs escaping


class Page(HTMLParser):
    """Each section's heading, paragraphs (attributes, text) and tables (header cells; per
    row, per cell its tag, attributes and text)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []
        self._sec: dict[str, Any] | None = None
        self._text: list[str] | None = None
        self._cell: dict[str, Any] | None = None
        self._stack: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "svg":
            self._stack.append(tag)
        if self._stack:
            return
        if tag == "section":
            self._sec = {"h2": "", "p": [], "tables": [], "attrs": a}
            self.sections[a["id"]] = self._sec
            self.order.append(a["id"])
        elif self._sec is None:
            return
        elif tag in ("h2", "h3", "p"):
            self._text = []
            self._cell = {"tag": tag, "attrs": a}
        elif tag == "table":
            self._sec["tables"].append({"attrs": a, "head": [], "rows": []})
        elif tag == "tr":
            self._row: list[dict[str, Any]] = []
        elif tag in ("td", "th"):
            self._text = []
            self._cell = {"tag": tag, "attrs": a}

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._stack.pop()
            return
        if self._stack or self._sec is None:
            return
        if tag == "section":
            self._sec = None
        elif tag in ("td", "th", "h2", "h3", "p") and self._cell is not None:
            assert self._text is not None
            self._cell["text"] = "".join(self._text)
            if tag == "h2":
                self._sec["h2"] = self._cell["text"]
            elif tag in ("p", "h3"):
                self._sec["p"].append(self._cell)
            else:
                self._row.append(self._cell)
            self._cell = self._text = None
        elif tag == "tr":
            table = self._sec["tables"][-1]
            if all(c["tag"] == "th" for c in self._row):
                table["head"] = [c["text"] for c in self._row]
            else:
                table["rows"].append(self._row)

    def handle_data(self, data: str) -> None:
        if self._text is not None and not self._stack:
            self._text.append(data)

    def table(self, sec: str, k: int = 0) -> dict[str, Any]:
        return self.sections[sec]["tables"][k]

    def texts(self, sec: str, k: int = 0) -> list[list[str]]:
        return [[c["text"] for c in row] for row in self.table(sec, k)["rows"]]

    def paragraphs(self, sec: str) -> list[str]:
        return [p["text"] for p in self.sections[sec]["p"]]


def _universe(categories: bool = True) -> Universe:
    rows = [("a.cu3s", i, "line1") for i in range(4)] + [("b.cu3s", i, "line1") for i in range(3)]
    rows += [("c.cu3s", 0, "line2"), ("c.cu3s", 1, "line2"), ("d.cu3s", 0, ""), ("e.cu3s", 0, "")]
    cats = {"a.cu3s#0": "1", "a.cu3s#1": "2", "b.cu3s#0": "1;2", "c.cu3s#0": "0", "d.cu3s#0": "7"}
    recs = []
    for src, i, group in rows:
        rec: dict[str, Any] = {"source": src, "index": i, "group": group}
        if categories:
            rec["category_ids"] = cats.get(f"{src}#{i}", "")
        recs.append(rec)
    return Universe.from_records(recs)


def _at(uni: Universe, *uids: str) -> np.ndarray:
    where = {u: k for k, u in enumerate(uni.uids())}
    return np.array([where[u] for u in uids], dtype=np.int64)


def _resolution(uni: Universe, *, predict_is_all: bool = False) -> Resolution:
    test = _at(uni, "d.cu3s#0", "b.cu3s#1")
    return Resolution(uni, {
        "train": _at(uni, "a.cu3s#0", "a.cu3s#1", "a.cu3s#2", "a.cu3s#3", "b.cu3s#0"),
        "val": _at(uni, "c.cu3s#0", "c.cu3s#1"),
        "test": test,
        "predict": np.arange(len(uni)) if predict_is_all else test,
    }, predict_is_all=predict_is_all)


def _render(uni: Universe | None = None, **kw: Any) -> str:
    uni = uni if uni is not None else _universe()
    res = kw.pop("resolution", None) or _resolution(uni)
    kw.setdefault("categories", CATEGORIES)
    return render(ReportInput(kw.pop("title", "split"), res, kw.pop("constraints", []), **kw))


def _cells(row: list[dict[str, Any]], **attrs: str) -> list[dict[str, Any]]:
    return [c for c in row if all(c["attrs"].get(f"data-{k}") == v for k, v in attrs.items())]


# -- the page ------------------------------------------------------------------------------


def test_the_page_is_one_self_contained_document_with_its_title_escaped() -> None:
    text = _render(title='Split <b>"x"</b> & y')
    escaped = html_lib.escape('Split <b>"x"</b> & y')
    assert text.startswith('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n')
    assert f"<title>{escaped}</title>" in text and f"<body><h1>{escaped}</h1>\n" in text
    assert "<b>" not in text  # the title is text, never markup
    assert text.endswith('<footer class="note">dvc-cuvis split report: aggregated counts and '
                         "spectra, no sample list.</footer>\n</body></html>\n")
    assert text.count("<section ") == 5
    page = Page(text)
    assert page.order == ["summary", "stages", "categories", "sources", "checks"]
    assert {k: s["h2"] for k, s in page.sections.items()} == {
        "summary": "Universe", "stages": "Stages", "categories": "Category balance",
        "sources": "Sources and groups", "checks": "Constraints, leakage and drift"}
    assert text == _render(title='Split <b>"x"</b> & y')  # deterministic


def test_the_universe_table_counts_samples_sources_and_groups_and_tells_the_pin() -> None:
    uni = _universe()
    page = Page(_render(uni))
    table = page.table("summary")
    assert table["head"] == ["samples", "sources", "groups", "universe_hash", "pin"]
    (row,) = table["rows"]
    assert [c["attrs"]["data-metric"] for c in row] == [
        "universe-samples", "universe-sources", "universe-groups", "universe-hash", "pin"]
    assert [c["text"] for c in row] == ["11", "5", "4", uni.hash, "not pinned"]
    assert f'<td data-metric="universe-hash"><code>{uni.hash}</code></td>' in _render(uni)

    def pin(pinned: str | None) -> str:
        return Page(_render(uni, pinned_hash=pinned)).table("summary")["rows"][0][4]["text"]

    assert pin("") == "not pinned"
    assert pin(uni.hash) == "matches"
    other = "0123456789abcdef" + uni.hash[16:]
    assert pin(other) == "differs (pinned 0123456789ab)"  # the pin's first 12 characters


def test_the_stage_table_and_chart_count_each_stage() -> None:
    text = _render()
    page = Page(text)
    table = page.table("stages")
    assert table["head"] == ["stage", "samples", "sources", "groups", "share"]
    # shares of 11 samples: 5 -> 45.45 %, 2 -> 18.18 %
    assert page.texts("stages") == [["train", "5", "2", "1", "45.5 %"],
                                    ["val", "2", "1", "1", "18.2 %"],
                                    ["test", "2", "2", "2", "18.2 %"],
                                    ["predict", "2", "2", "2", "18.2 %"]]
    for row in table["rows"]:
        stage = row[0]["text"]
        assert row[0]["attrs"] == {}
        assert [(c["attrs"].get("data-stage"), c["attrs"].get("data-metric")) for c in row[1:4]
                ] == [(stage, "samples"), (stage, "sources"), (stage, "groups")]
        assert row[4]["attrs"] == {}
    chart = svg.hbar_chart(["train", "val", "test"], [5, 2, 2], list(COLORS.values()),
                           ["5 samples / 2 sources", "2 samples / 1 sources",
                            "2 samples / 2 sources"], "samples")
    assert f'<h2>Stages</h2><div class="chart">{chart}</div><table class="">' in text
    assert "predict is empty" not in text


def test_an_empty_predict_is_the_whole_universe_and_says_so() -> None:
    uni = _universe()
    text = _render(uni, resolution=_resolution(uni, predict_is_all=True))
    assert Page(text).texts("stages")[3] == ["predict", "11", "5", "4", "100.0 %"]
    assert ("</table><p class='note'>predict is empty in splits.json: it is the whole "
            "universe.</p></section>") in text


def test_one_sample_is_the_whole_share() -> None:
    uni = Universe.from_records([{"source": "a.cu3s", "index": 0}])
    empty = np.zeros(0, dtype=np.int64)
    res = Resolution(uni, {"train": np.zeros(1, dtype=np.int64), "val": empty, "test": empty,
                           "predict": empty})
    page = Page(render(ReportInput("one", res, [])))
    assert [r[4] for r in page.texts("stages")] == ["100.0 %", "0.0 %", "0.0 %", "0.0 %"]


def test_an_empty_universe_has_no_share_to_divide() -> None:
    uni = Universe.from_records([])
    empty = np.zeros(0, dtype=np.int64)
    res = Resolution(uni, {s: empty for s in ("train", "val", "test", "predict")})
    page = Page(render(ReportInput("empty", res, [])))
    assert [r[4] for r in page.texts("stages")] == ["0.0 %"] * 4
    assert page.paragraphs("sources")[0] == (
        "0 groups; sizes 0–0 samples (histogram counts 0). Largest groups:")
    assert page.texts("sources", 1) == []


# -- categories ----------------------------------------------------------------------------


def test_each_category_is_a_row_of_its_samples_per_stage_and_gaps_are_flagged() -> None:
    text = _render()
    page = Page(text)
    table = page.table("categories")
    assert table["head"] == ["category", "train", "val", "test"]
    # train: a#0 {1}, a#1 {2}, b#0 {1,2}; val: c#0 {0} (not a category); test: d#0 {7}
    assert page.texts("categories") == [["scratch", "2", "0 ⚠", "0 ⚠"],
                                        ["dent <&>", "2", "0 ⚠", "0 ⚠"],
                                        ["7", "0 ⚠", "0 ⚠", "1"]]
    for row in table["rows"]:
        name = row[0]["text"]
        assert row[0]["attrs"] == {"data-category": name}
        assert [c["attrs"]["data-stage"] for c in row[1:]] == ["train", "val", "test"]
        for c in row[1:]:
            assert c["attrs"]["data-category"] == name
            assert (c["attrs"].get("class") == "missing") == c["text"].endswith(" ⚠")
    assert '<td class="missing" data-category="dent &lt;&amp;&gt;" data-stage="val">0 ⚠</td>' \
        in text
    assert '<td data-category="7" data-stage="test">1</td>' in text
    flag = next(p for p in page.sections["categories"]["p"] if p["attrs"].get("id")
                == "missing-categories")
    assert flag["attrs"]["class"] == "bad"
    assert flag["text"] == ("Stages lacking a category: scratch in val, scratch in test, "
                            "dent <&> in val, dent <&> in test, 7 in train, 7 in val")
    assert "Stages lacking a category: scratch in val, scratch in test, dent &lt;&amp;&gt; in" \
        in text
    chart = svg.grouped_bar_chart(["scratch", "dent <&>", "7"],
                                  [("train", COLORS["train"], [2, 2, 0]),
                                   ("val", COLORS["val"], [0, 0, 0]),
                                   ("test", COLORS["test"], [0, 0, 1])], "samples with category")
    assert f'<h2>Category balance</h2><div class="chart">{chart}</div><p class="bad"' in text


def test_anomalous_samples_per_stage_and_the_two_anomaly_notions() -> None:
    page = Page(_render())
    table = page.table("categories", 1)
    assert table["head"] == ["stage", "anomalous samples"]
    # a category other than 0: train a#0, a#1, b#0; val none (c#0 is background); test d#0
    assert page.texts("categories", 1) == [["train", "3"], ["val", "0"], ["test", "1"]]
    for row in table["rows"]:
        assert row[1]["attrs"] == {"data-stage": row[0]["text"], "data-metric": "anomalous"}
    notions = page.sections["categories"]["p"][-1]
    assert notions["attrs"] == {"class": "note", "id": "anomaly-notions", "data-samples": "1"}
    assert notions["text"].startswith("1 sample(s) carry only category id 0 (background): ")


def test_categories_that_reach_every_stage_say_so_and_unnamed_ids_show_their_number() -> None:
    recs = [{"source": f"s{k}.cu3s", "index": 0, "category_ids": c}
            for k, c in enumerate(["3", "3;4", "4", "3;4", "", "4"])]
    uni = Universe.from_records(recs)
    res = Resolution(uni, {"train": _at(uni, "s0.cu3s#0", "s1.cu3s#0", "s4.cu3s#0"),
                           "val": _at(uni, "s2.cu3s#0", "s3.cu3s#0"),
                           "test": _at(uni, "s5.cu3s#0", "s3.cu3s#0"),
                           "predict": np.zeros(0, dtype=np.int64)})
    text = render(ReportInput("r", res, []))  # no category names
    page = Page(text)
    assert page.texts("categories") == [["3", "2", "1", "1"], ["4", "1", "2", "2"]]
    assert 'class="missing"' not in text and "⚠" not in text
    assert ('<p class="ok" id="missing-categories">Every category reaches every stage.</p>'
            in text)
    assert "anomaly-notions" not in text  # no sample carries category 0 only
    assert ("<td data-stage=\"test\" data-metric=\"anomalous\">2</td></tr></tbody></table>"
            "</section>\n<section id=\"sources\">") in text  # nothing after the tables


def test_a_category_column_without_a_category_has_no_chart() -> None:
    recs = [{"source": f"s{k}.cu3s", "index": 0, "category_ids": c}
            for k, c in enumerate(["", "0", ""])]
    uni = Universe.from_records(recs)
    res = Resolution(uni, {"train": _at(uni, "s0.cu3s#0", "s1.cu3s#0"),
                           "val": _at(uni, "s2.cu3s#0"), "test": np.zeros(0, dtype=np.int64),
                           "predict": np.zeros(0, dtype=np.int64)})
    text = render(ReportInput("r", res, []))
    assert ('<section id="categories"><h2>Category balance</h2><p class="ok" '
            'id="missing-categories">') in text
    assert Page(text).texts("categories") == []
    assert text.count("<svg") == 1  # the stage chart only


def test_a_universe_without_categories_says_so() -> None:
    uni = _universe(categories=False)
    text = _render(uni, resolution=_resolution(uni))
    assert ('<section id="categories"><h2>Categories</h2><p class="note">The universe has no '
            "category_ids column.</p></section>") in text
    assert "missing-categories" not in text and "anomalous" not in text


# -- sources and groups --------------------------------------------------------------------


def test_sources_and_groups_per_stage_and_the_largest_groups() -> None:
    page = Page(_render())
    table = page.table("sources")
    assert table["head"] == ["stage", "sources", "groups"]
    # unassigned: b#2 (line1) and e#0 (its own group)
    assert page.texts("sources") == [["train", "2", "1"], ["val", "1", "1"], ["test", "2", "2"],
                                     ["unassigned", "2", "2"]]
    for row in table["rows"]:
        stage = row[0]["text"]
        assert row[1]["attrs"] == {"data-stage": stage, "data-metric": "sources"}
        assert row[2]["attrs"] == {"data-stage": stage, "data-metric": "groups-in-stage"}
    # sizes: line1 7, line2 2, d 1, e 1; three distinct sizes over 1..7: bins [1,3) [3,5) [5,7]
    assert page.paragraphs("sources") == [
        "4 groups; sizes 1–7 samples (histogram counts 3, 0, 1). Largest groups:"]
    top = page.table("sources", 1)
    assert top["head"] == ["group", "samples", "stages"]
    assert page.texts("sources", 1) == [["line1", "7", "train 5, test 1"], ["line2", "2", "val 2"],
                                        ["d.cu3s", "1", "test 1"], ["e.cu3s", "1", "unassigned"]]


def test_the_largest_groups_are_fifteen_ties_in_name_order() -> None:
    sizes = [2] * 20 + [3] * 3 + [1] * 5  # ties on either side of the cut
    recs = [{"source": f"g{g:02d}.cu3s", "index": i} for g, n in enumerate(sizes)
            for i in range(n)]
    uni = Universe.from_records(recs)
    res = Resolution(uni, {"train": np.arange(len(uni)), "val": np.zeros(0, dtype=np.int64),
                           "test": np.zeros(0, dtype=np.int64),
                           "predict": np.zeros(0, dtype=np.int64)})
    page = Page(render(ReportInput("r", res, [])))
    rows = page.texts("sources", 1)
    want = ["g20.cu3s", "g21.cu3s", "g22.cu3s"] + [f"g{g:02d}.cu3s" for g in range(12)]
    assert [r[0] for r in rows] == want
    assert [r[1] for r in rows] == ["3"] * 3 + ["2"] * 12
    assert {r[2] for r in rows[:3]} == {"train 3"} and {r[2] for r in rows[3:]} == {"train 2"}
    assert page.paragraphs("sources") == [
        "28 groups; sizes 1–3 samples (histogram counts 5, 20, 3). Largest groups:"]


def test_the_size_histogram_has_at_most_ten_bins() -> None:
    recs = [{"source": f"g{g:02d}.cu3s", "index": i} for g in range(12) for i in range(g + 1)]
    uni = Universe.from_records(recs)
    res = Resolution(uni, {s: np.zeros(0, dtype=np.int64)
                           for s in ("train", "val", "test", "predict")})
    (para,) = Page(render(ReportInput("r", res, []))).paragraphs("sources")
    counts = np.histogram(np.arange(1, 13), bins=10)[0].tolist()  # 12 sizes 1..12, 10 bins
    assert para == (f"12 groups; sizes 1–12 samples (histogram counts "
                    f"{', '.join(map(str, counts))}). Largest groups:")
    assert len(counts) == 10 and sum(counts) == 12


# -- checks --------------------------------------------------------------------------------


def test_constraints_and_drift_findings_are_rows_with_their_verdicts() -> None:
    constraints = [
        {"kind": "no_split_overlap", "severity": "error", "status": "satisfied"},
        {"kind": "min_samples", "severity": "error", "status": "violated",
         "reason": "val has 2 < 3"},
        {"kind": "stratify", "severity": "warning", "status": "violated", "reason": "<skew>"},
        {"kind": "ratio", "severity": "warning", "status": "satisfied", "reason": ""},
    ]
    drift = DriftReport("splits.json", "universe.csv", [
        Finding("content", "ok", "12 files as recorded"),
        Finding("universe", "drift", "3 files changed"),
        Finding("selection", "skipped", "not asked for"),
        Finding("lineage", "violation", "a <model> on other data"),
        Finding("pulled", "not-pulled", "frames missing"),
    ])
    text = _render(constraints=constraints, drift=drift)
    page = Page(text)
    cons = page.table("checks")
    assert cons["head"] == ["constraint", "severity", "status", "detail"]
    assert page.texts("checks") == [
        ["no_split_overlap", "error", "satisfied", ""],
        ["min_samples", "error", "violated", "val has 2 < 3"],
        ["stratify", "warning", "violated", "<skew>"],
        ["ratio", "warning", "satisfied", ""]]
    assert [(r[2]["attrs"]["class"], r[2]["attrs"]["data-constraint"]) for r in cons["rows"]] == [
        ("ok", "no_split_overlap"), ("bad", "min_samples"), ("skipped", "stratify"),
        ("ok", "ratio")]
    assert all(r[k]["attrs"] == {} for r in cons["rows"] for k in (0, 1, 3))
    assert "<td>&lt;skew&gt;</td>" in text
    found = page.table("checks", 1)
    assert found["head"] == ["check", "status", "summary"]
    assert page.texts("checks", 1) == [
        ["content", "ok", "12 files as recorded"], ["universe", "drift", "3 files changed"],
        ["selection", "skipped", "not asked for"],
        ["lineage", "violation", "a <model> on other data"],
        ["pulled", "not-pulled", "frames missing"]]
    assert [(r[1]["attrs"]["class"], r[1]["attrs"]["data-check"]) for r in found["rows"]] == [
        ("ok", "content"), ("bad", "universe"), ("skipped", "selection"), ("bad", "lineage"),
        ("bad", "pulled")]
    assert '<td class="bad" data-check="universe">drift</td>' in text
    assert "<td>a &lt;model&gt; on other data</td>" in text


def test_without_a_drift_check_there_is_no_findings_table() -> None:
    for drift in (None, DriftReport("s", "u", [])):
        text = _render(drift=drift)
        assert ('<section id="checks"><h2>Constraints, leakage and drift</h2><table class="">'
                '<thead><tr><th>constraint</th><th>severity</th><th>status</th><th>detail</th>'
                "</tr></thead><tbody></tbody></table></section>") in text
        assert len(Page(text).sections["checks"]["tables"]) == 1


# -- the change from a base ----------------------------------------------------------------


def _versions() -> tuple[Version, Version]:
    """x#2 moves train -> val, y#1 leaves (unassigned), z#0 comes in test."""
    ua = Universe.from_records([{"source": s, "index": i}
                                for s, n in (("x", 4), ("y", 2)) for i in range(n)])
    ub = Universe.from_records([{"source": s, "index": i}
                                for s, n in (("x", 4), ("y", 1), ("z", 1)) for i in range(n)])
    none = np.zeros(0, dtype=np.int64)
    a = Version("v1 <old>", ua, {"train": _at(ua, "x#0", "x#1", "x#2"), "val": _at(ua, "x#3"),
                                 "test": _at(ua, "y#0"), "predict": none}, None, [])
    b = Version("work & tree", ub, {"train": _at(ub, "x#0", "x#1"),
                                    "val": _at(ub, "x#2", "x#3"), "test": _at(ub, "y#0", "z#0"),
                                    "predict": none}, None, [])
    return a, b


def test_a_change_shows_its_moves_transitions_and_changed_sources() -> None:
    a, b = _versions()
    text = _render(diff=diff_versions(a, b))
    page = Page(text)
    assert page.order[-1] == "diff"
    assert page.sections["diff"]["h2"] == "Change from v1 <old> to work & tree"
    assert "<h2>Change from v1 &lt;old&gt; to work &amp; tree</h2>" in text
    assert page.paragraphs("diff") == [
        "1 samples present at both ends moved; 1 new, 1 removed.", "Changed sources"]
    assert '<p><b data-metric="moved">1</b> samples present at both ends moved; ' in text
    trans = page.table("diff")
    assert trans["head"] == ["transition", "samples", "sources"]
    assert page.texts("diff") == [["new->test", "1", "1"], ["train->val", "1", "1"],
                                  ["unassigned->removed", "1", "1"]]
    assert [r[1]["attrs"] for r in trans["rows"]] == [
        {"data-transition": k} for k in ("new->test", "train->val", "unassigned->removed")]
    assert page.table("diff", 1)["head"] == ["source", "samples", "transitions"]
    assert page.texts("diff", 1) == [["x", "1", "train->val 1"],
                                     ["y", "1", "unassigned->removed 1"],
                                     ["z", "1", "new->test 1"]]
    assert "more sources" not in text
    # rows: from train, val, test, unassigned, new; columns: to train, val, test, unassigned,
    # removed. Unchanged samples on the diagonal: train 3 - 1 moved, unassigned 1 - 1 removed.
    mat = np.array([[2, 1, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 0, 1],
                    [0, 0, 1, 0, 0]])
    chart = svg.heatmap(mat, ["from train", "from val", "from test", "from unassigned", "from new"],
                        ["to train", "to val", "to test", "to unassigned", "to removed"])
    assert f'removed.</p><div class="chart">{chart}</div><table class="">' in text
    assert "</table><h3>Changed sources</h3><table" in text


def test_a_change_of_many_sources_lists_the_first_25() -> None:
    ua = Universe.from_records([{"source": f"s{k:02d}", "index": 0} for k in range(27)])
    none = np.zeros(0, dtype=np.int64)
    a = Version("a", ua, {"train": np.arange(27), "val": none, "test": none, "predict": none},
                None, [])
    b = Version("b", ua, {"train": none, "val": np.arange(3), "test": np.arange(3, 27),
                          "predict": none}, None, [])
    text = _render(diff=diff_versions(a, b))
    page = Page(text)
    rows = page.texts("diff", 1)
    assert [r[0] for r in rows] == [f"s{k:02d}" for k in range(25)]
    assert rows[2] == ["s02", "1", "train->val 1"] and rows[3] == ["s03", "1", "train->test 1"]
    assert page.texts("diff") == [["train->test", "24", "24"], ["train->val", "3", "3"]]
    assert page.paragraphs("diff")[0] == (
        "27 samples present at both ends moved; 0 new, 0 removed.")
    assert "</table><p class='note'>… and 2 more sources.</p></section>" in text


def test_a_source_with_several_changes_lists_each_transition() -> None:
    ua = Universe.from_records([{"source": "x", "index": i} for i in range(5)])
    none = np.zeros(0, dtype=np.int64)
    a = Version("a", ua, {"train": np.arange(5), "val": none, "test": none, "predict": none},
                None, [])
    b = Version("b", ua, {"train": _at(ua, "x#0"), "val": _at(ua, "x#1", "x#2"),
                          "test": _at(ua, "x#3"), "predict": none}, None, [])
    page = Page(_render(diff=diff_versions(a, b)))
    # x#4 is left unassigned at b; transitions in the order of their first sample
    assert page.texts("diff", 1) == [["x", "4", "train->val 2; train->test 1; "
                                      "train->unassigned 1"]]
    assert page.texts("diff") == [["train->test", "1", "1"], ["train->unassigned", "1", "1"],
                                  ["train->val", "2", "1"]]


# -- spectra -------------------------------------------------------------------------------


def test_the_spectra_section_comes_after_the_stages_with_category_names() -> None:
    wl = (500.0, 600.0)
    stage = StageSpectrum(3, np.array([1.0, 2.0]), np.zeros(2), np.full(2, 0.1))
    spectra = SplitSpectra([GridSpectra(wl, {"train": stage, "val": stage},
                                        {1: {"train": np.ones(2), "val": np.ones(2)}}, [], [])],
                           [], {}, 1.5)
    text = _render(spectra=spectra)
    part = section(spectra, "", {1: "scratch", 2: "dent <&>"})
    assert "scratch" in part
    assert f"</section>\n{part}\n<section id=\"categories\">" in text
    note = "no summaries: run materialize"
    text = _render(spectra_note=note)
    assert f"</section>\n{section(None, note, {})}\n<section id=\"categories\">" in text
    assert "no summaries: run materialize" in text
    assert "spectra" not in Page(_render()).order and "no summaries" not in _render()


def test_the_whole_page_is_its_pinned_bytes() -> None:
    """The page of the module's split with a change, checks and an absent-spectra note, byte
    for byte (the report promises the same bytes on every machine; the sections are checked
    above, this pins the frame and style around them). A deliberate change rewrites it with
    DVC_CUVIS_UPDATE_GOLDEN=1 and shows in review as a changed page."""
    a, b = _versions()
    text = _render(title="Split report: <splits.json>", pinned_hash="0" * 64,
                   constraints=[{"kind": "no_split_overlap", "severity": "error",
                                 "status": "satisfied"}],
                   drift=DriftReport("s", "u", [Finding("content", "ok", "as recorded")]),
                   diff=diff_versions(a, b), spectra_note="no spectral summaries")
    assert_pinned(text, Path(__file__).parent / "golden" / "report_page.html", "the report")


def test_write_leaves_the_page_and_nothing_else(tmp_path: Path) -> None:
    text = _render()
    out = tmp_path / "r.html"
    write(out, text)
    assert out.read_bytes() == text.encode("utf-8")
    write(out, "second")
    assert out.read_text() == "second" and [p.name for p in tmp_path.iterdir()] == ["r.html"]
