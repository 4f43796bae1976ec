"""A finding's details as ``check`` prints them for people: one line per detail, pairs of
frames as ``a (train) ↔ b (test)``, grids and shift tests in words; never a Python repr.

``check --json`` prints the same details as JSON; this module only words them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from dvc_cuvis.errors import and_more

__all__ = ["detail_lines"]


def _map(value: object) -> Mapping[str, object]:
    """``value`` if it is a mapping, else an empty one (details read from the memo)."""
    return value if isinstance(value, Mapping) else {}


def _seq(value: object) -> Sequence[object]:
    """``value`` if it is a list, else an empty one."""
    return value if isinstance(value, list | tuple) else []


def _num(value: object) -> float:
    """``value`` as a number (0 for anything else)."""
    return float(value) if isinstance(value, int | float) else 0.0


def _plain(value: object) -> str:
    """A JSON value in words: lists joined by commas, mappings as ``key value``."""
    if isinstance(value, Mapping):
        return "; ".join(f"{k} {_plain(v)}" for k, v in value.items() if v not in (None, ""))
    if isinstance(value, list | tuple):
        return ", ".join(_plain(v) for v in value)
    return str(value)


def _pair(p: Mapping[str, object]) -> str:
    """``a (stage) ↔ b (stage)``, with the Hamming distance of a near pair."""
    text = f"{p.get('a')} ({p.get('a_stage')}) ↔ {p.get('b')} ({p.get('b_stage')})"
    return text + (f" (Hamming {p['distance']})" if "distance" in p else "")


def _pairs(title: str, found: object, limit: int) -> str:
    """``title: N pair(s): a ↔ b; ... (+M more)`` (the first ``limit`` pairs)."""
    pairs = [_map(p) for p in _seq(_map(found).get("pairs"))]
    count = int(_num(_map(found).get("count", len(pairs))))
    shown = pairs[:limit]
    return (f"{title}: {count} pair(s): {'; '.join(_pair(p) for p in shown)}"
            f"{and_more(count, len(shown))}")


def _adjacent(value: object, limit: int) -> list[str]:
    return [_pairs(f"neighbouring frames (within {_map(value).get('k')})", value, limit)]


def _duplicates(value: object, limit: int) -> list[str]:
    found = _map(value)
    out = [_pairs(title, found[kind], limit)
           for kind, title in (("content_duplicate", "content duplicates"),
                               ("near_duplicate", "near duplicates")) if kind in found]
    if "unsigned" in found:
        unsigned = _map(found["unsigned"])
        frames = [str(f) for f in _seq(unsigned.get("frames"))][:limit]
        count = int(_num(unsigned.get("count", len(frames))))
        out.append(f"unsigned: {count} frame(s) without a signature: {', '.join(frames)}"
                   f"{and_more(count, len(frames))}; sign them: {unsigned.get('fix')}")
    return out


def _grid(g: Mapping[str, object]) -> str:
    nm = _seq(g.get("nm"))
    span = f" {_num(nm[0]):g}–{_num(nm[-1]):g} nm" if nm else ""
    return (f"{g.get('bands')} bands{span} ({', '.join(str(s) for s in _seq(g.get('stages')))}): "
            f"{len(_seq(g.get('recordings')))} recording(s), {g.get('frames')} frame(s)")


def _test(t: Mapping[str, object]) -> str:
    nm = [_num(v) for v in _seq(t.get("nm"))] or [0.0, 0.0]
    recs = "+".join(str(r) for r in _seq(t.get("recordings")))
    where = (f"{nm[0]:g} nm" if nm[0] == nm[-1]  # a range of one band: its centre
             else f"{nm[0]:g}–{nm[-1]:g} nm")
    head = f"{t.get('b')} vs {t.get('a')}: {_num(t.get('statistic')):.2f}σ in {where}"
    if t.get("p_value") is None:
        return f"{head}, no p-value ({t.get('note')})"
    return (f"{head}, p = {_num(t.get('p_value')):.3g} ({recs} recordings)"
            + (", shifted" if t.get("flagged") else ""))


def _spectra(value: object, limit: int) -> list[str]:
    found = _map(value)
    out = []
    if found.get("summaries") is not None:
        without = int(_num(found.get("without_summary")))
        out.append(f"spectral summaries: {found['summaries']}"
                   + (f" ({without} frame(s) without one)" if without else ""))
    if "missing_summaries" in found:
        out.append(str(_map(found["missing_summaries"]).get("line", "")))
    grids = [_map(g) for g in _seq(_map(found.get("wavelength_grid")).get("grids"))]
    if grids:
        out.append("wavelength grids: " + "; ".join(_grid(g) for g in grids[:limit])
                   + and_more(len(grids), min(limit, len(grids))))
    tests = [_map(t) for t in _seq(_map(found.get("spectral_shift")).get("tests"))]
    if tests:
        out.append("spectral shift: " + "; ".join(_test(t) for t in tests))
    return out


#: The details that read better in their own words than as ``key: value``.
_WORDED: dict[str, Callable[[object, int], list[str]]] = {
    "adjacent_pairs": _adjacent, "duplicate_pairs": _duplicates, "spectra": _spectra}


def detail_lines(details: Mapping[str, object], limit: int = 8) -> list[str]:
    """The lines ``check`` prints under a finding for its ``details`` (lists cut to
    ``limit`` items and counted), every value in words."""
    out: list[str] = []
    for key, value in details.items():
        if key in _WORDED:
            out.extend(line for line in _WORDED[key](value, limit) if line)
        elif isinstance(value, list):
            if value:
                shown = ", ".join(_plain(v) for v in value[:limit])
                out.append(f"{key}: {shown}{and_more(len(value), limit)}")
        elif isinstance(value, Mapping):
            if value:
                out.append(f"{key}: " + ", ".join(
                    f"{k}={v}" if not isinstance(v, Mapping | list) else f"{k}: {_plain(v)}"
                    for k, v in value.items()))
        elif value not in (None, ""):
            out.append(f"{key}: {value}")
    return out
