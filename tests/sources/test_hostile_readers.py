"""Every reader of frame files checks what a file declares before it allocates (issue #39):
one bomb per class, all read by one child under a memory cap, and the npz size checks
fuzzed.  docs/robustness.md, "Resource budget: file readers"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dvc_cuvis.limits import LimitError
from dvc_cuvis.model.frame_read import load_npz_bytes
from dvc_cuvis.sources.door import npz_verdict
from tests.helpers import bombs
from tests.helpers.shell import ENV

ENV_VAR = "DVC_CUVIS_MAX_ARRAY_BYTES"
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.child_process
def test_every_bomb_is_refused_by_its_reader_under_a_memory_cap(tmp_path: Path) -> None:
    """Each bomb declares 0.9-2 GiB in at most a few MB; one child, capped at 1.5 GiB over
    its own size, runs enumerate's library call (the door) over each, the DataModule's
    reader and materialize's COCO rasterizer: each refuses, naming the file and the
    ceiling's variable (or what disagrees), and the child's peak memory stays small."""
    from tests.helpers.tiff import write_cube

    # the generators' shortcuts (a repeated block, CRC and Adler-32 stepped over zeros) give
    # zlib's own bytes and checksums: a bomb is refused for its size, not for a bad checksum
    n = 3 * 4096 + 5
    assert zlib.decompress(bombs.deflate_zeros(b"head", n), -15) == b"head" + bytes(n)
    assert zlib.decompress(bombs.zlib_zeros(b"head", n)) == b"head" + bytes(n)
    assert bombs.crc_zeros(zlib.crc32(b"x"), 320, block=64) == zlib.crc32(bytes(320),
                                                                          zlib.crc32(b"x"))
    bombs.npz_deflate_bomb(tmp_path / "npz-deflate" / "bomb.npz")
    bombs.npz_stored_liar(tmp_path / "npz-stored-header" / "bomb.npz", lie="header")
    bombs.npz_stored_liar(tmp_path / "npz-stored-directory" / "bomb.npz", lie="directory")
    for kind in ("declared", "inflates"):
        bombs.tiff_tile_bomb(tmp_path / f"tiff-{kind}" / "images" / "bomb.tif", kind=kind)
    for name, side in (("png-dims", 12000), ("png-ceiling", 20000)):
        write_cube(tmp_path / name / "images" / "bomb.tif", h=6, w=5)
        bombs.png_dimension_bomb(tmp_path / name / "labels" / "bomb.png", side, side)
    for kind in ("size", "counts"):
        bombs.coco_rle_bomb(tmp_path / f"rle-{kind}" / "coco.json", kind=kind)
    assert max(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) < 4 << 20

    env = {**ENV, ENV_VAR: str(bombs.CEILING), "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "tests.helpers.bombs", str(tmp_path)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    lines = [json.loads(ln) for ln in r.stdout.splitlines()]
    said = {d["case"]: d for d in lines if "case" in d}
    assert r.returncode == 0 and len(said) == 10, (r.returncode, said, r.stderr[-2000:])
    assert "Warning" not in r.stderr, r.stderr  # Pillow's bomb warning no longer leaks
    expected = {
        "npz-deflate": ("DoorError", "npz-deflate/bomb.npz: member 'cube' (bytes): declares "
                        "2,147,483,776", ENV_VAR),
        "read_npz": ("LimitError", "npz-deflate/bomb.npz: member 'cube'", ENV_VAR),
        "npz-stored-header": ("DoorError", "npz-stored-header/bomb.npz: member 'cube': its "
                              "header declares 943,718,528 bytes", "the zip only 2,097,280"),
        "npz-stored-directory": ("DoorError", "npz-stored-directory/bomb.npz: member 'cube' "
                                 "declares 943,718,528 bytes past the end of the file", ""),
        "tiff-declared": ("DoorError", "tiff-declared/images/bomb.tif: TIFF cube (32768, "
                          "65536) uint8: declares 2,147,483,648", ENV_VAR),
        "tiff-inflates": ("DoorError", "tiff-inflates/images/bomb.tif: not a readable TIFF "
                          "cube (page 0 segment 0 inflates to more than the 262,144 bytes",
                          ""),
        "png-dims": ("DoorError", "png-dims/labels/bomb.png: label shape (12000, 12000) does "
                     "not match cube", ""),
        "png-ceiling": ("DoorError", "png-ceiling/labels/bomb.png: PNG label 20000x20000 RGBA: "
                        "declares 1,600,000,000", ENV_VAR),
        "rle-size": ("DvcCuvisError", "annotation 1 of image 0: RLE size [30000, 30000] is "
                     "not the image's [6, 5]", ""),
        "rle-counts": ("DvcCuvisError", "annotation 1 of image 0: RLE counts cover "
                       "2,147,483,648 pixels, the image 6x5 has 30", ""),
    }
    for case, (kind, needle, also) in expected.items():
        got = said[case]
        assert got["raised"] == kind and needle in got["message"], (case, got)
        assert also in got["message"] and "\n" not in got["message"].split("; ")[0], (case, got)
    grew = lines[-1]["peak"] - lines[-1]["baseline"]
    assert grew < 256 << 20, f"the child's peak memory grew {grew:,} bytes"


@pytest.mark.parametrize(("shape", "said"), [
    ((-1, 2, 2), "header declares shape (-1, 2, 2); a dimension must be a whole number >= 0"),
    ((1 << 40, 1 << 40, 16), f"(array bytes): declares {(1 << 84) * 4:,}"),
    ((1 << 62, 4, 1), f"(array bytes): declares {(1 << 66):,}"),
])
def test_negative_and_overflowing_shapes_are_refused_at_the_door(
        tmp_path: Path, shape: tuple[int, ...], said: str) -> None:
    """numpy's header parser takes any integers; a negative dimension (the data then read
    past the member) or one whose product wraps int64 is refused, never admitted."""
    path = bombs.npz_shape(tmp_path / "bad.npz", shape)
    (problem,) = npz_verdict(path)
    assert problem.startswith("member 'cube'") and said in problem, problem
    if shape[0] > 0:
        assert ENV_VAR in problem


_DTYPES = ["|u1", "<i4", "<f4", ">f8", "<U3", "|b1"]
_MAX_DECLARED = 64 << 20


@st.composite
def _member(draw: st.DrawFn) -> tuple[bytes, tuple[int, ...], np.dtype, int]:
    """An npz of one ``cube.npy`` with a drawn header, a drawn amount of data and drawn
    declared sizes (as a hostile writer makes them); with the declared shape and dtype."""
    dtype = np.dtype(draw(st.sampled_from(_DTYPES)))
    small = st.lists(st.integers(0, 6), max_size=3)
    kind = draw(st.sampled_from(["fits", "negative", "over", "liar"]))
    if kind == "fits":
        shape = tuple(draw(small))
    elif kind == "negative":  # a dimension numpy's header parser lets through
        shape = (*draw(small)[:2], draw(st.integers(-3, -1)))
    elif kind == "over":  # a real array of 1-4 MiB, over the test's 1 MiB ceiling
        row = 1024 * dtype.itemsize
        shape = (draw(st.integers((1 << 20) // row + 1, (4 << 20) // row)), 1024)
    else:  # up to 64 MiB declared (a reader that trusted it would allocate no more)
        shape = tuple(draw(st.lists(st.integers(256, 2048), min_size=1, max_size=3).filter(
            lambda s: int(np.prod(s, dtype=object)) * 12 <= _MAX_DECLARED)))
    head = bombs.npy_header(shape, dtype.str)
    exact = max(0, int(np.prod(shape, dtype=object)) * dtype.itemsize)
    held = exact if kind != "liar" and draw(st.booleans()) else draw(
        st.sampled_from([exact + 3, max(0, exact - 1), 7]))
    body = head + bytes(held)
    size = len(body) if draw(st.booleans()) else draw(st.sampled_from(
        [len(body) + 1, max(0, len(body) - 1), draw(st.integers(0, _MAX_DECLARED))]))
    if draw(st.booleans()):
        packed = zlib.compressobj(6, zlib.DEFLATED, -15)
        stream = packed.compress(body) + packed.flush()
        blob = bombs.zip_one("cube.npy", stream, method=8, size=size, crc=zlib.crc32(body))
    else:
        lie = None if draw(st.booleans()) else draw(st.sampled_from(
            [size, draw(st.integers(0, _MAX_DECLARED))]))
        blob = bombs.zip_one("cube.npy", body, method=0, size=size, crc=zlib.crc32(body),
                             declared=lie)
    return blob, shape, dtype, size


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_member())
def test_fuzzed_npy_headers_and_zip_sizes_are_refused_or_read_exactly(
        tmp_path_factory: pytest.TempPathFactory,
        case: tuple[bytes, tuple[int, ...], np.dtype, int]) -> None:
    """Whatever the header and the zip declare, the reader either refuses (a LimitError
    over the ceiling, a damaged member) or gives exactly the declared array; the door
    always answers with a verdict, never an exception."""
    blob, shape, dtype, size = case
    os.environ[ENV_VAR] = str(1 << 20)
    try:
        try:
            arrays = load_npz_bytes(blob)
        except LimitError as exc:
            assert ENV_VAR in str(exc)
            assert size > 1 << 20 or "(array bytes)" in str(exc)
        except (zipfile.BadZipFile, ValueError):
            pass
        else:
            cube = arrays["cube"]
            assert cube.shape == shape and cube.dtype == dtype
            assert min(shape, default=0) >= 0 and cube.nbytes <= 1 << 20
            assert cube.nbytes == int(np.prod(shape, dtype=object)) * dtype.itemsize
        path = tmp_path_factory.mktemp("fuzz") / "f.npz"
        path.write_bytes(blob)
        verdict = npz_verdict(path)
        assert isinstance(verdict, list) and all(isinstance(p, str) for p in verdict)
    finally:
        del os.environ[ENV_VAR]
