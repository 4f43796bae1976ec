"""The report's charts as plain SVG text, drawn without a plotting library.

Why not matplotlib: the report draws five small chart kinds (bars, grouped bars, a heat map,
lines with a band, small multiples of lines), and importing and driving matplotlib was
most of a report stage's time (docs/performance.md).  Here a chart is a few dozen SVG
elements written as text: numbers are formatted with fixed precision and nothing depends on
fonts being measured, so the bytes are the same on every machine and need no extra install.

Labels are laid out with an average glyph width (``CHAR_W`` of the font size): a label may be
a little longer or shorter than planned, which margins absorb.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

#: Average glyph width of the charts' sans-serif font, as a share of the font size.
CHAR_W = 0.6
FONT = 10
AXIS = "#444"
GRID = "#e6e6e6"


def num(value: float) -> str:
    """``value`` as an SVG coordinate: two decimals at most, no trailing zeros."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def text_width(text: str, size: float = FONT) -> float:
    """The planned width of ``text`` at ``size`` px (an average glyph width per character)."""
    return len(text) * size * CHAR_W


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering ``[lo, hi]`` (steps of 1, 2, 2.5 or 5 x 10^k)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0]
    if hi <= lo:
        lo, hi = lo - 1, lo + 1
    raw = (hi - lo) / max(count, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    steps = [m * mag for m in (10, 5, 2.5, 2, 1, 0.5, 0.25, 0.2, 0.1)]
    k = next(k for k, s in enumerate(steps) if s < raw * (1 - 1e-9)) - 1
    while True:  # the roundest step at least raw, made finer until two ticks fit
        step = steps[k]
        first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
        if last > first or k == len(steps) - 1:
            return [n * step for n in range(first, last + 1)]
        k += 1


def tick_label(value: float, ticks: Sequence[float]) -> str:
    """``value`` with as many decimals as the tick step needs (``0.25`` keeps two)."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    decimals = 0
    while decimals < 6 and abs(round(step, decimals) - step) > step * 1e-6:
        decimals += 1
    text = f"{value:.{decimals}f}"
    return "0" if text.strip("-0.") == "" else text


def esc(text: str) -> str:
    """``text`` escaped for SVG element content and attribute values."""
    return html.escape(text, quote=True)


@dataclass
class Canvas:
    """An SVG drawing of ``width`` x ``height`` px, built element by element."""

    width: float
    height: float
    items: list[str] = field(default_factory=list)

    def add(self, element: str) -> None:
        """Append one SVG element (text)."""
        self.items.append(element)

    def text(self, x: float, y: float, content: str, *, anchor: str = "start",
             size: float = FONT, color: str = "#222", rotate: float = 0) -> None:
        """A label whose baseline sits ``size/3`` below ``y`` (vertically centred on ``y``)."""
        turn = f' transform="rotate({num(rotate)} {num(x)} {num(y)})"' if rotate else ""
        self.add(f'<text x="{num(x)}" y="{num(y + size / 3)}" font-size="{num(size)}" '
                 f'text-anchor="{anchor}" fill="{color}"{turn}>{esc(content)}</text>')

    def line(self, x1: float, y1: float, x2: float, y2: float, color: str = AXIS) -> None:
        """A 1 px straight line."""
        self.add(f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" '
                 f'stroke="{color}" stroke-width="1"/>')

    def rect(self, x: float, y: float, w: float, h: float, color: str, title: str = "") -> None:
        """A filled rectangle, with a hover ``title`` when given."""
        tip = f"<title>{esc(title)}</title>" if title else ""
        end = f">{tip}</rect>" if tip else "/>"
        self.add(f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(w, 0))}" '
                 f'height="{num(max(h, 0))}" fill="{color}"{end}')

    def svg(self, label: str) -> str:
        """The drawing as one ``<svg>`` element (``label`` is its accessible name)."""
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(self.width)}" '
                f'height="{num(self.height)}" viewBox="0 0 {num(self.width)} '
                f'{num(self.height)}" role="img" aria-label="{esc(label)}" '
                f'font-family="system-ui, -apple-system, sans-serif">'
                + "".join(self.items) + "</svg>")


@dataclass(frozen=True)
class Frame:
    """A plotting area at ``(x, y)`` of ``w`` x ``h`` px mapping data ranges onto it."""

    x: float
    y: float
    w: float
    h: float
    xlim: tuple[float, float]
    ylim: tuple[float, float]

    def px(self, value: float) -> float:
        """The pixel column of data ``value``."""
        lo, hi = self.xlim
        return self.x + (value - lo) / ((hi - lo) or 1.0) * self.w

    def py(self, value: float) -> float:
        """The pixel row of data ``value`` (up is larger)."""
        lo, hi = self.ylim
        return self.y + self.h - (value - lo) / ((hi - lo) or 1.0) * self.h


def x_axis(c: Canvas, f: Frame, ticks: Sequence[float], label: str = "",
           size: float = FONT) -> None:
    """The bottom axis of ``f``: its line, ticks, tick labels and ``label`` below."""
    bottom = f.y + f.h
    c.line(f.x, bottom, f.x + f.w, bottom)
    for t in ticks:
        c.line(f.px(t), bottom, f.px(t), bottom + 4)
        c.text(f.px(t), bottom + 6 + size * 0.5, tick_label(t, ticks), anchor="middle",
               size=size)
    if label:
        c.text(f.x + f.w / 2, bottom + 10 + size * 1.6, label, anchor="middle", size=size)


def y_axis(c: Canvas, f: Frame, ticks: Sequence[float], label: str = "",
           size: float = FONT) -> None:
    """The left axis of ``f`` with light grid lines across, and ``label`` turned upright."""
    c.line(f.x, f.y, f.x, f.y + f.h)
    widest = max((text_width(tick_label(t, ticks), size) for t in ticks), default=0)
    for t in ticks:
        c.line(f.x + 1, f.py(t), f.x + f.w, f.py(t), GRID)
        c.line(f.x - 4, f.py(t), f.x, f.py(t))
        c.text(f.x - 6, f.py(t), tick_label(t, ticks), anchor="end", size=size)
    if label:
        c.text(f.x - 12 - widest - size / 2, f.y + f.h / 2, label, anchor="middle", size=size,
               rotate=-90)


#: A legend entry's name starts this many font sizes right of its swatch; entries side by
#: side are this many font sizes apart (besides the name's width).
LEGEND_NAME_AT, LEGEND_SPACING = 1.8, 3.0


def legend(c: Canvas, x: float, y: float, entries: Sequence[tuple[str, str]],
           size: float = FONT, *, across: bool = False) -> None:
    """Colour swatches with their names, from ``(x, y)`` down (or ``across``)."""
    for name, color in entries:
        c.rect(x, y - size * 0.35, size * 1.4, size * 0.7, color)
        c.text(x + size * LEGEND_NAME_AT, y, name, size=size)
        if across:
            x += size * LEGEND_SPACING + text_width(name, size)
        else:
            y += size * 1.5


def legend_width(names: Sequence[str], size: float = FONT, *, across: bool = False) -> float:
    """How wide :func:`legend` draws ``names``: a swatch, a gap and the name, side by side
    when ``across``, else the widest entry."""
    ends = [size * LEGEND_NAME_AT + text_width(name, size) for name in names]
    if not ends:
        return 0.0
    if not across:
        return max(ends)
    return (sum(size * LEGEND_SPACING + text_width(name, size) for name in names[:-1])
            + ends[-1])


def span(values: Sequence[np.ndarray]) -> tuple[float, float]:
    """The finite minimum and maximum over ``values`` (``(0, 1)`` when nothing is finite)."""
    finite = [v[np.isfinite(v)] for v in (np.asarray(a, dtype=np.float64) for a in values)]
    finite = [v for v in finite if v.size]
    if not finite:
        return 0.0, 1.0
    return float(min(v.min() for v in finite)), float(max(v.max() for v in finite))


def hbar_chart(labels: Sequence[str], values: Sequence[int], colors: Sequence[str],
               notes: Sequence[str], xlabel: str) -> str:
    """One horizontal bar per label, top to bottom, each with a note at its end."""
    left = 12 + max((text_width(s) for s in labels), default=0)
    ends = [text_width(n) + 6 for n in notes]  # a note's width and its gap after the bar
    bar = 22.0
    width = max(500.0, left + 10 + 2 * max(ends, default=0))  # a long note widens the canvas
    w = width - left - 10
    # The scale leaves room after each bar for its note (w - end >= w / 2 by the width).
    top = max([v * w / (w - e) for v, e in zip(values, ends, strict=True)]
              + [max(values, default=0) * 1.15]) or 1
    c = Canvas(width, bar * len(labels) + 50)
    f = Frame(left, 8, w, bar * len(labels), (0, top), (0, 1))
    for k, (label, value, color, note) in enumerate(zip(labels, values, colors, notes,
                                                        strict=True)):
        y = f.y + k * bar
        c.rect(f.x, y + 3, f.px(value) - f.x, bar - 6, color, f"{label}: {value}")
        c.text(f.x - 6, y + bar / 2, label, anchor="end")
        c.text(f.px(value) + 4, y + bar / 2, note)
    c.line(f.x, f.y, f.x, f.y + f.h)
    x_axis(c, f, [t for t in nice_ticks(0, top) if t <= top], xlabel)
    return c.svg(xlabel)


def grouped_bar_chart(groups: Sequence[str], series: Sequence[tuple[str, str, Sequence[int]]],
                      ylabel: str) -> str:
    """Per group one bar per series (``(name, colour, values)``), a legend above."""
    slot = max(54.0, 12 + max((text_width(g) for g in groups), default=0))
    top = max((max(v, default=0) for _, _, v in series), default=0) or 1
    ticks = nice_ticks(0, top)
    if ticks[-1] < top:  # the axis reaches above the tallest bar
        ticks.append(ticks[-1] + (ticks[1] - ticks[0]))
    c = Canvas(max(520.0, 70 + slot * len(groups)), 210)
    f = Frame(56, 30, c.width - 66, 140, (0, max(len(groups), 1)), (0, ticks[-1] or 1))
    y_axis(c, f, ticks, ylabel)
    width = 0.8 / max(len(series), 1)
    for k, group in enumerate(groups):
        for j, (name, color, values) in enumerate(series):
            x0 = f.px(k + 0.1 + j * width)
            c.rect(x0, f.py(values[k]), f.px(width) - f.x, f.py(0) - f.py(values[k]), color,
                   f"{group}, {name}: {values[k]}")
        c.text(f.px(k + 0.5), f.y + f.h + 10, group, anchor="middle")
    c.line(f.x, f.y + f.h, f.x + f.w, f.y + f.h)
    legend(c, f.x + 4, 12, [(name, color) for name, color, _ in series], across=True)
    return c.svg(ylabel)


def _blue(share: float) -> str:
    """A white-to-dark-blue colour for ``share`` in [0, 1]."""
    light, dark = (247, 251, 255), (8, 48, 107)
    rgb = (round(a + (b - a) * min(max(share, 0.0), 1.0)) for a, b in zip(light, dark,
                                                                          strict=True))
    return "#" + "".join(f"{v:02x}" for v in rgb)


def heatmap(matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str]) -> str:
    """A table of counts as shaded cells (log scale), each non-zero count written in it."""
    cell = 46.0
    left = 12 + max((text_width(r) for r in rows), default=0)
    below = 14 + max((text_width(col) for col in cols), default=0) * 0.71
    c = Canvas(left + cell * len(cols) + 10, 8 + cell * len(rows) + below)
    top = int(matrix.max()) if matrix.size else 0
    scale = math.log1p(top) or 1.0
    for i, row in enumerate(rows):
        c.text(left - 6, 8 + (i + 0.5) * cell, row, anchor="end")
        for j, col in enumerate(cols):
            n = int(matrix[i, j])
            x, y = left + j * cell, 8 + i * cell
            c.rect(x, y, cell, cell, _blue(math.log1p(n) / scale), f"{row} {col}: {n}")
            if n:
                c.text(x + cell / 2, y + cell / 2, str(n), anchor="middle",
                       color="white" if n > top / 3 else "black")
    for j, col in enumerate(cols):
        x, y = left + (j + 0.5) * cell + 6, 8 + cell * len(rows) + 8
        c.text(x, y, col, anchor="end", rotate=-30)
    return c.svg("transitions")


@dataclass(frozen=True)
class Line:
    """One line of a line chart: ``y`` over the chart's x, an optional band ``lo``..``hi``."""

    name: str
    color: str
    y: np.ndarray
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None


def _points(f: Frame, x: np.ndarray, y: np.ndarray) -> str:
    ok = np.isfinite(y)
    return " ".join(f"{num(f.px(a))},{num(f.py(b))}" for a, b in zip(x[ok], y[ok], strict=True))


def _draw_lines(c: Canvas, f: Frame, x: np.ndarray, lines: Sequence[Line]) -> None:
    for ln in lines:
        if ln.lo is not None and ln.hi is not None:
            ring = _points(f, x, ln.hi) + " " + _points(f, x[::-1], ln.lo[::-1])
            c.add(f'<polygon points="{ring}" fill="{ln.color}" fill-opacity="0.15"/>')
    for ln in lines:
        if x.size == 1:
            c.add(f'<circle cx="{num(f.px(x[0]))}" cy="{num(f.py(ln.y[0]))}" r="2.5" '
                  f'fill="{ln.color}"/>')
        else:
            c.add(f'<polyline points="{_points(f, x, ln.y)}" fill="none" stroke="{ln.color}" '
                  f'stroke-width="1.5"><title>{esc(ln.name)}</title></polyline>')


def _frame(x0: float, y0: float, w: float, h: float, x: np.ndarray, lines: Sequence[Line]
           ) -> tuple[Frame, list[float], list[float]]:
    """The plotting area for ``lines`` over ``x`` and its ticks (x ticks, y ticks) inside it.

    The y range is the lines' and bands' finite span; a flat span widens to the ticks
    around it, so a constant spectrum is drawn mid-height instead of dividing by zero."""
    lo, hi = span([v for ln in lines for v in (ln.y, ln.lo, ln.hi) if v is not None])
    xlo, xhi = span([x])
    xt, yt = nice_ticks(xlo, xhi, 6), nice_ticks(lo, hi, 4)
    if xhi <= xlo:
        xlo, xhi = xt[0], xt[-1]
    f = Frame(x0, y0, w, h, (xlo, xhi), (min(lo, yt[0]), max(hi, yt[-1])))
    return (f, [t for t in xt if xlo <= t <= xhi], [t for t in yt if f.ylim[0] <= t <= f.ylim[1]])


def line_chart(x: Sequence[float], lines: Sequence[Line], xlabel: str, ylabel: str) -> str:
    """Lines (each with an optional band) over a shared x, axes labelled, a legend at right."""
    xs = np.asarray(x, dtype=np.float64)
    right = 14 + legend_width([ln.name for ln in lines], 9)  # the legend, 10 px from the plot
    c = Canvas(560, 250)
    f, xt, yt = _frame(64, 10, c.width - 64 - right, 190, xs, lines)
    y_axis(c, f, yt, ylabel)
    x_axis(c, f, xt, xlabel)
    _draw_lines(c, f, xs, lines)
    legend(c, f.x + f.w + 10, f.y + 8, [(ln.name, ln.color) for ln in lines], 9)
    return c.svg(f"{ylabel} over {xlabel}")


def small_multiples(x: Sequence[float], panels: Sequence[tuple[str, Sequence[Line]]],
                    columns: int = 4) -> str:
    """One small line chart per ``(title, lines)`` panel, ``columns`` per row, one legend."""
    xs = np.asarray(x, dtype=np.float64)
    pw, ph = 170.0, 140.0
    rows = math.ceil(len(panels) / columns)
    seen = {ln.name: ln.color for _, lines in panels for ln in lines}
    # The legend runs across below the panels; a wide one widens the canvas.
    c = Canvas(max(pw * min(len(panels), columns), 44 + legend_width(list(seen), 8, across=True)),
               ph * rows + 22)
    for k, (title, lines) in enumerate(panels):
        x0, y0 = (k % columns) * pw, (k // columns) * ph
        f, xt, yt = _frame(x0 + 40, y0 + 20, pw - 50, ph - 48, xs, lines)
        c.text(f.x + f.w / 2, y0 + 9, title, anchor="middle", size=9)
        y_axis(c, f, yt, size=7)
        x_axis(c, f, xt[::2], size=7)
        _draw_lines(c, f, xs, lines)
    legend(c, 40, ph * rows + 10, list(seen.items()), 8, across=True)
    return c.svg("per-category spectra")
