"""A cuvis-ai data group (the ``data:`` section of a trainrun) for a materialized split.

cuvis-ai composes a trainrun from groups (``configs/data/*.yaml`` holds its ``data:``
section).  :func:`data_group` writes that group for the folder ``dvc-cuvis materialize``
wrote: ``data_module: dvc_npz_multi`` (the drift-guarded npz_multi of
:mod:`dvc_cuvis.plugin.datamodules`), ``splits.splits_path``, ``params.universe_csv`` and
``batch_size``, paths relative to the written file.
"""

from __future__ import annotations

import os
from pathlib import Path

from dvc_cuvis.errors import DvcCuvisError

__all__ = ["DATA_MODULE", "data_group", "format_data_group"]

#: The plugin module a data group written here selects.
DATA_MODULE = "dvc_npz_multi"


def _relative(path: Path, to: Path) -> str:
    """``path`` relative to folder ``to``, posix, as a data group stores it."""
    return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(to))).as_posix()


def format_data_group(universe_csv: Path, splits: Path, out: Path, batch_size: int) -> str:
    """The data group's YAML text (deterministic: fixed key order, ``\\n`` endings)."""
    import yaml
    from cuvis_ai_schemas.training import DataConfig

    base = out.parent
    doc: dict[str, object] = {
        "data_module": DATA_MODULE,
        "splits": {"splits_path": _relative(splits, base)},
        "batch_size": batch_size,
        "params": {"universe_csv": _relative(universe_csv, base)},
    }
    DataConfig.model_validate(doc)  # what cuvis-ai will read back
    head = ("# cuvis-ai data group written by `dvc-cuvis export --to cuvis-ai`; rewritten by\n"
            "# every export. Paths are relative to this file: cuvis-ai resolves splits_path\n"
            "# against the trainrun's folder and universe_csv against the current folder, so\n"
            "# from a sibling trainrun/ folder both resolve as written (docs/training.md).\n")
    return head + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def data_group(universe_csv: Path, splits: Path, out: Path, *, batch_size: int = 1) -> Path:
    """Write the cuvis-ai data group for a materialized split to ``out``; return ``out``.

    Parameters
    ----------
    universe_csv : path-like
        The universe.csv ``dvc-cuvis materialize`` wrote (npz_multi's rules must hold).
    splits : path-like
        The baked splits.json beside it.
    out : path-like
        The YAML file to write (its folder is created).
    batch_size : int, default 1

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    DvcCuvisError
        A bad ``batch_size``, a split that is not baked (no pinned ``universe_hash``), or
        a universe npz_multi refuses (not a materialized one).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from dvc_cuvis import BakeOptions, bake
    >>> from dvc_cuvis.interop.cuvis_ai import data_group
    >>> from dvc_cuvis.materialize import ReaderParams, materialize_universe
    >>> from dvc_cuvis import read_universe
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for k in range(4):
    ...     np.savez(d / f"f{k}.npz", cube=np.full((2, 2, 3), k, np.float32),
    ...              wavelengths=np.array([500, 600, 700]))
    >>> _ = (d / "universe.csv").write_text(
    ...     "source,index,format\\n" + "".join(f"f{k}.npz,0,npz\\n" for k in range(4)))
    >>> uni = read_universe(d / "universe.csv")
    >>> (baked,) = bake(uni, BakeOptions(val_ratio=0.25, test_ratio=0.25))
    >>> _ = materialize_universe(uni, baked.config, d / "mat", ReaderParams())
    >>> out = data_group(d / "mat/universe.csv", d / "mat/splits.json",
    ...                  d / "configs/data/mine.yaml", batch_size=2)
    >>> print(out.read_text().split("\\n", 4)[-1], end="")
    data_module: dvc_npz_multi
    splits:
      splits_path: ../../mat/splits.json
    batch_size: 2
    params:
      universe_csv: ../../mat/universe.csv
    """
    from dvc_cuvis._io import atomic_write_text
    from dvc_cuvis.interop.modules import check_module_rules
    from dvc_cuvis.model.splits import load_splits
    from dvc_cuvis.model.universe_io import read_universe

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise DvcCuvisError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    cfg = load_splits(splits)
    if not cfg.universe_hash:
        raise DvcCuvisError(f"{splits}: the split pins no universe_hash; export a baked split "
                            "(`dvc-cuvis bake`), so the trainrun's drift check has a pin")
    check_module_rules(read_universe(universe_csv), "npz_multi")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, format_data_group(Path(universe_csv), Path(splits), out, batch_size))
    return out
