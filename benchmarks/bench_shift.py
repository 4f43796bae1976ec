"""Calibration and power of the ``spectral_shift`` test on synthetic recordings.

Run ``python -m benchmarks.bench_shift`` (1000 trials; ``--quick``: 40).  Calibration: random
re-splits of homogeneous recordings (one scene type, a light level per recording, frames of
a recording near copies) are flagged at most 5 % of the time, and the same splits tested
frame by frame are flagged far more often.  Power: a test stage with half of every test
recording's frames 15 % brighter in 700-780 nm (the issue's case) is flagged, in that range.
"""

from __future__ import annotations

import numpy as np

from benchmarks import _common
from dvc_cuvis.leakage.shift import recording_means, shift_test

WL = np.arange(400.0, 1000.0, 20.0)
BRIGHT = (WL >= 700) & (WL < 800)


def _homogeneous(rng: np.random.Generator, recordings: int, frames: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Frame mean spectra of homogeneous recordings, and each frame's recording."""
    level = 1.0 + 0.05 * rng.standard_normal((recordings, 1)) \
        + 0.01 * rng.standard_normal((recordings, len(WL)))
    per = np.repeat(level, frames, axis=0) + 0.003 * rng.standard_normal(
        (recordings * frames, len(WL)))
    return per, np.repeat(np.arange(recordings), frames)


def calibration(trials: int, recordings: int, train: int, frames: int = 6) -> dict[str, float]:
    """False flag rates of random re-splits: recordings as the unit, and frames."""
    rng = np.random.default_rng(1)
    rec_flags = frame_flags = 0
    for _ in range(trials):
        means, codes = _homogeneous(rng, recordings, frames)
        _, rec = recording_means(means, codes)
        order = rng.permutation(recordings)
        rec_flags += shift_test(rec[order[:train]], rec[order[train:]], WL).flagged
        rows = np.isin(codes, order[train:])
        frame_flags += shift_test(means[~rows], means[rows], WL).flagged
    return {"recording_level": rec_flags / trials, "frame_level": frame_flags / trials}


def power(trials: int, recordings: int, train: int, frames: int = 6) -> dict[str, float]:
    """Share of half-shifted test stages flagged, and flagged in the bright range."""
    rng = np.random.default_rng(2)
    flagged = right = 0
    for _ in range(trials):
        means, codes = _homogeneous(rng, recordings, frames)
        half = (codes >= train) & (np.arange(len(codes)) % 2 == 0)
        means[np.ix_(half, BRIGHT)] *= 1.15
        _, rec = recording_means(means, codes)
        found = shift_test(rec[:train], rec[train:], WL)
        flagged += found.flagged
        lo, hi = WL[found.band[0]], WL[found.band[1] - 1]
        right += found.flagged and hi >= 700 and lo <= 780 and found.direction > 0
    return {"flagged": flagged / trials, "in_range": right / trials}


def main(argv: list[str] | None = None) -> int:
    """Print the measured rates as JSON."""
    ap = _common.bare_args(__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    n = 40 if args.quick else 1000
    out = {"trials": n,
           "calibration_14_recordings_9_5": calibration(n, 14, 9),
           "calibration_40_recordings_28_12": calibration(n, 40, 28),
           "power_20_recordings_12_8": power(n, 20, 12),
           "power_10_recordings_6_4": power(n, 10, 6)}
    _common.print_json(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
