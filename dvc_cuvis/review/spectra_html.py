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
from typing import Any

import numpy as np

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


def _spectrum_chart(grid: GridSpectra, mpl: Any, svg: Any) -> str:
    """Mean spectrum ±1 std per stage, stages overlaid, x in nm."""
    fig, ax = mpl.subplots(figsize=(7.5, 3.2))
    wl = np.asarray(grid.wavelengths)
    for stage, sp in grid.stages.items():
        color = STAGE_COLORS.get(stage, "#777")
        ax.plot(wl, sp.mean, color=color, label=f"{stage} ({sp.frames} frames)")
        ax.fill_between(wl, sp.mean - sp.pixel_std, sp.mean + sp.pixel_std, color=color,
                        alpha=0.15, linewidth=0)
    ax.set_xlabel("wavelength (nm)")
    ax.set_ylabel("mean value")
    ax.legend(frameon=False, fontsize=8)
    return str(svg(fig))


def _category_chart(grid: GridSpectra, names: dict[int, str], mpl: Any, svg: Any) -> str:
    """Per category (the largest first): its mean spectrum in each stage."""
    cats = list(grid.categories)[:MAX_CATEGORY_CHARTS]
    if not cats:
        return ""
    cols = min(len(cats), 4)
    fig, axes = mpl.subplots(math.ceil(len(cats) / cols), cols, squeeze=False,
                             figsize=(2.4 * cols, 2.0 * math.ceil(len(cats) / cols)))
    wl = np.asarray(grid.wavelengths)
    for ax, cat in zip(axes.ravel(), cats, strict=False):
        for stage, mean in grid.categories[cat].items():
            ax.plot(wl, mean, color=STAGE_COLORS.get(stage, "#777"), label=stage)
        ax.set_title(names.get(cat, f"category {cat}"), fontsize=9)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[len(cats):]:
        ax.axis("off")
    axes.ravel()[0].legend(frameon=False, fontsize=7)
    fig.tight_layout()
    return str(svg(fig))


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
                    f'<td class="{cls}">{html.escape(words)}</td></tr>')
    head = ("<tr><th>stage</th><th>stage</th><th>max SMD</th>"
            f"<th>above {threshold:g}</th></tr>")
    return f'<table class="balance">{head}{"".join(rows)}</table>'


def _thumbnail_grid(spectra: SplitSpectra) -> str:
    parts = []
    for stage, thumbs in spectra.thumbnails.items():
        if not thumbs:
            continue
        imgs = []
        for uid, t in thumbs:
            zoom = max(2, THUMB_SHOWN_PX // max(t["height"], t["width"], 1))
            rgb = np.frombuffer(base64.b64decode(t["rgb"]), dtype=np.uint8).reshape(
                t["height"], t["width"], 3)
            data = base64.b64encode(bmp(rgb)).decode("ascii")
            imgs.append(f'<img class="thumb" data-uid="{html.escape(uid)}" '
                        f'data-stage="{stage}" title="{html.escape(uid)}" '
                        f'width="{t["width"] * zoom}" height="{t["height"] * zoom}" '
                        f'src="data:image/bmp;base64,{data}">')
        parts.append(f"<h4>{stage}</h4><div class='thumbs'>{''.join(imgs)}</div>")
    return "".join(parts)


def section(spectra: SplitSpectra | None, note: str, names: dict[int, str], mpl: Any,
            svg: Any) -> str:
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
        parts.append('<div class="chart">' + _spectrum_chart(grid, mpl, svg) + "</div>")
        parts.append(_balance_rows(grid.balance, spectra.threshold))
        for a, b in grid.too_few:
            parts.append(f"<p class='note'>{a} and {b}: too few frames to compare (3 needed)</p>")
        parts.append('<div class="chart">' + _category_chart(grid, names, mpl, svg) + "</div>")
    if spectra.base or spectra.base_note:
        parts.append("<h3>train at the base revision and now</h3>")
        parts.append(_balance_rows(spectra.base, spectra.threshold, base=True)
                     if spectra.base else f"<p class='note'>{html.escape(spectra.base_note)}</p>")
    parts.append(_thumbnail_grid(spectra))
    parts.append("</section>")
    return "".join(parts)
