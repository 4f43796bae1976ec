"""A split in another project's convention: the one place that picks the reader or writer of
GloViTa, soma or plain index arrays."""

from __future__ import annotations

from pathlib import Path

from dvc_cuvis.config.specs import CONVENTIONS
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.interop.folds import Folds
from dvc_cuvis.model.universe import Universe

#: Conventions a split can be exported to and imported from.
FORMATS: tuple[str, ...] = CONVENTIONS


def read_folds(kind: str, path: Path, uni: Universe, *, id_column: str = "uid") -> Folds:
    """Folds from a GloViTa ``splits.json``, a soma ``splits.csv`` or an ``indices.npz``."""
    if kind == "glovita":
        from dvc_cuvis.interop.glovita import read_glovita

        return read_glovita(path, uni, id_column=id_column)
    if kind == "soma":
        from dvc_cuvis.interop.soma import read_soma

        return read_soma(path, uni, id_column=id_column)
    if kind == "indices":
        from dvc_cuvis.interop.indices import read_indices

        return read_indices(path, uni)
    raise DvcCuvisError(f"unknown split convention {kind!r}: choose one of {', '.join(FORMATS)}")


def export(
    folds: Folds, fmt: str, out_dir: Path, *, id_column: str = "uid", labels: str = "anomaly",
    metrics: Path | None = None,
) -> list[Path]:
    """Write ``folds`` in convention ``fmt`` under ``out_dir``; returns the files written.

    Layout: glovita ``splits.json`` (+ ``labels.json`` when the universe has category ids and
    ``labels`` is not ``none``); soma ``dataset.csv``, ``splits.csv`` and the identity
    checksums (``metrics`` or ``identity.json``); indices ``indices.npz`` or ``fold-<k>.npz``.
    """
    from dvc_cuvis._io import atomic_write_bytes, atomic_write_text, dumps_json, write_json

    uni = folds.universe
    written: list[Path] = []
    if fmt == "glovita":
        from dvc_cuvis.interop.glovita import export_glovita, labels_json

        atomic_write_text(out_dir / "splits.json",
                          dumps_json(export_glovita(folds, id_column=id_column)))
        written.append(out_dir / "splits.json")
        if labels != "none" and uni.has_column("category_ids"):
            atomic_write_text(out_dir / "labels.json", dumps_json(
                labels_json(uni, id_column=id_column, mode=labels)))
            written.append(out_dir / "labels.json")
    elif fmt == "soma":
        from dvc_cuvis.interop.soma import export_soma

        dataset_csv, splits_csv, identity = export_soma(folds, id_column=id_column)
        atomic_write_text(out_dir / "dataset.csv", dataset_csv)
        atomic_write_text(out_dir / "splits.csv", splits_csv)
        target = metrics or out_dir / "identity.json"
        write_json(target, identity)
        written += [out_dir / "dataset.csv", out_dir / "splits.csv", target]
    elif fmt == "indices":
        from dvc_cuvis.interop.indices import indices_bytes

        for k, stages in enumerate(folds.splits):
            name = "indices.npz" if folds.k == 1 else f"fold-{k}.npz"
            atomic_write_bytes(out_dir / name, indices_bytes(stages, uni))
            written.append(out_dir / name)
    else:
        raise DvcCuvisError(f"unknown split convention {fmt!r}: choose one of "
                            f"{', '.join(FORMATS)}")
    return written
