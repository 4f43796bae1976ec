"""The spectra of a split, from the summaries materialize recorded: no cube is read.

Per stage the mean spectrum (each frame counts once) with a ±1 standard deviation band over
its pixels, per category its mean spectrum in each stage, a deterministic thumbnail sample,
and the **spectral balance** of each pair of exclusive stages: per band, the standardized
mean difference of the frames' mean spectra,

    SMD = |mean_a - mean_b| / s_p,  s_p = sqrt(((n_a-1) var_a + (n_b-1) var_b) / (n_a+n_b-2))

with the sample variances taken over frames. A band where ``s_p`` is 0 counts 0 when the
means are equal and is flagged otherwise. Frames on different wavelength grids are never
averaged together: each grid is its own set of figures.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.leakage.shift import Shift, recording_means, shift_test
from dvc_cuvis.materialize.summary_store import load_summaries, shard_of
from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES
from dvc_cuvis.model.universe import Universe

#: The SMD above which a band counts as shifted: the stages' frame means two pooled standard
#: deviations apart. With a few frames per stage, per-band SMDs near 1 arise by chance.
DEFAULT_THRESHOLD = 2.0
#: Thumbnails shown per stage by default.
DEFAULT_THUMBNAILS = 6


@dataclass
class StageSpectrum:
    """One stage's frames on one wavelength grid."""

    frames: int
    mean: np.ndarray  # mean of the frames' mean spectra
    var: np.ndarray  # sample variance over frames of the mean spectra (ddof 1; 0 for one)
    pixel_std: np.ndarray  # the pixels' standard deviation around ``mean``


@dataclass
class Balance:
    """The spectral balance of two stages on one grid."""

    stage_a: str
    stage_b: str
    smd: np.ndarray  # per band; inf where s_p is 0 and the means differ
    ranges: list[tuple[float, float]]
    flagged: bool
    #: the permutation test over recordings (:mod:`dvc_cuvis.leakage.shift`); when it has a
    #: p-value, ``flagged`` is its verdict, else the SMD threshold's
    test: Shift | None = None

    @property
    def max_shift(self) -> float:
        """The largest per-band SMD (inf: a constant band whose means differ)."""
        return float(self.smd.max()) if self.smd.size else 0.0


@dataclass
class GridSpectra:
    """Everything drawn for one wavelength grid."""

    wavelengths: tuple[float, ...]
    stages: dict[str, StageSpectrum]
    categories: dict[int, dict[str, np.ndarray]]  # category -> stage -> mean spectrum
    balance: list[Balance]
    too_few: list[tuple[str, str]]  # pairs with fewer than 3 frames between them


@dataclass
class SplitSpectra:
    """The spectra of a split: per grid, plus the samples without a summary."""

    grids: list[GridSpectra]
    missing: list[str]  # uids of samples of the split without a summary
    thumbnails: dict[str, list[tuple[str, dict[str, Any]]]]  # stage -> [(uid, thumbnail)]
    threshold: float
    base: list[Balance] = field(default_factory=list)  # train at the base vs now
    base_note: str = ""
    #: the summaries drawn: grid -> stage -> entries (what a base comparison needs)
    entries: dict[tuple[float, ...], dict[str, list[dict[str, Any]]]] = field(
        default_factory=dict)


def frame_summaries(
    res: Resolution, summaries_dir: Path,
) -> tuple[dict[int, dict[str, Any]], list[str]]:
    """The stored summary of each sample of the split (position -> entry), and the uids of
    samples without one.

    A sample's frame is the one materialize names for its ``(source, index)``; the entry is
    refused when its frame md5 differs from the materialized universe.csv's (a shard out of
    step with its frames), naming the shard and the sample.
    """
    from dvc_cuvis.model.frame_names import frame_name
    from dvc_cuvis.model.universe_io import read_universe

    uni = res.universe
    wanted = sorted({int(p) for s in EXCLUSIVE_STAGES for p in res.stages[s].tolist()})
    frames = {p: frame_name(uni.source(p), read_index(uni, p)) for p in wanted}
    stored = load_summaries(summaries_dir, frames.values())
    md5_of = _frame_md5s(summaries_dir, read_universe)
    found: dict[int, dict[str, Any]] = {}
    missing: list[str] = []
    for pos, frame in frames.items():
        entry = stored.get(frame)
        if entry is None:
            missing.append(uni.uid(pos))
            continue
        recorded = md5_of.get(frame)
        if recorded is not None and entry.get("md5") != recorded:
            raise DvcCuvisError(
                f"{summaries_dir / shard_of(frame)}: the summary of {uni.uid(pos)} is of "
                f"frame md5 {entry.get('md5')}, but {frame} is {recorded} in universe.csv: "
                "the shard is out of step with its frames; rerun dvc-cuvis materialize")
        found[pos] = entry
    return found, missing


def read_index(uni: Universe, pos: int) -> int:
    """The read index materialize names a sample's frame by (a whole-file sample: 0)."""
    return 0 if uni.indexless is not None and bool(uni.indexless[pos]) else int(uni.indices[pos])


def _frame_md5s(summaries_dir: Path, read_universe: Callable[[Path], Universe]
                ) -> dict[str, str]:
    """The frames' md5s the materialized universe.csv records (none without one)."""
    path = summaries_dir / "universe.csv"
    if not path.is_file():
        return {}
    mat = read_universe(path)
    if not (mat.has_column("materialized_path") and mat.has_column("md5")):
        return {}
    return dict(mat.rows("materialized_path", "md5"))


def stage_spectrum(entries: Sequence[dict[str, Any]]) -> StageSpectrum | None:
    """The spectrum of a stage's frames on one grid (None: no frame with valid pixels)."""
    rows = [e for e in entries if all(v is not None for v in e["mean"])]
    if not rows:
        return None
    means = np.asarray([e["mean"] for e in rows], dtype=np.float64)
    stds = np.asarray([[0.0 if v is None else v for v in e["std"]] for e in rows],
                      dtype=np.float64)
    grand = means.mean(axis=0)
    var = means.var(axis=0, ddof=1) if len(rows) > 1 else np.zeros(means.shape[1])
    second = (stds * stds + means * means).mean(axis=0)
    return StageSpectrum(len(rows), grand, var, np.sqrt(np.maximum(second - grand * grand, 0.0)))


def smd(a: StageSpectrum, b: StageSpectrum) -> np.ndarray | None:
    """Per band, the standardized mean difference of two stages (None: fewer than 3 frames)."""
    dof = a.frames + b.frames - 2
    if dof <= 0:
        return None
    pooled = np.sqrt(((a.frames - 1) * a.var + (b.frames - 1) * b.var) / dof)
    diff = np.abs(a.mean - b.mean)
    out = np.zeros_like(diff)
    nonzero = pooled > 0
    out[nonzero] = diff[nonzero] / pooled[nonzero]
    out[~nonzero & (diff > 0)] = np.inf
    return out


def shifted_ranges(values: np.ndarray, wavelengths: Sequence[float],
                   threshold: float) -> list[tuple[float, float]]:
    """The wavelength ranges (first, last band in nm) where ``values`` exceed ``threshold``."""
    above = values > threshold
    ranges: list[tuple[float, float]] = []
    start: int | None = None
    for i, hit in enumerate([*above.tolist(), False]):
        if hit and start is None:
            start = i
        elif not hit and start is not None:
            ranges.append((float(wavelengths[start]), float(wavelengths[i - 1])))
            start = None
    return ranges


def _recording_spectra(entries: dict[str, list[dict[str, Any]]],
                       recs: dict[str, list[int]]) -> dict[str, np.ndarray]:
    """Per stage the mean spectrum of each recording (the unit of the shift test)."""
    out = {}
    for stage, rows in entries.items():
        keep = [i for i, e in enumerate(rows) if all(v is not None for v in e["mean"])]
        if keep:
            means = np.asarray([rows[i]["mean"] for i in keep], dtype=np.float64)
            out[stage] = recording_means(means, [recs[stage][i] for i in keep])[1]
    return out


def _balance(stages: dict[str, StageSpectrum], wl: Sequence[float], threshold: float,
             per_recording: dict[str, np.ndarray] | None = None,
             ) -> tuple[list[Balance], list[tuple[str, str]]]:
    """Every pair of exclusive stages present on a grid: its balance (with the shift test
    over recordings when ``per_recording`` is given), or too few frames."""
    out: list[Balance] = []
    too_few: list[tuple[str, str]] = []
    names = [s for s in EXCLUSIVE_STAGES if s in stages]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            values = smd(stages[a], stages[b])
            if values is None:
                too_few.append((a, b))
                continue
            ranges = shifted_ranges(values, wl, threshold)
            test = None
            if per_recording and a in per_recording and b in per_recording:
                test = shift_test(per_recording[a], per_recording[b], wl, stage_a=a,
                                  stage_b=b)
            flagged = (test.flagged if test is not None and test.p_value is not None
                       else bool(ranges))
            out.append(Balance(a, b, values, ranges, flagged, test))
    return out, too_few


def _category_means(entries: dict[str, list[dict[str, Any]]]) -> dict[int, dict[str, np.ndarray]]:
    """Per category and stage: the pixel-weighted mean of the frames' category spectra."""
    sums: dict[int, dict[str, tuple[np.ndarray, int]]] = {}
    for stage, rows in entries.items():
        for e in rows:
            for key, cat in e.get("categories", {}).items():
                if cat["mean"] is None or any(v is None for v in cat["mean"]):
                    continue
                total, count = sums.setdefault(int(key), {}).get(stage, (0.0, 0))
                weighted = np.asarray(cat["mean"], dtype=np.float64) * cat["pixels"]
                sums[int(key)][stage] = (total + weighted, count + int(cat["pixels"]))
    return {k: {s: t / n for s, (t, n) in sorted(v.items()) if n}
            for k, v in sorted(sums.items())}


def _thumbnails(res: Resolution, found: dict[int, dict[str, Any]], per_stage: int
                ) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Up to ``per_stage`` thumbnails a stage, chosen by uid hash (the same on every run)."""
    uni = res.universe
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for stage in EXCLUSIVE_STAGES:
        have = [(hashlib.sha256(uni.uid(p).encode()).hexdigest(), uni.uid(p),
                 found[p]["thumbnail"]) for p in res.stages[stage].tolist()
                if p in found and "thumbnail" in found[p]]
        out[stage] = [(uid, thumb) for _, uid, thumb in sorted(have)[:per_stage]]
    return out


def split_spectra(res: Resolution, summaries_dir: Path, *, threshold: float = DEFAULT_THRESHOLD,
                  thumbnails: int = DEFAULT_THUMBNAILS) -> SplitSpectra:
    """The spectra of a split's exclusive stages from the summaries in ``summaries_dir``."""
    if not math.isfinite(threshold) or threshold < 0:
        raise DvcCuvisError(f"spectral_shift_threshold {threshold!r}: give a number >= 0")
    found, missing = frame_summaries(res, summaries_dir)
    by_grid: dict[tuple[float, ...], dict[str, list[dict[str, Any]]]] = {}
    recs: dict[tuple[float, ...], dict[str, list[int]]] = {}
    _names, codes = res.universe.recordings()
    for stage in EXCLUSIVE_STAGES:
        for p in res.stages[stage].tolist():
            if p in found:
                grid = tuple(found[p]["wavelengths"])
                by_grid.setdefault(grid, {}).setdefault(stage, []).append(found[p])
                recs.setdefault(grid, {}).setdefault(stage, []).append(int(codes[p]))
    grids: list[GridSpectra] = []
    for wl, entries in sorted(by_grid.items(), key=lambda kv: (-sum(map(len, kv[1].values())),
                                                               kv[0])):
        stages = {s: sp for s, rows in entries.items()
                  if (sp := stage_spectrum(rows)) is not None}
        balance, too_few = _balance(stages, wl, threshold,
                                    _recording_spectra(entries, recs[wl]))
        grids.append(GridSpectra(wl, stages, _category_means(entries), balance, too_few))
    return SplitSpectra(grids, missing, _thumbnails(res, found, thumbnails), threshold,
                        entries=by_grid)


def plot_rows(spectra: SplitSpectra) -> list[dict[str, object]]:
    """Rows for ``dvc plots``: wavelength, stage, mean, std of the main grid (float32 values)."""
    if not spectra.grids:
        return []
    grid = spectra.grids[0]
    rows: list[dict[str, object]] = []
    for stage, sp in grid.stages.items():
        for w, m, s in zip(grid.wavelengths, sp.mean.tolist(), sp.pixel_std.tolist(),
                           strict=True):
            rows.append({"wavelength": w, "stage": stage, "mean": float(np.float32(m)),
                         "std": float(np.float32(s))})
    return rows
