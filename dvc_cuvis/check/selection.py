"""The selection and constraints checks: every selector resolves fully against the
universe, and the resolved split keeps its constraints (plus group leakage)."""

from __future__ import annotations

from pathlib import Path

from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis.check.duplicates import Duplicates
from dvc_cuvis.check.facts import Details
from dvc_cuvis.check.fixes import Workspace
from dvc_cuvis.check.report import Finding
from dvc_cuvis.errors import SelectorError, and_more
from dvc_cuvis.leakage.adjacent import ADJACENT_FRAMES, adjacent_pairs
from dvc_cuvis.leakage.grids import WAVELENGTH_GRID
from dvc_cuvis.leakage.shift import SPECTRAL_SHIFT
from dvc_cuvis.model.constraints import ConstraintResult, evaluate_constraints
from dvc_cuvis.model.resolution import Resolution, resolve
from dvc_cuvis.model.universe import Universe

__all__ = ["check_constraints", "check_selection"]

#: What to do about a failed constraint that has its own remedy.
HINTS = {
    ADJACENT_FRAMES: "re-bake with a strategy that respects the constraint (neighbouring "
                     "frames: --group-by auto or block:N, or --buffer K)",
    "wavelength_grid": "re-materialize the recordings named on one wavelength grid, or leave "
                       "them out of the split",
    "spectral_shift": "re-bake stratified or grouped so every stage holds recordings of each "
                      "condition",
}


def check_selection(
    cfg: DataSplitConfig, uni: Universe, name_to_id: dict[str, int] | None, where: str,
    allow_partial: bool, ws: Workspace | None = None, splits: Path | None = None,
) -> tuple[Finding, Resolution | None]:
    """The selection finding, and the resolution (None when the split does not resolve)."""
    try:
        res = resolve(cfg, uni, name_to_id=name_to_id, where=where)
    except SelectorError as exc:
        return Finding("selection", "violation", str(exc), {},
                       "fix the selector, or re-bake the split against this universe"), None
    if res.warnings:
        msgs = [w.message() for w in res.warnings]
        missing = sum(len(w.missing) for w in res.warnings)
        summary = (f"{len(res.warnings)} selector(s) match only partly ({missing} requested "
                   "sample(s) absent)")
        if allow_partial:
            return Finding("selection", "ok", summary + "; allowed (--allow-partial)",
                           {"partial": msgs}), res
        ws = ws or Workspace(uni.path.parent if uni.path is not None else None)
        return Finding("selection", "violation", summary, {"partial": msgs},
                       ws.reselect(splits, uni.path)), res
    counts = {s: len(res.stages[s]) for s in ("train", "val", "test", "predict")}
    return Finding("selection", "ok", "every selector resolves fully: "
                   + " ".join(f"{k}={v}" for k, v in counts.items())), res


def _adjacent(res: Resolution, severity: str, k: int) -> tuple[ConstraintResult | None,
                                                              Details | None]:
    """The ``adjacent_frames`` result (listed when violated, or when asked for as an error)
    and its pairs for ``--json``."""
    if severity == "off":
        return None, None
    found = adjacent_pairs(res.universe, res.stages, k)
    if not found.count:
        return (ConstraintResult(ADJACENT_FRAMES, severity, "satisfied")
                if severity == "error" else None), None
    more = and_more(found.count, len(found.pairs))
    reason = (f"{found.count} pair(s) of frames of one recording within {k} of each other in "
              f"different stages: {'; '.join(found.lines()[:3])}"
              f"{and_more(found.count, min(3, len(found.pairs)))}")
    result = ConstraintResult(ADJACENT_FRAMES, severity, "violated", found.count,
                              tuple(found.lines()), reason)
    return result, {"k": k, "count": found.count, "pairs": list(found.pairs),
                    "more": more.strip()}


def _hint(failed: list[ConstraintResult], dup: Duplicates, first: str = "") -> str:
    """What to do about the failed constraints: each one's own remedy, ``first`` (the
    command that produces missing summaries) then the duplicate fix first, so that no remedy
    hides behind another's (a planted copy used to hide the neighbour and grid remedies)."""
    remedies = [first] if first else []
    remedies += [_duplicate_fix(dup)] if dup.failed else []
    remedies += [HINTS[r.kind] for r in failed if r.kind in HINTS]
    if remedies:
        return "; ".join(dict.fromkeys(remedies))
    return ("re-bake with a strategy that respects the constraint (e.g. --group-by group, "
            "--ad-aware)")


def check_constraints(cfg: DataSplitConfig, res: Resolution | None, group_leakage: str,
                      adjacent: tuple[str, int] = ("warn", 1),
                      spectral: tuple[list[ConstraintResult], Details] | None = None,
                      duplicates: Duplicates | None = None) -> Finding:
    """The constraints finding (``res``: the resolution; None when it failed); ``adjacent``:
    the severity and K of the neighbouring-frames check; ``spectral``: what the spectral
    shift and wavelength grid checks found (:func:`~dvc_cuvis.check.spectral.spectral_results`);
    ``duplicates``: what the duplicate constraints found (:mod:`dvc_cuvis.check.duplicates`)."""
    if res is None:
        return Finding("constraints", "skipped", "the split does not resolve")
    results = evaluate_constraints(res, cfg.constraints, group_leakage=group_leakage)
    near, pairs = _adjacent(res, *adjacent)
    if near is not None:
        results.append(near)
    spectra, spectra_details = spectral or ([], {})
    results.extend(spectra)
    dup = duplicates or Duplicates()
    results.extend(dup.results)
    failed = [r for r in results if r.failed]
    details: Details = {r.kind: f"{r.status} ({r.severity})"
                               + (f": {r.reason}" if r.reason else "") for r in results}
    extra: Details = {"adjacent_pairs": pairs} if pairs else {}
    if spectra_details:
        extra["spectra"] = spectra_details
    extra.update(dup.details)
    if failed:
        return Finding("constraints", "violation",
                       ", ".join(f"{r.kind} {r.status}" for r in failed),
                       {"results": details, "offending": [o for r in failed for o in r.offending],
                        **extra},
                       _hint(failed, dup, _spectra_fix(failed, spectra_details)))
    if not results:
        return Finding("constraints", "ok", "no constraints declared", extra)
    return Finding("constraints", "ok", ", ".join(
        f"{r.kind} {r.status}" + (f" ({r.severity})" if r.status != "satisfied" else "")
        for r in results), {"results": details, **extra} if extra else {})


def _spectra_fix(failed: list[ConstraintResult], spectra: Details) -> str:
    """The fix line of a spectral constraint that failed for want of summaries: the command
    that produces them ("" when none failed so)."""
    note = spectra.get("missing_summaries")
    if not isinstance(note, dict) or not any(
            r.status == "unavailable" and r.kind in (WAVELENGTH_GRID, SPECTRAL_SHIFT)
            for r in failed):
        return ""
    then = f", {note['then']}" if note.get("then") else ""
    return f"produce the summaries: {note['fix']}{then}" if note.get("fix") else str(note["then"])


def _duplicate_fix(dup: Duplicates) -> str:
    """The fix line of a failed duplicate constraint: sign the frames, else re-bake."""
    unsigned = dup.details.get("duplicate_pairs", {}).get("unsigned")
    if any(r.failed and r.status == "unavailable" for r in dup.results) and unsigned:
        return str(unsigned["fix"])
    return dup.rebake()
