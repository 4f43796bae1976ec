"""Where the report's charts put things: nothing drawn off the canvas, no label over another
or over a bar, ticks under their labels, bars from their axis, cells that tile, lines inside
their axes; and the pinned pictures of every chart kind (``tests/review/golden/``).

A chart's layout is part of what a reviewer sees, so it is tested two ways. The geometry
tests state what must hold for any input (a label clipped by the canvas, or one written over
another, is a bug whatever the numbers). The golden pictures pin the layout of fixed inputs
byte for byte, as the report promises the same bytes on every machine: a deliberate layout
change rewrites them (``DVC_CUVIS_UPDATE_GOLDEN=1 pytest tests/review/test_svg_layout.py``)
and a reviewer sees the pictures change in the pull request.
"""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.review import svg
from tests.helpers.golden import assert_pinned

SVG = "{http://www.w3.org/2000/svg}"
GOLDEN = Path(__file__).parent / "golden"
EPS = 0.51  # coordinates are written with two decimals


@dataclass(frozen=True)
class Box:
    """An element's extent on the canvas, and what it is."""

    kind: str
    x0: float
    y0: float
    x1: float
    y1: float
    label: str = ""
    rotated: bool = False

    def overlaps(self, other: Box, margin: float = 0.5) -> bool:
        return (self.x0 + margin < other.x1 and other.x0 + margin < self.x1
                and self.y0 + margin < other.y1 and other.y0 + margin < self.y1)

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2


def _f(el: ET.Element, key: str) -> float:
    return float(el.get(key, "0"))


def _text_box(el: ET.Element) -> Box:
    """A label's planned extent: its average-glyph width, one font size high, centred where
    :meth:`svg.Canvas.text` centres it; a turned label as the bounds of its turned box."""
    size, x = _f(el, "font-size"), _f(el, "x")
    mid = _f(el, "y") - size / 3
    width = svg.text_width(el.text or "", size)
    x0 = {"start": x, "middle": x - width / 2, "end": x - width}[el.get("text-anchor", "start")]
    corners = [(x0, mid - size / 2), (x0 + width, mid - size / 2), (x0, mid + size / 2),
               (x0 + width, mid + size / 2)]
    turn = el.get("transform")
    if turn:
        angle, px, py = map(float, re.fullmatch(r"rotate\((\S+) (\S+) (\S+)\)", turn).groups())
        a = math.radians(angle)
        corners = [(px + (u - px) * math.cos(a) - (v - py) * math.sin(a),
                    py + (u - px) * math.sin(a) + (v - py) * math.cos(a)) for u, v in corners]
    xs, ys = [c[0] for c in corners], [c[1] for c in corners]
    return Box("text", min(xs), min(ys), max(xs), max(ys), el.text or "", bool(turn))


def boxes(text: str) -> tuple[float, float, list[Box]]:
    """The canvas size and every drawn element's box."""
    root = ET.fromstring(text)
    out: list[Box] = []
    for el in root.iter():
        tag = el.tag.removeprefix(SVG)
        if tag == "rect":
            x, y, w, h = (_f(el, k) for k in ("x", "y", "width", "height"))
            title = el.find(f"{SVG}title")
            out.append(Box("rect", x, y, x + w, y + h, "" if title is None else title.text or ""))
        elif tag == "line":
            x1, y1, x2, y2 = (_f(el, k) for k in ("x1", "y1", "x2", "y2"))
            kind = "grid" if el.get("stroke") == svg.GRID else "line"
            out.append(Box(kind, min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)))
        elif tag == "text":
            out.append(_text_box(el))
        elif tag in ("polyline", "polygon"):
            pts = [tuple(map(float, p.split(","))) for p in el.get("points", "").split()]
            if pts:
                out.append(Box(tag, min(p[0] for p in pts), min(p[1] for p in pts),
                               max(p[0] for p in pts), max(p[1] for p in pts)))
        elif tag == "circle":
            cx, cy, r = _f(el, "cx"), _f(el, "cy"), _f(el, "r")
            out.append(Box("circle", cx - r, cy - r, cx + r, cy + r))
    return _f(root, "width"), _f(root, "height"), out


def _viewbox_matches(text: str) -> None:
    root = ET.fromstring(text)
    w, h = root.get("width"), root.get("height")
    assert root.get("viewBox") == f"0 0 {w} {h}"


def assert_well_laid_out(text: str) -> list[Box]:
    """What every chart must hold: every element on the canvas (a label may overhang its own
    planned width by a glyph, never the canvas), and no label over another label."""
    _viewbox_matches(text)
    width, height, items = boxes(text)
    assert width > 0 and height > 0
    for b in items:
        assert b.x0 >= -EPS and b.y0 >= -EPS, (b, "left of or above the canvas")
        assert b.x1 <= width + EPS and b.y1 <= height + EPS, (b, "beyond the canvas", width,
                                                              height)
    labels = [b for b in items if b.kind == "text" and not b.rotated]
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            assert not a.overlaps(b), (a, b)
    return items


def _texts(items: list[Box]) -> dict[str, Box]:
    return {b.label: b for b in items if b.kind == "text"}


# -- the charts' inputs: those the report draws, and the edges -----------------------------

STAGES = ["train", "val", "test", "predict"]


def _hbar(values: list[int]) -> str:
    return svg.hbar_chart(STAGES[:len(values)], values, ["#4c72b0", "#dd8452", "#55a868",
                                                         "#8172b3"][:len(values)],
                          [f"{v} samples / {v // 3} sources" for v in values], "samples")


def _grouped(groups: list[str], series: list[list[int]]) -> str:
    return svg.grouped_bar_chart(groups, [(STAGES[k], f"#{k}{k}{k}", vals)
                                          for k, vals in enumerate(series)],
                                 "samples with category")


def _heat(mat: list[list[int]]) -> str:
    m = np.array(mat)
    return svg.heatmap(m, [f"from {s}" for s in STAGES[:m.shape[0]]],
                       [f"to {s}" for s in STAGES[:m.shape[1]]])


WL = np.linspace(450.0, 900.0, 61)


def _lines(k: int = 3, band: bool = True) -> list[svg.Line]:
    out = []
    for j in range(k):
        y = 0.2 + 0.1 * j + 0.05 * np.sin(WL / 60.0 + j)
        out.append(svg.Line(f"{STAGES[j]} ({10 * (j + 1)} frames)", f"#{j}{j}{j}", y,
                            y - 0.03 if band else None, y + 0.03 if band else None))
    return out


CHARTS = {
    "hbar": lambda: _hbar([60, 20, 15]),
    "hbar_one_zero": lambda: _hbar([0]),
    "hbar_four": lambda: _hbar([1200, 0, 37, 5]),
    "grouped": lambda: _grouped(["dent", "scratch", "background"], [[4, 0, 9], [2, 8, 1],
                                                                    [3, 3, 0]]),
    "grouped_many": lambda: _grouped([f"category_{k:02d}" for k in range(9)],
                                     [[k * 7 % 11 for k in range(9)], [k for k in range(9)]]),
    "grouped_empty": lambda: _grouped(["only"], [[0], [0]]),
    "heatmap": lambda: _heat([[30, 0, 2], [3, 1000, 0], [0, 5, 41]]),
    "heatmap_one": lambda: _heat([[0]]),
    "line": lambda: svg.line_chart(WL, _lines(), "wavelength (nm)", "mean value"),
    "line_flat_one_band": lambda: svg.line_chart(
        [550.0], [svg.Line("test (1 frame)", "#333", np.array([0.0]))], "wavelength (nm)",
        "mean value"),
    "line_nan": lambda: svg.line_chart(
        [400.0, 500.0, 600.0, 700.0],
        [svg.Line("train", "#111", np.array([1.0, np.nan, 3.0, 2.0]),
                  np.array([0.5, np.nan, 2.5, 1.5]), np.array([1.5, np.nan, 3.5, 2.5]))],
        "wavelength (nm)", "mean value"),
    "small_multiples": lambda: svg.small_multiples(
        WL, [(f"category {k}", _lines(2, band=False)) for k in range(6)], columns=4),
    "hbar_empty": lambda: svg.hbar_chart([], [], [], [], "samples"),
    "hbar_long_note": lambda: svg.hbar_chart(
        ["train"], [5], ["#111"], ["5 samples / 5 sources, " + "a note far longer than the bar "
                                   "chart is wide, which widens the canvas to fit it"],
        "samples"),
    "hbar_no_notes": lambda: svg.hbar_chart(["train", "val"], [8, 2], ["#1", "#2"], ["", ""],
                                            "samples"),
    "grouped_one_series": lambda: _grouped(["dent", "scratch"], [[3, 1]]),
    "grouped_short_many": lambda: _grouped(list("abcdefghijk"), [[k for k in range(11)],
                                                                 [11 - k for k in range(11)]]),
    "grouped_nothing": lambda: svg.grouped_bar_chart([], [], "samples with category"),
    "heatmap_thirds": lambda: _heat([[12, 4], [3, 1]]),  # 4 is a third of 12: still black
    "heatmap_empty": lambda: svg.heatmap(np.zeros((0, 0), dtype=int), [], []),
    "line_narrow": lambda: svg.line_chart(
        np.linspace(400.0, 540.0, 15),
        [svg.Line("train", "#111", np.linspace(0.0, 0.9, 15))], "wavelength (nm)", "mean"),
    "line_all_nan": lambda: svg.line_chart(
        [400.0, 500.0], [svg.Line("val", "#222", np.array([np.nan, np.nan]))],
        "wavelength (nm)", "mean value"),
    "line_no_lines": lambda: svg.line_chart([400.0, 500.0], [], "wavelength (nm)", "mean"),
    "line_one_sided_band": lambda: svg.line_chart(
        [400.0, 500.0, 600.0], [svg.Line("test", "#333", np.array([1.0, 2.0, 1.5]),
                                         lo=np.array([0.5, 1.5, 1.0]))],
        "wavelength (nm)", "mean value"),
    "small_multiples_default_columns": lambda: svg.small_multiples(
        WL, [(f"category {k}", _lines(1, band=False)) for k in range(5)]),
    "small_multiples_one": lambda: svg.small_multiples(
        WL, [("background", _lines(3, band=False))], columns=1),
}


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_every_chart_keeps_to_its_canvas_and_no_label_covers_another(name: str) -> None:
    assert_well_laid_out(CHARTS[name]())


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_every_chart_is_its_pinned_picture(name: str) -> None:
    assert_pinned(CHARTS[name]() + "\n", GOLDEN / f"{name}.svg", f"the chart {name}")


def test_bars_start_at_their_axis_with_the_label_before_and_the_note_after() -> None:
    items = assert_well_laid_out(_hbar([60, 20, 15]))
    (axis,) = [b for b in items if b.kind == "line" and b.x0 == b.x1 and b.y1 - b.y0 > 30]
    bars = sorted((b for b in items if b.kind == "rect"), key=lambda b: b.y0)
    words = _texts(items)
    assert len(bars) == 3
    for bar, stage, value in zip(bars, STAGES[:3], [60, 20, 15], strict=True):
        assert bar.x0 == pytest.approx(axis.x0, abs=EPS)
        assert axis.y0 - EPS <= bar.y0 and bar.y1 <= axis.y1 + EPS  # along the axis
        label, note = words[stage], words[f"{value} samples / {value // 3} sources"]
        assert label.x1 < axis.x0 and note.x0 > bar.x1  # label left of the axis, note after
        assert label.cy == pytest.approx(bar.cy, abs=EPS)
        assert note.cy == pytest.approx(bar.cy, abs=EPS)
        assert not label.overlaps(bar) and not note.overlaps(bar)
    for upper, lower in itertools.pairwise(bars):
        assert upper.y1 < lower.y0  # a gap between bars
    gaps = {round(lower.y0 - upper.y0, 2) for upper, lower in itertools.pairwise(bars)}
    assert len(gaps) == 1  # evenly spaced


def _axis_lines(items: list[Box]) -> tuple[Box, Box]:
    """The x axis (the longest horizontal axis line) and the y axis (the longest vertical)."""
    lines = [b for b in items if b.kind == "line"]
    x_axis = max((b for b in lines if b.y0 == b.y1), key=lambda b: b.x1 - b.x0)
    y_axis = max((b for b in lines if b.x0 == b.x1), key=lambda b: b.y1 - b.y0)
    return x_axis, y_axis


def _tick_marks(items: list[Box], x_axis: Box, y_axis: Box) -> tuple[list[Box], list[Box]]:
    """The short tick marks below the x axis and left of the y axis."""
    lines = [b for b in items if b.kind == "line"]
    below = [b for b in lines if b.x0 == b.x1 and b.y0 == pytest.approx(x_axis.y0, abs=EPS)
             and 0 < b.y1 - b.y0 < 10]
    left = [b for b in lines if b.y0 == b.y1 and b.x1 == pytest.approx(y_axis.x0, abs=EPS)
            and 0 < b.x1 - b.x0 < 10]
    return below, left


def test_a_line_chart_has_its_ticks_under_their_labels_and_its_lines_inside_its_axes() -> None:
    items = assert_well_laid_out(CHARTS["line"]())
    x_axis, y_axis = _axis_lines(items)
    assert x_axis.x0 == pytest.approx(y_axis.x0, abs=EPS)  # the axes meet in a corner
    assert x_axis.y0 == pytest.approx(y_axis.y1, abs=EPS)
    below, left = _tick_marks(items, x_axis, y_axis)
    assert len(below) >= 3 and len(left) >= 3
    labels = [b for b in items if b.kind == "text" and not b.rotated]
    for tick in below:  # one label centred under each tick, below the axis
        (lab,) = [b for b in labels if b.cx == pytest.approx(tick.x0, abs=1.0) and
                  b.y0 > x_axis.y0 and b.y0 < x_axis.y0 + 20]
        assert float(lab.label) >= WL[0] - 1e-6 and float(lab.label) <= WL[-1] + 1e-6
    values = []
    for tick in sorted(left, key=lambda b: -b.y0):  # bottom to top
        (lab,) = [b for b in labels if b.cy == pytest.approx(tick.y0, abs=1.0) and
                  b.x1 < y_axis.x0]  # one label beside each tick, left of the axis
        grids = [b for b in items if b.kind == "grid" and b.y0 == tick.y0]
        assert len(grids) == 1 and grids[0].x1 == pytest.approx(x_axis.x1, abs=EPS)
        assert grids[0].x0 > y_axis.x0  # from the axis across the plot
        values.append(float(lab.label))
    assert values == sorted(values) and len(set(values)) == len(values)  # up is larger
    assert values[0] <= 0.25 and values[-1] >= 0.35  # ticks across the lines' range
    for b in items:
        if b.kind in ("polyline", "polygon"):  # drawn inside the axes
            assert b.x0 >= y_axis.x0 - EPS and b.x1 <= x_axis.x1 + EPS
            assert b.y0 >= y_axis.y0 - EPS and b.y1 <= x_axis.y0 + EPS
    polylines = [b for b in items if b.kind == "polyline"]
    assert all(b.x0 == pytest.approx(x_axis.x0, abs=EPS) and
               b.x1 == pytest.approx(x_axis.x1, abs=EPS) for b in polylines)  # x fills the axis
    words = _texts(items)
    xlabel, ylabel = words["wavelength (nm)"], words["mean value"]
    assert xlabel.y0 > max(b.y1 for b in labels if b.cx != xlabel.cx and b.y0 > x_axis.y0)
    assert ylabel.rotated and ylabel.x1 < min(b.x0 for b in labels if b.x1 < y_axis.x0)
    legend = [words[f"{STAGES[j]} ({10 * (j + 1)} frames)"] for j in range(3)]
    assert all(b.x0 > x_axis.x1 for b in legend)  # the legend right of the plot
    assert legend[0].y0 < legend[1].y0 < legend[2].y0


def test_legend_swatches_sit_left_of_their_names_at_their_height() -> None:
    for name in ("line", "grouped", "small_multiples"):
        items = assert_well_laid_out(CHARTS[name]())
        swatches = [b for b in items if b.kind == "rect" and not b.label]
        names = [b for b in items if b.kind == "text" and b.label.startswith(tuple(STAGES))]
        assert swatches and len(swatches) == len(names), name
        for swatch in swatches:
            (owner,) = [b for b in names if b.cy == pytest.approx(swatch.cy, abs=1.0)
                        and 0 < b.x0 - swatch.x1 < 10 and not b.overlaps(swatch)]
            assert owner.x0 > swatch.x1, name


def test_grouped_bars_stand_on_the_axis_side_by_side_under_their_group_label() -> None:
    items = assert_well_laid_out(CHARTS["grouped"]())
    x_axis, y_axis = _axis_lines(items)
    bars = [b for b in items if b.kind == "rect" and b.label]
    words = _texts(items)
    for group in ("dent", "scratch", "background"):
        mine = sorted((b for b in bars if b.label.startswith(f"{group}, ")), key=lambda b: b.x0)
        assert [b.label.split(", ")[1].split(":")[0] for b in mine] == STAGES[:3]
        for left, right in itertools.pairwise(mine):
            assert left.x1 == pytest.approx(right.x0, abs=EPS)  # side by side, touching
        for b in mine:
            assert b.y1 == pytest.approx(x_axis.y0, abs=EPS)  # standing on the axis
            assert b.x0 > y_axis.x0 and b.x1 < x_axis.x1
        label = words[group]
        assert label.cx == pytest.approx((mine[0].x0 + mine[-1].x1) / 2, abs=EPS)
        assert label.y0 > x_axis.y0
    groups = [sorted((b for b in bars if b.label.startswith(f"{g}, ")), key=lambda b: b.x0)
              for g in ("dent", "scratch", "background")]
    for left, right in itertools.pairwise(groups):
        assert left[-1].x1 < right[0].x0  # a gap between groups
    tallest = max(bars, key=lambda b: b.y1 - b.y0)
    assert tallest.label == "background, train: 9"
    assert tallest.y0 >= y_axis.y0 - EPS  # the tallest bar stays inside the axis
    heights = {b.label: b.y1 - b.y0 for b in bars}
    assert heights["scratch, val: 8"] == pytest.approx(8 * heights["dent, val: 2"] / 2, abs=0.02)


def test_heat_cells_tile_with_their_labels_beside_and_below() -> None:
    items = assert_well_laid_out(CHARTS["heatmap"]())
    cells = [b for b in items if b.kind == "rect"]
    assert len(cells) == 9
    xs = sorted({round(b.x0, 2) for b in cells})
    ys = sorted({round(b.y0, 2) for b in cells})
    size = cells[0].x1 - cells[0].x0
    assert all(b.x1 - b.x0 == pytest.approx(size) and b.y1 - b.y0 == pytest.approx(size)
               for b in cells)  # square cells of one size
    assert np.allclose(np.diff(xs), size, atol=0.02) and np.allclose(np.diff(ys), size,
                                                                      atol=0.02)  # tiling
    words = _texts(items)
    for k, row in enumerate(STAGES[:3]):
        label = words[f"from {row}"]
        assert label.x1 < xs[0] and label.cy == pytest.approx(ys[k] + size / 2, abs=EPS)
        col = words[f"to {row}"]
        assert col.rotated and col.y0 > ys[-1] + size - EPS  # turned, below the cells
        assert xs[k] <= col.x1 <= xs[k] + size + 10  # ending under its column
    for cell in cells:  # each count centred in its cell
        n = cell.label.rsplit(": ", 1)[1]
        inside = [b for b in items if b.kind == "text" and b.label == n
                  and cell.x0 < b.cx < cell.x1 and cell.y0 < b.cy < cell.y1]
        if n == "0":
            assert not inside
        else:
            (count,) = inside
            assert count.cx == pytest.approx(cell.cx, abs=EPS)
            assert count.cy == pytest.approx(cell.cy, abs=EPS)


def test_small_multiples_lay_their_panels_in_rows_with_one_legend_below() -> None:
    text = CHARTS["small_multiples"]()
    items = assert_well_laid_out(text)
    words = [b for b in items if b.kind == "text" and b.label.startswith("category ")]
    assert len(words) == 6
    rows = sorted({round(b.cy, 2) for b in words})
    assert len(rows) == 2  # 4 panels, then 2
    first = sorted((b for b in words if round(b.cy, 2) == rows[0]), key=lambda b: b.cx)
    assert [b.label for b in first] == [f"category {k}" for k in range(4)]
    steps = {round(b.cx - a.cx, 2) for a, b in itertools.pairwise(first)}
    assert len(steps) == 1  # evenly spaced columns
    lines = [b for b in items if b.kind == "polyline"]
    for title in words:  # each panel's lines under its title, inside its column
        mine = [b for b in lines if abs(b.cx - title.cx) < 40 and 0 < b.y0 - title.y1 < 120]
        assert len(mine) == 2, title
    legend = [b for b in items if b.kind == "text" and b.label.startswith("train")]
    assert len(legend) == 1 and legend[0].y0 > max(b.y1 for b in lines)
    root = ET.fromstring(text)
    assert float(root.get("width")) == pytest.approx(4 * (first[1].cx - first[0].cx), abs=EPS)


def test_a_band_is_drawn_only_with_both_of_its_edges() -> None:
    items = assert_well_laid_out(CHARTS["line_one_sided_band"]())
    assert [b.kind for b in items].count("polygon") == 0
    assert [b.kind for b in items].count("polyline") == 1


def test_a_long_note_widens_the_bar_chart_to_keep_it_whole() -> None:
    text = CHARTS["hbar_long_note"]()
    width, _, items = boxes(text)
    note = next(b for b in items if b.kind == "text" and b.label.startswith("5 samples"))
    assert width > 500 and note.x1 <= width
