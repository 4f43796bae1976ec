"""Spectra between two revisions (``diff``): per stage, the shift test of the stage at one
revision against the same stage at the other, and the recordings whose wavelength grid
changed.

Everything is read from the per-frame summaries materialize records, no cube: the
workspace's from the materialized folder on disk, a revision's from the local DVC cache
through its dvc.lock (:func:`~dvc_cuvis.review.spectra_base.summaries_at`).  The unit of
the test is the recording, as in :mod:`dvc_cuvis.leakage.shift`.  When either end's
summaries cannot be read, the comparison is one line saying why, with the command that
brings them where there is one; the diff itself never fails for it.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dvc_cuvis.errors import DvcCuvisError, first_line
from dvc_cuvis.leakage.grids import changed_grids, grid_label, grids, same_grid
from dvc_cuvis.leakage.shift import Shift, recording_means, shift_test
from dvc_cuvis.model.compare import Version
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES
from dvc_cuvis.repo.dvc_client import CacheLocator
from dvc_cuvis.review.history import GitTree
from dvc_cuvis.review.spectra import read_index

__all__ = ["GridChange", "SpectraDiff", "StageShift", "spectra_diff"]

#: Frame name -> its stored summary (as materialize writes it; checked before use).
Entries = Mapping[str, Mapping[str, object]]
#: A frame's usable summary: its recording, wavelengths and mean spectrum.
Row = tuple[str, tuple[float, ...], list[float]]


@dataclass(frozen=True)
class StageShift:
    """One stage at both revisions: the shift test over recordings, or why there is none."""

    stage: str
    labels: tuple[str, str]  # the revisions, as the diff names them
    frames: tuple[int, int]  # frames compared (on the shared grid) at a and at b
    unsummarized: tuple[int, int]  # frames of the stage without a summary at a and at b
    off_grid: tuple[int, int]  # frames on another grid than the one compared
    test: Shift | None
    #: why there is no test: "empty" or "unsummarized" (at ``labels[at]``), "no grid"
    untested: str = ""
    at: int = 0

    def words(self, name: Callable[[str], str] = str) -> str:
        """The outcome in one line, the shift named when flagged; ``name`` writes a
        revision's label (a code span in markdown)."""
        a, b = name(self.labels[0]), name(self.labels[1])
        extra = "".join(f"; {n} frame(s) at {at} without a summary"
                        for n, at in zip(self.unsummarized, (a, b), strict=True) if n)
        t = self.test
        extra += "".join(f"; {n} frame(s) at {at} on another grid left out"  # of a test
                         for n, at in zip(self.off_grid, (a, b), strict=True) if n and t)
        if t is None:
            at = (a, b)[self.at]
            return self.stage + {
                "empty": f" is empty at {at}",
                "unsummarized": f": no frame at {at} has a summary",
                "no grid": ": no wavelength grid is shared by its frames at both revisions",
            }.get(self.untested, ": not tested") + extra
        where = (f"{t.nm[0]:g}–{t.nm[1]:g} nm" if t.nm[0] != t.nm[1]  # a range of one band:
                 else f"{t.nm[0]:g} nm")  # its centre
        if t.p_value is None:
            return (f"{self.stage}: {t.note} (largest difference {t.statistic:.2f}σ in "
                    f"{where}){extra}")
        how = f"p = {t.p_value:.3g}, {t.recordings[0]}+{t.recordings[1]} recordings, " + (
            "exact" if t.exact else f"{t.permutations} permutations")
        if t.flagged:
            side = "brighter" if t.direction > 0 else "darker"
            return (f"{self.stage}'s mean spectrum shifted by {t.statistic:.2f}σ in {where}, "
                    f"{side} at {b} ({how}){extra}")
        return (f"{self.stage}: no significant shift (largest {t.statistic:.2f}σ in {where}; "
                f"{how}){extra}")

    def record(self) -> dict[str, object]:
        """Plain JSON types for ``diff --json``."""
        return {"stage": self.stage, "frames": list(self.frames),
                "without_summary": list(self.unsummarized), "off_grid": list(self.off_grid),
                "test": self.test.record() if self.test is not None else None,
                "line": self.words()}


@dataclass(frozen=True)
class GridChange:
    """A recording present at both revisions whose wavelength grid changed."""

    recording: str
    a: tuple[float, ...]
    b: tuple[float, ...]

    def line(self) -> str:
        """``rec/: 16 bands 400–850 nm -> 16 bands 402–852 nm`` (the name unescaped)."""
        return f"{self.recording}: {grid_label(self.a)} -> {grid_label(self.b)}"


@dataclass(frozen=True)
class SpectraDiff:
    """The spectral comparison of a split between two revisions, or why there is none."""

    folder: str
    a: str
    b: str
    stages: tuple[StageShift, ...] = ()
    grid_changes: tuple[GridChange, ...] = ()
    #: the split's main grid at a and at b (the one most frames are on)
    main: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    #: why the summaries of one end cannot be read (empty: compared)
    why: str = ""
    #: the command that brings them (empty: none does)
    fix: str = ""

    @property
    def compared(self) -> bool:
        """Whether both ends' summaries were read."""
        return not self.why

    @property
    def main_changed(self) -> bool:
        """Whether the split's main wavelength grid differs between the revisions."""
        return self.main is not None and not same_grid(*self.main)

    def stage_lines(self, name: Callable[[str], str] = str) -> list[tuple[bool, str]]:
        """Per stage (flagged, its outcome in one line; ``name`` writes a revision)."""
        return [(s.test is not None and s.test.flagged, s.words(name)) for s in self.stages]

    def grid_lines(self) -> list[str]:
        """The split's main grid, when it changed (one line, or none)."""
        if self.main is None or not self.main_changed:
            return []
        return [f"the split's wavelength grid changed: {grid_label(self.main[0])} -> "
                f"{grid_label(self.main[1])}"]

    def recording_lines(self, limit: int | None = 20) -> list[str]:
        """The recordings whose grid changed (the first ``limit``, then a count)."""
        shown = self.grid_changes if limit is None else self.grid_changes[:limit]
        out = [g.line() for g in shown]
        if len(shown) < len(self.grid_changes):
            out.append(f"... {len(self.grid_changes) - len(shown)} more (use --all)")
        return out

    def lines(self, limit: int | None = 20) -> list[str]:
        """The section as plain lines (text from data not yet escaped)."""
        if not self.compared:
            fix = f"; `{self.fix}` brings them" if self.fix else ""
            return [f"spectra: not compared: {self.why}{fix}"]
        out = [f"spectra ({self.folder} summaries; {self.b} against {self.a}, unit: "
               "recording):"]
        out += [f"  {line}" for _, line in self.stage_lines()]
        out += [f"  {line}" for line in self.grid_lines()]
        if self.grid_changes:
            out.append(f"  wavelength grid changed for {len(self.grid_changes)} recording(s):")
            out += [f"    {line}" for line in self.recording_lines(limit)]
        return out

    def to_dict(self) -> dict[str, object]:
        """The ``spectra`` object of ``diff --json``."""
        main = None if self.main is None else {
            "a": {"bands": len(self.main[0]), "nm": _ends(self.main[0])},
            "b": {"bands": len(self.main[1]), "nm": _ends(self.main[1])},
            "changed": self.main_changed}
        return {"summaries": self.folder, "compared": self.compared, "why": self.why,
                "fix": self.fix, "stages": [s.record() for s in self.stages],
                "main_grid": main,
                "grid_changes": [{"recording": g.recording,
                                  "a": {"bands": len(g.a), "nm": _ends(g.a)},
                                  "b": {"bands": len(g.b), "nm": _ends(g.b)}}
                                 for g in self.grid_changes]}


def _ends(wl: Sequence[float]) -> list[float]:
    return [wl[0], wl[-1]] if wl else []


def _frames(v: Version) -> dict[int, str]:
    """Position -> frame name of every sample of train/val/test."""
    uni = v.universe
    wanted = sorted({int(p) for s in EXCLUSIVE_STAGES for p in v.stages[s].tolist()})
    return {p: frame_name(uni.source(p), read_index(uni, p)) for p in wanted}


def _usable(name: str, entry: Mapping[str, object], where: str) -> tuple[tuple[float, ...],
                                                                    list[float]]:
    """An entry's wavelengths and mean spectrum (NaN for a band without pixels), or an
    error naming the frame: the entries come from a branch anyone can push."""
    wl, mean = entry.get("wavelengths"), entry.get("mean")
    if not (isinstance(wl, list) and isinstance(mean, list) and len(wl) == len(mean)
            and all(_number(w) and math.isfinite(w) for w in wl)
            and all(m is None or _number(m) for m in mean)):
        raise DvcCuvisError(f"{where}: the summary of {name} is not what materialize writes "
                            "(wavelengths and a mean per band); rerun dvc-cuvis materialize")
    return (tuple(float(w) for w in wl),
            [math.nan if m is None else float(m) for m in mean])


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _read(tree: GitTree, rev: str | None, folder: str, names: Sequence[str],
          locate: CacheLocator) -> tuple[Entries, str, str]:
    """The entries of ``names`` at ``rev`` (None: the workspace), or why not and the
    command that brings them."""
    from dvc_cuvis.materialize.summary_store import SUMMARIES_DIR, load_summaries, shard_of

    q = shlex.quote(folder)
    if rev is None:
        path = tree.root / folder
        if not (path / SUMMARIES_DIR).is_dir():
            return {}, f"{folder} holds no spectral summaries in the workspace", (
                f"dvc pull {q}")
        try:
            return load_summaries(path, names), "", ""
        except DvcCuvisError as exc:
            return {}, first_line(exc), ""
    from dvc_cuvis.review.spectra_base import summaries_at

    got = summaries_at(tree, rev, folder, {shard_of(n) for n in names}, locate)
    fix = f"dvc fetch --all-commits {q}" if got.missing else ""
    return got.entries, got.why, fix


def _rows(v: Version, frames: dict[int, str], entries: Entries,
          where: str) -> dict[int, Row]:
    """Position -> (recording, wavelengths, mean) of the frames with a summary."""
    names, codes = v.universe.recordings()
    out: dict[int, Row] = {}
    for p, name in frames.items():
        entry = entries.get(name)
        if entry is not None:
            out[p] = (names[int(codes[p])], *_usable(name, entry, where))
    return out


def _stage(stage: str, a: Version, b: Version, rows_a: dict[int, Row],
           rows_b: dict[int, Row]) -> StageShift | None:
    """The shift test of ``stage`` at a against b, on the grid most of its frames share
    (None: the stage is empty at both)."""
    pos_a, pos_b = a.stages[stage].tolist(), b.stages[stage].tolist()
    if not pos_a and not pos_b:
        return None
    ra = [rows_a[p] for p in pos_a if p in rows_a]
    rb = [rows_b[p] for p in pos_b if p in rows_b]
    missing = (len(pos_a) - len(ra), len(pos_b) - len(rb))
    labels = (a.label, b.label)
    if not ra or not rb:
        at = 0 if not ra else 1
        return StageShift(stage, labels, (len(ra), len(rb)), missing, (0, 0), None,
                          "unsummarized" if (pos_a, pos_b)[at] else "empty", at)
    found = grids([r[1] for r in ra + rb], [r[0] for r in ra + rb],
                  ["a"] * len(ra) + ["b"] * len(rb))
    shared = next((g.wavelengths for g in found if g.stages == ("a", "b")), None)
    if shared is None:
        return StageShift(stage, labels, (0, 0), missing, (len(ra), len(rb)), None,
                          "no grid")
    on_a = [r for r in ra if same_grid(shared, r[1])]
    on_b = [r for r in rb if same_grid(shared, r[1])]
    spectra = []
    for rows in (on_a, on_b):
        recs = sorted({r[0] for r in rows})
        code = {name: k for k, name in enumerate(recs)}
        spectra.append(recording_means(np.array([r[2] for r in rows], dtype=np.float64),
                                       [code[r[0]] for r in rows])[1])
    test = shift_test(spectra[0], spectra[1], shared, stage_a=a.label, stage_b=b.label)
    return StageShift(stage, labels, (len(on_a), len(on_b)), missing,
                      (len(ra) - len(on_a), len(rb) - len(on_b)), test)


def _recording_grids(rows: dict[int, Row]) -> dict[str, tuple[float, ...]]:
    """Per recording the grid most of its frames are on (ties: the smaller grid)."""
    count: dict[str, dict[tuple[float, ...], int]] = {}
    for rec, wl, _ in rows.values():
        count.setdefault(rec, {}).setdefault(wl, 0)
        count[rec][wl] += 1
    return {rec: min(c, key=lambda g: (-c[g], len(g), g)) for rec, c in count.items()}


def _grid_changes(rows_a: dict[int, Row], rows_b: dict[int, Row]) -> list[GridChange]:
    """The recordings of the split at both revisions whose grid changed, by name."""
    return [GridChange(rec, ga, gb) for rec, ga, gb in
            changed_grids(_recording_grids(rows_a), _recording_grids(rows_b))]


def _main(rows: dict[int, Row]) -> tuple[float, ...]:
    """The grid most of the split's frames are on (empty: no frame)."""
    found = grids([r[1] for r in rows.values()], [r[0] for r in rows.values()],
                  ["x"] * len(rows))
    return found[0].wavelengths if found else ()


def spectra_diff(tree: GitTree, a: Version, rev_a: str | None, b: Version, rev_b: str | None,
                 folder: str) -> SpectraDiff:
    """The spectral comparison of the split at ``rev_a`` and ``rev_b`` (None: the workspace)
    from the summaries in the materialized ``folder`` (repository-relative)."""
    frames_a, frames_b = _frames(a), _frames(b)
    read = []
    locate = CacheLocator(tree.root)  # DVC's configuration read once for both ends
    for rev, frames in ((rev_a, frames_a), (rev_b, frames_b)):
        entries, why, fix = _read(tree, rev, folder, list(frames.values()), locate)
        if why:
            return SpectraDiff(folder, a.label, b.label, why=why, fix=fix)
        read.append(entries)
    try:
        rows_a = _rows(a, frames_a, read[0], f"{folder} at {a.label}")
        rows_b = _rows(b, frames_b, read[1], f"{folder} at {b.label}")
    except DvcCuvisError as exc:
        return SpectraDiff(folder, a.label, b.label, why=first_line(exc))
    stages = tuple(st for s in EXCLUSIVE_STAGES
                   if (st := _stage(s, a, b, rows_a, rows_b)) is not None)
    return SpectraDiff(folder, a.label, b.label, stages, tuple(_grid_changes(rows_a, rows_b)),
                       (_main(rows_a), _main(rows_b)))
