"""The sample universe: identity, canonical order, fingerprint and ``universe.csv`` I/O.

A universe is the set of samples that exist.  Each sample is identified by its ``uid``
(``source#index`` — the upstream ``SampleRef`` rule), and the universe is always held in
canonical order, sorted by ``(source, index)``, so that ``universe_hash`` and positional
selectors are the same on every machine.

A whole-file sample (a single-frame TIFF cube: upstream ``SampleRef.index is None``) has no
index: its ``index`` cell is empty and its uid is the bare ``source``, as upstream's
``TiffPairedDataModule`` enumerates it.  Such a source has exactly one row; it is read at
position 0 (:attr:`Universe.indices` holds 0 for it and :attr:`Universe.indexless` marks it).

The in-memory form is columnar on purpose: a 1M-row universe.csv is read with a handful
of numpy passes instead of one Python object per cell.  Sources are dictionary-encoded
(``source_names`` + per-row ``codes``) because a dataset has orders of magnitude fewer
recordings than frames, and every selector keys on the source first.  Every other column
is kept as a fixed-width UTF-8 byte array and decoded only when asked for.
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dvc_cuvis._io import atomic_write_text
from dvc_cuvis.errors import MissingUniverseError, UniverseError

#: Columns every universe.csv carries.
REQUIRED_COLUMNS: tuple[str, ...] = ("source", "index")
#: Columns with upstream meaning (cuvis-ai-dataloader's universe.csv vocabulary).
OPTIONAL_COLUMNS: tuple[str, ...] = ("materialized_path", "split", "annotation", "format", "group")
#: This project's provenance columns (ignored by upstream readers).
PROVENANCE_COLUMNS: tuple[str, ...] = ("md5", "tags", "category_ids")
#: Columns holding paths relative to the CSV; a ``..`` component is refused.
PATH_COLUMNS: tuple[str, ...] = ("materialized_path", "annotation")

_CHUNK_BYTES = 4 << 20
_RANGE_RE = re.compile(r"^([0-9]+)-([0-9]+)(?::([0-9]+))?$")
_INT_RE = re.compile(r"^[0-9]+$")

IntArray = npt.NDArray[np.int64]


# -- "anomalous": one rule, one named exception --------------------------------------------


def is_anomalous(category_ids: Sequence[int]) -> bool:
    """THE rule: a sample is anomalous when it carries a category id other than 0.

    0 is the background (normal) class, as cuvis-ai-core's ``no_train_anomalous``
    constraint reads it.  The checks, the report, and the bake strategies that exist only
    here (hash, multilabel, folds) all use this rule.
    """
    return any(c != 0 for c in category_ids)


def is_anomalous_for_parity(category_ids: Sequence[int]) -> bool:
    """The exception: *any* category id, 0 included, makes a sample anomalous.

    cuvis-ai-dataloader's ``resolve-splits`` reads it so; the ``random`` and
    ``stratified`` bakes (their strata and ``--ad-aware``) keep it only so that they
    produce the same membership as ``resolve-splits``.  Nothing else may use it.  The two
    notions differ exactly on samples whose ids are all 0 (see
    :func:`anomaly_notions_differ`), which the check and the report point out.
    """
    return bool(category_ids)


#: The one "anomalous" rule (ids ``!= 0``), and its one named exception (any id, for parity).
ANOMALOUS = is_anomalous
ANOMALOUS_FOR_PARITY = is_anomalous_for_parity


def anomaly_notions_differ(uni: Universe) -> int:
    """Samples that one notion calls anomalous and the other normal (ids all 0)."""
    if not uni.has_column("category_ids"):
        return 0
    return int((uni.anomalous() != uni.anomalous(ANOMALOUS_FOR_PARITY)).sum())


def anomaly_notions_note(samples: int) -> str:
    """What the check and the report say when ``samples`` rows make the notions differ."""
    return (f"{samples} sample(s) carry only category id 0 (background): normal for the "
            "checks, the report and the hash/multilabel/fold bakes, anomalous for the "
            "random/stratified --ad-aware bakes (resolve-splits' notion, kept for parity)")


def uid(source: str, index: int | None = None, label_id: int | None = None) -> str:
    """Sample identity by the ``SampleRef`` rule: ``source#index[#label_id]``."""
    base = f"{source}#{index}" if index is not None else source
    if label_id is not None and label_id != index:
        base = f"{base}#{label_id}"
    return base


def posix(path: str) -> str:
    """Posix spelling of a source id (backslashes become slashes; nothing else changes)."""
    return path.replace("\\", "/")


def universe_hash(uids: Iterable[str]) -> str:
    """sha256 over the ordered uids, each followed by ``\\n`` (empty universe: sha256 of b'')."""
    digest = hashlib.sha256()
    batch: list[str] = []
    for u in uids:
        batch.append(u)
        if len(batch) >= 65536:
            digest.update(("\n".join(batch) + "\n").encode("utf-8"))
            batch.clear()
    if batch:
        digest.update(("\n".join(batch) + "\n").encode("utf-8"))
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Sample:
    """One row of a universe, decoded (for notebooks and small loops, not hot paths)."""

    source: str
    index: int | None  # None: a whole-file sample (upstream ``SampleRef.index``)
    position: int
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def uid(self) -> str:
        """The sample's identity, ``source#index`` (``source`` alone when index is None)."""
        return uid(self.source, self.index)

    @property
    def stem(self) -> str:
        """File name stem of the source, as upstream ``SampleRef.stem`` derives it."""
        return Path(self.source).stem


class Universe:
    """A canonically ordered, duplicate-free sample universe (columnar, immutable)."""

    __slots__ = ("__dict__", "_codes", "_columns", "_indexless", "_indices", "_lines", "_names",
                 "path")

    def __init__(
        self,
        source_names: Sequence[str],
        codes: npt.NDArray[np.integer[Any]],
        indices: npt.NDArray[np.integer[Any]],
        columns: Mapping[str, npt.NDArray[np.bytes_]] | None = None,
        *,
        path: Path | None = None,
        lines: npt.NDArray[np.integer[Any]] | None = None,
        indexless: npt.NDArray[np.bool_] | None = None,
    ) -> None:
        """Build from sorted unique source names and per-row arrays (canonicalized, checked).

        ``indexless`` marks whole-file rows (empty ``index`` cell, upstream ``index=None``);
        their ``indices`` entry is the read position 0.
        """
        names = list(source_names)
        if any(a >= b for a, b in itertools.pairwise(names)):
            raise UniverseError("source_names must be sorted and unique", path=path)
        self._names: list[str] = names
        self.path: Path | None = path
        #: (inode, size, mtime_ns) of the file this universe was read from, taken on the
        #: descriptor that was read (None when it was not read from a file)
        self.file_stamp: tuple[int, int, int] | None = None
        codes_a = np.asarray(codes, dtype=np.int32)
        idx_a = np.asarray(indices, dtype=np.int64)
        cols = {k: np.asarray(v) for k, v in (columns or {}).items()}
        n = len(codes_a)
        if len(idx_a) != n or any(len(v) != n for v in cols.values()):
            raise UniverseError("universe columns have different lengths", path=path)
        line_a = np.asarray(lines, dtype=np.int32) if lines is not None else None
        none_a = np.asarray(indexless, dtype=bool) if indexless is not None else None
        if none_a is not None:
            if len(none_a) != n:
                raise UniverseError("universe columns have different lengths", path=path)
            if not none_a.any():
                none_a = None
            else:
                idx_a = np.where(none_a, 0, idx_a)
        if n > 1:
            c0, c1, i0, i1 = codes_a[:-1], codes_a[1:], idx_a[:-1], idx_a[1:]
            ordered = bool(np.all((c1 > c0) | ((c1 == c0) & (i1 > i0))))
            if not ordered:
                perm = np.lexsort((idx_a, codes_a))
                codes_a, idx_a = codes_a[perm], idx_a[perm]
                cols = {k: v[perm] for k, v in cols.items()}
                line_a = line_a[perm] if line_a is not None else None
                none_a = none_a[perm] if none_a is not None else None
                dup = np.flatnonzero((codes_a[1:] == codes_a[:-1]) & (idx_a[1:] == idx_a[:-1]))
                if len(dup):
                    j = int(dup[0])
                    src, ix = names[int(codes_a[j])], int(idx_a[j])
                    if none_a is not None and (none_a[j] or none_a[j + 1]):
                        _refuse_mixed(names[int(codes_a[j])], line_a, j, path)
                    where = ""
                    if line_a is not None:
                        a, b = sorted((int(line_a[j]), int(line_a[j + 1])))
                        where = f" (lines {a} and {b})"
                    raise UniverseError(
                        f"duplicate identity (source, index)=({src!r}, {ix}){where}; "
                        "each (source, index) must appear once — remove or renumber the row",
                        path=path,
                    )
        if n and (int(idx_a.min()) < 0):
            raise UniverseError("index values must be >= 0", path=path)
        if none_a is not None:
            # a whole-file row is the only row of its source (its uid is the bare source)
            counts = np.bincount(codes_a, minlength=len(names))
            shared = np.flatnonzero(none_a & (counts[codes_a] > 1))
            if len(shared):
                _refuse_mixed(names[int(codes_a[shared[0]])], line_a, int(shared[0]), path)
        self._codes = codes_a
        self._indices = idx_a
        self._columns = cols
        self._lines = line_a
        self._indexless: npt.NDArray[np.bool_] | None = none_a

    # -- construction -----------------------------------------------------------------

    @classmethod
    def from_records(
        cls, records: Iterable[Mapping[str, Any]], *, path: Path | None = None
    ) -> Universe:
        """Build from dict-like rows (``source``, ``index`` and any other columns)."""
        rows = list(records)
        order: list[str] = []
        for r in rows:
            for k in r:
                if k not in order:
                    order.append(k)
        for required in REQUIRED_COLUMNS:
            if rows and required not in order:
                raise UniverseError(f"rows need a {required!r} field")
        columns = {k: [r.get(k) for r in rows] for k in order}
        return cls.from_columns(columns, path=path) if rows else cls.from_columns(
            {"source": [], "index": []}, path=path)

    @classmethod
    def from_columns(
        cls, columns: Mapping[str, Sequence[Any]], *, path: Path | None = None
    ) -> Universe:
        """Build from equal-length column lists (``source``, ``index`` and any others).

        The columnar form keeps a million-row enumeration cheap: repeated cells (a
        session's path on each of its frames) are the same object, not a dict per row.
        """
        sources = [posix(str(s)) for s in columns["source"]]
        names = sorted(set(sources))
        rank = {s: i for i, s in enumerate(names)}
        n = len(sources)
        codes = np.fromiter((rank[s] for s in sources), np.int32, n)
        del sources
        indices = np.fromiter((_as_index(i) for i in columns["index"]), np.int64, n)
        indexless = indices < 0  # _as_index: -1 = no index (None or an empty cell)
        cols = {}
        for k, values in columns.items():
            if k in REQUIRED_COLUMNS:
                continue
            if len(values) != n:
                raise UniverseError(f"column {k!r} has {len(values)} values for {n} rows")
            cols[k] = np.array([_cell_bytes(v) for v in values], dtype=np.bytes_)
        return cls(names, codes, indices, _order_columns(cols), path=path,
                   indexless=indexless if indexless.any() else None)

    # -- basic access -----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._codes)

    def __repr__(self) -> str:
        return f"Universe({len(self)} samples, {len(self._names)} sources)"

    @property
    def source_names(self) -> list[str]:
        """Sorted unique source ids."""
        return self._names

    @property
    def codes(self) -> npt.NDArray[np.int32]:
        """Per-row index into :attr:`source_names` (non-decreasing)."""
        return self._codes

    @property
    def indices(self) -> IntArray:
        """Per-row read position within its source (0 for a whole-file row)."""
        return self._indices

    @property
    def indexless(self) -> npt.NDArray[np.bool_] | None:
        """Per-row mask of whole-file rows (no index: uid = source), or None if there are none."""
        return self._indexless

    def ref_indices(self) -> list[int | None]:
        """Per-row ``SampleRef.index``: the read position, or None for a whole-file row."""
        out: list[int | None] = list(self._indices.tolist())
        if self._indexless is not None:
            for p in np.flatnonzero(self._indexless).tolist():
                out[p] = None
        return out

    @property
    def columns(self) -> list[str]:
        """All column names in write order (``source``, ``index`` first)."""
        return [*REQUIRED_COLUMNS, *self._columns]

    def has_column(self, name: str) -> bool:
        """True if the universe carries column ``name`` (required columns always exist)."""
        return name in REQUIRED_COLUMNS or name in self._columns

    def line_of(self, position: int) -> int | None:
        """Line number in the source CSV of the row at ``position`` (None if not from a file)."""
        return int(self._lines[position]) if self._lines is not None else None

    def source(self, position: int) -> str:
        """Source id of the row at ``position``."""
        return self._names[int(self._codes[position])]

    def index(self, position: int) -> int:
        """Read position of the row at ``position`` (0 for a whole-file row)."""
        return int(self._indices[position])

    def ref_index(self, position: int) -> int | None:
        """``SampleRef.index`` of the row at ``position`` (None for a whole-file row)."""
        if self._indexless is not None and self._indexless[position]:
            return None
        return int(self._indices[position])

    def uid(self, position: int) -> str:
        """uid of the row at ``position`` (the bare source for a whole-file row)."""
        if self._indexless is not None and self._indexless[position]:
            return self.source(position)
        return f"{self.source(position)}#{int(self._indices[position])}"

    def uids(self, positions: npt.ArrayLike | None = None) -> list[str]:
        """uids of ``positions`` (all rows in canonical order when None)."""
        if positions is None:
            codes, idx = self._codes, self._indices
        else:
            pos = np.asarray(positions, dtype=np.int64)
            codes, idx = self._codes[pos], self._indices[pos]
        names = self._names
        out = [f"{names[c]}#{i}" for c, i in zip(codes.tolist(), idx.tolist(), strict=True)]
        if self._indexless is not None:
            bare = self._indexless if positions is None else self._indexless[pos]
            for j in np.flatnonzero(bare).tolist():
                out[j] = names[int(codes[j])]
        return out

    @cached_property
    def hash(self) -> str:
        """``universe_hash`` of this universe (identical to cuvis-ai-core's).

        Rows are in canonical order, so each source's uids are one run: each run is one
        C-level join of its indices behind the source's ``name#`` prefix.
        """
        digest = hashlib.sha256()
        names, off, idx = self._names, self.offsets.tolist(), self._indices.tolist()
        bare = (set() if self._indexless is None
                else set(self._codes[self._indexless].tolist()))  # whole-file sources
        parts: list[str] = []
        size = 0
        for c, name in enumerate(names):
            prefix = name + "#"
            if c in bare:
                run = name + "\n"
            else:
                run = prefix + ("\n" + prefix).join(map(str, idx[off[c]:off[c + 1]])) + "\n"
            parts.append(run)
            size += len(run)
            if size >= 1 << 20:
                digest.update("".join(parts).encode("utf-8"))
                parts.clear()
                size = 0
        digest.update("".join(parts).encode("utf-8"))
        return digest.hexdigest()

    def value(self, name: str, position: int) -> str:
        """Decoded cell ``name`` of the row at ``position`` ('' if the column is absent)."""
        if name == "source":
            return self.source(position)
        if name == "index":
            ix = self.ref_index(position)
            return "" if ix is None else str(ix)
        col = self._columns.get(name)
        return "" if col is None else bytes(col[position]).decode("utf-8")

    def column(self, name: str) -> list[str]:
        """All decoded cells of column ``name`` in canonical order."""
        if name == "source":
            return [self._names[c] for c in self._codes.tolist()]
        if name == "index":
            return ["" if i is None else str(i) for i in self.ref_indices()]
        col = self._columns.get(name)
        if col is None or len(col) == 0:
            return [""] * len(self)
        # one decode for the whole column (a cell never holds NUL: refused on read)
        return b"\0".join(col.tolist()).decode("utf-8").split("\0")

    def raw_column(self, name: str) -> npt.NDArray[np.bytes_] | None:
        """The undecoded UTF-8 byte array of an optional column, or None."""
        return self._columns.get(name)

    def sample(self, position: int) -> Sample:
        """Decoded row at ``position``."""
        extra = {k: bytes(v[position]).decode("utf-8") for k, v in self._columns.items()}
        return Sample(self.source(position), self.ref_index(position), position, extra)

    def __iter__(self) -> Iterator[Sample]:
        for i in range(len(self)):
            yield self.sample(i)

    # -- derived indexes (built once, on first use) -----------------------------------

    @cached_property
    def offsets(self) -> IntArray:
        """``offsets[c]:offsets[c+1]`` is the row block of source code ``c``."""
        counts = np.bincount(self._codes, minlength=len(self._names)).astype(np.int64)
        out = np.zeros(len(self._names) + 1, dtype=np.int64)
        np.cumsum(counts, out=out[1:])
        return out

    @cached_property
    def stems(self) -> list[str]:
        """File name stem per source code (``Path(source).stem``, as ``SampleRef`` fills it)."""
        return [Path(s).stem for s in self._names]

    @cached_property
    def tags(self) -> list[tuple[str, ...]]:
        """Per-row tags from the ``tags`` column (``;``-separated; empty when absent)."""
        col = self._columns.get("tags")
        if col is None:
            return [()] * len(self)
        return [_split_tags(b) for b in col.tolist()]

    @cached_property
    def category_table(self) -> tuple[list[tuple[int, ...]], npt.NDArray[np.intp]]:
        """Distinct parsed ``category_ids`` cells and each row's index into them.

        A column of 100k rows holds a handful of distinct cells: each is parsed once.
        """
        col = self._columns.get("category_ids")
        if col is None:
            return [()], np.zeros(len(self), dtype=np.intp)
        distinct, inverse = np.unique(col, return_inverse=True)
        parsed: list[tuple[int, ...]] = []
        bad: list[int] = []
        for k, cell in enumerate(distinct.tolist()):
            try:
                parsed.append(tuple(int(p) for p in cell.split(b";") if p.strip()))
            except ValueError:
                parsed.append(())
                bad.append(k)
        if bad:
            pos = int(np.flatnonzero(np.isin(inverse, bad))[0])
            cell = bytes(col[pos])
            raise UniverseError(
                f"column 'category_ids': {cell.decode('utf-8', 'replace')!r} is not a "
                "';'-separated list of integer category ids",
                path=self.path,
                line=self.line_of(pos),
            )
        return parsed, inverse.reshape(-1)

    @cached_property
    def category_ids(self) -> list[tuple[int, ...]]:
        """Per-row COCO category ids from the ``category_ids`` column (``;``-separated)."""
        parsed, inverse = self.category_table
        return [parsed[k] for k in inverse.tolist()]

    def anomalous(
        self, rule: Callable[[Sequence[int]], bool] = is_anomalous
    ) -> npt.NDArray[np.bool_]:
        """Per row: :func:`is_anomalous` of its category ids (or ``rule``: the parity one)."""
        parsed, inverse = self.category_table
        flags = np.array([rule(ids) for ids in parsed], dtype=bool)
        return flags[inverse]

    def groups(self) -> tuple[list[str], npt.NDArray[np.int32]]:
        """Leakage groups: sorted group names and a per-row code (empty ``group`` = source)."""
        cached: tuple[list[str], npt.NDArray[np.int32]] | None = self.__dict__.get("_groups")
        if cached is None:
            cached = self.__dict__["_groups"] = self._compute_groups()
        return cached

    def _compute_groups(self) -> tuple[list[str], npt.NDArray[np.int32]]:
        col = self._columns.get("group")
        if col is None:
            return self._names, self._codes
        by_source = np.array([s.encode("utf-8") for s in self._names], dtype=np.bytes_)
        keys = np.where(col == b"", by_source[self._codes], col) if len(self) else col
        names_b, inv = np.unique(keys, return_inverse=True)
        return [b.decode("utf-8") for b in names_b.tolist()], inv.astype(np.int32)

    def take(self, positions: npt.ArrayLike) -> Universe:
        """A new universe made of the rows at ``positions`` (for tests and sub-universes)."""
        pos = np.sort(np.asarray(positions, dtype=np.int64))
        codes = self._codes[pos]
        used = np.unique(codes)
        remap = np.full(len(self._names), -1, dtype=np.int32)
        remap[used] = np.arange(len(used), dtype=np.int32)
        names = [self._names[c] for c in used.tolist()]
        cols = {k: v[pos] for k, v in self._columns.items()}
        none = self._indexless[pos] if self._indexless is not None else None
        return Universe(names, remap[codes], self._indices[pos], cols, path=self.path,
                        indexless=none)


# -- reading -----------------------------------------------------------------------------


def read_universe(path: Path | str, *, unique_materialized_path: bool | None = None) -> Universe:
    """Read and validate a universe.csv (canonicalized; errors name the file and line).

    The universe is the set of samples that exist; every split, check and materialized
    folder is defined against it.  Read it with this function rather than ``csv`` or
    pandas: rows come back in canonical order, so positions, uids and ``universe_hash``
    are the same on every machine, and a bad row is refused with its file and line.

    Parameters
    ----------
    path : path-like
        The universe.csv (UTF-8, with or without BOM; LF or CRLF).  Columns ``source``
        and ``index`` are required; ``materialized_path``, ``split``, ``annotation``,
        ``format``, ``group``, ``md5``, ``tags``, ``category_ids`` and any other column
        are kept.
    unique_materialized_path : bool or None, default None
        True requires a distinct file per row, False allows shared files, None requires
        it for rows whose format needs one file per row (``format`` ``npz`` or a
        ``.npz`` path), as npz_multi does.

    Returns
    -------
    Universe
        Columnar and immutable, sorted by ``(source, index)``; ``uni.path`` is ``path``
        and ``uni.line_of(position)`` gives back the line a row was read from.

    Raises
    ------
    MissingUniverseError
        The file does not exist.  It is a :class:`~dvc_cuvis.errors.MissingFileError`
        and so also a ``FileNotFoundError``, as upstream's loaders raise.
    UniverseError
        Any other bad input, as ``<file>:<line>: <what is wrong>``: a missing required
        column, an empty ``source``, a bad ``index``, a duplicate ``(source, index)``, an
        absolute or ``..`` path in ``materialized_path``/``annotation``, two rows sharing
        a per-row file, or an unreadable file.  Every error is a
        :class:`~dvc_cuvis.errors.DvcCuvisError` (a ``ValueError``).

    See Also
    --------
    write_universe : write a universe back (canonical order, ``\\n`` line endings).
    universe_hash : the fingerprint a baked split pins.
    dvc_cuvis.splits.resolve : the samples each stage of a split selects.

    Notes
    -----
    Identity is ``uid = source#index`` (upstream's ``SampleRef`` rule); a row whose
    ``index`` cell is empty is a whole-file sample whose uid is the bare ``source``.
    ``uni.hash`` is sha256 over the canonically ordered uids, each followed by ``\\n``.
    Sources are never normalized except that ``\\`` becomes ``/``; an ``index`` cell
    may be an inclusive range ``"a-b"`` (or ``"a-b:step"``), which expands to one row
    per index.  Rows are reordered on read: position 0 is the first sample in canonical
    order, not the first line of the file.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from dvc_cuvis.universe import read_universe
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "universe.csv").write_text(
    ...     "source,index,group\\nb.cu3s,0,day2\\na.cu3s,1-2,day1\\na.cu3s,0,day1\\n")
    >>> uni = read_universe(d / "universe.csv")
    >>> uni
    Universe(4 samples, 2 sources)
    >>> uni.uids()
    ['a.cu3s#0', 'a.cu3s#1', 'a.cu3s#2', 'b.cu3s#0']
    >>> uni.line_of(0), uni.column("group")
    (4, ['day1', 'day1', 'day1', 'day2'])
    >>> len(uni.hash)
    64

    A duplicate identity is refused, naming the file and both lines:

    >>> _ = (d / "dup.csv").write_text("source,index\\na.cu3s,0\\na.cu3s,0\\n")
    >>> read_universe(d / "dup.csv")
    Traceback (most recent call last):
    ...
    dvc_cuvis.errors.UniverseError: .../dup.csv: duplicate identity ... (lines 2 and 3); ...

    A missing file is also a ``FileNotFoundError``:

    >>> try:
    ...     read_universe(d / "nowhere.csv")
    ... except FileNotFoundError as err:
    ...     print(type(err).__name__)
    MissingUniverseError
    """
    p = Path(path)
    try:
        fh = p.open("rb")
    except FileNotFoundError:
        raise MissingUniverseError(
            "universe file not found (run `dvc-cuvis enumerate` or check --universe)", path=p
        ) from None
    except OSError as exc:
        raise UniverseError(f"cannot read universe file: {exc.strerror}", path=p) from None
    with fh:
        before = os.fstat(fh.fileno())
        uni = _parse_stream(fh, p, unique_materialized_path)
        after = os.fstat(fh.fileno())
    stamps = [(st.st_ino, st.st_size, st.st_mtime_ns) for st in (before, after)]
    uni.file_stamp = stamps[0] if stamps[0] == stamps[1] else None
    return uni


def parse_universe_bytes(
    data: bytes, *, path: Path | None = None, unique_materialized_path: bool | None = None
) -> Universe:
    """Parse universe.csv content (UTF-8 with or without BOM; LF or CRLF)."""
    return _parse_stream(io.BytesIO(data), path, unique_materialized_path)


def _parse_stream(
    fh: io.BufferedIOBase | io.BytesIO | Any, path: Path | None, unique: bool | None
) -> Universe:
    builder: _Builder | None = None
    line = 1
    for chunk in _line_chunks(fh, path):
        if builder is None:
            nl = chunk.find(b"\n")
            header_raw, chunk = (chunk, b"") if nl < 0 else (chunk[:nl], chunk[nl + 1:])
            builder = _Builder(_parse_header(header_raw, path), path, _size_of(fh))
            line = 2
        if chunk:
            line = _parse_chunk(chunk, line, builder)
    if builder is None:
        raise UniverseError("empty file: expected a header line starting 'source,index'",
                            path=path, line=1)
    uni = builder.finish()
    if len(uni) == 0:
        raise UniverseError("universe has no rows (an empty universe cannot be split)", path=path)
    _check_paths(uni, unique)
    return uni


def _size_of(fh: Any) -> int:
    try:
        return int(os.fstat(fh.fileno()).st_size)
    except (AttributeError, OSError, io.UnsupportedOperation):
        return len(fh.getbuffer()) if isinstance(fh, io.BytesIO) else 0


def _line_chunks(fh: Any, path: Path | None) -> Iterator[bytes]:
    """Yield large chunks that end on a line boundary, with quotes balanced, LF-normalized."""
    carry = b""
    first = True
    line = 1
    eof = False
    while not eof:
        block = fh.read(_CHUNK_BYTES)
        eof = not block
        data = carry + block
        if first and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        first = False
        if eof:
            cut = len(data)
        else:
            cut = data.rfind(b"\n") + 1
            while cut > 0 and b'"' in data and data.count(b'"', 0, cut) % 2:
                cut = data.rfind(b"\n", 0, cut - 1) + 1
            if cut <= 0:
                carry = data
                continue
        chunk, carry = data[:cut], data[cut:]
        if not chunk:
            continue
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\x00" in chunk:
            bad = line + chunk.count(b"\n", 0, chunk.index(b"\x00"))
            raise UniverseError("NUL byte in universe.csv; the file is binary or corrupt",
                                path=path, line=bad)
        if not chunk.isascii():
            try:
                chunk.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad = line + chunk.count(b"\n", 0, exc.start)
                raise UniverseError("not valid UTF-8 (save the CSV as UTF-8)",
                                    path=path, line=bad) from None
        line += chunk.count(b"\n")
        yield chunk


def _parse_header(raw: bytes, path: Path | None) -> list[str]:
    text = raw.decode("utf-8")
    if not text.strip():
        raise UniverseError("empty file: expected a header line starting 'source,index'",
                            path=path, line=1)
    names = next(csv.reader([text]))
    names = [n.strip() for n in names]
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing:
        raise UniverseError(
            f"missing required column(s) {missing}; the header must name "
            f"{list(REQUIRED_COLUMNS)} (optional: {list(OPTIONAL_COLUMNS)}; "
            "other columns are kept)",
            path=path, line=1,
        )
    seen: set[str] = set()
    for i, n in enumerate(names):
        if not n:
            raise UniverseError(f"empty column name at position {i + 1}", path=path, line=1)
        if n in seen:
            raise UniverseError(f"duplicate column {n!r} in header", path=path, line=1)
        seen.add(n)
    return names


def _parse_chunk(chunk: bytes, first_line: int, builder: _Builder) -> int:
    """Parse one line-aligned chunk into the builder; returns the next line number."""
    k = len(builder.header)
    if chunk.endswith(b"\n"):
        chunk = chunk[:-1]
    nlines = chunk.count(b"\n") + 1
    next_line = first_line + nlines
    if b'"' in chunk:
        builder.add_rows(_slow_rows(chunk, k, builder.path, first_line=first_line))
        return next_line
    if b"\n\n" in chunk or chunk.startswith(b"\n") or not chunk:
        parts = chunk.split(b"\n")
        keep = [i for i, part in enumerate(parts) if part]
        if not keep:
            return next_line
        lines = np.asarray(keep, dtype=np.int32) + first_line
        chunk = b"\n".join(parts[i] for i in keep)
    else:
        lines = np.arange(first_line, next_line, dtype=np.int32)
    flat = chunk.replace(b"\n", b",").split(b",")
    if len(flat) != len(lines) * k or (k > 1 and not _fields_aligned(chunk, k)):
        builder.add_rows(_slow_rows(chunk, k, builder.path, lines=lines))
        return next_line
    cols = [flat[j::k] for j in range(k)]
    del flat
    builder.add_columns(cols, lines, strip=b" " in chunk or b"\t" in chunk, nbytes=len(chunk),
                         backslash=b"\\" in chunk)
    return next_line


def _fields_aligned(chunk: bytes, k: int) -> bool:
    """True if every line of ``chunk`` has exactly ``k - 1`` commas."""
    arr = np.frombuffer(chunk, dtype=np.uint8)
    nls = np.flatnonzero(arr == 10)
    commas = np.flatnonzero(arr == 44)
    bounds = np.searchsorted(commas, np.append(nls, len(arr)))
    counts = np.diff(np.concatenate(([0], bounds)))
    return bool(np.all(counts == k - 1))


def _slow_rows(
    body: bytes,
    k: int,
    path: Path | None,
    *,
    first_line: int = 2,
    lines: npt.NDArray[np.int32] | None = None,
) -> Iterator[tuple[int, list[bytes]]]:
    """Parse with the csv module (quoted fields, ragged rows); yields (line, cells)."""
    reader = csv.reader(io.StringIO(body.decode("utf-8"), newline=""))
    kept = 0
    for row in reader:
        if not row:
            continue
        if lines is not None and kept < len(lines):
            line = int(lines[kept])
        else:
            line = first_line + reader.line_num - 1
        kept += 1
        if len(row) != k:
            raise UniverseError(
                f"expected {k} fields (one per header column), got {len(row)}",
                path=path, line=line,
            )
        yield line, [c.encode("utf-8") for c in row]


class _Builder:
    """Accumulates parsed chunks into a validated, canonical :class:`Universe`."""

    def __init__(self, header: list[str], path: Path | None, size_hint: int = 0) -> None:
        self.header = header
        self.path = path
        self.src_j = header.index("source")
        self.idx_j = header.index("index")
        self.other = [(j, n) for j, n in enumerate(header) if n not in REQUIRED_COLUMNS]
        self.size_hint = size_hint
        self.seen_bytes = 0
        self.rank: dict[str, int] = {}
        self.store: dict[str, _Grow] = {}
        self.n = 0

    def add_rows(self, rows: Iterable[tuple[int, list[bytes]]]) -> None:
        """Add rows from the slow path (already split into cells)."""
        batch: list[list[bytes]] = [[] for _ in self.header]
        lines: list[int] = []
        for line, cells in rows:
            lines.append(line)
            for j, c in enumerate(cells):
                batch[j].append(c)
        if lines:
            self.add_columns(batch, np.asarray(lines, dtype=np.int32), strip=True)

    def add_columns(
        self, cols: list[list[bytes]], lines: npt.NDArray[np.int32], *, strip: bool,
        nbytes: int = 0, backslash: bool = True,
    ) -> None:
        """Add one chunk given as per-column lists of raw cells."""
        arrays = [np.array(c, dtype=np.bytes_) for c in cols]
        if strip:
            arrays = [np.strings.strip(a) for a in arrays]
        src = arrays[self.src_j]
        if backslash:
            src = np.strings.replace(src, b"\\", b"/")
        empty_src = np.flatnonzero(src == b"")
        if len(empty_src):
            raise UniverseError("empty 'source' cell", path=self.path,
                                line=int(lines[empty_src[0]]))
        codes = self._encode_sources(src)
        idx, repeat = self._parse_index(arrays[self.idx_j], lines)
        if repeat is not None:
            codes = np.repeat(codes, repeat)
            lines = np.repeat(lines, repeat)
            arrays = [np.repeat(a, repeat) for a in arrays]
        self.seen_bytes += nbytes
        parts: dict[str, npt.NDArray[Any]] = {"\0codes": codes, "\0index": idx, "\0lines": lines}
        for j, name in self.other:
            parts[name] = arrays[j]
        m = len(idx)
        if not self.store:
            per_row = max(self.seen_bytes, 1) / max(m, 1)
            estimate = int(self.size_hint / per_row * 1.02) + 1024 if self.size_hint else m
            self.store = {k: _Grow(v.dtype, max(estimate, m)) for k, v in parts.items()}
        for k, v in parts.items():
            self.store[k].extend(v)
        self.n += m

    def _encode_sources(self, src: npt.NDArray[np.bytes_]) -> npt.NDArray[np.int32]:
        n = len(src)
        if n == 0:
            return np.zeros(0, dtype=np.int32)
        change = np.empty(n, dtype=bool)
        change[0] = True
        np.not_equal(src[1:], src[:-1], out=change[1:])
        heads = np.flatnonzero(change)
        rank = self.rank
        # one decode for all names (NUL cannot occur in a source: it is refused on read)
        names = b"\0".join(src[heads].tolist()).decode("utf-8").split("\0")
        fresh = dict.fromkeys(names)  # distinct, in order of appearance
        new = [k for k in fresh if k not in rank] if rank else list(fresh)
        rank.update(zip(new, range(len(rank), len(rank) + len(new)), strict=True))
        head_codes = np.fromiter(map(rank.__getitem__, names), dtype=np.int32,
                                 count=len(names))
        run_lengths = np.diff(np.append(heads, n))
        return np.repeat(head_codes, run_lengths)

    def _parse_index(
        self, cells: npt.NDArray[np.bytes_], lines: npt.NDArray[np.int32]
    ) -> tuple[IntArray, npt.NDArray[np.int64] | None]:
        if len(cells) and cells.dtype.itemsize <= 18:
            digits = np.strings.isdigit(cells)
            if bool(np.all(digits)):
                return cells.astype(np.int64), None  # at most 18 digits: always fits in int64
            if bool(np.all(digits | (cells == b""))):  # empty cells: whole-file rows (-1)
                out = np.full(len(cells), -1, dtype=np.int64)
                out[digits] = cells[digits].astype(np.int64)
                return out, None
        values: list[int] = []
        repeat = np.ones(len(cells), dtype=np.int64)
        ranged = False
        for r, raw in enumerate(cells.tolist()):
            text = raw.decode("utf-8").strip()
            if _INT_RE.match(text) and len(text) <= 18:
                values.append(int(text))
                continue
            if not text:  # an empty cell: the whole file is one sample (no index)
                values.append(-1)
                continue
            if _INT_RE.match(text):
                raise UniverseError(f"column 'index': {text} is too large for a read position",
                                    path=self.path, line=int(lines[r]))
            m = _RANGE_RE.match(text)
            if m is None:
                raise UniverseError(
                    f"column 'index': {text!r} is not a non-negative integer "
                    "(or an inclusive 'a-b[:step]' range, or empty for a whole-file sample)",
                    path=self.path, line=int(lines[r]),
                )
            start, stop = int(m.group(1)), int(m.group(2))
            step = int(m.group(3)) if m.group(3) else 1
            if step <= 0 or start > stop or stop >= 10**18 or (stop - start) // step > 10**7:
                raise UniverseError(
                    f"column 'index': bad range {text!r} (need start <= stop, step > 0, at most "
                    "10 million ids)",
                    path=self.path, line=int(lines[r]),
                )
            expanded = range(start, stop + 1, step)
            values.extend(expanded)
            repeat[r] = len(expanded)
            ranged = True
        return np.asarray(values, dtype=np.int64), (repeat if ranged else None)

    def finish(self) -> Universe:
        first_seen = list(self.rank)  # position = code
        if all(a < b for a, b in itertools.pairwise(first_seen)):
            names, remap = first_seen, np.arange(len(first_seen), dtype=np.int32)
        else:
            order = sorted(range(len(first_seen)), key=first_seen.__getitem__)
            names = [first_seen[c] for c in order]
            remap = np.empty(len(names), dtype=np.int32)
            remap[order] = np.arange(len(names), dtype=np.int32)

        if not self.store:
            empty = {n: np.zeros(0, dtype="S1") for _, n in self.other}
            return Universe([], np.zeros(0, np.int32), np.zeros(0, np.int64), empty,
                            path=self.path)
        got = {k: g.result() for k, g in self.store.items()}
        codes = got.pop("\0codes")
        np.take(remap, codes, out=codes)
        index, lines = got.pop("\0index"), got.pop("\0lines")
        none = index < 0  # empty cells (see _parse_index)
        return Universe(names, codes, index, _order_columns(got), path=self.path, lines=lines,
                        indexless=none if none.any() else None)


class _Grow:
    """An append-only array with capacity (fixed-width byte strings widen on demand)."""

    def __init__(self, dtype: np.dtype[Any], capacity: int) -> None:
        self.arr: npt.NDArray[Any] = np.empty(capacity, dtype=dtype)
        self.n = 0

    def extend(self, values: npt.NDArray[Any]) -> None:
        need = self.n + len(values)
        arr = self.arr
        wider = arr.dtype.kind == "S" and values.dtype.itemsize > arr.dtype.itemsize
        if need > len(arr) or wider:
            cap = max(need, int(len(arr) * 1.25)) if need > len(arr) else len(arr)
            dtype = values.dtype if wider else arr.dtype
            grown = np.empty(cap, dtype=dtype)
            grown[: self.n] = arr[: self.n]
            self.arr = arr = grown
        arr[self.n:need] = values
        self.n = need

    def result(self) -> npt.NDArray[Any]:
        out = self.arr[: self.n]
        self.arr = np.empty(0, dtype=self.arr.dtype)
        return out


def _check_paths(uni: Universe, unique_materialized_path: bool | None) -> None:
    """Refuse absolute paths and ``..`` escapes in path columns, and duplicate per-row files."""
    for name in PATH_COLUMNS:
        col = uni.raw_column(name)
        if col is None:
            continue
        rooted = np.strings.startswith(col, b"/") | np.strings.startswith(col, b"\\")
        rooted |= np.strings.find(col, b":") == 1
        for pos in np.flatnonzero(rooted).tolist():
            text = bytes(col[pos]).decode("utf-8")
            if text[:1] in "/\\" or re.match(r"[A-Za-z]:", text):
                raise UniverseError(
                    f"column {name!r}: {text!r} is an absolute path; paths are relative to the "
                    "CSV so the dataset can move (write it relative to the CSV's folder)",
                    path=uni.path, line=uni.line_of(pos),
                )
        for pos in np.flatnonzero(np.strings.find(col, b"..") >= 0).tolist():
            text = bytes(col[pos]).decode("utf-8")
            if ".." in text.replace("\\", "/").split("/"):
                raise UniverseError(
                    f"column {name!r}: path {text!r} contains '..'; paths are relative to the "
                    "CSV and must stay inside its folder",
                    path=uni.path, line=uni.line_of(pos),
                )
    col = uni.raw_column("materialized_path")
    if col is None or unique_materialized_path is False:
        return
    if unique_materialized_path:
        rows = np.flatnonzero(col != b"")
    else:
        fmt = uni.raw_column("format")
        per_file = np.strings.endswith(col, b".npz") | np.strings.endswith(col, b".NPZ")
        if fmt is not None:
            per_file |= (fmt == b"npz") | (fmt == b"NPZ")
        rows = np.flatnonzero(per_file & (col != b""))
    if len(rows) < 2:
        return
    keys = col[rows]
    odd = (np.strings.find(keys, b"./") >= 0) | (np.strings.find(keys, b"//") >= 0)
    odd |= (np.strings.find(keys, b"\\") >= 0) | np.strings.endswith(keys, b"/")
    if odd.any():
        keys = keys.copy().astype(object)
        for j in np.flatnonzero(odd).tolist():
            keys[j] = posixpath.normpath(keys[j].decode("utf-8").replace("\\", "/")).encode()
        keys = keys.astype(np.bytes_)
    clash = _first_duplicate(keys)
    if clash is not None:
        a, b = int(rows[clash[0]]), int(rows[clash[1]])
        la, lb = uni.line_of(a), uni.line_of(b)
        where = f" (lines {la} and {lb})" if la is not None and lb is not None else ""
        raise UniverseError(
            f"duplicate materialized_path {bytes(col[a]).decode('utf-8')!r}{where}: "
            f"{uni.uid(a)!r} and {uni.uid(b)!r} point at one file, but this format needs one "
            "file per row",
            path=uni.path,
        )


def _first_duplicate(keys: npt.NDArray[np.bytes_]) -> tuple[int, int] | None:
    """Positions of two equal entries of a byte-string array, or None (hash, then verify).

    A 64-bit polynomial hash per entry is computed over the array's fixed-width bytes in
    blocks, so the check needs a few MB instead of a sorted copy of the whole column.
    """
    n, width = len(keys), keys.dtype.itemsize
    if n < 2:
        return None
    mat = keys.view(np.uint8).reshape(n, width)
    weights = np.cumprod(np.full(width, 1099511628211, dtype=np.uint64), dtype=np.uint64)
    hashes = np.empty(n, dtype=np.uint64)
    block = max(1, (1 << 18) // max(width, 1))
    with np.errstate(over="ignore"):
        for lo in range(0, n, block):
            part = mat[lo:lo + block].astype(np.uint64)
            hashes[lo:lo + block] = (part * weights).sum(axis=1, dtype=np.uint64)
    order = np.argsort(hashes, kind="stable")
    sh = hashes[order]
    for j in np.flatnonzero(sh[1:] == sh[:-1]).tolist():
        a, b = int(order[j]), int(order[j + 1])
        if keys[a] == keys[b]:
            return (min(a, b), max(a, b))
    return None


# -- writing -----------------------------------------------------------------------------


def format_universe(uni: Universe) -> str:
    """universe.csv text: header, rows in canonical order, ``\\n`` line endings."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    names = uni.columns
    writer.writerow(names)
    extra = [uni.column(n) for n in names[2:]]
    sources = uni.source_names
    idx: list[int | None] = uni.indices.tolist() if uni.indexless is None else uni.ref_indices()
    for r, (c, i) in enumerate(zip(uni.codes.tolist(), idx, strict=True)):
        writer.writerow([sources[c], "" if i is None else i, *(col[r] for col in extra)])
    return buf.getvalue()


def write_universe(uni: Universe, path: Path | str) -> None:
    """Write ``uni`` as universe.csv atomically."""
    atomic_write_text(path, format_universe(uni))


# -- helpers -----------------------------------------------------------------------------


def _order_columns(
    cols: Mapping[str, npt.NDArray[np.bytes_]],
) -> dict[str, npt.NDArray[np.bytes_]]:
    """Known columns in vocabulary order, then extra columns in their given order."""
    known = [c for c in (*OPTIONAL_COLUMNS, *PROVENANCE_COLUMNS) if c in cols]
    rest = [c for c in cols if c not in known]
    return {c: cols[c] for c in (*known, *rest)}


def _as_index(value: Any) -> int:
    """A record's index as an int; -1 stands for "no index" (None or an empty cell)."""
    if value is None:
        return -1
    if isinstance(value, bool) or not isinstance(value, int | np.integer | str):
        raise UniverseError(f"index {value!r} is not an integer")
    if isinstance(value, str):
        if not value.strip():
            return -1
        if not _INT_RE.match(value.strip()):
            raise UniverseError(f"index {value!r} is not a non-negative integer")
        return int(value.strip())
    if value < 0:
        raise UniverseError(f"index {value} must be >= 0")
    return int(value)


def _refuse_mixed(source: str, lines: npt.NDArray[np.int32] | None, row: int,
                  path: Path | None) -> None:
    where = f" (line {int(lines[row])})" if lines is not None else ""
    raise UniverseError(
        f"source {source!r} has a row with an empty index (the whole file is one sample, uid "
        f"= source){where} and other rows of the same source; give every row of a source an "
        "index, or keep only the one row with the empty index",
        path=path,
    )


def _cell_bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, list | tuple):
        return ";".join(str(v) for v in value).encode("utf-8")
    return str(value).encode("utf-8")


def _split_tags(cell: bytes) -> tuple[str, ...]:
    return tuple(t.strip() for t in cell.decode("utf-8").split(";") if t.strip())
