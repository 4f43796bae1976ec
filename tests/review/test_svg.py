"""The report's charts, drawn as plain SVG: valid XML, data drawn to scale, edge cases safe."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dvc_cuvis.review import svg

NS = {"s": "http://www.w3.org/2000/svg"}


def parse(text: str) -> ET.Element:
    """The chart as an XML tree (fails on text that is not well-formed SVG)."""
    root = ET.fromstring(text)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return root


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]


@given(st.floats(-1e6, 1e6), st.floats(1e-3, 1e6), st.integers(2, 8))
def test_ticks_are_round_evenly_spaced_and_cover_the_range(lo: float, width: float,
                                                           count: int) -> None:
    hi = lo + width
    ticks = svg.nice_ticks(lo, hi, count)
    steps = np.diff(ticks)
    assert len(ticks) >= 2 and np.allclose(steps, steps[0], rtol=1e-6)
    step = steps[0]
    assert ticks[0] >= lo - 1e-6 * step and ticks[-1] <= hi + 1e-6 * step  # inside the range
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(math.isclose(mantissa, m, rel_tol=1e-6) for m in (1, 2, 2.5, 5, 10))
    assert len(ticks) <= 2 * count + 2  # about count ticks, never thousands
    assert ticks[-1] - ticks[0] >= width - 2 * step  # the range is covered up to one step


@pytest.mark.parametrize(("lo", "hi", "count", "step"), [
    (0, 5, 5, 1), (0, 2.5, 5, 0.5), (0, 1.25, 5, 0.25), (0, 1, 5, 0.2), (0, 0.5, 5, 0.1),
    (0, 10, 5, 2), (0, 12, 5, 2.5),  # 12 / 5 = 2.4: the roundest step of at least that
    (0, 12, 6, 2),  # 12 / 6 = 2 exactly
    (0, 10, 1, 10), (0, 10, 0, 10),  # one interval asked for (or none): the whole range
    (0.31, 0.39, 2, 0.025),  # 0.05 leaves one tick inside: the next finer step, not two finer
])
def test_ticks_take_the_roundest_step_of_at_least_the_range_over_count(
        lo: float, hi: float, count: int, step: float) -> None:
    ticks = svg.nice_ticks(lo, hi, count)
    assert np.allclose(np.diff(ticks), step)
    assert ticks[0] == pytest.approx(math.ceil(lo / step - 1e-9) * step)
    assert ticks[-1] == pytest.approx(math.floor(hi / step + 1e-9) * step)


def test_the_default_asks_for_about_five_ticks() -> None:
    assert svg.nice_ticks(0, 12) == svg.nice_ticks(0, 12, 5) != svg.nice_ticks(0, 12, 6)


def test_a_flat_or_non_finite_range_still_gives_ticks() -> None:
    assert svg.nice_ticks(3, 3) == [2, 2.5, 3, 3.5, 4]
    assert svg.nice_ticks(float("nan"), 1) == [0.0]


def test_tick_labels_carry_the_decimals_of_their_step() -> None:
    assert [svg.tick_label(t, [0, 0.25]) for t in (0, 0.25, 0.5)] == ["0", "0.25", "0.50"]
    assert svg.tick_label(400, [400, 500]) == "400"
    assert svg.tick_label(-0.0001, [0, 0.5]) == "0"  # no "-0.0"
    assert svg.num(1 / 3) == "0.33" and svg.num(2.0) == "2" and svg.num(-0.001) == "0"
    assert svg.tick_label(3, [3]) == "3"  # a single tick: whole numbers
    assert svg.tick_label(0.4, [0.4, 0.6]) == "0.4"  # the step (0.2), not a tick, decides
    assert svg.tick_label(1e-7, [0, 1e-7]) == "0"  # six decimals at most


def test_bars_are_drawn_to_scale_with_their_counts_and_notes() -> None:
    text = svg.hbar_chart(["train", "val", "test"], [60, 20, 0], ["#1", "#2", "#3"],
                          ["60 samples", "20 samples", "0 samples"], "samples")
    root = parse(text)
    bars = {r.find("s:title", NS).text: float(r.get("width"))
            for r in root.iter("{http://www.w3.org/2000/svg}rect")}
    assert set(bars) == {"train: 60", "val: 20", "test: 0"}
    assert bars["train: 60"] == pytest.approx(3 * bars["val: 20"], abs=0.02)
    assert bars["test: 0"] == 0
    assert {"train", "val", "test", "60 samples", "samples"} <= set(texts(root))


def test_grouped_bars_have_one_bar_per_group_and_series_and_a_legend() -> None:
    text = svg.grouped_bar_chart(["dent", "scratch"], [("train", "#1", [4, 0]),
                                                       ("val", "#2", [2, 8])], "samples")
    root = parse(text)
    heights = {r.find("s:title", NS).text: float(r.get("height"))
               for r in root.iter("{http://www.w3.org/2000/svg}rect")
               if r.find("s:title", NS) is not None}
    assert set(heights) == {"dent, train: 4", "dent, val: 2", "scratch, train: 0",
                            "scratch, val: 8"}
    assert heights["scratch, val: 8"] == pytest.approx(4 * heights["dent, val: 2"], abs=0.02)
    assert {"dent", "scratch", "train", "val", "samples"} <= set(texts(root))


def test_the_heat_map_shades_by_count_and_writes_each_non_zero_count() -> None:
    mat = np.array([[30, 0], [3, 1000]])
    root = parse(svg.heatmap(mat, ["from a", "from b"], ["to a", "to b"]))
    fill = {r.find("s:title", NS).text: r.get("fill")
            for r in root.iter("{http://www.w3.org/2000/svg}rect")}
    assert fill["from a to b: 0"] == "#f7fbff" and fill["from b to b: 1000"] == "#08306b"
    shade = {k: int(v[1:3], 16) for k, v in fill.items()}  # red falls as the count grows
    assert shade["from b to b: 1000"] < shade["from a to a: 30"] < shade["from b to a: 3"]
    written = {t.text: t.get("fill") for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert written["1000"] == "white" and written["30"] == "black" and "0" not in written


def _points(root: ET.Element, tag: str) -> list[list[tuple[float, float]]]:
    return [[tuple(map(float, p.split(","))) for p in el.get("points").split()]
            for el in root.iter(f"{{http://www.w3.org/2000/svg}}{tag}")]


def test_a_line_chart_draws_each_finite_point_and_its_band() -> None:
    x = [400, 500, 600, 700]
    y = np.array([1.0, 2.0, np.nan, 4.0])
    line = svg.Line("train (3 frames)", "#1", y, y - 0.5, y + 0.5)
    root = parse(svg.line_chart(x, [line, svg.Line("val", "#2", np.array([2.0] * 4))],
                                "wavelength (nm)", "mean value"))
    (train, val) = _points(root, "polyline")
    assert len(train) == 3 and len(val) == 4  # the NaN band is left out, not drawn at 0
    assert train[0][0] < train[1][0] < train[2][0]
    assert train[0][1] > train[1][1] > train[2][1]  # larger values higher up
    assert [p[1] for p in val] == [val[0][1]] * 4
    (band,) = _points(root, "polygon")
    assert len(band) == 6
    assert {"wavelength (nm)", "mean value", "train (3 frames)", "val", "400", "700"} <= set(
        texts(root))


def test_a_constant_or_one_band_spectrum_draws_without_dividing_by_zero() -> None:
    flat = svg.line_chart([550], [svg.Line("test", "#3", np.array([0.0]))], "nm", "mean")
    root = parse(flat)
    (dot,) = root.iter("{http://www.w3.org/2000/svg}circle")
    assert all(math.isfinite(float(dot.get(k))) for k in ("cx", "cy"))
    assert "nan" not in flat and "inf" not in flat
    empty = parse(svg.line_chart([1, 2], [svg.Line("x", "#1", np.array([np.nan, np.inf]))],
                                 "nm", "mean"))
    assert _points(empty, "polyline") == [[]]  # drawn, but with no point at all


def test_small_multiples_title_each_panel_and_name_each_stage_once() -> None:
    panels = [(f"cat {k}", [svg.Line("train", "#1", np.arange(3.0) + k),
                            svg.Line("val", "#2", np.arange(3.0))]) for k in range(5)]
    text = svg.small_multiples([1, 2, 3], panels, columns=4)
    root = parse(text)
    words = texts(root)
    assert [w for w in words if w.startswith("cat ")] == [f"cat {k}" for k in range(5)]
    assert words.count("train") == 1 and words.count("val") == 1
    assert len(_points(root, "polyline")) == 10
    assert float(root.get("height")) > 2 * 140  # two rows of panels


def test_labels_are_escaped_and_the_bytes_are_stable() -> None:
    args = (["<b>&"], [3], ["#1"], ['"q"'], "x & y")
    text = svg.hbar_chart(*args)
    assert "<b>&" not in text and "&lt;b&gt;&amp;" in text
    parse(text)
    assert svg.hbar_chart(*args) == text
    assert not re.search(r"\d\.\d{3,}", text)  # coordinates at two decimals at most
