"""GloViTa ``splits.json``: ``{"train": [ids], "val": [ids], "test": [ids]}`` plus fold keys.

Ids are dataset-specific, so the caller picks the universe column that names a sample
(``uid`` by default).  K folds are written as numeric keys ``"0"``..``"K-1"`` holding each
fold's validation ids next to the shared ``"test"`` ids; fold ``k`` trains on every other
fold.  ``labels.json`` maps ids to a label derived from the category ids.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dvc_cuvis._io import read_json
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.interop.folds import Folds, Positions, check_disjoint, column_ids, id_index, map_ids
from dvc_cuvis.model.universe import Universe


def export_glovita(folds: Folds, *, id_column: str = "uid") -> dict[str, list[str]]:
    """The GloViTa splits.json object for one split or K folds."""
    uni = folds.universe
    ids = column_ids(uni, id_column)
    id_index(uni, id_column)  # unique ids or a clear error

    def names(pos: Positions) -> list[str]:
        return [ids[p] for p in np.sort(pos).tolist()]

    if folds.k == 1:
        s = folds.splits[0]
        return {"train": names(s["train"]), "val": names(s["val"]), "test": names(s["test"])}
    test = folds.splits[0]["test"]
    rest: set[int] = set()
    for k, s in enumerate(folds.splits):
        if not np.array_equal(np.sort(s["test"]), np.sort(test)):
            raise DvcCuvisError(f"fold {k} has another test set than fold 0; GloViTa fold keys "
                                "need one shared test set")
        rest |= set(s["train"].tolist()) | set(s["val"].tolist())
    vals = [set(s["val"].tolist()) for s in folds.splits]
    if sum(len(v) for v in vals) != len(rest) or set().union(*vals) != rest:
        raise DvcCuvisError("the folds' validation sets do not partition the non-test samples; "
                            "they cannot be written as GloViTa fold keys")
    out: dict[str, list[str]] = {"test": names(test)}
    for k, s in enumerate(folds.splits):
        out[str(k)] = names(s["val"])
    return out


def labels_json(uni: Universe, *, id_column: str = "uid", mode: str = "anomaly"
                ) -> dict[str, int | list[int]]:
    """``{id: label}``: 0/1 anomaly (default) or the sorted list of category ids."""
    if not uni.has_column("category_ids"):
        raise DvcCuvisError("labels need a category_ids column in the universe")
    ids = column_ids(uni, id_column)
    cats = uni.category_ids
    if mode == "anomaly":
        flags = uni.anomalous()  # the one rule: a category id != 0
        return {ids[p]: int(flags[p]) for p in range(len(uni))}
    if mode == "categories":
        return {ids[p]: sorted(set(cats[p])) for p in range(len(uni))}
    raise DvcCuvisError(f"labels mode {mode!r}: choose anomaly or categories")


def import_glovita(data: object, uni: Universe, *, id_column: str = "uid",
                   where: str = "splits.json") -> Folds:
    """Stage positions from a GloViTa splits object (plain split or numeric fold keys)."""
    if not isinstance(data, dict):
        raise DvcCuvisError(f"{where}: expected a JSON object of split name -> list of ids")
    index = id_index(uni, id_column)
    folds_keys = sorted((k for k in data if k.isdigit()), key=int)
    named = [k for k in data if not k.isdigit()]
    unknown = [k for k in named if k not in ("train", "val", "test")]
    if unknown:
        raise DvcCuvisError(f"{where}: unknown split name(s) {unknown}; GloViTa uses train, val, "
                            "test and numeric fold keys")
    for k, v in data.items():
        if not isinstance(v, list):
            raise DvcCuvisError(f"{where}: split {k!r} must be a list of ids")
    empty = np.zeros(0, dtype=np.int64)
    test = map_ids(data.get("test", []), index, where=f"{where}: test")
    if not folds_keys:
        stages = {"train": map_ids(data.get("train", []), index, where=f"{where}: train"),
                  "val": map_ids(data.get("val", []), index, where=f"{where}: val"),
                  "test": test, "predict": empty}
        check_disjoint(stages, where, uni)
        return Folds(uni, [stages])
    if "train" in data or "val" in data:
        raise DvcCuvisError(f"{where}: has both fold keys and train/val; use one convention")
    if [int(k) for k in folds_keys] != list(range(len(folds_keys))):
        raise DvcCuvisError(f"{where}: fold keys must be 0..K-1, got {folds_keys}")
    parts = [map_ids(data[k], index, where=f"{where}: fold {k}") for k in folds_keys]
    splits = []
    for k, val in enumerate(parts):
        train = np.sort(np.concatenate([p for j, p in enumerate(parts) if j != k] or [empty]))
        stages = {"train": train, "val": val, "test": test, "predict": empty}
        check_disjoint(stages, f"{where}: fold {k}", uni)
        splits.append(stages)
    return Folds(uni, splits)


def read_glovita(path: Path, uni: Universe, *, id_column: str = "uid") -> Folds:
    """Read a GloViTa splits.json file (errors name the file)."""
    data = read_json(path, "GloViTa splits file")
    return import_glovita(data, uni, id_column=id_column, where=str(path))
