"""universe.csv, the file: reading (strict, columnar, file:line on every error) and writing.

The model -- identity, canonical order, fingerprint -- lives in :mod:`dvc_cuvis.model.universe`;
this module is only its file format, as cuvis-ai-core keeps ``splits_io`` apart from the
schema.  :func:`read_universe`, :func:`read_header`, :func:`parse_universe_bytes`,
:func:`format_universe` and :func:`write_universe` are also importable from
:mod:`dvc_cuvis.model`.

Why an own reader rather than ``pandas.read_csv(dtype=str)`` or ``pyarrow.csv``: both are
measured against it on the 1M-row case (``benchmarks/bench_core.py``, figures in
docs/performance.md), and neither gives what the checks need -- the file and line of every
bad row (a ragged row, an empty ``source``, a bad ``index``, a duplicate identity two lines
apart, a NUL byte, invalid UTF-8), the ``a-b[:step]`` range expansion of ``index`` cells,
and a columnar result that is already canonical.
"""

from __future__ import annotations

import csv
import io
import itertools
import os
import posixpath
import re
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from dvc_cuvis import limits
from dvc_cuvis._io import atomic_write_text
from dvc_cuvis.errors import MissingUniverseError, SelectorError, UniverseError
from dvc_cuvis.model.ids import MAX_RANGE_IDS, parse_id_range
from dvc_cuvis.model.universe import (
    OPTIONAL_COLUMNS,
    PATH_COLUMNS,
    REQUIRED_COLUMNS,
    IntArray,
    Universe,
    _order_columns,
)
from dvc_cuvis.model.universe_rows import INT_RE

__all__ = ["format_universe", "parse_universe_bytes", "read_header", "read_universe",
           "write_universe"]

_CHUNK_BYTES = 4 << 20
#: A read position must fit in int64 with room to spare.
_MAX_INDEX = 10**18


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
    dvc_cuvis.model.resolution.resolve : the samples each stage of a split selects.

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
    >>> from dvc_cuvis import read_universe
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
    data: bytes, *, path: Path | None = None, unique_materialized_path: bool | None = None,
    columns: Collection[str] | None = None,
) -> Universe:
    """Parse universe.csv content (UTF-8 with or without BOM; LF or CRLF).

    ``columns``: the optional columns to keep (default: all); every row is still read and
    checked, but the cells of the other columns are not kept.
    """
    return _parse_stream(io.BytesIO(data), path, unique_materialized_path, columns)


def _parse_stream(
    fh: IO[bytes], path: Path | None, unique: bool | None,
    columns: Collection[str] | None = None,
) -> Universe:
    builder: _Builder | None = None
    line = 1
    for chunk in _line_chunks(fh, path):
        if builder is None:
            nl = chunk.find(b"\n")
            header_raw, chunk = (chunk, b"") if nl < 0 else (chunk[:nl], chunk[nl + 1:])
            builder = _Builder(_parse_header(header_raw, path), path, _size_of(fh), columns)
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


def _size_of(fh: IO[bytes]) -> int:
    try:
        return int(os.fstat(fh.fileno()).st_size)
    except (AttributeError, OSError, io.UnsupportedOperation):
        return len(fh.getbuffer()) if isinstance(fh, io.BytesIO) else 0


def _line_chunks(fh: IO[bytes], path: Path | None) -> Iterator[bytes]:
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
    names = _header_cells(text)
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


def _header_cells(text: str) -> list[str]:
    """The column names of a decoded header line (csv quoting; names stripped)."""
    return [n.strip() for n in next(csv.reader([text]), [])]


def read_header(path: Path | str) -> list[str]:
    """The column names on a universe.csv's first line, decoded as :func:`read_universe`
    decodes them (BOM, line ending, quoting, names stripped); only that line is read.

    Not validated, and empty when the file cannot be read: it tells which columns a file
    has before anyone reads (and checks) it whole.
    """
    try:
        with Path(path).open("rb") as fh:
            raw = fh.readline()
    except OSError:
        return []
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return []
    return _header_cells(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")[0])


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


#: The place of a column whose cells are not kept (``columns=``).
_UNUSED: npt.NDArray[np.bytes_] = np.zeros(0, dtype="S1")


class _Builder:
    """Accumulates parsed chunks into a validated, canonical :class:`Universe`."""

    def __init__(self, header: list[str], path: Path | None, size_hint: int = 0,
                 columns: Collection[str] | None = None) -> None:
        self.header = header
        self.path = path
        self.src_j = header.index("source")
        self.idx_j = header.index("index")
        self.other = [(j, n) for j, n in enumerate(header) if n not in REQUIRED_COLUMNS
                      and (columns is None or n in columns)]
        self.used = {self.src_j, self.idx_j, *(j for j, _ in self.other)}
        self.size_hint = size_hint
        self.seen_bytes = 0
        self.rank: dict[str, int] = {}
        self.store: dict[str, _Grow] = {}
        self.n = 0
        #: samples the whole file may describe, ranges expanded (checked before expanding)
        self.max_samples = limits.current().max_samples

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
        used = self.used
        arrays = [np.array(c, dtype=np.bytes_) if j in used else _UNUSED
                  for j, c in enumerate(cols)]
        if strip:
            arrays = [np.strings.strip(a) if j in used else a for j, a in enumerate(arrays)]
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
            arrays = [np.repeat(a, repeat) if j in used else a for j, a in enumerate(arrays)]
        self.seen_bytes += nbytes
        parts: dict[str, npt.NDArray[Any]] = {"\0codes": codes, "\0index": idx, "\0lines": lines}
        for j, name in self.other:
            parts[name] = arrays[j]
        m = len(idx)
        if not self.store:
            per_row = max(self.seen_bytes, 1) / max(m, 1)
            estimate = int(self.size_hint / per_row * 1.02) + 1024 if self.size_hint else m
            estimate = min(estimate, self.max_samples)  # a guess, never beyond the budget
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
        if self.n + len(cells) > self.max_samples:  # one sample a row at least
            self._over_budget(f"row {self.max_samples + 1:,}",
                              int(lines[self.max_samples - self.n]))
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
            if INT_RE.match(text) and len(text) <= 18:
                values.append(int(text))
                continue
            if not text:  # an empty cell: the whole file is one sample (no index)
                values.append(-1)
                continue
            if INT_RE.match(text):
                raise UniverseError(f"column 'index': {text} is too large for a read position",
                                    path=self.path, line=int(lines[r]))
            try:  # the one range grammar and limit, as selectors read it (ASCII digits only)
                expanded = parse_id_range(text) if text.isascii() else None
                bad = False
            except SelectorError:
                expanded, bad = None, True
            if expanded is not None and expanded.stop > _MAX_INDEX:
                raise UniverseError(f"column 'index': bad range {text!r}: ends beyond "
                                    f"{_MAX_INDEX:,}, too large for a read position",
                                    path=self.path, line=int(lines[r]))
            if bad:
                raise UniverseError(
                    f"column 'index': bad range {text!r} (need start <= stop, step > 0, at most "
                    f"{MAX_RANGE_IDS:,} ids)",
                    path=self.path, line=int(lines[r]),
                )
            if expanded is None:
                raise UniverseError(
                    f"column 'index': {text!r} is not a non-negative integer "
                    "(or an inclusive 'a-b[:step]' range, or empty for a whole-file sample)",
                    path=self.path, line=int(lines[r]),
                )
            # counted before it is expanded: the file's rows so far, this chunk's rows (the
            # ranges among them expanded) and the rows after it, one sample each at least
            total = self.n + len(values) + len(expanded) + len(cells) - r - 1
            if total > self.max_samples:
                self._over_budget(f"range {text!r} ({len(expanded):,} ids)", int(lines[r]))
            values.extend(expanded)
            repeat[r] = len(expanded)
            ranged = True
        return np.asarray(values, dtype=np.int64), (repeat if ranged else None)

    def _over_budget(self, what: str, line: int) -> None:
        """Refuse a file that describes more samples than :attr:`max_samples` (at ``line``)."""
        env = limits.Limits.env_name("max_samples")
        raise UniverseError(
            f"column 'index': {what} brings the file beyond {self.max_samples:,} samples, the "
            f"ceiling of one universe.csv (ranges expanded); if the data is genuine, raise it "
            f"with {env}=<n> (docs/robustness.md)",
            path=self.path, line=line,
        )

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

