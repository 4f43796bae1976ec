"""Fixture paths and writers of the small data files the tests build on."""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
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


def sneaky_edit(path: Path) -> None:
    """Rewrite ``path`` in place, same length, keeping its inode, size and mtime.

    The byte changed is the last one of the frame's ``cube`` member: the file stays a
    readable npz (a re-scan reads its other members), only its md5 changes.
    """
    st = path.stat()
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("cube.npy")
    start = info.header_offset + 30 + int.from_bytes(
        data[info.header_offset + 26:info.header_offset + 28], "little") + int.from_bytes(
        data[info.header_offset + 28:info.header_offset + 30], "little")
    data[start + info.compress_size - 1] ^= 1
    with path.open("r+b") as fh:  # in place: the inode stays
        fh.write(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (st.st_ino, st.st_size,
                                                                 st.st_mtime_ns)
