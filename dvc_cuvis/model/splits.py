"""splits.json: load/save as ``DataSplitConfig``, rule vs baked, resolution, constraints, stats.

The file format belongs to ``cuvis-ai-schemas`` (``extra="forbid"``): nothing of ours is
ever added to it.  What this module adds is around the file: clear errors that name the
file and the invalid field, the rule/baked distinction, per-stage resolution against a
:class:`~dvc_cuvis.model.universe.Universe`, the upstream constraints evaluated on positions
(the same statuses and offending lists as ``cuvis_ai_core``), and group leakage — the
``group`` column that upstream reserves but does not enforce.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from cuvis_ai_schemas.training.data import (
    Constraint,
    ConstraintKind,
    ConstraintSeverity,
    DataSplitConfig,
)
from pydantic import ValidationError

from dvc_cuvis._io import atomic_write_text
from dvc_cuvis.errors import MissingSplitsFileError, SelectorError, SplitsFileError
from dvc_cuvis.model.selectors import (
    CONCRETE_KINDS,
    LIVE_KINDS,
    PartialMatch,
    Positions,
    Resolver,
    norm_source,
    walk,
)

if TYPE_CHECKING:
    from dvc_cuvis.model.universe import Universe

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


# -- file I/O -----------------------------------------------------------------------------


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
    >>> from dvc_cuvis.model.splits import load_splits, state
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


def parse_constraints(raw: Any, *, where: str) -> list[Constraint]:
    """Constraints written in a params file (a list of ``{kind, severity}``), validated."""
    if not isinstance(raw, list):
        raise SplitsFileError(f"{where} must be a list of {{kind, severity}}")
    try:  # the schema's own rules: each entry, and no kind twice
        return DataSplitConfig.model_validate({"constraints": raw}).constraints
    except ValidationError as exc:
        first = exc.errors()[0]
        at = _loc(first["loc"][1:]) + ": " if first["loc"] else ""  # [1:]: "constraints"
        raise SplitsFileError(f"{where}: {at}{first['msg']}") from None


def _loc(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(root)"


# -- rule vs baked ------------------------------------------------------------------------


def selector_kinds(cfg: DataSplitConfig) -> frozenset[str]:
    """Every selector kind used anywhere in ``cfg`` (nested operands included)."""
    return frozenset(s.kind.value for s in walk(cfg))


def live_kinds(cfg: DataSplitConfig) -> frozenset[str]:
    """Live (universe-dependent) selector kinds used in ``cfg``."""
    return selector_kinds(cfg) & LIVE_KINDS


def has_dir_indices(cfg: DataSplitConfig) -> bool:
    """True if any stage still uses positional ``dir_indices`` (nested included)."""
    return "dir_indices" in selector_kinds(cfg)


def is_baked(cfg: DataSplitConfig) -> bool:
    """Baked = only ``file_indices``/``files`` selectors at top level, and a pinned hash."""
    top = {s.kind.value for stage in STAGES for s in getattr(cfg, stage)}
    return bool(cfg.universe_hash) and top <= CONCRETE_KINDS


def state(cfg: DataSplitConfig) -> str:
    """``"baked"`` or ``"rule"`` (see :func:`is_baked`)."""
    return "baked" if is_baked(cfg) else "rule"


# -- resolution ---------------------------------------------------------------------------


@dataclass
class Resolution:
    """Per-stage positions into one universe, plus what the resolver noticed."""

    universe: Universe
    stages: dict[str, Positions]
    predict_is_all: bool = False
    warnings: list[PartialMatch] = field(default_factory=list)

    def uids(self, stage: str) -> list[str]:
        """uids of ``stage`` in resolution order."""
        return self.universe.uids(self.stages[stage])

    def as_uid_lists(self) -> dict[str, list[str]]:
        """``{"train": [uid, ...], "val": ..., "test": ..., "predict": ...}``."""
        return {s: self.uids(s) for s in STAGES}

    def assignment(self) -> npt.NDArray[np.int8]:
        """Per-row stage code (see :func:`stage_codes`)."""
        return stage_codes(self.stages, len(self.universe))


def stage_codes(stages: Mapping[str, Positions], size: int) -> npt.NDArray[np.int8]:
    """Per row of a universe of ``size`` rows: 0 train, 1 val, 2 test, 3 unassigned.

    The one per-row stage code (diff, log, report and the drift check all read it);
    :data:`STAGE_CODE_NAMES` names the codes.  Predict may overlap anything and has no code.

    Tie rule: a row listed by more than one of train/val/test — an overlap that the
    ``no_split_overlap`` constraint reports — takes the *first* of them in file order
    (train before val before test), as a stage's own selectors keep a sample's first
    occurrence.  So a sample in both train and test counts as train everywhere.
    """
    out = np.full(size, UNASSIGNED, dtype=np.int8)
    for code in reversed(range(len(EXCLUSIVE_STAGES))):  # earlier stages overwrite later
        out[stages[EXCLUSIVE_STAGES[code]]] = code
    return out


def check_pinned_universe(cfg: DataSplitConfig, universe: Universe, *, where: str = "") -> None:
    """Upstream's guard: a split that still has ``dir_indices`` must match its pinned hash."""
    if not cfg.universe_hash or not has_dir_indices(cfg):
        return
    actual = universe.hash
    if actual != cfg.universe_hash:
        raise SelectorError(
            f"{where or 'splits.json'}: universe changed since the split was written "
            f"(pinned {cfg.universe_hash[:12]}..., now {actual[:12]}...) and it still uses "
            "positional dir_indices; re-bake it (`dvc-cuvis bake --rule ...`)"
        )


def resolve(
    cfg: DataSplitConfig,
    universe: Universe,
    *,
    name_to_id: dict[str, int] | None = None,
    where: str = "",
) -> Resolution:
    """Resolve every stage of ``cfg`` (empty predict = the whole universe).

    This answers "which samples does each stage hold?" with cuvis-ai-core's selector
    semantics (``resolve_selectors``), computed with indexes instead of a scan per
    selector: the same positions, in the same order, for a rule or a baked split.

    Parameters
    ----------
    cfg : DataSplitConfig
        The split, e.g. from :func:`load_splits` or a bake.
    universe : Universe
        The samples to select from (:func:`~dvc_cuvis.model.universe_io.read_universe`).
    name_to_id : dict of str to int, optional
        Category name to id, for ``categories`` selectors that name categories.
    where : str, default ""
        Prefixed to error messages (usually the splits file's name).

    Returns
    -------
    Resolution
        ``stages`` maps each of train/val/test/predict to universe positions in
        resolution order; ``uids(stage)`` and ``as_uid_lists()`` give identities;
        ``predict_is_all`` is True when predict was empty; ``warnings`` lists the
        selectors that matched only part of what they name.

    Raises
    ------
    SelectorError
        A top-level selector matches no sample (the message names the stage, the
        selector and a close source name), a name is unknown, or a split that still
        uses positional ``dir_indices`` was written for a different universe (its pinned
        hash differs).

    See Also
    --------
    load_splits : read the split.
    evaluate_constraints : the split's constraints on a resolution.
    dvc_cuvis.check.drift.verify : every check, including the pin of a baked split.

    Notes
    -----
    A stage is its selectors unioned in order, each sample kept at its first occurrence;
    matches within one selector come in universe order.  Two things are *not* errors
    here, to stay upstream's resolver: a selector matching only some of its ids (it is
    in ``warnings``; the check fails on it unless ``allow_partial``), and a baked split
    whose pinned ``universe_hash`` differs from ``universe.hash`` (only ``dir_indices``
    are guarded here; :func:`dvc_cuvis.check.drift.verify` checks every pin).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from dvc_cuvis import load_splits, read_universe, resolve
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "universe.csv").write_text("source,index\\na.cu3s,0\\na.cu3s,1\\nb.cu3s,0\\n")
    >>> _ = (d / "splits.json").write_text(json.dumps({
    ...     "train": [{"kind": "file_indices", "source": "a.cu3s", "ids": ["0-2"]}],
    ...     "test": [{"kind": "files", "paths": ["b.cu3s"]}]}))
    >>> res = resolve(load_splits(d / "splits.json"), read_universe(d / "universe.csv"))
    >>> res.uids("train"), res.uids("test"), res.predict_is_all
    (['a.cu3s#0', 'a.cu3s#1'], ['b.cu3s#0'], True)
    >>> [w.message() for w in res.warnings]
    ["train[0]: selector 'file_indices' of 'a.cu3s' matched 2 of 3 requested indices; missing: 2"]

    A selector that matches nothing is an error:

    >>> _ = (d / "typo.json").write_text(json.dumps(
    ...     {"train": [{"kind": "files", "paths": ["c.cu3s"]}]}))
    >>> resolve(load_splits(d / "typo.json"), read_universe(d / "universe.csv"),
    ...         where="typo.json")
    Traceback (most recent call last):
    ...
    dvc_cuvis.errors.SelectorError: typo.json: train[0]: ... did you mean 'b.cu3s'? ...
    """
    check_pinned_universe(cfg, universe, where=where)
    resolver = Resolver(universe, name_to_id)
    stages: dict[str, Positions] = {}
    prefix = f"{where}: " if where else ""
    for stage in STAGES:
        try:
            stages[stage] = resolver.resolve(getattr(cfg, stage), stage=stage)
        except SelectorError as exc:
            raise SelectorError(f"{prefix}{exc}") from None
    predict_all = not cfg.predict
    if predict_all:
        stages["predict"] = np.arange(len(universe), dtype=np.int64)
    return Resolution(universe, stages, predict_all, resolver.warnings)


# -- constraints --------------------------------------------------------------------------


@dataclass(frozen=True)
class ConstraintResult:
    """Outcome of one constraint: ``satisfied``, ``violated`` or ``unavailable``."""

    kind: str
    severity: str
    status: str
    count: int = 0
    offending: tuple[str, ...] = ()
    reason: str = ""

    @property
    def failed(self) -> bool:
        """True for an error-severity violation or an unverifiable error-severity check."""
        return self.severity == "error" and self.status in ("violated", "unavailable")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (offending list truncated to 100 entries)."""
        return {
            "kind": self.kind,
            "severity": self.severity,
            "status": self.status,
            "count": self.count,
            "offending": list(self.offending[:100]),
            "reason": self.reason,
        }


def evaluate_constraints(
    res: Resolution,
    constraints: Sequence[Constraint],
    *,
    available_attrs: frozenset[str] | None = None,
    group_leakage: str = "auto",
) -> list[ConstraintResult]:
    """Evaluate the file's constraints (upstream semantics) plus group leakage.

    ``available_attrs`` defaults to what the universe carries (``category_ids`` when it
    has that column).  ``group_leakage``: ``"auto"`` (error when the universe has a
    ``group`` column), ``"error"``, ``"warn"`` or ``"off"``.
    """
    uni = res.universe
    if available_attrs is None:
        available_attrs = frozenset({"category_ids"} if uni.has_column("category_ids") else ())
    out: list[ConstraintResult] = []
    for c in constraints:
        kind, sev = c.kind.value, c.severity.value
        if c.kind == ConstraintKind.NO_SPLIT_OVERLAP:
            out.append(_split_overlap(res, sev))
        elif c.kind == ConstraintKind.NO_SOURCE_OVERLAP:
            out.append(_source_overlap(res, sev))
        elif c.kind == ConstraintKind.NO_TRAIN_ANOMALOUS:
            if "category_ids" not in available_attrs:
                out.append(ConstraintResult(kind, sev, "unavailable",
                                            reason="the universe has no category_ids column"))
                continue
            train = res.stages["train"]
            hit = train[uni.anomalous()[train]]
            names = uni.source_names
            bad = sorted(names[c] for c in np.unique(uni.codes[hit]).tolist())
            out.append(_result(kind, sev, bad,
                               f"{len(bad)} source(s) with an anomalous frame in train"))
    mode = group_leakage
    if mode == "auto":
        if uni.has_column("group"):
            mode = "auto"  # error for a declared group, warn for a derived recording
        else:
            per_source, _flat = uni.recording_layout()
            mode = "warn" if per_source != uni.source_names else "off"
    if mode != "off":
        out.append(_group_leakage(res, mode))
    return out


def _result(kind: str, sev: str, offending: list[str], reason: str) -> ConstraintResult:
    if offending:
        return ConstraintResult(kind, sev, "violated", len(offending), tuple(offending), reason)
    return ConstraintResult(kind, sev, "satisfied")


def _split_overlap(res: Resolution, sev: str) -> ConstraintResult:
    n = len(res.universe)
    masks = {}
    for s in EXCLUSIVE_STAGES:
        m = np.zeros(n, dtype=bool)
        m[res.stages[s]] = True
        masks[s] = m
    shared_all = np.zeros(n, dtype=bool)
    reasons = []
    for a, b in (("train", "val"), ("train", "test"), ("val", "test")):
        both = masks[a] & masks[b]
        k = int(both.sum())
        if k:
            reasons.append(f"{k} shared between {a} and {b}")
            shared_all |= both
    offending = sorted(res.universe.uids(np.flatnonzero(shared_all)))
    return _result(ConstraintKind.NO_SPLIT_OVERLAP.value, sev, offending, "; ".join(reasons))


def _source_overlap(res: Resolution, sev: str) -> ConstraintResult:
    uni = res.universe
    names = uni.source_names
    norm = [norm_source(s) for s in names]
    spans: dict[str, set[str]] = {}
    first_seen: dict[str, str] = {}
    for s in EXCLUSIVE_STAGES:
        codes = uni.codes[res.stages[s]]
        # first-seen representative per normalized source, in resolution order
        _, first = np.unique(codes, return_index=True)
        for c in codes[np.sort(first)].tolist():
            key = norm[c]
            spans.setdefault(key, set()).add(s)
            first_seen.setdefault(key, names[c])
    offending = sorted(first_seen[k] for k, v in spans.items() if len(v) > 1)
    return _result(ConstraintKind.NO_SOURCE_OVERLAP.value, sev, offending,
                   f"{len(offending)} source(s) span >1 of train/val/test")


def _group_leakage(res: Resolution, sev: str) -> ConstraintResult:
    """Groups (a ``group`` cell, else the recording) in more than one of train/val/test.

    ``sev`` ``"auto"``: an error where a leaking group is declared in a ``group`` cell, a
    warning where every leaking group is a recording derived from the files (a split made
    ``--group-by sample`` on purpose, as upstream does, is warned of, not refused)."""
    uni = res.universe
    names, codes = uni.groups()
    stage_of = np.zeros((len(names), len(EXCLUSIVE_STAGES)), dtype=bool)
    for j, s in enumerate(EXCLUSIVE_STAGES):
        stage_of[codes[res.stages[s]], j] = True
    leaking = np.flatnonzero(stage_of.sum(axis=1) > 1)
    offending = [names[g] for g in leaking.tolist()]
    if sev == "auto":
        cells = uni.raw_column("group")
        declared = np.zeros(len(names), dtype=bool)
        if cells is not None and len(cells):
            declared[codes[cells != b""]] = True
        sev = "error" if declared[leaking].any() or not len(leaking) else "warn"
    return _result(GROUP_LEAKAGE, sev, offending,
                   f"{len(offending)} group(s) span >1 of train/val/test")


def failed_constraints(results: Sequence[ConstraintResult]) -> list[ConstraintResult]:
    """The results that must stop a run (error severity, violated or unavailable)."""
    return [r for r in results if r.failed]


# -- stats --------------------------------------------------------------------------------


def stage_stats(res: Resolution) -> dict[str, dict[str, Any]]:
    """Per stage: samples, sources, groups, per-category sample counts, anomalous samples."""
    uni = res.universe
    _group_names, group_codes = uni.groups()
    has_cats = uni.has_column("category_ids")
    out: dict[str, dict[str, Any]] = {}
    for s in STAGES:
        pos = res.stages[s]
        entry: dict[str, Any] = {
            "samples": len(pos),
            "sources": len(np.unique(uni.codes[pos])),
            "groups": len(np.unique(group_codes[pos])),
        }
        if has_cats:
            parsed, inverse = uni.category_table
            counts: dict[int, int] = {}
            per_cell = np.bincount(inverse[pos], minlength=len(parsed)).tolist()
            for ids, rows in zip(parsed, per_cell, strict=True):
                for cid in set(ids):
                    counts[cid] = counts.get(cid, 0) + rows
            entry["categories"] = {str(k): counts[k] for k in sorted(counts) if counts[k]}
            entry["anomalous"] = int(uni.anomalous()[pos].sum())
        out[s] = entry
    return out


__all__ = [
    "GROUP_LEAKAGE",
    "STAGES",
    "STAGE_CODE_NAMES",
    "UNASSIGNED",
    "Constraint",
    "ConstraintResult",
    "ConstraintSeverity",
    "DataSplitConfig",
    "Resolution",
    "dumps_splits",
    "evaluate_constraints",
    "failed_constraints",
    "has_dir_indices",
    "is_baked",
    "live_kinds",
    "load_splits",
    "parse_splits",
    "resolve",
    "save_splits",
    "stage_codes",
    "stage_stats",
    "state",
]
