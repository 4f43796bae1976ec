"""The report's leakage section as HTML: a table of pair counts per pair of stages and the
worst pairs drawn side by side.

Figures sit in ``data-*`` attributes for scripts and tests: each stage pair is a row with
``data-stage-a``, ``data-stage-b`` and cells ``data-kind`` (exact, near, adjacent); each drawn
pair a ``<div class="pair">`` with ``data-kind`` and ``data-distance`` holding two thumbnails
(``data-uid``, ``data-stage``).  Sample names are escaped wherever they appear.
"""

from __future__ import annotations

import html

import numpy as np

from dvc_cuvis.review.leakage_pairs import LeakageFigures, ShownPair
from dvc_cuvis.review.spectra_html import thumb_img

__all__ = ["section"]

#: Unsigned samples named one by one (the rest are counted).
NAMED = 5


def _esc(text: object) -> str:
    """Text from data as HTML text or a quoted attribute value."""
    return html.escape(str(text), quote=True)


def _counts_table(fig: LeakageFigures) -> str:
    head = ("<tr><th>stages</th><th>exact duplicates</th><th>near duplicates</th>"
            f"<th>neighbouring frames (within {fig.k})</th></tr>")
    rows = []
    for c in fig.counts:
        cells = "".join(
            f'<td class="{"bad" if n else "ok"}" data-kind="{kind}">{n}</td>'
            for kind, n in (("exact", c.exact), ("near", c.near), ("adjacent", c.adjacent)))
        rows.append(f'<tr data-stage-a="{_esc(c.stage_a)}" data-stage-b="{_esc(c.stage_b)}">'
                    f"<td>{_esc(c.stage_a)}–{_esc(c.stage_b)}</td>{cells}</tr>")
    return f'<table class="leakage"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _figure(rgb: np.ndarray, uid: str, stage: str) -> str:
    img = thumb_img(rgb, uid, stage)
    return (f'<figure style="margin:0">{img}<figcaption>{_esc(uid)} '
            f"({_esc(stage)})</figcaption></figure>")


def _pair(shown: ShownPair) -> str:
    p = shown.pair
    what = ("exact copy: one content" if p.kind == "exact" else
            f"near copy: {p.distance} hash bit(s) apart")
    return (f'<div class="pair" data-kind="{p.kind}" data-distance="{p.distance}" '
            'style="display:flex;gap:1rem;align-items:flex-end;margin:.5rem 0">'
            + _figure(shown.first_rgb, p.first, p.first_stage)
            + _figure(shown.second_rgb, p.second, p.second_stage)
            + f"<p>{_esc(what)}</p></div>")


def _unsigned(fig: LeakageFigures) -> str:
    if not fig.unsigned:
        return ""
    names = ", ".join(fig.unsigned[:NAMED]) + (" ..." if len(fig.unsigned) > NAMED else "")
    return (f'<p class="bad" data-metric="leakage-unsigned" data-count="{len(fig.unsigned)}">'
            f"{len(fig.unsigned)} samples of the split have no signature and were not "
            f"compared ({_esc(names)}); sign them: <code>{_esc(fig.fix)}</code></p>")


def section(fig: LeakageFigures) -> str:
    """The report's leakage section (``id="leakage"``)."""
    parts = ['<section id="leakage"><h2>Leakage</h2>',
             "<p class='note'>Pairs of frames in different stages: exact duplicates hold one "
             f"content; near duplicates have perceptual hashes within {fig.hamming} bits and "
             "one spectral shape; neighbouring frames lie within "
             f"{fig.k} position(s) of each other in one recording.</p>"]
    if fig.note:
        parts.append(f'<p class="bad" data-metric="leakage-absent">{_esc(fig.note)}</p>')
    parts.append(_unsigned(fig))
    parts.append(_counts_table(fig))
    if fig.shown:
        parts.append(f"<h3>The worst {len(fig.shown)} pair(s)</h3>")
        parts.extend(_pair(s) for s in fig.shown)
    elif not fig.note and fig.signed:
        parts.append('<p class="ok" data-metric="leakage-none">No copies or near copies '
                     f"across stages among the {fig.signed} signed samples.</p>")
    parts.append("</section>")
    return "".join(parts)
