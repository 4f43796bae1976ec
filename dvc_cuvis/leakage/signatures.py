"""A frame's signature: what its content is (a digest of the data array, not the container)
and what it looks like (a 64-bit spatial perceptual hash plus a short spectral shape).

The digest pairs exact copies whatever file holds them (an npz re-saved with another
compression, one frame inside two cu3s files); the perceptual hash and the spectral shape pair
near copies under sensor noise, shifts of a few pixels and a gain change, because the image is
band-averaged and reduced to the signs of its lowest spatial frequencies, hashed again on
crops shifted around its centre, and the spectrum is normalised to unit length.  A signature
is stored as a versioned JSON record beside a frame's summary; :func:`from_record` refuses
anything else with a typed error.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.model.zip_crc import crc32

#: The version of the signature recipe; a record of another version counts as absent.
#: 3: the content digest is of one CRC-32 of all the data bytes (2: of each quarter's), the
#: CRC the frame writer takes anyway, so signing a frame makes no pass over its bytes.
SIGNATURE_VERSION = 3
#: The record's key in a frame's summary entry.
SIGNATURE_KEY = "signature"
#: Values in the spectral shape.
SHAPE_LENGTH = 16
#: Side of the reduced image the perceptual hash is taken from.
_GRID = 16
#: The 64 lowest DCT frequencies (k + l, then k), DC left out: the hash's bits, in order.
_LOW = sorted(((r, c) for r in range(_GRID) for c in range(_GRID) if r or c),
              key=lambda rc: (rc[0] + rc[1], rc))[:64]
_LOW_ROWS = np.array([r for r, _ in _LOW])
_LOW_COLS = np.array([c for _, c in _LOW])
#: The shorter side (pixels of the image hashed) below which no shifted crops are hashed.
_MIN_CROP_SIDE = 8
#: Shifted crops hashed beside the centre (a ring of one step around it).
CROPS = 8
#: Pixels of the regular grid the hash and the shape are taken from, at most (a strided view:
#: the cube is never copied whole; only the content digest reads every byte).
SAMPLE_PIXELS = 4096

_HEX = re.compile(r"[0-9a-f]+\Z")
_LITTLE = sys.byteorder == "little"


class DamagedSignatureError(DvcCuvisError):
    """A stored signature that is not what materialize writes (materialize rebuilds it)."""

    def __init__(self, path: Path | str, why: str) -> None:
        """The file holding the signature and what is wrong; the message names the fix."""
        super().__init__(f"{path}: damaged or foreign frame signature ({why}); rerun "
                         "dvc-cuvis materialize on its folder, which rebuilds it")
        self.path, self.why = path, why


@dataclass(frozen=True)
class Signature:
    """One frame's signature: content digest, perceptual hash and spectral shape."""

    content: str  # 128-bit hex digest of dtype, shape and the CRC-32 of the C-order bytes
    phash: int  # 64-bit spatial perceptual hash (of the centre crop)
    shape: tuple[float, ...]  # L2-normalised mean spectrum, SHAPE_LENGTH values (or fewer)
    crops: tuple[int, ...] = ()  # the hashes of the CROPS crops shifted around the centre


def content_digest(array: np.ndarray, data_crc: int | None = None) -> str:
    """The digest of an array's data in canonical form, so a container never changes it.

    It is the sha256 (first 128 bits) of the dtype, the shape and the zip CRC-32 of the
    C-order little-endian bytes. ``data_crc``: that CRC where the caller has it already (the
    frame writer takes it for the zip member: :func:`~dvc_cuvis.model.frame_bytes.npz_parts`);
    it is used only for a C-contiguous array stored little-endian, else the bytes are read
    (:func:`~dvc_cuvis.model.zip_crc.crc32`, the fastest checksum the system has). Any change
    of the data changes the CRC unless it is crafted to collide: this pairs copies for the
    leakage checks, it is not the frames' integrity (their md5 is)."""
    arr = np.asarray(array)
    little = arr.dtype.byteorder in ("<", "|") or (arr.dtype.byteorder == "=" and _LITTLE)
    if data_crc is None or not (little and arr.flags.c_contiguous):
        dtype = arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else arr.dtype
        arr = np.ascontiguousarray(arr, dtype=dtype)
        data_crc = crc32(arr.reshape(-1).view(np.uint8).data)  # 0 for no bytes
    text = f"{arr.dtype.str}|{','.join(str(n) for n in arr.shape)}|{data_crc:08x}\n"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def sample_grid(cube: np.ndarray) -> np.ndarray:
    """A strided view of at most :data:`SAMPLE_PIXELS` pixels of a cube (every ``s``-th row
    and column), so the hash and the shape cost the same for any frame size."""
    arr = np.asarray(cube)
    if arr.ndim < 2:
        return arr
    step = max(1, math.ceil(math.sqrt(arr.shape[0] * arr.shape[1] / SAMPLE_PIXELS)))
    return arr[::step, ::step]


@functools.lru_cache(maxsize=256)
def _cells(rows: int, cols: int, side: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the cells of a ``rows`` x ``cols`` image start (rows, columns) and their pixel
    counts, at most ``side`` x ``side`` of them (cached: the crops of a run share sizes)."""
    r_edges = np.linspace(0, rows, min(side, rows) + 1).astype(np.intp)
    c_edges = np.linspace(0, cols, min(side, cols) + 1).astype(np.intp)
    counts = np.outer(np.diff(r_edges), np.diff(c_edges))
    for a in (r_edges, c_edges, counts):
        a.flags.writeable = False
    return r_edges[:-1], c_edges[:-1], counts


def _block_means(image: np.ndarray, side: int) -> np.ndarray:
    """The image reduced to at most ``side`` x ``side`` cells by area means (any size)."""
    r_starts, c_starts, counts = _cells(*image.shape, side)
    sums = np.add.reduceat(np.add.reduceat(image, r_starts), c_starts, axis=1)
    return sums / counts  # float64, as the image is


@functools.lru_cache(maxsize=64)
def _dct_matrix(n: int) -> np.ndarray:
    """The orthonormal DCT-II basis of size ``n`` (rows = frequencies; cached, read-only)."""
    k = np.arange(n)[:, None]
    x = np.arange(n)[None, :]
    m = np.cos(math.pi * (2 * x + 1) * k / (2 * n)) * math.sqrt(2.0 / n)
    m[0] /= math.sqrt(2.0)
    m.flags.writeable = False
    return m


def _hash_image(image: np.ndarray) -> int:
    """The 64 bits of one band-averaged image: area means on a 16 x 16 grid, centred, and the
    signs of its 64 lowest DCT frequencies (by ``k + l``, DC left out). A sign is what
    noise and gain keep: a coefficient near zero is rare among the lowest frequencies, where
    a median threshold meets many small ones."""
    grid = _block_means(image, _GRID)
    grid = grid - grid.mean()
    full = np.zeros((_GRID, _GRID))
    rows, cols = grid.shape
    full[:rows, :cols] = _dct_matrix(rows) @ grid @ _dct_matrix(cols).T
    bits = np.packbits(full[_LOW_ROWS, _LOW_COLS] > 0, bitorder="little")  # bit i: i-th
    return int(bits.view("<u8")[0])


def crop_step(rows: int, cols: int) -> int:
    """How far apart (in pixels of the image hashed) the shifted crops lie: a 32nd of the
    shorter side, 0 (no crops) for an image under 8 pixels on a side."""
    side = min(rows, cols)
    return 0 if side < _MIN_CROP_SIDE else max(1, round(side / 32))


def perceptual_hashes(cube: np.ndarray) -> tuple[int, tuple[int, ...]]:
    """A cube's perceptual hash (of its image less a margin of one crop step) and the hashes
    of the 8 crops shifted by one step around it, so a copy shifted by up to 1.5 steps has a
    crop that nearly lines up with the other's centre: shifts cost few bits."""
    arr = np.asarray(cube, dtype=np.float64)
    image = arr.mean(axis=2) if arr.ndim == 3 else arr.reshape(arr.shape[0], -1)
    image = np.where(np.isfinite(image), image, 0.0)
    rows, cols = image.shape
    m = crop_step(rows, cols)  # 0: the centre is the whole image, and no crops
    centre = _hash_image(image[m:rows - m, m:cols - m])
    crops = tuple(_hash_image(image[m + dy:rows - m + dy, m + dx:cols - m + dx])
                  for dy in (-m, 0, m) for dx in (-m, 0, m) if dy or dx)
    return centre, crops


def perceptual_hash(cube: np.ndarray) -> int:
    """A 64-bit hash of a cube's band-averaged image that noise, small shifts and gain keep."""
    return perceptual_hashes(cube)[0]


def spectral_shape(cube: np.ndarray) -> tuple[float, ...]:
    """The mean spectrum of a cube reduced to a few values and normalised, so gain cancels."""
    arr = np.asarray(cube, dtype=np.float64)
    spectrum = arr.reshape(-1, arr.shape[-1]) if arr.ndim == 3 else arr.reshape(-1, 1)
    mean = spectrum.mean(axis=0)  # finite exactly when every value is (float64 sums)
    if not np.isfinite(mean).all():
        finite = np.isfinite(spectrum).all(axis=1)
        mean = spectrum[finite].mean(axis=0) if finite.any() else np.zeros(spectrum.shape[1])
    parts = [float(p.mean()) for p in np.array_split(mean, min(SHAPE_LENGTH, len(mean)))]
    norm = math.sqrt(sum(v * v for v in parts))
    return tuple(round(v / norm, 6) if norm > 0 else 0.0 for v in parts)


def signature(cube: np.ndarray, data_crc: int | None = None) -> Signature:
    """The signature of one ``[H, W, C]`` cube (its data array, whatever file held it);
    ``data_crc``: the CRC-32 of its bytes where the caller has it (:func:`content_digest`)."""
    grid = np.asarray(sample_grid(cube), dtype=np.float64)  # one float64 copy for both
    centre, crops = perceptual_hashes(grid)
    return Signature(content_digest(cube, data_crc), centre, spectral_shape(grid), crops)


def to_record(sig: Signature) -> dict[str, Any]:
    """A signature as plain JSON types, versioned (the summary entry's ``signature`` field)."""
    return {"v": SIGNATURE_VERSION, "content": sig.content, "phash": f"{sig.phash:016x}",
            "shape": list(sig.shape), "crops": [f"{h:016x}" for h in sig.crops]}


def from_record(rec: object, where: Path | str) -> Signature | None:
    """The signature a record holds; None for another version (counts as no signature);
    :class:`DamagedSignatureError` naming ``where`` for anything that is not a record."""
    if not isinstance(rec, dict):
        raise DamagedSignatureError(where, "not an object")
    version = rec.get("v")
    if isinstance(version, int) and not isinstance(version, bool) and version != SIGNATURE_VERSION:
        return None
    if version != SIGNATURE_VERSION:
        raise DamagedSignatureError(where, "no version")
    content, phash, shape = rec.get("content"), rec.get("phash"), rec.get("shape")
    if not isinstance(content, str) or len(content) != 32 or not _HEX.match(content):
        raise DamagedSignatureError(where, "'content' is not a 32-digit hex digest")
    if not isinstance(phash, str) or len(phash) != 16 or not _HEX.match(phash):
        raise DamagedSignatureError(where, "'phash' is not a 16-digit hex hash")
    if (not isinstance(shape, list) or not 1 <= len(shape) <= SHAPE_LENGTH
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                       and math.isfinite(v) and abs(v) <= 1.0 for v in shape)):
        raise DamagedSignatureError(where, "'shape' is not a list of unit-range numbers")
    crops = rec.get("crops", [])
    if (not isinstance(crops, list) or len(crops) not in (0, CROPS)
            or not all(isinstance(h, str) and len(h) == 16 and _HEX.match(h) for h in crops)):
        raise DamagedSignatureError(where, f"'crops' is not a list of {CROPS} 16-digit hex hashes")
    return Signature(content, int(phash, 16), tuple(float(v) for v in shape),
                     tuple(int(h, 16) for h in crops))


@dataclass(frozen=True)
class SignatureColumns:
    """Many frames' signatures as arrays, one row per frame: what the audit reads, so that a
    million frames cost array operations, never a Python object per frame."""

    content: np.ndarray  # [n] bytes (S16): the content digest
    phash: np.ndarray  # [n] uint64: the perceptual hash of the centre
    shape: np.ndarray  # [n, SHAPE_LENGTH] float64: the spectral shape, zero-padded
    crops: np.ndarray  # [n, CROPS] uint64: the crops' hashes (rows without crops: zeros)
    cropped: np.ndarray  # [n] bool: whether the frame has crop hashes

    def __len__(self) -> int:
        """The frames held."""
        return len(self.phash)


def columns(sigs: Sequence[Signature]) -> SignatureColumns:
    """Signatures as columns (see :class:`SignatureColumns`)."""
    shape = np.zeros((len(sigs), SHAPE_LENGTH))
    crops = np.zeros((len(sigs), CROPS), dtype=np.uint64)
    cropped = np.zeros(len(sigs), dtype=bool)
    for i, s in enumerate(sigs):
        shape[i, :len(s.shape)] = s.shape
        if s.crops:
            crops[i], cropped[i] = s.crops, True
    return SignatureColumns(
        np.frombuffer(bytes.fromhex("".join(s.content for s in sigs)), dtype="S16").copy(),
        np.array([s.phash for s in sigs], dtype=np.uint64), shape, crops, cropped)


def _hex_words(texts: list[object], size: int) -> np.ndarray | None:
    """``texts`` (each ``size`` lowercase hex digits) as big-endian words in one pass; None
    when one is not."""
    if set(map(type, texts)) - {str}:
        return None
    strings = cast(list[str], texts)
    if set(map(len, strings)) - {size}:
        return None
    joined = "".join(strings)
    if joined and not _HEX.match(joined):
        return None
    return np.frombuffer(bytes.fromhex(joined), dtype=f">u{size // 2}" if size == 16
                         else f"S{size // 2}")


def _shape_column(values: list[object]) -> np.ndarray | None:
    """The spectral shapes as a zero-padded float64 ``[n, SHAPE_LENGTH]`` array; None when
    one is not a list of 1 to SHAPE_LENGTH finite unit-range numbers."""
    if set(map(type, values)) - {list}:
        return None
    shapes = cast(list[list[float]], values)
    if (not all(1 <= len(v) <= SHAPE_LENGTH for v in shapes)
            or set(map(type, itertools.chain.from_iterable(shapes))) - {float, int}):
        return None
    lengths = set(map(len, shapes))
    if len(lengths) == 1 and SHAPE_LENGTH in lengths:
        out = np.array(shapes, dtype=np.float64).reshape(len(shapes), SHAPE_LENGTH)
    else:
        out = np.zeros((len(shapes), SHAPE_LENGTH))
        for i, v in enumerate(shapes):
            out[i, :len(v)] = v
    return out if bool((np.isfinite(out) & (np.abs(out) <= 1.0)).all()) else None


def _read_columns(recs: list[dict[str, object]]) -> SignatureColumns | None:
    """Records of the current version as columns in one pass of each field; None when one of
    them is not what :func:`from_record` accepts."""
    lists = [r.get("crops", []) for r in recs]
    if set(map(type, lists)) - {list}:
        return None
    crop_lists = cast(list[list[object]], lists)
    if set(map(len, crop_lists)) - {0, CROPS}:
        return None
    content = _hex_words([r.get("content") for r in recs], 32)
    phash = _hex_words([r.get("phash") for r in recs], 16)
    crops = _hex_words(list(itertools.chain.from_iterable(crop_lists)), 16)
    shape = _shape_column([r.get("shape") for r in recs])
    if content is None or phash is None or crops is None or shape is None:
        return None
    cropped = np.array([len(c) == CROPS for c in crop_lists], dtype=bool)
    table = np.zeros((len(recs), CROPS), dtype=np.uint64)
    table[cropped] = crops.astype(np.uint64).reshape(-1, CROPS)
    return SignatureColumns(content.copy(), phash.astype(np.uint64), shape, table, cropped)


def columns_from_records(records: Sequence[object], where: Sequence[Path | str]
                         ) -> tuple[np.ndarray, SignatureColumns]:
    """Stored records as columns: which records hold a signature of the current version
    (``[n]`` bool; another version counts as none), and their columns, in order. It
    accepts and refuses exactly what :func:`from_record` does, with the same error naming
    ``where[i]``, but reads each field of all records at once."""
    version = [r.get("v") if type(r) is dict else None for r in records]
    current = np.array([type(v) is int and v == SIGNATURE_VERSION for v in version], dtype=bool)
    other = np.array([type(v) is int and v != SIGNATURE_VERSION for v in version], dtype=bool)
    fast = None
    if bool((current | other).all()):
        fast = _read_columns(cast(list[dict[str, object]],
                                  list(itertools.compress(records, current.tolist()))))
    if fast is not None:
        return current, fast
    sigs = [from_record(r, w) for r, w in zip(records, where, strict=True)]  # raises: says why
    return (np.array([s is not None for s in sigs], dtype=bool),
            columns([s for s in sigs if s is not None]))
