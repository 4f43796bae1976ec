"""Rendering a split diff for people: plain text (``diff``) and markdown (``diff --md``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from dvc_cuvis.errors import shorten, terminal
from dvc_cuvis.model.compare import SplitDiff, recording_of
from dvc_cuvis.model.splits import STAGES
from dvc_cuvis.review.markdown import code_cell, code_fence, code_span, md_text

if TYPE_CHECKING:
    from dvc_cuvis.review.spectra_diff import SpectraDiff


def _constraint_line(constraints: Sequence[Mapping[str, object]]) -> str:
    if not constraints:
        return "none declared"
    return ", ".join(f"{c['kind']} {c['status']}" for c in constraints)


def render_text(d: SplitDiff, *, limit: int | None = 20, by_sample: bool = False) -> str:
    """The readable report (changed samples per recording; ``by_sample``: per sample)."""
    a, b = d.a, d.b
    out = [f"split diff {terminal(a.label)} -> {terminal(b.label)}"]
    ha, hb = a.universe.hash[:12], b.universe.hash[:12]
    hash_part = f"hash {ha} (unchanged)" if ha == hb else f"hash {ha} -> {hb}"
    out.append(f"universe: {len(a.universe)} -> {len(b.universe)} samples "
               f"(+{d.transitions_total('new')} new, -{d.transitions_total('removed')} removed); "
               + hash_part)
    out.append(f"{'stage':<10}{'before':>9}{'after':>9}{'delta':>9}")
    ca, cb = a.counts(), b.counts()
    for s in STAGES:
        out.append(f"{s:<10}{ca[s]:>9}{cb[s]:>9}{cb[s] - ca[s]:>+9}")
    out.append(f"moved: {d.moved} sample(s) present at both ends changed stage")
    if d.transitions:
        out.append("transitions (samples / sources):")
        for k, v in d.transitions.items():
            out.append(f"  {k:<22}{v:>8} / {d.source_transitions.get(k, 0)}")
    out.extend(_change_lines(d, limit, by_sample))
    out.extend(_content_lines(d, limit))
    out.extend(f"category {cid} renamed: {_name(na)} → {_name(nb)}"
               for cid, na, nb in d.category_renames)
    if d.category_counts:
        out.append("samples per category and stage:")
        out.append(f"  {'stage':<9}{'category':<24}{'before':>8}{'after':>8}{'delta':>8}")
        for stage, cid, before, after in d.category_counts:
            out.append(f"  {stage:<9}{_name(d.category_name(cid)) + f' ({cid})':<24}"
                       f"{before:>8}{after:>8}{after - before:>+8}")
    if d.params:
        out.append("params:")
        out.extend(f"  {terminal(k)}: {_value(va)} -> {_value(vb)}" for k, va, vb in d.params)
    out.append(f"constraints before: {_constraint_line(a.constraints)}")
    out.append(f"constraints after:  {_constraint_line(b.constraints)}")
    return "\n".join(out) + "\n"


def _content_lines(d: SplitDiff, limit: int | None) -> list[str]:
    if not len(d.content):
        return []
    stages = ", ".join(f"{k} {v}" for k, v in d.content_by_stage().items())
    out = [f"content changed: {len(d.content)} sample(s) present at both ends have new bytes "
           f"({stages})"]
    shown = d.content_samples(limit)
    out += [f"  {terminal(c['uid'])} [{c['stage']}]: {', '.join(c['changed'])}" for c in shown]
    if len(shown) < len(d.content):
        out.append(f"  ... {len(d.content) - len(shown)} more (use --all)")
    return out


def _recording_lines(d: SplitDiff, limit: int | None) -> list[str]:
    """The changed samples summarised per recording: one line per recording, its frames
    counted per transition; a recording of one changed source keeps its per-sample line."""
    groups, _ = d.by_source(None)
    if not groups:
        return []
    recordings: dict[str, list[tuple[str, list[tuple[str, list[str]]]]]] = {}
    for src, items in groups:
        recordings.setdefault(recording_of(src), []).append((src, items))
    shown = list(recordings.items()) if limit is None else list(recordings.items())[:limit]
    out = ["changed samples by recording (--by-sample: one line per sample):"]
    for rec, sources in shown:
        if len(sources) == 1:
            out.extend(_source_lines(sources, limit))
            continue
        counts: dict[str, int] = {}
        for _, items in sources:
            for k, idx in items:
                counts[k] = counts.get(k, 0) + len(idx)
        out.append(f"  {terminal(rec)}: " + "; ".join(
            f"{n} frame{'s' if n != 1 else ''} {k}" for k, n in sorted(counts.items())))
    if len(shown) < len(recordings):
        out.append(f"  ... {len(recordings) - len(shown)} more recording(s) (use --all)")
    return out


def _source_lines(groups: list[tuple[str, list[tuple[str, list[str]]]]],
                  limit: int | None) -> list[str]:
    out = []
    for src, items in groups:
        parts = []
        for k, idx in items:
            cut = idx if limit is None else idx[:limit]
            more = f" (+{len(idx) - len(cut)})" if len(cut) < len(idx) else ""
            parts.append(f"{k} #{', #'.join(cut)}{more}")
        out.append(f"  {terminal(src)}: " + "; ".join(parts))
    return out


def _change_lines(d: SplitDiff, limit: int | None, by_sample: bool = False) -> list[str]:
    if not by_sample:
        return _recording_lines(d, limit)
    groups, total = d.by_source(limit)
    if not groups:
        return []
    out = ["changed samples by source:", *_source_lines(groups, limit)]
    if len(groups) < total:
        out.append(f"  ... {total - len(groups)} more source(s) (use --all)")
    return out


def _name(name: str) -> str:
    """A category name as printed: quoted, control characters escaped, long ones cut."""
    return terminal(shorten(repr(name), 80))


def _value(v: object) -> str:
    """A params value as printed: its repr, control characters escaped, long ones cut."""
    return terminal(shorten(repr(v)))


def _code_block(lines: list[str]) -> list[str]:
    """``lines`` (escaped already) in a fenced code block that no line of them can close."""
    fence = code_fence(lines)
    return [fence, *lines, fence]


def render_markdown(d: SplitDiff, *, limit: int | None = 20, by_sample: bool = False) -> str:
    """A pull-request comment (changed samples per recording; ``by_sample``: per sample)."""
    a, b = d.a, d.b
    lines = [f"### Split diff {code_span(a.label)} → {code_span(b.label)}", ""]
    ha, hb = a.universe.hash[:12], b.universe.hash[:12]
    lines.append(f"Universe: **{len(a.universe)} → {len(b.universe)}** samples "
                 f"(+{d.transitions_total('new')} new, −{d.transitions_total('removed')} "
                 f"removed), hash `{ha}`" + ("" if ha == hb else f" → `{hb}`") + ". "
                 f"**{d.moved}** sample(s) moved between stages.")
    lines += ["", "| stage | before | after | Δ |", "|---|---:|---:|---:|"]
    ca, cb = a.counts(), b.counts()
    for s in STAGES:
        lines.append(f"| {s} | {ca[s]} | {cb[s]} | {cb[s] - ca[s]:+d} |")
    if d.transitions:
        lines += ["", "| transition | samples | sources |", "|---|---:|---:|"]
        for k, v in d.transitions.items():
            lines.append(f"| {k.replace('->', ' → ')} | {v} | {d.source_transitions.get(k, 0)} |")
    changes = _change_lines(d, limit, by_sample)
    if changes:
        what = "source" if by_sample else "recording"
        lines += ["", f"<details><summary>Changed samples by {what}</summary>", ""]
        lines += _code_block([c.strip() for c in changes[1:]])
        lines += ["", "</details>"]
    content = _content_lines(d, limit)
    if content:
        lines += ["", f"**Content changed:** {content[0].split(': ', 1)[1]}", "",
                  "<details><summary>Samples with new bytes</summary>", ""]
        lines += _code_block([c.strip() for c in content[1:]])
        lines += ["", "</details>"]
    if d.category_renames:
        lines += [""] + [f"Category {cid} renamed: {code_span(shorten(na, 80))} → "
                         f"{code_span(shorten(nb, 80))}  " for cid, na, nb in d.category_renames]
    if d.category_counts:
        lines += ["", "| stage | category | before | after | Δ |", "|---|---|---:|---:|---:|"]
        lines += [f"| {stage} | {code_cell(shorten(d.category_name(cid), 80))} ({cid}) | {ca} | "
                  f"{cb} | {cb - ca:+d} |" for stage, cid, ca, cb in d.category_counts]
    if d.params:
        lines += ["", "| param | before | after |", "|---|---|---|"]
        lines += [f"| {code_cell(k)} | {code_cell(shorten(repr(va)))} | "
                  f"{code_cell(shorten(repr(vb)))} |" for k, va, vb in d.params]
    lines += ["", f"Constraints before: {_constraint_line(a.constraints)}  ",
              f"Constraints after: {_constraint_line(b.constraints)}"]
    return "\n".join(lines) + "\n"


def render_spectra_text(sp: SpectraDiff, *, limit: int | None = 20) -> str:
    """The spectral section of ``diff``: control characters in names shown as escapes."""
    return "".join(terminal(line) + "\n" for line in sp.lines(limit))


def render_spectra_markdown(sp: SpectraDiff, *, limit: int | None = 20) -> str:
    """The spectral section of ``diff --md``: text from data as literal text (names of
    recordings in a fence they cannot close, the rest escaped or in code spans)."""
    if not sp.compared:
        fix = f"; {code_span(sp.fix)} brings them" if sp.fix else ""
        return f"\n**Spectra** not compared: {md_text(sp.why)}{fix}\n"
    lines = ["", f"**Spectra** (summaries in {code_span(sp.folder)}; {code_span(sp.b)} "
             f"against {code_span(sp.a)}, unit: recording):", ""]
    lines += [f"- **{line}**" if flagged else f"- {line}"  # our words; revisions in code
              for flagged, line in sp.stage_lines(code_span)]
    lines += [f"- {line}" for line in sp.grid_lines()]
    if sp.grid_changes:
        lines += ["", f"<details><summary>Wavelength grid changed for {len(sp.grid_changes)} "
                  "recording(s)</summary>", ""]
        lines += _code_block([terminal(line) for line in sp.recording_lines(limit)])
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
