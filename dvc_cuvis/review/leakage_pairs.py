"""The report's leakage figures: per pair of stages, how many exact copies, near copies and
neighbouring frames cross it, and the worst pairs with their frames' thumbnails.

The pairs come from the duplicate audit ``check`` runs (the signatures materialize stored);
the neighbours from the frames' positions in their recordings.  Only the frames of the pairs
shown are read, from their npz files in the materialized folder, within the ceilings every
frame reader checks (:mod:`dvc_cuvis.model.npz_members`), and never through a link out of it.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dvc_cuvis.check.duplicates import sign_command, split_audit
from dvc_cuvis.errors import DvcCuvisError, first_line
from dvc_cuvis.leakage.adjacent import adjacent_pairs
from dvc_cuvis.leakage.duplicates import HAMMING, STAGE_PAIRS, DuplicatePair
from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.splits import EXCLUSIVE_STAGES

__all__ = ["MOST_SHOWN", "LeakageFigures", "ShownPair", "StagePairCounts", "leakage_figures"]

#: The most pairs whose frames the report draws (exact copies first, then the nearest).
MOST_SHOWN = 6


@dataclass(frozen=True)
class StagePairCounts:
    """How many pairs of frames cross one pair of stages, by kind."""

    stage_a: str
    stage_b: str
    exact: int
    near: int
    adjacent: int


@dataclass(frozen=True)
class ShownPair:
    """A pair the report draws: the audit's pair and each frame's thumbnail (``[h, w, 3]``
    uint8, the false-colour recipe of the spectra section)."""

    pair: DuplicatePair
    first_rgb: np.ndarray
    second_rgb: np.ndarray


@dataclass(frozen=True)
class LeakageFigures:
    """What the leakage section shows; ``note`` says why nothing could be compared."""

    counts: tuple[StagePairCounts, ...]
    shown: tuple[ShownPair, ...] = ()
    unsigned: tuple[str, ...] = ()  # samples without a signature: not compared
    signed: int = 0  # samples of the split that were compared
    fix: str = ""  # the command that signs the unsigned samples
    k: int = 1  # neighbours: within this many positions of one recording
    hamming: int = HAMMING
    note: str = ""


def _positions(res: Resolution, uids: set[str]) -> dict[str, int]:
    """The universe position of each wanted uid (train wins a sample in two stages)."""
    out: dict[str, int] = {}
    for stage in EXCLUSIVE_STAGES:
        for pos in res.stages[stage].tolist():
            uid = res.universe.uid(int(pos))
            if uid in uids:
                out.setdefault(uid, int(pos))
    return out


def _thumbnail(folder: Path, res: Resolution, pos: int) -> np.ndarray:
    """A sample's thumbnail from its materialized npz frame (bounded, inside ``folder``)."""
    from dvc_cuvis.materialize.summaries import thumbnail
    from dvc_cuvis.model.frame_names import frame_name
    from dvc_cuvis.model.frame_read import read_npz
    from dvc_cuvis.paths.guard import resolve_inside
    from dvc_cuvis.review.spectra import read_index

    uni = res.universe
    name = frame_name(uni.source(pos), read_index(uni, pos))
    path = resolve_inside(folder, name, what="frame")
    try:
        arrays = read_npz(str(path))
        cube, wavelengths = arrays["cube"], arrays["wavelengths"]
        if cube.ndim != 3 or wavelengths.shape != (cube.shape[2],):
            raise ValueError(f"cube {cube.shape} and wavelengths {wavelengths.shape} disagree")
        return thumbnail(cube, wavelengths).array()
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise DvcCuvisError(f"{path}: cannot read the frame of {uni.uid(pos)} to draw it "
                            f"({first_line(exc, type(exc).__name__)[:120]}); rerun dvc-cuvis "
                            "materialize, which rewrites it") from None


def leakage_figures(res: Resolution, folder: Path | str, *, most: int = MOST_SHOWN,
                    k: int = 1) -> LeakageFigures:
    """The leakage section's figures of a resolved split, from the materialized ``folder``:
    the counts per pair of stages and the ``most`` worst pairs, each frame drawn from its
    npz (only those frames are read); neighbours are frames within ``k`` positions."""
    where = Path(folder)
    near = adjacent_pairs(res.universe, res.stages, k)
    adjacent = {(a, b): n for a, b, n in near.by_stages}
    if not where.is_dir():
        counts = tuple(StagePairCounts(a, b, 0, 0, adjacent.get((a, b), 0))
                       for a, b in STAGE_PAIRS)
        return LeakageFigures(counts, k=k, note=(
            f"no materialized folder at {where}: copies are found from the signatures "
            "dvc-cuvis materialize takes; run it with --out-dir naming that folder"))
    found = split_audit(res, where)
    per = found.by_stages()
    counts = tuple(StagePairCounts(a, b, per[(a, b)][0], per[(a, b)][1],
                                   adjacent.get((a, b), 0)) for a, b in STAGE_PAIRS)
    worst = found.worst(most)
    pos = _positions(res, {u for p in worst for u in (p.first, p.second)})
    shown = tuple(ShownPair(p, _thumbnail(where, res, pos[p.first]),
                            _thumbnail(where, res, pos[p.second])) for p in worst)
    total = len({int(p) for s in EXCLUSIVE_STAGES for p in res.stages[s].tolist()})
    return LeakageFigures(counts, shown, found.unsigned, total - len(found.unsigned),
                          sign_command(where) if found.unsigned else "", k)
