"""The report's spectra section: charts, the balance table and thumbnails, as HTML.

Figures sit in ``data-*`` attributes for scripts and tests: each stage pair is a row with
``data-stage-a``, ``data-stage-b``, ``data-max-shift``, ``data-flagged`` and ``data-range``
(the flagged ranges in nm), each thumbnail an ``<img>`` with ``data-uid`` and ``data-stage``.
Thumbnails are inlined as uncompressed BMP, whose bytes depend on no compression library.
"""

from __future__ import annotations

import base64
import html
import math
import struct

import numpy as np

from dvc_cuvis.review import svg
from dvc_cuvis.review.spectra import Balance, GridSpectra, SplitSpectra

STAGE_COLORS = {"train": "#4C72B0", "val": "#DD8452", "test": "#55A868"}
#: Categories drawn per grid at most (the largest by pixel count first).
MAX_CATEGORY_CHARTS = 8
#: The long side a thumbnail is shown at, in CSS pixels (a whole multiple of its own size).
THUMB_SHOWN_PX = 128


def bmp(rgb: np.ndarray) -> bytes:
    """A 24-bit BMP of a ``[h, w, 3]`` uint8 image (rows bottom-up, BGR, padded to 4 bytes)."""
    h, w = rgb.shape[:2]
    pad = (4 - (w * 3) % 4) % 4
    rows = b"".join(rgb[y, :, ::-1].tobytes() + b"\0" * pad for y in range(h - 1, -1, -1))
    header = struct.pack("<2sIHHI", b"BM", 54 + len(rows), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(rows), 2835, 2835, 0, 0)
    return header + info + rows


def _range_text(ranges: list[tuple[float, float]]) -> str:
    return ",".join(f"{a:g}-{b:g}" for a, b in ranges)


def _shift_text(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.3f}"


def _spectrum_chart(grid: GridSpectra) -> str:
    """Mean spectrum ±1 std per stage, stages overlaid, x in nm."""
    lines = [svg.Line(f"{stage} ({sp.frames} frames)", STAGE_COLORS.get(stage, "#777"),
                      np.asarray(sp.mean), np.asarray(sp.mean) - np.asarray(sp.pixel_std),
                      np.asarray(sp.mean) + np.asarray(sp.pixel_std))
             for stage, sp in grid.stages.items()]
    return svg.line_chart(grid.wavelengths, lines, "wavelength (nm)", "mean value")


def _stage_order(item: tuple[str, object]) -> tuple[int, str]:
    """Stages in their usual order (train, val, test), any other after them."""
    order = list(STAGE_COLORS)
    return (order.index(item[0]) if item[0] in order else len(order), item[0])


def _category_chart(grid: GridSpectra, names: dict[int, str]) -> str:
    """Per category (the largest first): its mean spectrum in each stage."""
    cats = list(grid.categories)[:MAX_CATEGORY_CHARTS]
    if not cats:
        return ""
    panels = [(names.get(cat, f"category {cat}"),
               [svg.Line(stage, STAGE_COLORS.get(stage, "#777"), np.asarray(mean))
                for stage, mean in sorted(grid.categories[cat].items(), key=_stage_order)])
              for cat in cats]
    return svg.small_multiples(grid.wavelengths, panels, columns=min(len(cats), 4))


def _test_text(b: Balance) -> str:
    """The shift test's statistic and p-value, or why there is none."""
    t = b.test
    if t is None:
        return "not run"
    if t.p_value is None:
        return "too few recordings to test"
    return (f"max-T {t.statistic:.2f}σ in {t.nm[0]:g}–{t.nm[1]:g} nm, p = {t.p_value:.3g} "
            f"({t.recordings[0]}+{t.recordings[1]} recordings)")


def _balance_rows(balance: list[Balance], threshold: float, base: bool = False) -> str:
    rows = []
    for b in balance:
        words = (f"{b.stage_a} and {b.stage_b} differ in {_range_text(b.ranges)} nm"
                 if b.flagged else "alike")
        attrs = (f'data-stage-a="{b.stage_a}" data-stage-b="{b.stage_b}" '
                 f'data-max-shift="{_shift_text(b.max_shift)}" '
                 f'data-flagged="{"true" if b.flagged else "false"}" '
                 f'data-range="{_range_text(b.ranges)}"' + (' data-base="true"' if base else ""))
        cls = "bad" if b.flagged else "ok"
        rows.append(f'<tr class="balance" {attrs}><td>{html.escape(b.stage_a)}</td>'
                    f"<td>{html.escape(b.stage_b)}</td><td>{_shift_text(b.max_shift)}</td>"
                    f"<td>{html.escape(_test_text(b))}</td>"
                    f'<td class="{cls}">{html.escape(words)}</td></tr>')
    head = ("<tr><th>stage</th><th>stage</th><th>max SMD</th>"
            "<th>shift test over recordings</th>"
            f"<th>verdict (test, else SMD above {threshold:g})</th></tr>")
    return f'<table class="balance">{head}{"".join(rows)}</table>'


def thumb_img(rgb: np.ndarray, uid: str, stage: str) -> str:
    """A thumbnail (``[h, w, 3]`` uint8) as an inline BMP ``<img>``, scaled by a whole factor
    so its pixels stay sharp, named by its sample and stage for scripts."""
    height, width = rgb.shape[:2]
    zoom = max(2, THUMB_SHOWN_PX // max(height, width, 1))
    data = base64.b64encode(bmp(rgb)).decode("ascii")
    return (f'<img class="thumb" data-uid="{html.escape(uid)}" '
            f'data-stage="{html.escape(stage)}" title="{html.escape(uid)}" '
            f'width="{width * zoom}" height="{height * zoom}" '
            f'src="data:image/bmp;base64,{data}">')


def _thumbnail_grid(spectra: SplitSpectra) -> str:
    parts = []
    for stage, thumbs in spectra.thumbnails.items():
        if not thumbs:
            continue
        imgs = [thumb_img(np.frombuffer(base64.b64decode(t["rgb"]), dtype=np.uint8).reshape(
            t["height"], t["width"], 3), uid, stage) for uid, t in thumbs]
        parts.append(f"<h4>{stage}</h4><div class='thumbs'>{''.join(imgs)}</div>")
    return "".join(parts)


def section(spectra: SplitSpectra | None, note: str, names: dict[int, str]) -> str:
    """The report's spectra section (``id="spectra"``), or a note on how to get summaries."""
    if spectra is None:
        return (f'<section id="spectra"><h2>Spectra</h2><p class="note" data-metric='
                f'"spectra-absent">{html.escape(note)}</p></section>')
    parts = ['<section id="spectra"><h2>Spectra</h2>']
    if spectra.missing:
        shown = ", ".join(spectra.missing[:5]) + (" ..." if len(spectra.missing) > 5 else "")
        parts.append(f'<p class="bad" data-metric="spectra-missing" data-count='
                     f'"{len(spectra.missing)}">{len(spectra.missing)} samples of the split have '
                     f"no summary ({html.escape(shown)}): rerun dvc-cuvis materialize (in a "
                     "DVC pipeline whose inputs did not change, as after an upgrade of "
                     "dvc-cuvis: <code>dvc repro -f -s materialize &amp;&amp; dvc repro</code>)"
                     "</p>")
    for i, grid in enumerate(spectra.grids):
        label = (f"{len(grid.wavelengths)} bands, {grid.wavelengths[0]:g}-"
                 f"{grid.wavelengths[-1]:g} nm" if grid.wavelengths else "no bands")
        parts.append(f'<h3 data-grid="{i}">Grid {i + 1}: {label}</h3>')
        parts.append('<div class="chart">' + _spectrum_chart(grid) + "</div>")
        parts.append(_balance_rows(grid.balance, spectra.threshold))
        for a, b in grid.too_few:
            parts.append(f"<p class='note'>{a} and {b}: too few frames to compare (3 needed)</p>")
        parts.append('<div class="chart">' + _category_chart(grid, names) + "</div>")
    if spectra.base or spectra.base_note:
        parts.append("<h3>train at the base revision and now</h3>")
        parts.append(_balance_rows(spectra.base, spectra.threshold, base=True)
                     if spectra.base else f"<p class='note'>{html.escape(spectra.base_note)}</p>")
    parts.append(_thumbnail_grid(spectra))
    parts.append("</section>")
    return "".join(parts)
