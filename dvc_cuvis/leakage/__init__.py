"""Leakage the ids cannot see: recordings, duplicate and near-duplicate frames, neighbouring
frames, spectral shift and wavelength grids, found across the stages of a split.

Ids say which sample a frame is; these checks look at where a frame came from and what it
holds, so that a test stage that is not independent of training is refused before a frame
is loaded.  The work runs on what materialize records per frame (signatures, summaries); no
cube is read twice.
"""

from __future__ import annotations

__all__: list[str] = []
