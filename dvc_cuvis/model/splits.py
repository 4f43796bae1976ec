"""splits.json: load/save as ``DataSplitConfig``, with clear errors; the stage names.

The file format belongs to ``cuvis-ai-schemas`` (``extra="forbid"``): nothing of ours is
ever added to it.  What this module adds is around the file: clear errors that name the
file and the invalid field, the folds' files and constraints written in a params file.  What
a split means lives beside it: :mod:`~dvc_cuvis.model.split_state` (rule or baked),
:mod:`~dvc_cuvis.model.resolution` (per-stage positions in a universe),
:mod:`~dvc_cuvis.model.constraints` (upstream's constraints and group leakage) and
:mod:`~dvc_cuvis.model.stats` (per-stage statistics).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cuvis_ai_schemas.training.data import (
    Constraint,
    ConstraintSeverity,
    DataSplitConfig,
)
from pydantic import ValidationError

from dvc_cuvis._io import atomic_write_text
from dvc_cuvis.errors import MissingSplitsFileError, SplitsFileError

if TYPE_CHECKING:
    pass

#: Stage names in file order.
STAGES: tuple[str, ...] = ("train", "val", "test", "predict")
#: Stages that must be pairwise disjoint (predict may overlap anything).
EXCLUSIVE_STAGES: tuple[str, ...] = ("train", "val", "test")
#: Our own check, evaluated beside the schema's constraints (never written into splits.json).
GROUP_LEAKAGE = "group_leakage"
#: Names of the per-row stage codes (see :func:`stage_codes`): the code is the index.
STAGE_CODE_NAMES: tuple[str, ...] = (*EXCLUSIVE_STAGES, "unassigned")
#: The code of a row in none of train/val/test.
UNASSIGNED = len(EXCLUSIVE_STAGES)


def load_splits(path: Path | str) -> DataSplitConfig:
    """Load and validate a splits.json; errors name the file and the invalid field.

    A splits.json is a serialized ``cuvis_ai_schemas`` ``DataSplitConfig``: per-stage
    selectors, constraints and, once baked, the pinned ``universe_hash``.  Use this
    instead of ``DataSplitConfig.model_validate(json.load(...))`` for errors a person
    can act on: the file, and the first invalid field as a path like ``train[0]``.

    Parameters
    ----------
    path : path-like
        The splits.json (UTF-8, a BOM is accepted).

    Returns
    -------
    DataSplitConfig
        The validated config, exactly as written: nothing is resolved, and a
        ``splits_path`` pointer inside it is not followed (see :func:`effective_splits`).

    Raises
    ------
    MissingSplitsFileError
        The file does not exist; also a ``FileNotFoundError``, as upstream's
        ``load_splits`` raises.
    SplitsFileError
        The path is a folder, the bytes are not UTF-8 or not JSON (``file:line:col``), or
        the JSON does not validate as ``DataSplitConfig`` — the schema forbids unknown
        keys, so a typo in a field name is an error, not ignored.

    See Also
    --------
    resolve : the samples each stage selects in a universe.
    state : ``"baked"`` (concrete selectors + pinned hash) or ``"rule"``.
    save_splits : write a config back with stable formatting.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from dvc_cuvis.model.split_state import state
    >>> from dvc_cuvis.model.splits import load_splits
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "splits.json").write_text(json.dumps({
    ...     "train": [{"kind": "file_indices", "source": "a.cu3s", "ids": ["0-1"]}],
    ...     "test": [{"kind": "files", "paths": ["b.cu3s"]}]}))
    >>> cfg = load_splits(d / "splits.json")
    >>> [s.kind.value for s in cfg.train], cfg.universe_hash, state(cfg)
    (['file_indices'], None, 'rule')

    An invalid field is named by its path in the file:

    >>> _ = (d / "bad.json").write_text('{"train": [{"kind": "file_indices", "ids": [0]}]}')
    >>> load_splits(d / "bad.json")
    Traceback (most recent call last):
    ...
    dvc_cuvis.errors.SplitsFileError: .../bad.json: invalid field train[0]: ... requires 'source'
    """
    return load_splits_stamped(path)[0]


def load_splits_stamped(path: Path | str) -> tuple[DataSplitConfig, tuple[int, int, int] | None]:
    """:func:`load_splits`, and the (inode, size, mtime_ns) of the bytes read (None if the
    file changed while it was read)."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            before = os.fstat(fh.fileno())
            raw = fh.read()
            after = os.fstat(fh.fileno())
        text = raw.decode("utf-8-sig")
    except FileNotFoundError:
        raise MissingSplitsFileError(f"{p}: splits file not found (check --splits)") from None
    except IsADirectoryError:
        raise SplitsFileError(f"{p}: is a directory, expected a splits.json file") from None
    except UnicodeDecodeError:
        raise SplitsFileError(f"{p}: not valid UTF-8 text") from None
    except OSError as exc:
        raise SplitsFileError(f"{p}: cannot read: {exc.strerror}") from None
    stamps = [(st.st_ino, st.st_size, st.st_mtime_ns) for st in (before, after)]
    return parse_splits(text, path=p), (stamps[0] if stamps[0] == stamps[1] else None)


def parse_splits(text: str, *, path: Path | str = "splits.json") -> DataSplitConfig:
    """Validate splits.json text as ``DataSplitConfig``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SplitsFileError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}"
        ) from None
    except RecursionError:
        raise SplitsFileError(f"{path}: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise SplitsFileError(
            f"{path}: expected a JSON object with train/val/test/predict, got "
            f"{type(data).__name__}"
        )
    try:
        return DataSplitConfig.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        loc = _loc(first["loc"])  # loc and msg: required keys of pydantic's ErrorDetails
        more = f" (+{len(errors) - 1} more error(s))" if len(errors) > 1 else ""
        raise SplitsFileError(
            f"{path}: invalid field {loc}: {first['msg']}{more}"
        ) from None
    except RecursionError:
        raise SplitsFileError(f"{path}: selectors nested too deeply") from None


def dumps_splits(cfg: DataSplitConfig) -> str:
    """Stable splits.json text: the schema's own dump, 2-space indent, trailing newline."""
    return json.dumps(cfg.to_dict(), indent=2, ensure_ascii=False) + "\n"


def save_splits(cfg: DataSplitConfig, path: Path | str) -> None:
    """Write ``cfg`` to ``path`` atomically."""
    atomic_write_text(path, dumps_splits(cfg))


def effective_splits(cfg: DataSplitConfig) -> tuple[DataSplitConfig | Path, Path | None]:
    """What a cuvis-ai DataModule will load for ``cfg``, and the file it comes from.

    cuvis-ai's idiom is a ``DataSplitConfig(splits_path=...)`` that only points at a
    splits.json, loaded when the module sets up: the file's stages, constraints and
    ``universe_hash``, each non-empty inline stage overriding the file's (cuvis-ai-core's
    ``_effective_splits``).  A config that is only a pointer comes back as the file's path
    (so a check reads, stamps and names the file); one with inline stages as the merged
    config.  ``splits_path`` is used as given: absolute, or relative to the current folder.

    Parameters
    ----------
    cfg : DataSplitConfig
        A config as a training script builds it: inline stages, a ``splits_path``
        pointer, or both.

    Returns
    -------
    effective : DataSplitConfig or Path
        ``cfg`` itself when it has no ``splits_path``; the path alone when it has no
        inline stage (the file is not read here); otherwise the file's config with the
        non-empty inline stages put in place of the file's.
    source : Path or None
        The file the stages come from, or None when ``cfg`` has no ``splits_path``.

    Raises
    ------
    MissingSplitsFileError
        Only when inline stages must be merged and the file does not exist (also a
        ``FileNotFoundError``).
    SplitsFileError
        Likewise, when the file does not validate (see :func:`load_splits`).

    See Also
    --------
    load_splits : how the file is read.
    dvc_cuvis.check.drift.verify : checks a ``DataSplitConfig(splits_path=...)`` through this.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from cuvis_ai_schemas.training.data import DataSplitConfig, Selector
    >>> from dvc_cuvis.model.splits import effective_splits
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "splits.json").write_text(json.dumps({
    ...     "train": [{"kind": "files", "paths": ["a.cu3s"]}],
    ...     "test": [{"kind": "files", "paths": ["b.cu3s"]}]}))
    >>> pointer = DataSplitConfig(splits_path=str(d / "splits.json"))
    >>> effective, source = effective_splits(pointer)
    >>> isinstance(effective, pathlib.Path), source.name
    (True, 'splits.json')

    A non-empty inline stage wins over the file's:

    >>> cfg = DataSplitConfig(splits_path=str(d / "splits.json"),
    ...                       test=[Selector(kind="files", paths=["c.cu3s"])])
    >>> merged, _ = effective_splits(cfg)
    >>> merged.train[0].paths, merged.test[0].paths
    (['a.cu3s'], ['c.cu3s'])
    """
    if not cfg.splits_path:
        return cfg, None
    path = Path(cfg.splits_path)
    inline = {s: getattr(cfg, s) for s in STAGES if getattr(cfg, s)}
    if not inline:
        return path, path
    return load_splits(path).model_copy(update={"splits_path": cfg.splits_path, **inline}), path


def fold_path(folder: Path | str, k: int) -> Path:
    """Where fold ``k`` of a K-fold bake lives: ``<folder>/fold-<k>.json``."""
    return Path(folder) / f"fold-{k}.json"


def save_folds(configs: Sequence[DataSplitConfig], folder: Path | str) -> list[Path]:
    """Write one splits file per fold (``fold-0.json`` ...); returns the paths written."""
    paths = [fold_path(folder, k) for k in range(len(configs))]
    for cfg, path in zip(configs, paths, strict=True):
        save_splits(cfg, path)
    return paths


def fold_files(folder: Path | str) -> list[Path]:
    """The ``fold-<k>.json`` files of a folder in fold order; an error when there are none."""
    found: dict[int, Path] = {}
    for p in Path(folder).glob("fold-*.json"):
        k = p.stem[len("fold-"):]
        if k.isdigit():
            found[int(k)] = p
    if not found:
        raise SplitsFileError(f"{folder}: no fold-<k>.json files (bake --folds K writes them)")
    missing = sorted(set(range(max(found) + 1)) - set(found))
    if missing:
        raise SplitsFileError(f"{folder}: fold(s) {missing} missing between 0 and {max(found)}")
    return [found[k] for k in sorted(found)]


def parse_constraints(raw: object, *, where: str) -> list[Constraint]:
    """Constraints written in a params file (a list of ``{kind, severity}``), validated."""
    if not isinstance(raw, list):
        raise SplitsFileError(f"{where} must be a list of {{kind, severity}}")
    try:  # the schema's own rules: each entry, and no kind twice
        return DataSplitConfig.model_validate({"constraints": raw}).constraints
    except ValidationError as exc:
        first = exc.errors()[0]
        at = _loc(first["loc"][1:]) + ": " if first["loc"] else ""  # [1:]: "constraints"
        raise SplitsFileError(f"{where}: {at}{first['msg']}") from None


def _loc(loc: Iterable[object]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(root)"


__all__ = [
    "GROUP_LEAKAGE",
    "STAGES",
    "STAGE_CODE_NAMES",
    "UNASSIGNED",
    "Constraint",
    "ConstraintSeverity",
    "DataSplitConfig",
    "dumps_splits",
    "load_splits",
    "parse_splits",
    "save_splits",
]
