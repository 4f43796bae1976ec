"""The report's spectra section as HTML: what a reviewer reads and what scripts read from its
``data-*`` attributes (pairs, flags, ranges, thumbnails), for every case it shows."""

from __future__ import annotations

import base64
import re
import struct
from html.parser import HTMLParser

import numpy as np
import pytest

from dvc_cuvis.review.spectra import Balance, GridSpectra, SplitSpectra, StageSpectrum
from dvc_cuvis.review.spectra_html import bmp, section
from tests.helpers.golden import assert_pinned


class Tags(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.words: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.words.append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag and all(a.get(k.replace("_", "-")) == v
                                                            for k, v in attrs.items())]

    @property
    def text(self) -> str:
        return "".join(self.words)


WL = (400.0, 450.0, 500.0, 550.0)


def _stage(frames: int, level: float) -> StageSpectrum:
    mean = np.full(len(WL), level)
    return StageSpectrum(frames, mean, np.full(len(WL), 0.01), np.full(len(WL), 0.1))


def _thumb(h: int, w: int) -> dict[str, object]:
    rgb = np.arange(h * w * 3, dtype=np.uint8).reshape(h, w, 3)
    return {"height": h, "width": w, "bands": [2, 1, 0],
            "rgb": base64.b64encode(rgb.tobytes()).decode("ascii")}


def _spectra(**over: object) -> SplitSpectra:
    flagged = Balance("train", "test", np.array([0.1, 2.5, 3.25, 0.2]),
                      [(450.0, 500.0)], True)
    alike = Balance("train", "val", np.array([0.1, 0.2, 0.3, 0.05]), [], False)
    constant = Balance("val", "test", np.array([0.0, np.inf, 0.0, 0.0]), [(450.0, 450.0)], True)
    grid = GridSpectra(WL, {"test": _stage(3, 2.0), "train": _stage(6, 1.0),
                            "val": _stage(2, 1.0)},
                       {3: {"val": np.ones(4), "train": np.ones(4)}, 7: {"test": np.ones(4)}},
                       [alike, flagged, constant], [("val", "predict")])
    values: dict[str, object] = {
        "grids": [grid], "missing": [], "thumbnails": {"train": [("a.npz#0", _thumb(4, 6))],
                                                       "val": [], "test": [("b.npz#2",
                                                                            _thumb(40, 80))]},
        "threshold": 1.5}
    values.update(over)
    return SplitSpectra(**values)  # type: ignore[arg-type]


def test_each_stage_pair_is_a_row_scripts_can_read() -> None:
    page = Tags(section(_spectra(), "", {3: "scratch"}))
    rows = page.find("tr", **{"class": "balance"})
    assert [(r["data-stage-a"], r["data-stage-b"]) for r in rows] == [
        ("train", "val"), ("train", "test"), ("val", "test")]
    by = {(r["data-stage-a"], r["data-stage-b"]): r for r in rows}
    assert by["train", "test"]["data-max-shift"] == "3.250"
    assert by["train", "test"]["data-flagged"] == "true"
    assert by["train", "test"]["data-range"] == "450-500"
    assert by["train", "val"] == {"class": "balance", "data-stage-a": "train",
                                  "data-stage-b": "val", "data-max-shift": "0.300",
                                  "data-flagged": "false", "data-range": ""}
    assert by["val", "test"]["data-max-shift"] == "inf"  # a constant band whose means differ
    assert "data-base" not in by["train", "test"]
    text = page.text
    assert "train and test differ in 450-500 nm" in text and "alike" in text
    assert "above 1.5" in text  # the threshold heads the column
    assert "val and predict: too few frames to compare (3 needed)" in text
    assert [a["class"] for a in page.find("td") if a.get("class")] == ["ok", "bad", "bad"]


def test_the_section_names_its_grid_and_draws_stages_and_categories() -> None:
    text = section(_spectra(), "", {3: "scratch"})
    page = Tags(text)
    assert page.find("section", id="spectra")
    assert page.find("h3", data_grid="0") and "Grid 1: 4 bands, 400-550 nm" in page.text
    svgs = re.findall(r"<svg .*?</svg>", text)
    assert len(svgs) == 2  # the stages' spectra, then the categories
    for name in ("train (6 frames)", "val (2 frames)", "test (3 frames)"):
        assert name in svgs[0]
    assert "scratch" in svgs[1] and "category 7" in svgs[1]  # a name, else its number
    legend = re.findall(r">(train|val|test)</text>", svgs[1])
    assert legend == ["train", "val", "test"]  # the usual order, whatever the dict's
    assert 'fill-opacity="0.15"' in svgs[0]  # the ±1 std bands


def test_thumbnails_are_images_of_their_stage_scaled_by_a_whole_factor() -> None:
    text = section(_spectra(), "", {})
    page = Tags(text)
    imgs = page.find("img")
    assert [(i["data-uid"], i["data-stage"]) for i in imgs] == [("a.npz#0", "train"),
                                                               ("b.npz#2", "test")]
    assert (imgs[0]["width"], imgs[0]["height"]) == ("126", "84")  # 128 // 6 = 21 times
    assert (imgs[1]["width"], imgs[1]["height"]) == ("160", "80")  # at least twice
    data = base64.b64decode(imgs[0]["src"].removeprefix("data:image/bmp;base64,"))
    rgb = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    assert data == bmp(rgb)
    assert re.findall(r"<h4>(\w+)</h4>", text) == ["train", "test"]  # no heading for val


def test_a_bmp_is_bottom_up_bgr_with_rows_padded_to_four_bytes() -> None:
    rgb = np.array([[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]], dtype=np.uint8)
    data = bmp(rgb)
    assert data[:2] == b"BM" and struct.unpack("<I", data[2:6])[0] == len(data) == 54 + 16
    width, height = struct.unpack("<ii", data[18:26])
    assert (width, height) == (2, 2) and struct.unpack("<H", data[28:30])[0] == 24
    assert struct.unpack("<I", data[10:14])[0] == 54  # the pixels start after the headers
    assert data[54:] == bytes([9, 8, 7, 12, 11, 10, 0, 0, 3, 2, 1, 6, 5, 4, 0, 0])


@pytest.mark.parametrize(("count", "more"), [(5, False), (6, True)])
def test_five_missing_samples_are_all_named_six_are_cut(count: int, more: bool) -> None:
    missing = [f"s{k}.npz#0" for k in range(count)]
    text = Tags(section(_spectra(missing=missing), "", {})).text
    assert ("s4.npz#0 ...)" in text) is more and ("s4.npz#0)" in text) is not more


def test_missing_summaries_are_counted_and_the_first_five_named() -> None:
    missing = [f"s{k}.npz#0" for k in range(7)]
    page = Tags(section(_spectra(missing=missing), "", {}))
    (p,) = page.find("p", data_metric="spectra-missing")
    assert p["data-count"] == "7"
    assert "7 samples of the split have no summary (s0.npz#0, s1.npz#0, s2.npz#0, s3.npz#0, " \
           "s4.npz#0 ...): rerun dvc-cuvis materialize" in page.text
    assert "dvc repro -f -s materialize && dvc repro" in page.text
    few = Tags(section(_spectra(missing=missing[:2]), "", {}))
    assert "(s0.npz#0, s1.npz#0):" in few.text and "..." not in few.text
    assert not Tags(section(_spectra(), "", {})).find("p", data_metric="spectra-missing")


def test_without_summaries_the_section_says_how_to_get_them() -> None:
    text = section(None, "no summaries <here>: run dvc-cuvis materialize", {})
    page = Tags(text)
    assert page.find("section", id="spectra") and page.find("p", data_metric="spectra-absent")
    assert "no summaries <here>: run" in page.text and "&lt;here&gt;" in text
    assert not page.find("img") and "<svg" not in text


def test_the_base_comparison_or_why_it_was_left_out() -> None:
    base = [Balance("train", "train", np.array([0.5, 2.0, 0.1, 0.1]), [(450.0, 450.0)], True)]
    page = Tags(section(_spectra(base=base), "", {}))
    (row,) = page.find("tr", data_base="true")
    assert row["data-flagged"] == "true" and row["data-max-shift"] == "2.000"
    assert "train at the base revision and now" in page.text
    left_out = Tags(section(_spectra(base_note="the base's summaries are not in the cache"),
                            "", {}))
    assert not left_out.find("tr", data_base="true")
    assert "the base's summaries are not in the cache" in left_out.text
    assert "train at the base revision" not in Tags(section(_spectra(), "", {})).text


def test_no_category_chart_without_categories_and_a_grid_without_bands() -> None:
    grid = GridSpectra((), {}, {}, [], [])
    text = section(_spectra(grids=[grid]), "", {})
    assert "Grid 1: no bands" in Tags(text).text
    assert text.count("<svg") == 1  # the (empty) spectra chart, no categories chart
    assert '<div class="chart"></div>' in text


@pytest.mark.parametrize("count", [8, 9])
def test_at_most_eight_categories_are_drawn(count: int) -> None:
    cats = {k: {"train": np.ones(4)} for k in range(count)}
    grid = GridSpectra(WL, {"train": _stage(3, 1.0)}, cats, [], [])
    text = section(_spectra(grids=[grid]), "", {})
    charts = re.findall(r"<svg .*?</svg>", text)
    assert len(re.findall(r">category \d+</text>", charts[1])) == 8


def _odd_stage_spectra() -> SplitSpectra:
    """A stage outside train/val/test, a thumbnail 5 px wide (rows padded by one byte)."""
    grid = GridSpectra(WL, {"train": _stage(4, 1.0), "holdout": _stage(2, 3.0)},
                       {1: {"holdout": np.full(4, 2.0), "train": np.ones(4),
                            "extra": np.full(4, 0.5)},
                        **{k: {"train": np.full(4, float(k))} for k in range(2, 7)}},
                       [Balance("train", "test", np.array([2.0, 2.0, 0.1, 2.0]),
                                [(400.0, 450.0), (550.0, 550.0)], True)], [])
    return _spectra(grids=[grid], thumbnails={"train": [("c.npz#1", _thumb(3, 5)),
                                                        ("d.npz#0", _thumb(9, 4))]})


SECTIONS = {
    "section_full": lambda: section(_spectra(), "", {3: "scratch"}),
    "section_missing": lambda: section(_spectra(missing=[f"s{k}.npz#0" for k in range(7)]),
                                       "", {}),
    "section_base": lambda: section(_spectra(base=[Balance(
        "train", "train", np.array([0.5, 2.0, 0.1, 0.1]), [(450.0, 450.0)], True)]), "", {}),
    "section_base_note": lambda: section(_spectra(base_note="the base's summaries are not in "
                                                  "the local DVC cache"), "", {}),
    "section_odd_stage": lambda: section(_odd_stage_spectra(), "", {}),
    "section_absent": lambda: section(None, "no summaries: run dvc-cuvis materialize", {}),
}


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_the_section_is_its_pinned_page(name: str) -> None:
    """The section's bytes for fixed figures (the report promises the same bytes on every
    machine); a deliberate change rewrites them with DVC_CUVIS_UPDATE_GOLDEN=1."""
    from pathlib import Path

    assert_pinned(SECTIONS[name]() + "\n", Path(__file__).parent / "golden" / f"{name}.html",
                  f"the section {name}")


def test_a_stage_outside_the_usual_three_comes_after_them_in_grey() -> None:
    text = section(_odd_stage_spectra(), "", {})
    charts = re.findall(r"<svg .*?</svg>", text)
    assert re.findall(r">(train|extra|holdout)</text>", charts[1]) == [
        "train", "extra", "holdout"]  # the usual stages, then the others by name
    assert 'stroke="#777"' in charts[1] and 'stroke="#777"' in charts[0]
    page = Tags(text)
    wide, tall = page.find("img")
    data = base64.b64decode(wide["src"].removeprefix("data:image/bmp;base64,"))
    assert len(data) == 54 + 3 * (5 * 3 + 1)  # each 15-byte row padded to 16
    assert (tall["width"], tall["height"]) == ("56", "126")  # 128 // 9 = 14: by the long side
    assert text.count("<img ") == 2 and "</div>" in text.split("<img ", 2)[2]
    assert re.search(r'src="data:image/bmp;base64,[^"]+"><img class="thumb"', text)
    (row,) = page.find("tr", **{"class": "balance"})
    assert row["data-range"] == "400-450,550-550"  # ranges comma-separated
    assert "differ in 400-450,550-550 nm" in page.text
    charts_of_categories = charts[1]
    assert len(re.findall(r">category \d+</text>", charts_of_categories)) == 6
    assert 'width="680"' in charts_of_categories  # four panels a row, however many
