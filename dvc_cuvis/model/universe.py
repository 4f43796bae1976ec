"""The sample universe: identity, canonical order and fingerprint (the model).

Its file format, universe.csv, is read and written by :mod:`dvc_cuvis.model.universe_io`
(:func:`read_universe` & co. are importable from :mod:`dvc_cuvis.model` too).

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

import hashlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from dvc_cuvis.errors import UniverseError
from dvc_cuvis.model.anomalous import is_anomalous
from dvc_cuvis.model.universe_rows import (
    as_index,
    cell_bytes,
    indexless_mask,
    is_canonical,
    refuse_duplicates,
    refuse_shared_whole_files,
    split_tags,
)

#: Columns every universe.csv carries.
REQUIRED_COLUMNS: tuple[str, ...] = ("source", "index")
#: Columns with upstream meaning (cuvis-ai-dataloader's universe.csv vocabulary).
OPTIONAL_COLUMNS: tuple[str, ...] = ("materialized_path", "split", "annotation", "format", "group")
#: This project's provenance columns (ignored by upstream readers).
PROVENANCE_COLUMNS: tuple[str, ...] = ("md5", "tags", "category_ids")
#: universe.csv columns naming a file, each with the column holding that file's md5.
DIGEST_COLUMNS: tuple[tuple[str, str], ...] = (("materialized_path", "md5"),
                                               ("annotation", "annotation_md5"))
#: Columns holding paths relative to the CSV; a ``..`` component is refused.
PATH_COLUMNS: tuple[str, ...] = ("materialized_path", "annotation")

IntArray = npt.NDArray[np.int64]


def _order_columns(
    cols: Mapping[str, npt.NDArray[np.bytes_]],
) -> dict[str, npt.NDArray[np.bytes_]]:
    """Known columns in vocabulary order, then extra columns in their given order."""
    known = [c for c in (*OPTIONAL_COLUMNS, *PROVENANCE_COLUMNS) if c in cols]
    rest = [c for c in cols if c not in known]
    return {c: cols[c] for c in (*known, *rest)}


def uid_prefix(source: str) -> str:
    """What every indexed uid of ``source`` starts with: ``source#`` (the ``SampleRef`` rule)."""
    return source + "#"


def uid(source: str, index: int | None = None, label_id: int | None = None) -> str:
    """Sample identity by the ``SampleRef`` rule: ``source#index[#label_id]``.

    THE uid formatter: a whole-file sample (``index`` None) is the bare ``source``; a
    ``label_id`` is appended only when it differs from the index.  :func:`uid_block` is its
    form for all rows of one source, and every uid this package writes comes from the two.
    """
    base = source if index is None else uid_prefix(source) + str(index)
    if label_id is not None and label_id != index:
        base = f"{base}#{label_id}"
    return base


def uid_block(source: str, indices: Sequence[int] | None) -> str:
    """:func:`uid` of each of ``indices`` of ``source``, each followed by ``\\n``.

    ``indices`` None is a whole-file sample: its block is the bare source.  This is the text
    :func:`universe_hash` digests, one source's run at a time (a C-level join, no call per
    row).
    """
    if indices is None:
        return uid(source) + "\n"
    if not len(indices):
        return ""
    prefix = uid_prefix(source)
    return prefix + ("\n" + prefix).join(map(str, indices)) + "\n"


def posix(path: str) -> str:
    """Posix spelling of a source id (backslashes become slashes; nothing else changes)."""
    return path.replace("\\", "/")


def universe_hash(uids: Iterable[str]) -> str:
    """sha256 over the ordered uids, each followed by ``\\n`` (empty universe: sha256 of b'')."""
    it = iter(uids)
    batches = iter(lambda: list(itertools.islice(it, 65536)), [])
    return _sha256_lines("\n".join(batch) + "\n" for batch in batches)


def _sha256_lines(blocks: Iterable[str]) -> str:
    """sha256 of the UTF-8 concatenation of ``blocks`` (hashed in pieces of a bounded size)."""
    digest = hashlib.sha256()
    parts: list[str] = []
    size = 0
    for block in blocks:
        parts.append(block)
        size += len(block)
        if size >= 1 << 20:
            digest.update("".join(parts).encode("utf-8"))
            parts.clear()
            size = 0
    digest.update("".join(parts).encode("utf-8"))
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


def _recording_layout(names: Sequence[str], codes: npt.NDArray[np.int32]
                      ) -> tuple[list[str], bool]:
    """Per source its recording (see :meth:`Universe.recording_layout`), and ``flat``."""
    frames = np.bincount(codes, minlength=len(names)) if len(codes) else np.zeros(len(names))
    per_source = list(names)
    folders: dict[int, str] = {}
    for k, name in enumerate(names):
        if frames[k] == 1 and not name.casefold().endswith(".cu3s"):
            head, sep, _tail = name.rstrip("/").rpartition("/")
            folders[k] = head if sep else "."
    flat = len(set(folders.values())) < 2
    if not flat:
        for k, folder in folders.items():
            per_source[k] = folder + "/"
    return per_source, flat and len(folders) > 1



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
        none_a = indexless_mask(indexless, n, path)
        if none_a is not None:
            idx_a = np.where(none_a, 0, idx_a)
        if n > 1 and not is_canonical(codes_a, idx_a):
            perm = np.lexsort((idx_a, codes_a))
            codes_a, idx_a = codes_a[perm], idx_a[perm]
            cols = {k: v[perm] for k, v in cols.items()}
            line_a = line_a[perm] if line_a is not None else None
            none_a = none_a[perm] if none_a is not None else None
            refuse_duplicates(names, codes_a, idx_a, line_a, none_a, path)
        if n and (int(idx_a.min()) < 0):
            raise UniverseError("index values must be >= 0", path=path)
        if none_a is not None:
            refuse_shared_whole_files(names, codes_a, none_a, line_a, path)
        self._codes = codes_a
        self._indices = idx_a
        self._columns = cols
        self._lines = line_a
        self._indexless: npt.NDArray[np.bool_] | None = none_a

    # -- construction -----------------------------------------------------------------

    @classmethod
    def from_records(
        cls, records: Iterable[Mapping[str, object]], *, path: Path | None = None
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
        cls, columns: Mapping[str, Sequence[object]], *, path: Path | None = None
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
        indices = np.fromiter((as_index(i) for i in columns["index"]), np.int64, n)
        indexless = indices < 0  # as_index: -1 = no index (None or an empty cell)
        cols = {}
        for k, values in columns.items():
            if k in REQUIRED_COLUMNS:
                continue
            if len(values) != n:
                raise UniverseError(f"column {k!r} has {len(values)} values for {n} rows")
            cols[k] = np.array([cell_bytes(v) for v in values], dtype=np.bytes_)
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

    @property
    def lines(self) -> npt.NDArray[np.int32] | None:
        """Per-row line number in the source CSV (None if not read from a file)."""
        return self._lines

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
        return uid(self.source(position), self.ref_index(position))

    def uids(self, positions: npt.ArrayLike | None = None) -> list[str]:
        """uids of ``positions`` (all rows in canonical order when None)."""
        if positions is None:
            codes, idx = self._codes, self._indices
        else:
            pos = np.asarray(positions, dtype=np.int64)
            codes, idx = self._codes[pos], self._indices[pos]
        names = self._names
        prefixes = [uid_prefix(n) for n in names]  # uid(): one prefix per source, not per row
        out = [prefixes[c] + str(i) for c, i in zip(codes.tolist(), idx.tolist(), strict=True)]
        if self._indexless is not None:
            bare = self._indexless if positions is None else self._indexless[pos]
            for j in np.flatnonzero(bare).tolist():
                out[j] = uid(names[int(codes[j])])
        return out

    @cached_property
    def hash(self) -> str:
        """``universe_hash`` of this universe (identical to cuvis-ai-core's)."""
        return self.spelled_hash()

    def spelled_hash(self, names: Sequence[str] | None = None) -> str:
        """``universe_hash`` with source code ``c`` spelled ``names[c]`` (default: as it is).

        The uids are taken in the canonical order of the spelled names (within a source,
        by index), as if the universe had been written with them; ``drift`` hashes the
        ``{DATA_DIR}``-tokenized spelling so.  Rows are in canonical order, so each
        source's uids are one run: one :func:`uid_block` per source.
        """
        spelled = self._names if names is None else list(names)
        if len(spelled) != len(self._names):
            raise ValueError(f"{len(spelled)} names for {len(self._names)} sources")
        order: Iterable[int] = (range(len(spelled)) if names is None
                                else sorted(range(len(spelled)), key=spelled.__getitem__))
        off, idx = self.offsets.tolist(), self._indices.tolist()
        bare = (set() if self._indexless is None
                else set(self._codes[self._indexless].tolist()))  # whole-file sources
        return _sha256_lines(uid_block(spelled[c], None if c in bare else idx[off[c]:off[c + 1]])
                             for c in order)

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

    def frame_file(self, position: int) -> str:
        """THE rule for which file a row names: its ``materialized_path``, else its ``source``.

        Relative to the universe.csv's folder.  :meth:`frame_files` is its form for every
        row, :meth:`files_in` its form for each of :data:`DIGEST_COLUMNS`.
        """
        return self.value("materialized_path", position) or self.source(position)

    def frame_files(self) -> list[str]:
        """:meth:`frame_file` of every row, in canonical order."""
        paths = self.column("materialized_path")
        if "" not in paths:
            return paths
        return [rel or self.source(pos) for pos, rel in enumerate(paths)]

    def files_in(self, column: str) -> list[str]:
        """Per row, the file that ``column`` of :data:`DIGEST_COLUMNS` names ('' for none).

        The frame column names the source where it is empty (:meth:`frame_file`).
        """
        return self.frame_files() if column == "materialized_path" else self.column(column)

    @overload
    def rows(self, a: str, b: str, /) -> Iterator[tuple[str, str]]: ...
    @overload
    def rows(self, a: str, b: str, c: str, /) -> Iterator[tuple[str, str, str]]: ...
    @overload
    def rows(self, *names: str) -> Iterator[tuple[str, ...]]: ...

    def rows(self, *names: str) -> Iterator[tuple[str, ...]]:
        """Cells of columns ``names`` row by row in canonical order (``"uid"``: the uid).

        Every column of one universe has one cell per row, so the columns are zipped
        strictly here, once, rather than at each caller.
        """
        cols = [self.uids() if n == "uid" else self.column(n) for n in names]
        return zip(*cols, strict=True)

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
        return [split_tags(b) for b in col.tolist()]

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

    def recording_layout(self) -> tuple[list[str], bool]:
        """Per source its recording, and whether the frame files lie in one flat folder.

        Frames of one recording are not independent, so the recording is known without any
        member: a ``.cu3s`` session file, or any source holding several frames, is its own
        recording; a one-frame file (an npz or TIFF frame) belongs to its folder's recording.
        When every one-frame file lies in one folder there is no recording structure to see
        (``flat`` True) and each such file stays its own recording.
        """
        cached: tuple[list[str], bool] | None = self.__dict__.get("_layout")
        if cached is None:
            cached = self.__dict__["_layout"] = _recording_layout(self._names, self._codes)
        return cached

    def recordings(self) -> tuple[list[str], npt.NDArray[np.int32]]:
        """Recordings: sorted names and a per-row code (see :meth:`recording_layout`)."""
        per_source, _flat = self.recording_layout()
        names, inv = (np.unique(np.array(per_source, dtype=object), return_inverse=True)
                      if per_source else (np.array([], dtype=object), np.zeros(0, dtype=np.int64)))
        codes = inv.astype(np.int32)[self._codes] if len(self) else np.zeros(0, np.int32)
        return [str(n) for n in names.tolist()], codes

    def groups(self) -> tuple[list[str], npt.NDArray[np.int32]]:
        """Leakage groups: sorted group names and a per-row code (an empty ``group`` cell = the
        group its folder's other frames name, when they name one, else the row's recording,
        :meth:`recordings`)."""
        cached: tuple[list[str], npt.NDArray[np.int32]] | None = self.__dict__.get("_groups")
        if cached is None:
            cached = self.__dict__["_groups"] = self._compute_groups()
        return cached

    def _compute_groups(self) -> tuple[list[str], npt.NDArray[np.int32]]:
        col = self._columns.get("group")
        per_source, _flat = self.recording_layout()
        if col is None:
            return self.recordings()
        per_source = list(per_source)
        empty = col == b""
        if empty.any() and (~empty).any():  # a folder whose other frames name one group
            named: dict[str, set[bytes]] = {}
            for c, cell in zip(self._codes[~empty].tolist(), col[~empty].tolist(), strict=True):
                if per_source[c].endswith("/"):
                    named.setdefault(per_source[c], set()).add(cell)
            for k, rec in enumerate(per_source):
                one = named.get(rec)
                if one is not None and len(one) == 1:
                    per_source[k] = next(iter(one)).decode("utf-8")
        by_source = np.array([s.encode("utf-8") for s in per_source], dtype=np.bytes_)
        keys = np.where(empty, by_source[self._codes], col) if len(self) else col
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
