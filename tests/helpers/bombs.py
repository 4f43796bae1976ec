"""Hostile frame files, one generator per bomb class, each cheap to make: a file declares
gigabytes while it holds a few megabytes (headers that lie, or deflate streams of zeros
built from one compressed block repeated), and the child that reads them under a memory cap.

``python -m tests.helpers.bombs DIR`` (the child) caps its address space at its size after
the imports plus :data:`HEADROOM`, runs each reader's library call over the bombs in
``DIR`` and prints one JSON line per case (what was raised) and a last line with its peak
resident memory, so a crash still leaves the cases before it.
"""

from __future__ import annotations

import json
import struct
import sys
import zlib
from pathlib import Path

import numpy as np

GIB = 1 << 30
#: the child's address space over its size after the imports
HEADROOM = 3 * GIB // 2
#: the ceiling the child runs under (DVC_CUVIS_MAX_ARRAY_BYTES); the bombs declare more
CEILING = GIB
_BLOCK = 1 << 20


# -- deflate streams of zeros -------------------------------------------------------------


def deflate_zeros(prefix: bytes, n: int) -> bytes:
    """A raw deflate stream of ``prefix`` and ``n`` zero bytes (about n / 1000 bytes): one
    compressed block of zeros, fully flushed so it stands alone, repeated."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(bytes(_BLOCK)) + c.flush(zlib.Z_FULL_FLUSH)
    rest = c.compress(bytes(n % _BLOCK)) + c.flush(zlib.Z_FINISH)
    return head + block * (n // _BLOCK) + rest


def zlib_zeros(prefix: bytes, n: int) -> bytes:
    """:func:`deflate_zeros` in zlib's wrapper (header and Adler-32), as TIFF and PNG hold it."""
    a = zlib.adler32(prefix)
    lo, hi = a & 0xFFFF, a >> 16
    adler = ((hi + n * lo) % 65521) << 16 | lo  # zeros add nothing to the low sum
    return b"\x78\xda" + deflate_zeros(prefix, n) + struct.pack(">I", adler)


def crc_zeros(crc: int, n: int, block: int = _BLOCK) -> int:
    """``zlib.crc32(bytes(n), crc)`` without the n bytes: one step over ``block`` zeros is
    affine in the register, so it is squared as often as n needs (n a multiple of block)."""
    zeros = bytes(block)
    const = zlib.crc32(zeros, 0)
    cols = [zlib.crc32(zeros, 1 << i) ^ const for i in range(32)]

    def apply(m: list[int], v: int) -> int:
        out = i = 0
        while v:
            if v & 1:
                out ^= m[i]
            v >>= 1
            i += 1
        return out

    k = n // block
    while k:
        if k & 1:
            crc = apply(cols, crc) ^ const
        cols, const = [apply(cols, c) for c in cols], apply(cols, const) ^ const
        k >>= 1
    return crc


# -- npz -----------------------------------------------------------------------------------


def npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    """A ``.npy`` 1.0 header declaring ``shape`` (any integers, as a hostile writer may)."""
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}"
    pad = 64 - (10 + len(text) + 1) % 64
    text += " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin1")


def zip_one(name: str, body: bytes, *, method: int, size: int, crc: int,
            declared: int | None = None) -> bytes:
    """A zip holding one member of ``body`` (its bytes as stored), declaring ``size``
    uncompressed bytes (``declared``: a compressed size other than ``len(body)``)."""
    comp = len(body) if declared is None else declared
    fname = name.encode()
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, comp,
                        size, len(fname), 0) + fname
    central = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21,
                          crc, comp, size, len(fname), 0, 0, 0, 0, 0, 0) + fname
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central),
                      len(local) + len(body), 0)
    return local + body + central + end


def npz_deflate_bomb(path: Path, nbytes: int = 2 * GIB) -> Path:
    """A deflated ``cube.npy`` of ``nbytes`` zeros (float32), consistent in every header
    and CRC, in about nbytes / 1000 bytes of file."""
    head = npy_header((nbytes // 4 // 1024, 1024, 1))
    crc = crc_zeros(zlib.crc32(head), nbytes)
    body = deflate_zeros(head, nbytes)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(zip_one("cube.npy", body, method=8, size=len(head) + nbytes, crc=crc))
    return path


def npz_stored_liar(path: Path, *, lie: str, declared: int = 900 << 20,
                    held: int = 2 << 20) -> Path:
    """A stored ``cube.npy`` holding ``held`` bytes of data that claims ``declared``:
    ``lie="header"`` (the ``.npy`` header says so, the zip tells the truth) or
    ``lie="directory"`` (header and zip both say so; the file ends first)."""
    head = npy_header((declared // 4, 1, 1))
    body = head + bytes(held)
    size = len(head) + declared if lie == "directory" else len(body)
    blob = zip_one("cube.npy", body, method=0, size=size, crc=zlib.crc32(body),
                   declared=size)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)
    return path


def npz_shape(path: Path, shape: tuple[int, ...], data: bytes = bytes(64)) -> Path:
    """A stored ``cube.npy`` whose header declares ``shape`` (negative, overflowing, ...)
    over ``data``, followed by good wavelengths (a zip numpy itself writes)."""
    import zipfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("cube.npy", npy_header(shape) + data)
        zf.writestr("wavelengths.npy", _npy(np.arange(2, dtype=np.int32)))
    return path


def _npy(arr: np.ndarray) -> bytes:
    import io

    out = io.BytesIO()
    np.lib.format.write_array(out, arr)
    return out.getvalue()


# -- TIFF ----------------------------------------------------------------------------------


def _tiff(width: int, height: int, tile: int, tiles: list[tuple[int, int]],
          tail: bytes) -> bytes:
    """A little-endian tiled uint8 TIFF with deflate tiles at (offset, count)."""
    n = len(tiles)
    entries = [(256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, 8), (259, 3, 1, 8),
               (262, 3, 1, 1), (277, 3, 1, 1), (322, 3, 1, tile), (323, 3, 1, tile)]
    ifd_at = 8
    arrays_at = ifd_at + 2 + 12 * 10 + 4
    offsets = struct.pack(f"<{n}I", *[o + arrays_at + 8 * n for o, _ in tiles])
    counts = struct.pack(f"<{n}I", *[c for _, c in tiles])
    entries += [(324, 4, n, arrays_at if n > 1 else struct.unpack("<I", offsets)[0]),
                (325, 4, n, arrays_at + 4 * n if n > 1 else tiles[0][1])]
    ifd = struct.pack("<H", len(entries))
    for tag, typ, count, value in sorted(entries):
        ifd += struct.pack("<HHII", tag, typ, count, value)
    ifd += struct.pack("<I", 0)
    return b"II*\x00" + struct.pack("<I", ifd_at) + ifd + offsets + counts + tail


def tiff_tile_bomb(path: Path, *, kind: str) -> Path:
    """``kind="declared"``: a 65536 x 32768 image (2 GiB of uint8, 8 GiB as the float32
    frame) whose 8192 tiles all point at one small compressed tile; ``"inflates"``: one
    512 x 512 tile whose deflate stream inflates to 2 GiB."""
    if kind == "declared":
        one = zlib.compress(bytes(512 * 512), 9)
        blob = _tiff(65536, 32768, 512, [(0, len(one))] * (128 * 64), one)
    else:
        stream = zlib_zeros(b"", 2 * GIB)
        blob = _tiff(512, 512, 512, [(0, len(stream))], stream)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)
    return path


# -- PNG -----------------------------------------------------------------------------------


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(
        ">I", zlib.crc32(kind + data))


def png_dimension_bomb(path: Path, width: int = 12000, height: int = 12000,
                       color: int = 6) -> Path:
    """An 8-bit PNG (RGBA by default) of ``width`` x ``height`` zeros: hundreds of MB
    decoded, under a megabyte on disk, and past Pillow's warning threshold."""
    bands = {0: 1, 2: 3, 6: 4}[color]
    ihdr = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    idat = zlib_zeros(b"", height * (1 + width * bands))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat)
                     + _chunk(b"IEND", b""))
    return path


# -- COCO RLE ------------------------------------------------------------------------------


def coco_rle_bomb(path: Path, *, kind: str, h: int = 6, w: int = 5) -> Path:
    """A COCO file of one ``h`` x ``w`` image and one RLE annotation: ``kind="size"``, a
    7-byte compressed RLE declaring 30000 x 30000; ``"counts"``, the image's size but run
    lengths covering 2**31 pixels (pycocotools would write them all into h x w bytes)."""
    seg: dict[str, object] = ({"size": [30000, 30000], "counts": "0PPPPP1"} if kind == "size"
                              else {"size": [h, w], "counts": [0, 1 << 31]})
    doc = {"images": [{"id": 0, "height": h, "width": w, "file_name": "a"}],
           "annotations": [{"id": 1, "image_id": 0, "category_id": 1, "segmentation": seg,
                            "area": 1, "bbox": [0, 0, 1, 1], "iscrowd": 1}],
           "categories": [{"id": 1, "name": "x"}]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


# -- the child -----------------------------------------------------------------------------


def _vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")


def _case(name: str, call) -> None:  # type: ignore[no-untyped-def]
    try:
        call()
        said = {"case": name, "raised": None}
    except BaseException as exc:  # the parent judges what was raised
        said = {"case": name, "raised": type(exc).__name__, "message": str(exc)}
    print(json.dumps(said), flush=True)


def main(root: Path) -> None:
    """Run every reader over the bombs under ``root`` (see the module's docstring)."""
    import resource
    import warnings

    import PIL.Image  # noqa: F401  (every import before the cap is measured)
    import pycocotools.coco  # noqa: F401
    import tifffile  # noqa: F401

    from dvc_cuvis.model.frame_read import read_npz
    from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
    from dvc_cuvis.sources.coco import class_mask, load_coco

    warnings.simplefilter("default")  # a warning a reader lets through reaches stderr
    cap = _vm_size() + HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def enum(fmt: str, folder: str) -> None:
        enumerate_universe(EnumerateOptions(format=fmt, root=root / folder,
                                            out_dir=root / folder, jobs=1))

    # run lengths past their buffer may crash a reader that trusts them: that case last
    for folder in sorted((p.name for p in root.iterdir() if p.is_dir()),
                         key=lambda n: (n == "rle-counts", n)):
        fmt = "tiff" if folder.startswith(("tiff", "png")) else "npz"
        if folder.startswith("rle"):
            coco_file = root / folder / "coco.json"
            _case(folder, lambda f=coco_file: class_mask(load_coco(f), 0, (6, 5), where=f))
        else:
            _case(folder, lambda f=folder, k=fmt: enum(k, f))
    _case("read_npz", lambda: read_npz(str(root / "npz-deflate" / "bomb.npz")))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"baseline": base, "peak": peak}), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
