"""A self-contained HTML picture of a split (and, with a base revision, of a change to it).

One file, no network at view time: charts are SVG written as text (``review/svg.py``: no
plotting library, the same bytes on every machine), tables are plain HTML with ``data-*``
attributes so tests and scripts can read the figures.  Everything is aggregated — counts per stage,
category, source and transition — so a 1M-sample universe still gives a small page.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dvc_cuvis.check.drift import DriftReport
from dvc_cuvis.model.anomalous import anomaly_notions_differ, anomaly_notions_note
from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES, STAGE_CODE_NAMES, STAGES
from dvc_cuvis.model.stats import StageStats, stage_stats
from dvc_cuvis.review import svg

if TYPE_CHECKING:
    from dvc_cuvis.model.compare import SplitDiff
    from dvc_cuvis.review.leakage_pairs import LeakageFigures
    from dvc_cuvis.review.spectra import SplitSpectra

STAGE_COLORS = {"train": "#4C72B0", "val": "#DD8452", "test": "#55A868", "predict": "#8172B3",
                "unassigned": "#999999"}


@dataclass(frozen=True)
class ReportInput:
    """Everything a report shows (built by :func:`~dvc_cuvis.review.report_run.report` or by
    code): typed, so a caller sees what each part must be."""

    title: str
    resolution: Resolution
    constraints: list[dict[str, object]]  # ConstraintResult.to_dict() rows, as in the metrics
    drift: DriftReport | None = None
    categories: dict[str, int] | None = None
    diff: SplitDiff | None = None
    pinned_hash: str | None = None
    spectra: SplitSpectra | None = None
    spectra_note: str = ""  # why there are no spectra, and how to get them
    leakage: LeakageFigures | None = None  # None: no materialized folder, no section


def _stage_chart(stats: dict[str, StageStats]) -> str:
    names = list(EXCLUSIVE_STAGES)
    return svg.hbar_chart(names, [stats[s]["samples"] for s in names],
                          [STAGE_COLORS[s] for s in names],
                          [f"{stats[s]['samples']} samples / {stats[s]['sources']} sources"
                           for s in names], "samples")


def _category_chart(rows: list[tuple[str, dict[str, int]]]) -> str:
    return svg.grouped_bar_chart([r[0] for r in rows],
                                 [(stage, STAGE_COLORS[stage], [r[1][stage] for r in rows])
                                  for stage in EXCLUSIVE_STAGES], "samples with category")


def _transition_chart(diff: SplitDiff) -> str:
    rows = [*STAGE_CODE_NAMES, "new"]
    cols = [*STAGE_CODE_NAMES, "removed"]
    a_state = diff.a.state()
    mat = np.zeros((len(rows), len(cols)), dtype=np.int64)
    # unchanged samples sit on the diagonal; changes come from the transition counts
    for k in range(len(STAGE_CODE_NAMES)):
        mat[k, k] = int((a_state == k).sum())
    for key, n in diff.transitions.items():
        frm, to = key.split("->")
        mat[rows.index(frm), cols.index(to)] += n
        if frm in STAGE_CODE_NAMES:
            mat[rows.index(frm), rows.index(frm)] -= n
    return svg.heatmap(mat, [f"from {r}" for r in rows], [f"to {c}" for c in cols])


def _table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(rows_cells) + "</tr>" for rows_cells in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _td(value: object, **data: str) -> str:
    attrs = "".join(f' data-{k}="{html.escape(str(v))}"' for k, v in data.items())
    return f"<td{attrs}>{html.escape(str(value))}</td>"


def render(inp: ReportInput) -> str:
    """The report HTML (deterministic for the same inputs)."""
    res = inp.resolution
    uni = res.universe
    stats = stage_stats(res)
    parts: list[str] = []
    pin = inp.pinned_hash
    pin_state = "not pinned" if not pin else ("matches" if pin == uni.hash else
                                              f"differs (pinned {pin[:12]})")
    parts.append('<section id="summary"><h2>Universe</h2>' + _table(
        ["samples", "sources", "groups", "universe_hash", "pin"],
        [[_td(len(uni), metric="universe-samples"), _td(len(uni.source_names),
          metric="universe-sources"), _td(len(uni.groups()[0]), metric="universe-groups"),
          f'<td data-metric="universe-hash"><code>{uni.hash}</code></td>',
          _td(pin_state, metric="pin")]]) + "</section>")
    stage_rows = [[_td(s), _td(stats[s]["samples"], stage=s, metric="samples"),
                   _td(stats[s]["sources"], stage=s, metric="sources"),
                   _td(stats[s]["groups"], stage=s, metric="groups"),
                   _td(f"{100 * stats[s]['samples'] / max(len(uni), 1):.1f} %")]
                  for s in STAGES]
    parts.append('<section id="stages"><h2>Stages</h2><div class="chart">'
                 + _stage_chart(stats) + "</div>"
                 + _table(["stage", "samples", "sources", "groups", "share"], stage_rows)
                 + ("<p class='note'>predict is empty in splits.json: it is the whole "
                    "universe.</p>" if res.predict_is_all else "") + "</section>")
    if inp.spectra is not None or inp.spectra_note:
        from dvc_cuvis.review.spectra_html import section

        names = {v: k for k, v in (inp.categories or {}).items()}
        parts.append(section(inp.spectra, inp.spectra_note, names))
    parts.append(_categories_section(inp, stats))
    parts.append(_sources_section(res))
    parts.append(_checks_section(inp))
    if inp.leakage is not None:
        from dvc_cuvis.review.leakage_html import section as leakage_section

        parts.append(leakage_section(inp.leakage))
    if inp.diff is not None:
        parts.append(_diff_section(inp.diff))
    body = "\n".join(parts)
    title = html.escape(inp.title)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem auto;
       max-width: 980px; padding: 0 1rem; color: #222; }}
h1 {{ font-size: 1.5rem; }} h2 {{ font-size: 1.15rem; border-bottom: 1px solid #ddd; }}
table {{ border-collapse: collapse; margin: .6rem 0; }}
th, td {{ border: 1px solid #ddd; padding: .25rem .6rem; text-align: right; }}
th {{ background: #f4f4f4; }} td:first-child, th:first-child {{ text-align: left; }}
.missing {{ background: #fde2e1; color: #a00; font-weight: 600; }}
.ok {{ color: #1a7f37; font-weight: 600; }} .bad {{ color: #c00; font-weight: 600; }}
.skipped {{ color: #777; }} .chart svg {{ max-width: 100%; height: auto; }}
.thumbs img {{ margin: 2px; image-rendering: pixelated; }}
code {{ font-size: .85em; word-break: break-all; }} .note {{ color: #555; }}
</style></head>
<body><h1>{title}</h1>
{body}
<footer class="note">dvc-cuvis split report: aggregated counts and spectra, no sample list.</footer>
</body></html>
"""


def _categories_section(inp: ReportInput, stats: dict[str, StageStats]) -> str:
    if not inp.resolution.universe.has_column("category_ids"):
        return ('<section id="categories"><h2>Categories</h2><p class="note">The universe '
                "has no category_ids column.</p></section>")
    id_to_name = {v: k for k, v in (inp.categories or {}).items()}
    ids = sorted({int(c) for s in EXCLUSIVE_STAGES for c in stats[s]["categories"]}
                 - {0})
    rows_for_chart = []
    table_rows = []
    missing_any = []
    for cid in ids:
        name = id_to_name.get(cid, str(cid))
        counts = {s: stats[s]["categories"].get(str(cid), 0) for s in EXCLUSIVE_STAGES}
        rows_for_chart.append((name, counts))
        cells = [_td(name, category=name)]
        for s in EXCLUSIVE_STAGES:
            lacking = counts[s] == 0
            cls = ' class="missing"' if lacking else ""
            if lacking:
                missing_any.append(f"{name} in {s}")
            cells.append(f'<td{cls} data-category="{html.escape(name)}" data-stage="{s}">'
                         f"{counts[s]}{' ⚠' if lacking else ''}</td>")
        table_rows.append(cells)
    anomalous = [[_td(s), _td(stats[s]["anomalous"], stage=s, metric="anomalous")]
                 for s in EXCLUSIVE_STAGES]
    flag = (f'<p class="bad" id="missing-categories">Stages lacking a category: '
            f'{html.escape(", ".join(missing_any))}</p>' if missing_any else
            '<p class="ok" id="missing-categories">Every category reaches every stage.</p>')
    chart = f'<div class="chart">{_category_chart(rows_for_chart)}</div>' if ids else ""
    differ = anomaly_notions_differ(inp.resolution.universe)
    notions = (f'<p class="note" id="anomaly-notions" data-samples="{differ}">'
               f"{html.escape(anomaly_notions_note(differ))}</p>" if differ else "")
    return ('<section id="categories"><h2>Category balance</h2>' + chart + flag
            + _table(["category", *EXCLUSIVE_STAGES], table_rows)
            + _table(["stage", "anomalous samples"], anomalous) + notions + "</section>")


def _sources_section(res: Resolution) -> str:
    uni = res.universe
    names, codes = uni.groups()
    state = res.assignment()
    sizes = np.bincount(codes, minlength=len(names))
    per_stage = []
    for k, s in enumerate(STAGE_CODE_NAMES):
        sel = state == k
        per_stage.append([_td(s), _td(len(np.unique(uni.codes[sel])), stage=s, metric="sources"),
                          _td(len(np.unique(codes[sel])), stage=s, metric="groups-in-stage")])
    order = np.argsort(-sizes, kind="stable")[:15]
    top = []
    for g in order.tolist():
        rows = codes == g
        mix = {s: int((state[rows] == k).sum()) for k, s in enumerate(EXCLUSIVE_STAGES)}
        where = ", ".join(f"{s} {n}" for s, n in mix.items() if n) or "unassigned"
        top.append([_td(names[g]), _td(int(sizes[g])), _td(where)])
    hist = np.histogram(sizes, bins=min(10, max(1, len(np.unique(sizes)))))[0]
    return ('<section id="sources"><h2>Sources and groups</h2>'
            + _table(["stage", "sources", "groups"], per_stage)
            + f"<p>{len(names)} groups; sizes {int(sizes.min()) if len(sizes) else 0}–"
              f"{int(sizes.max()) if len(sizes) else 0} samples (histogram counts "
              f"{', '.join(map(str, hist.tolist()))}). Largest groups:</p>"
            + _table(["group", "samples", "stages"], top) + "</section>")


def _checks_section(inp: ReportInput) -> str:
    rows = []
    for c in inp.constraints:
        cls = "ok" if c["status"] == "satisfied" else ("bad" if c["severity"] == "error"
                                                       else "skipped")
        rows.append([_td(c["kind"]), _td(c["severity"]),
                     f'<td class="{cls}" data-constraint="{c["kind"]}">{c["status"]}</td>',
                     _td(c.get("reason", ""))])
    drift_rows = []
    if inp.drift is not None:
        for f in inp.drift.findings:
            cls = {"ok": "ok", "skipped": "skipped"}.get(f.status, "bad")
            drift_rows.append([_td(f.check), f'<td class="{cls}" data-check="{f.check}">'
                               f"{f.status}</td>", _td(f.summary)])
    return ('<section id="checks"><h2>Constraints, leakage and drift</h2>'
            + _table(["constraint", "severity", "status", "detail"], rows)
            + (_table(["check", "status", "summary"], drift_rows) if drift_rows else "")
            + "</section>")


def _diff_section(diff: SplitDiff) -> str:
    rows = [[_td(k), _td(v, transition=k), _td(diff.source_transitions.get(k, 0))]
            for k, v in diff.transitions.items()]
    groups, total = diff.by_source(25)
    moved = []
    for src, items in groups:
        n = sum(len(idx) for _, idx in items)
        moved.append([_td(src), _td(n), _td("; ".join(f"{k} {len(idx)}" for k, idx in items))])
    more = f"<p class='note'>… and {total - len(groups)} more sources.</p>" if total > len(
        groups) else ""
    return (f'<section id="diff"><h2>Change from {html.escape(diff.a.label)} to '
            f"{html.escape(diff.b.label)}</h2>"
            f'<p><b data-metric="moved">{diff.moved}</b> samples present at both ends moved; '
            f"{diff.transitions_total('new')} new, {diff.transitions_total('removed')} "
            "removed.</p>"
            f'<div class="chart">{_transition_chart(diff)}</div>'
            + _table(["transition", "samples", "sources"], rows)
            + "<h3>Changed sources</h3>" + _table(["source", "samples", "transitions"], moved)
            + more + "</section>")


def write(path: Path, text: str) -> None:
    """Write the report atomically (no partial report is ever left behind).

    Never into a folder that DVC tracks (the raw data under a ``.dvc`` file, a stage's
    output folder): the next ``dvc add`` or ``dvc repro`` would take the report into that
    data's version.  The report file itself may be a stage's output (the pipeline's own
    ``report`` stage).
    """
    from dvc_cuvis._io import atomic_write_text
    from dvc_cuvis.errors import DvcCuvisError
    from dvc_cuvis.paths.roots import repo_root
    from dvc_cuvis.repo.git import tracked_by

    folder = Path(os.path.abspath(path.parent))
    owner = tracked_by(folder) if repo_root(folder) not in (None, folder) else None
    if owner is not None and owner[0] != "git":
        raise DvcCuvisError(f"{path}: refusing to write the report into {path.parent}, which "
                            f"is tracked by {owner[1]} (it would become part of that data's "
                            "version); write it elsewhere, e.g. --out split-report.html in "
                            "the repository's top folder")
    atomic_write_text(path, text)
