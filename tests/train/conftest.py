"""Fixtures of the train package's tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A materialized split of six one-frame npz files (its folder: universe.csv,
    splits.json and the frames)."""
    import numpy as np

    from dvc_cuvis.baking.core import BakeOptions, bake
    from dvc_cuvis.materialize import ReaderParams
    from dvc_cuvis.materialize import materialize_universe as materialize
    from dvc_cuvis.model.universe_io import read_universe

    root = tmp_path_factory.mktemp("tiny-split")
    for k in range(6):
        np.savez(root / f"f{k}.npz", cube=np.full((2, 2, 3), k, np.float32),
                 wavelengths=np.array([500, 600, 700]))
    (root / "universe.csv").write_text(
        "source,index,format\n" + "".join(f"f{k}.npz,0,npz\n" for k in range(6)))
    uni = read_universe(root / "universe.csv")
    (baked,) = bake(uni, BakeOptions(val_ratio=0.2, test_ratio=0.2))
    materialize(uni, baked.config, root / "mat", ReaderParams())
    return root / "mat"
