"""soma manifests: ``dataset.csv`` (samples + metadata) and ``splits.csv`` (split, fold).

soma's rules, followed here: ``sample_id`` is a bare name without path separators (we
percent-encode the id so it maps back exactly); split names are ``train``, ``tune`` and
anything starting with ``test``; every fold needs at least one test row; and identity is
semantic — the dataset checksum covers the train/tune rows of dataset.csv without the
storage-location columns (relocating files changes nothing), test rows have their own
checksum, and split assignments have a separate one.  soma never opens the referenced
files, and neither do these checksums.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote, unquote

import numpy as np

from dvc_cuvis.errors import DvcCuvisError, MissingFileError
from dvc_cuvis.interop.folds import Folds, check_disjoint, column_ids, id_index, map_ids
from dvc_cuvis.model.anomalous import is_anomalous
from dvc_cuvis.model.universe import Universe

LOCATION_COLUMNS = ("image_path", "mask_path", "label_mask_path", "points_path",
                    "coordinates_path")
_SAFE = "-_.~#:@+=,()[]{}!$&'*; "


def sample_id(value: str) -> str:
    """A bare, reversible soma sample id (``/``, ``\\`` and ``%`` are percent-encoded)."""
    return quote(value, safe=_SAFE)


def original_id(sid: str) -> str:
    """Inverse of :func:`sample_id`."""
    return unquote(sid)


def _csv(rows: Iterable[Iterable[object]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def export_soma(folds: Folds, *, id_column: str = "uid"
                ) -> tuple[str, str, dict[str, str | list[str]]]:
    """``(dataset.csv, splits.csv, checksums)`` for one split or K folds."""
    uni = folds.universe
    id_index(uni, id_column)
    ids = [sample_id(v) for v in column_ids(uni, id_column)]
    paths = uni.frame_files()
    groups = uni.column("group") if uni.has_column("group") else []
    patient = [g or uni.source(p) for p, g in enumerate(groups)] if groups else [
        uni.source(p) for p in range(len(uni))]
    cats = uni.category_ids
    has_labels = uni.has_column("category_ids")
    meta_cols = [c for c in uni.columns if c not in ("materialized_path", "group")]
    header = ["sample_id", "image_path", *(["label"] if has_labels else []), "patient_id",
              *(["uid"] if "uid" not in meta_cols else []), *meta_cols]
    rows: list[Sequence[object]] = [header]
    for p in range(len(uni)):
        label = [int(is_anomalous(cats[p]))] if has_labels else []
        rows.append([ids[p], paths[p], *label, sample_id(patient[p]), uni.uid(p),
                     *(uni.value(c, p) for c in meta_cols)])
    for k, s in enumerate(folds.splits):
        if len(s["test"]) == 0:
            raise DvcCuvisError(f"fold {k} has no test samples; soma requires a test split in "
                                "every fold (bake with a --test-ratio that leaves some)")
    split_rows: list[Sequence[object]] = [
        ["sample_id", "split", *(["fold"] if folds.k > 1 else [])]]
    names = {"train": "train", "val": "tune", "test": "test"}
    for k, s in enumerate(folds.splits):
        assigned = []
        for stage, soma_name in names.items():
            for pos in s[stage].tolist():
                assigned.append((pos, soma_name))
        for pos, soma_name in sorted(assigned):
            split_rows.append([ids[pos], soma_name, *([k] if folds.k > 1 else [])])
    dataset_csv, splits_csv = _csv(rows), _csv(split_rows)
    return dataset_csv, splits_csv, checksums(rows, split_rows)


def checksums(dataset_rows: Sequence[Sequence[object]], split_rows: Sequence[Sequence[object]]
              ) -> dict[str, str | list[str]]:
    """soma identity: train/tune dataset rows, test rows and split assignments, separately."""
    header = [str(h) for h in dataset_rows[0]]
    keep = [i for i, h in enumerate(header) if h not in LOCATION_COLUMNS]
    sid = header.index("sample_id")
    split_header = [str(h) for h in split_rows[0]]
    role: dict[str, set[str]] = {}
    for row in split_rows[1:]:
        name = str(row[split_header.index("split")])
        role.setdefault(str(row[0]), set()).add("test" if name.startswith("test") else "fit")

    def digest(rows: list[Sequence[object]]) -> str:
        h = hashlib.sha256()
        h.update(("\t".join(header[i] for i in keep) + "\n").encode())
        for row in sorted(rows, key=lambda r: str(r[sid])):
            h.update(("\t".join(str(row[i]) for i in keep) + "\n").encode())
        return h.hexdigest()

    fit = [r for r in dataset_rows[1:] if "fit" in role.get(str(r[sid]), set())]
    test = [r for r in dataset_rows[1:] if "test" in role.get(str(r[sid]), set())]
    split_digest = hashlib.sha256(_csv(sorted(split_rows[1:], key=lambda r: [str(x) for x in r]))
                                  .encode()).hexdigest()
    return {"dataset_checksum": digest(fit), "test_checksum": digest(test),
            "split_checksum": split_digest, "excluded_columns": list(LOCATION_COLUMNS)}


def _stage_of(split: str, where: str) -> str:
    """Our stage for a soma split name: train, tune (val) or test*."""
    if split == "train":
        return "train"
    if split == "tune":
        return "val"
    if split.startswith("test"):
        return "test"
    raise DvcCuvisError(f"{where}: unknown split {split!r}; soma uses "
                        "train, tune and test* names")


def _fold_of(row: Mapping[str, str | None], where: str) -> int:
    """The row's ``fold`` cell, a non-negative integer."""
    raw = (row.get("fold") or "").strip()
    if not raw.isdigit():
        raise DvcCuvisError(f"{where}: fold {raw!r} is not a non-negative "
                            "integer")
    return int(raw)


def read_soma(splits_csv: Path, uni: Universe, *, id_column: str = "uid") -> Folds:
    """Stage positions from a soma splits.csv (folds when it has a ``fold`` column)."""
    try:
        text = splits_csv.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise MissingFileError(f"{splits_csv}: soma splits.csv not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DvcCuvisError(f"{splits_csv}: cannot read ({exc})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    cols = reader.fieldnames or []
    missing = [c for c in ("sample_id", "split") if c not in cols]
    if missing:
        raise DvcCuvisError(f"{splits_csv}: missing column(s) {missing}; soma's splits.csv has "
                            "sample_id, split[, fold]")
    has_fold = "fold" in cols
    per_fold: dict[int, dict[str, list[str]]] = {}
    seen: set[tuple[str, int]] = set()
    for line, row in enumerate(reader, start=2):
        sid, split = (row.get("sample_id") or "").strip(), (row.get("split") or "").strip()
        if not sid:
            raise DvcCuvisError(f"{splits_csv}:{line}: empty sample_id")
        if "/" in sid or "\\" in sid:
            raise DvcCuvisError(f"{splits_csv}:{line}: sample_id {sid!r} contains a path "
                                "separator; soma ids are bare names")
        stage = _stage_of(split, f"{splits_csv}:{line}")
        fold = _fold_of(row, f"{splits_csv}:{line}") if has_fold else 0
        if (sid, fold) in seen:
            raise DvcCuvisError(f"{splits_csv}:{line}: sample_id {sid!r} appears twice in "
                                f"fold {fold}")
        seen.add((sid, fold))
        per_fold.setdefault(fold, {"train": [], "val": [], "test": []})[stage].append(
            original_id(sid))
    if not per_fold:
        raise DvcCuvisError(f"{splits_csv}: no rows")
    if sorted(per_fold) != list(range(len(per_fold))):
        raise DvcCuvisError(f"{splits_csv}: folds must be 0..K-1, got {sorted(per_fold)}")
    index = id_index(uni, id_column)
    splits = []
    for k in sorted(per_fold):
        if not per_fold[k]["test"]:
            raise DvcCuvisError(f"{splits_csv}: fold {k} has no test split (soma requires one "
                                "per fold)")
        stages = {s: map_ids(per_fold[k][s], index, where=f"{splits_csv}: fold {k} {s}")
                  for s in ("train", "val", "test")}
        stages["predict"] = np.zeros(0, dtype=np.int64)
        check_disjoint(stages, f"{splits_csv}: fold {k}", uni)
        splits.append(stages)
    return Folds(uni, splits)
