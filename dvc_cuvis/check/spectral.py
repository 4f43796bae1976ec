"""The spectral constraints of check: ``wavelength_grid`` and ``spectral_shift``, both read
from the per-frame summaries of a materialized folder (``--summaries DIR``, else the
universe's own folder when materialize wrote summaries there), no cube read.  When no folder
holds summaries, or some frames have none, they say so once, with the command that
produces them.

The summaries give each frame's wavelengths and mean spectrum; the universe gives its
recording.  The grid check runs first: the shift test compares only frames on the split's
main grid (the one most frames are on).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from dvc_cuvis.check.facts import Details
from dvc_cuvis.check.summaries import Entry, SplitSummaries, shown_folder, split_positions
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.leakage.grids import WAVELENGTH_GRID, grids, same_grid
from dvc_cuvis.leakage.shift import SPECTRAL_SHIFT, recording_means, shift_test
from dvc_cuvis.model.constraints import ConstraintResult
from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES

__all__ = ["SEVERITIES", "check_spectral_severity", "spectral_results"]

#: Severities of the two checks.
SEVERITIES: tuple[str, ...] = ("error", "warn", "off")


def check_spectral_severity(severity: object, named: str) -> str:
    """``severity`` if it is error, warn or off, else an error naming ``named``."""
    if severity not in SEVERITIES:
        raise DvcCuvisError(f"{named} must be one of {', '.join(SEVERITIES)}, got {severity!r}")
    return str(severity)


def _frames(read: SplitSummaries) -> list[tuple[int, str, Entry]]:
    """(row, stage, summary entry) of every frame of train/val/test that has a summary, in
    row order."""
    found = []
    for p in sorted(read.stage_of):
        entry = read.entry(p)
        if entry is not None:
            found.append((p, read.stage_of[p], entry))
    return found


def _grid(frames: list[tuple[int, str, dict[str, Any]]], rec_names: list[str], codes: Any,
          severity: str) -> tuple[ConstraintResult, dict[str, Any], tuple[float, ...]]:
    """The ``wavelength_grid`` result, its details, and the main grid (``frames`` is not
    empty, so there is one)."""
    found = grids([f[2]["wavelengths"] for f in frames],
                  [rec_names[codes[f[0]]] for f in frames], [f[1] for f in frames])
    main = found[0].wavelengths
    details = {"grids": [g.record() for g in found]}
    if len(found) <= 1:
        return ConstraintResult(WAVELENGTH_GRID, severity, "satisfied"), details, main
    lines = tuple(g.line() for g in found)
    reason = (f"the split's frames lie on {len(found)} wavelength grids: " + "; ".join(lines)
              + ": re-materialize the odd recordings on one grid, or leave them out of the "
              "split")
    return (ConstraintResult(WAVELENGTH_GRID, severity, "violated", len(found) - 1, lines,
                             reason), details, main)


def _shift(frames: list[tuple[int, str, dict[str, Any]]], codes: Any,
           main: tuple[float, ...], severity: str) -> tuple[ConstraintResult, dict[str, Any]]:
    """The ``spectral_shift`` result over every pair of stages, and its tests."""
    on = [f for f in frames if same_grid(main, f[2]["wavelengths"])]
    per_stage: dict[str, Any] = {}
    for st in EXCLUSIVE_STAGES:
        rows = [f for f in on if f[1] == st and len(f[2]["mean"]) == len(main)]
        if rows:
            per_stage[st] = recording_means([f[2]["mean"] for f in rows],
                                            codes[[f[0] for f in rows]])[1]
    tests = [shift_test(per_stage[a], per_stage[b], main, stage_a=a, stage_b=b)
             for a, b in itertools.combinations(EXCLUSIVE_STAGES, 2)
             if a in per_stage and b in per_stage]
    details = {"tests": [t.record() for t in tests]}
    flagged = [t for t in tests if t.flagged]
    if not flagged:
        untested = [t.describe() for t in tests if t.p_value is None]
        return ConstraintResult(SPECTRAL_SHIFT, severity, "satisfied", 0, (),
                                "; ".join(untested)), details
    lines = tuple(t.describe() for t in flagged)
    return ConstraintResult(SPECTRAL_SHIFT, severity, "violated", len(flagged), lines,
                            "; ".join(lines) + ": re-bake the split stratified or grouped so "
                            "every stage holds recordings of each condition"), details


#: Why the spectral constraints read nothing when no folder holds summaries.
NO_FOLDER = "no --summaries DIR given, and no summaries/ folder beside universe.csv"

#: Says that constraints could not read every frame's summary: (kinds, why, the uids
#: without one, how many frames) -> the note (:func:`~dvc_cuvis.check.summaries.missing_note`).
Say = Callable[[list[str], str, list[str], int], Details]


def spectral_results(res: Resolution, read: SplitSummaries | None, shift_severity: str,
                     grid_severity: str, say: Say, absent: str = NO_FOLDER
                     ) -> tuple[list[ConstraintResult], dict[str, Any]]:
    """The grid and shift results to list among the constraints (a satisfied one only when
    asked for as an error), and their details for ``check --json``; frames without a
    summary (all of them, when no folder is read: why ``absent``) are said once, by
    ``say``."""
    kinds = [k for k, sev in ((WAVELENGTH_GRID, grid_severity), (SPECTRAL_SHIFT, shift_severity))
             if sev != "off"]
    if not kinds:
        return [], {}
    if read is None:  # not run: nothing to compare, said (never a failure)
        uids = [res.universe.uid(p) for p in sorted(split_positions(res))]
        return [], {"summaries": None, "missing_summaries": say(kinds, absent, uids,
                                                                   len(uids))}
    frames = _frames(read)
    rec_names, codes = res.universe.recordings()
    shown = shown_folder(read.folder)
    without = read.without(res.universe)
    details: dict[str, Any] = {"summaries": shown, "without_summary": len(without)}
    if without:
        details["missing_summaries"] = say(kinds, f"{shown} holds no summary for them", without,
                                           len(read.stage_of))
    out: list[ConstraintResult] = []
    if not frames:
        reason = f"no spectral summary in {shown} for any of the split's frames"
        for kind, sev in ((WAVELENGTH_GRID, grid_severity), (SPECTRAL_SHIFT, shift_severity)):
            if sev != "off":
                out.append(ConstraintResult(kind, sev, "unavailable", 0, (), reason))
        return out, details
    grid, grid_details, main = _grid(frames, rec_names, codes, grid_severity)
    if grid_severity != "off":
        details[WAVELENGTH_GRID] = grid_details
        if grid.status == "violated" or grid_severity == "error":
            out.append(grid)
    if shift_severity != "off":
        shift, shift_details = _shift(frames, codes, main, shift_severity)
        details[SPECTRAL_SHIFT] = shift_details
        if shift.status == "violated" or shift_severity == "error":
            out.append(shift)
    return out, details
