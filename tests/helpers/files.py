"""Fixture paths and writers of the small data files the tests build on."""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
import zlib
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
FIXTURES = TESTS / "fixtures"
#: A test double of Cubert's ``cuvis`` SDK (the real one needs libcuvis.so).
SDK_DOUBLE = TESTS / "sdk_double"


def write_universe_csv(
    path: Path, rows: list[tuple[str, int]], header: str = "source,index"
) -> Path:
    """Write a tiny universe.csv (rows as given, LF endings)."""
    path.write_text(header + "\n" + "".join(f"{s},{i}\n" for s, i in rows), encoding="utf-8")
    return path


def write_session(path: Path, n: int, seed: int = 0) -> None:
    """A ``.cu3s`` session of the SDK double: ``n`` measurements of 4 x 5 x 3."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"measurements": n, "height": 4, "width": 5, "bands": 3,
                                "seed": seed, "references": ["White", "Dark"]}))


def tree(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative POSIX path -> digest), lock file aside."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".materialize.lock"}


def tiff_project(tmp_path: Path) -> Path:
    """TIFF and npz data, a universe.csv of the TIFF cubes and a baked splits.json."""
    from dvc_cuvis.baking.core import BakeOptions, bake
    from dvc_cuvis.model.universe_io import read_universe, write_universe
    from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
    from examples.generate import generate

    generate(tmp_path / "data", sessions=4, frames=3, size=(8, 10), bands=4, seed=2)
    uni, _ = enumerate_universe(EnumerateOptions(format="tiff", root=tmp_path / "data/tiff",
                                                 out_dir=tmp_path))
    write_universe(uni, tmp_path / "universe.csv")
    (b,) = bake(read_universe(tmp_path / "universe.csv"), BakeOptions(seed=1, test_ratio=0.3))
    (tmp_path / "splits.json").write_text(json.dumps(b.config.to_dict(), indent=2))
    return tmp_path


def _write_crc(data: bytearray, info: zipfile.ZipInfo, start: int) -> None:
    """The CRC-32 of a stored member's bytes, written where the zip records it."""
    assert info.compress_type == zipfile.ZIP_STORED, info.filename
    crc = zlib.crc32(bytes(data[start:start + info.compress_size])).to_bytes(4, "little")
    data[info.header_offset + 14:info.header_offset + 18] = crc  # the local header
    name = info.filename.encode()
    at = data.find(b"PK\x01\x02")
    while at >= 0:  # and the member's entry in the central directory
        name_len = int.from_bytes(data[at + 28:at + 30], "little")
        if data[at + 46:at + 46 + name_len] == name:
            data[at + 16:at + 20] = crc
        at = data.find(b"PK\x01\x02", at + 46 + name_len)


def sneaky_edit(path: Path, *, valid: bool = False) -> None:
    """Rewrite ``path`` in place, same length, keeping its inode, size and mtime.

    The byte changed is the last one of the frame's ``cube`` member: the zip stays
    readable but the member's CRC-32 fails (enumerate's door refuses it).  With ``valid``
    the CRC is written again (local header and central directory), so the file stays a
    valid npz that the door accepts, and only its md5 changes.
    """
    st = path.stat()
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("cube.npy")
    start = info.header_offset + 30 + int.from_bytes(
        data[info.header_offset + 26:info.header_offset + 28], "little") + int.from_bytes(
        data[info.header_offset + 28:info.header_offset + 30], "little")
    data[start + info.compress_size - 1] ^= 1
    if valid:
        _write_crc(data, info, start)
    with path.open("r+b") as fh:  # in place: the inode stays
        fh.write(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (st.st_ino, st.st_size,
                                                                 st.st_mtime_ns)


def gui_setup(tmp_path: Path) -> tuple[Path, Path, str]:
    """A GUI-authored split ({DATA_DIR} tokens) over two cu3s files, and its universe.csv."""
    data_dir = tmp_path.resolve().as_posix()
    splits = tmp_path / "splits.json"
    splits.write_text((FIXTURES / "gui_authored_splits.json").read_text()
                      .replace("{DATA_DIR}", data_dir))
    rows = [(f"{data_dir}/{d}", i) for d in ("day3/b.cu3s", "day2/a.cu3s") for i in range(7)]
    return write_universe_csv(tmp_path / "universe.csv", rows), splits, data_dir
