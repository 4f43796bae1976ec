"""Deterministic synthetic hyperspectral example dataset (TIFF + PNG, and npz + COCO).

Run ``python examples/generate.py --out DIR`` (``--help`` lists the knobs) or call
:func:`generate`.  Same arguments give byte-identical files on any machine and under any
output path:

* every random draw comes from ``numpy.random.default_rng`` seeded with
  ``(seed, stream, session index[, frame index])``, so a session's files depend only on
  the seed, its own index and the frame/size/band arguments.  ``--extra-sessions`` appends
  sessions after the base ones and never changes a byte of the base files;
* cube values are quantized to a 12-bit grid (multiples of 1/4096, exact in float32), so a
  last-bit difference in a platform's ``exp`` cannot reach the files;
* nothing machine- or time-dependent is written: no timestamps, no absolute paths, no
  software tag, fixed zip member dates/attributes, sorted iteration;
* nothing is deflate-compressed: zlib, zlib-ng (Fedora >= 40, Python 3.14 on Windows,
  Pillow wheels) and their CPU-specific code paths emit different deflate streams for the
  same input, so npz members are ``ZIP_STORED`` and label PNGs use ``compress_level=0``
  (stored deflate blocks).  Bytes are still tied to the numpy/tifffile/Pillow versions.

Files are written atomically (temp file + ``os.replace``) and only when their bytes
change; files under ``tiff/`` and ``npz/`` that this run did not produce are removed, so a
smaller ``--sessions`` leaves no stale frames.  Nothing outside those two folders is
touched.  The layout is described in ``examples/README.md``.

Only numpy, tifffile and Pillow are needed (the latter two are imported lazily, so
``--help`` works without them).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

CATEGORIES: list[dict[str, Any]] = [
    {"id": 1, "name": "scratch"},
    {"id": 2, "name": "dent"},
    {"id": 3, "name": "stain"},
]
WAVELENGTH_MIN_NM = 450
WAVELENGTH_MAX_NM = 900
MAX_BANDS = WAVELENGTH_MAX_NM - WAVELENGTH_MIN_NM + 1  # distinct integer wavelengths
MAX_SESSIONS = 99  # two-digit ``sNN`` keeps names sorting in numbering order
MAX_FRAMES = 1000  # three-digit ``fNNN`` in the TIFF names
MIN_SIDE = 8
QUANT = 4096.0  # 12-bit reflectance grid; k / 4096 is exact in float32
NOISE_SIGMA = 0.01
SESSIONS_PER_DAY = 2
LINES = ("a", "b")

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_ZIP_ATTR = 0o100644 << 16  # regular file, rw-r--r--
# Deflate output differs between zlib implementations (see module docstring); stored
# members keep the npz bytes identical everywhere.  The masks are small either way.
_CUBE_COMPRESSION = zipfile.ZIP_STORED
_MASK_COMPRESSION = zipfile.ZIP_STORED

# stream tags for the seed sequences (keep distinct so no two streams share entropy)
_SESSION_STREAM = 1
_FRAME_STREAM = 2


# -- naming --------------------------------------------------------------------------------


def session_names(sessions: int, extra_sessions: int = 0) -> list[str]:
    """Session names: base ones two per day, extras continue numbering on later days.

    ``day1_line-a_s01, day1_line-b_s02, day2_line-a_s03, ...``; extra session ``j`` goes
    on day ``ceil(sessions / 2) + 1 + j // 2`` so it never shares a day with a base one.
    """
    names = []
    for i in range(sessions):
        day = i // SESSIONS_PER_DAY + 1
        names.append(f"day{day}_line-{LINES[i % 2]}_s{i + 1:02d}")
    base_days = -(-sessions // SESSIONS_PER_DAY)
    for j in range(extra_sessions):
        day = base_days + 1 + j // SESSIONS_PER_DAY
        names.append(f"day{day}_line-{LINES[j % 2]}_s{sessions + j + 1:02d}")
    return names


def wavelengths_nm(bands: int) -> np.ndarray:
    """``bands`` distinct integer wavelengths spread evenly over 450..900 nm (int32)."""
    wl = np.rint(np.linspace(WAVELENGTH_MIN_NM, WAVELENGTH_MAX_NM, bands))
    return wl.astype(np.int32)


def gdal_metadata_xml(wavelengths: np.ndarray) -> str:
    """GDAL_METADATA (tag 42112) XML carrying the ENVI-style wavelength list."""
    values = ",".join(str(int(w)) for w in wavelengths)
    return (
        "<GDALMetadata>\n"
        f'  <Item name="wavelength" domain="ENVI">{{{values}}}</Item>\n'
        '  <Item name="wavelength_units" domain="ENVI">Nanometers</Item>\n'
        "</GDALMetadata>\n"
    )


# -- synthetic content ---------------------------------------------------------------------


def _gauss(x: np.ndarray, mu: float, sigma: float) -> np.ndarray:
    return np.exp(-0.5 * ((x - mu) / sigma) ** 2)


def _material_spectra(wl: np.ndarray, rng: np.random.Generator) -> dict[int, np.ndarray]:
    """Smooth reflectance spectra: 0 = panel background, 1..3 = defect categories."""
    lam = wl.astype(np.float64)
    t = (lam - WAVELENGTH_MIN_NM) / (WAVELENGTH_MAX_NM - WAVELENGTH_MIN_NM)
    offset = rng.uniform(-0.03, 0.03)
    tilt = rng.uniform(-0.04, 0.04)
    # painted panel: green-ish bump at 550 nm and a red-edge rise towards the NIR
    background = 0.30 + offset + (0.20 + tilt) * t + 0.10 * _gauss(lam, 550.0, 40.0)
    return {
        0: background,
        # scratch: bare metal, bright and nearly flat
        1: 0.78 - 0.06 * t,
        # dent: same paint, shaded, with a slightly bluer tilt
        2: 0.55 * background + 0.04 * (1.0 - t),
        # stain: brownish residue with an absorption band around 680 nm
        3: 0.12 + 0.45 * t - 0.15 * _gauss(lam, 680.0, 35.0),
    }


def _place_defects(
    rng: np.random.Generator, height: int, width: int, count: int
) -> list[tuple[int, int, int, int]]:
    """Up to ``count`` non-touching rectangles ``(x0, y0, x1, y1)`` (x1/y1 exclusive)."""
    rects: list[tuple[int, int, int, int]] = []
    for _ in range(count):
        for _attempt in range(32):
            h = int(rng.integers(max(2, height // 8), max(3, height // 3) + 1))
            w = int(rng.integers(max(2, width // 8), max(3, width // 3) + 1))
            y0 = int(rng.integers(1, height - h))  # keep a 1-pixel border
            x0 = int(rng.integers(1, width - w))
            cand = (x0, y0, x0 + w, y0 + h)
            if all(
                cand[2] + 1 <= r[0] or r[2] + 1 <= cand[0] or cand[3] + 1 <= r[1]
                or r[3] + 1 <= cand[1]
                for r in rects
            ):
                rects.append(cand)
                break
    return rects


class _Frame:
    __slots__ = ("class_mask", "cube", "defects")

    def __init__(
        self, cube: np.ndarray, class_mask: np.ndarray, defects: list[tuple[int, tuple]]
    ) -> None:
        self.cube = cube  # [H, W, C] float32
        self.class_mask = class_mask  # [H, W] uint8
        self.defects = defects  # [(category_id, (x0, y0, x1, y1))]


def _session_frames(
    seed: int, index: int, frames: int, height: int, width: int, wl: np.ndarray
) -> list[_Frame]:
    """All frames of session ``index`` (0-based); depends on nothing else."""
    srng = np.random.default_rng([seed, _SESSION_STREAM, index])
    spectra = _material_spectra(wl, srng)
    all_normal = index % 3 == 2  # about a third of the sessions carry no defects
    if all_normal:
        anomalous: set[int] = set()
    else:
        n_anom = int(srng.integers(1, frames)) if frames >= 2 else 1
        anomalous = {int(k) for k in srng.choice(frames, size=n_anom, replace=False)}

    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    yy /= max(height - 1, 1)
    xx /= max(width - 1, 1)
    out = []
    ordinal = 0
    for k in range(frames):
        frng = np.random.default_rng([seed, _FRAME_STREAM, index, k])
        # smooth illumination field: a gentle linear gradient in a random direction
        gx, gy = frng.uniform(-0.08, 0.08, size=2)
        illum = 0.92 + gx * (xx - 0.5) + gy * (yy - 0.5)
        class_mask = np.zeros((height, width), np.uint8)
        defects: list[tuple[int, tuple]] = []
        if k in anomalous:
            count = 1 + int(frng.integers(0, 2))
            rects = _place_defects(frng, height, width, count)
            first = (index + ordinal) % 3 + 1  # cycle categories so all of them occur
            ordinal += 1
            for j, rect in enumerate(rects):
                cat = first if j == 0 else int(frng.choice([c for c in (1, 2, 3) if c != first]))
                x0, y0, x1, y1 = rect
                class_mask[y0:y1, x0:x1] = cat
                defects.append((cat, rect))
        material = np.stack([spectra[c] for c in range(4)])  # [4, C]
        cube = material[class_mask] * illum[..., None]
        cube += frng.normal(0.0, NOISE_SIGMA, size=cube.shape)
        cube = np.clip(np.rint(cube * QUANT), 0.0, QUANT) / QUANT
        out.append(_Frame(cube.astype(np.float32), class_mask, defects))
    return out


# -- encoders (all return bytes) -----------------------------------------------------------


def _tiff_bytes(cube_hwc: np.ndarray, wl: np.ndarray) -> bytes:
    import tifffile

    buf = io.BytesIO()
    tifffile.imwrite(
        buf,
        np.ascontiguousarray(np.transpose(cube_hwc, (2, 0, 1))),  # [C, H, W], axes SYX
        photometric="minisblack",
        planarconfig="separate",
        software=False,  # no Software tag
        datetime=None,  # no DateTime tag
        metadata=None,  # no ImageDescription JSON
        extratags=[(42112, "s", 0, gdal_metadata_xml(wl), True)],
    )
    return buf.getvalue()


def _png_bytes(label: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    img = Image.fromarray(np.ascontiguousarray(label, dtype=np.uint8))
    if img.mode != "L":  # pragma: no cover - Pillow always maps 2-D uint8 to "L"
        img = img.convert("L")
    # no pnginfo -> no tEXt/tIME chunks; level 0 -> stored blocks, identical on any zlib
    img.save(buf, format="PNG", compress_level=0, optimize=False)
    return buf.getvalue()


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    # np.asarray(order="C"), not ascontiguousarray: the latter turns 0-d into shape (1,)
    np.lib.format.write_array(buf, np.asarray(arr, order="C"), allow_pickle=False)
    return buf.getvalue()


def _npz_bytes(members: Sequence[tuple[str, np.ndarray, int]]) -> bytes:
    """An ``np.load``-able zip with fixed member order, dates and attributes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", allowZip64=False) as zf:
        for name, arr, compression in members:
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.compress_type = compression
            info.external_attr = _ZIP_ATTR
            info.create_system = 3  # ZipInfo defaults to 0 on Windows
            zf.writestr(info, _npy_bytes(arr))
    return buf.getvalue()


def _json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _coco(session: str, frames: list[_Frame], height: int, width: int) -> dict[str, Any]:
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for k, frame in enumerate(frames):
        images.append({"id": k, "file_name": f"frame_{k:04d}", "height": height,
                       "width": width})
        for cat, (x0, y0, x1, y1) in frame.defects:
            w, h = x1 - x0, y1 - y0
            annotations.append({
                "id": len(annotations) + 1,
                "image_id": k,
                "category_id": cat,
                # polygon corners on pixel edges: rasterizes to exactly the rectangle
                "segmentation": [[x0, y0, x1, y0, x1, y1, x0, y1]],
                "bbox": [x0, y0, w, h],
                "area": w * h,
                "iscrowd": 0,
            })
    return {
        "info": {"description": f"dvc-cuvis synthetic example session {session}"},
        "images": images,
        "annotations": annotations,
        "categories": [dict(c) for c in CATEGORIES],
    }


# -- writing -------------------------------------------------------------------------------


def _write_if_changed(path: Path, data: bytes) -> bool:
    """Atomically write ``data`` unless ``path`` already holds exactly those bytes."""
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except (FileNotFoundError, NotADirectoryError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return True


def _remove_stale(out: Path, keep: set[str]) -> int:
    """Delete files under ``tiff/`` and ``npz/`` not in ``keep``; prune empty folders."""
    removed = 0
    for top in ("tiff", "npz"):
        root = out / top
        if not root.is_dir() or root.is_symlink():
            continue
        for dirpath, dirnames, filenames in os.walk(root, topdown=False):
            here = Path(dirpath)
            for name in sorted(filenames):
                p = here / name
                if p.relative_to(out).as_posix() not in keep:
                    p.unlink()
                    removed += 1
            for name in sorted(dirnames):
                d = here / name
                if d.is_symlink():
                    d.unlink()
                    removed += 1
                elif not any(d.iterdir()):
                    d.rmdir()
    return removed


def _validate(sessions: int, frames: int, size: Sequence[int], bands: int, seed: int,
              extra_sessions: int) -> tuple[int, int]:
    def is_int(v: Any) -> bool:
        return isinstance(v, int | np.integer) and not isinstance(v, bool)

    if not all(is_int(v) for v in (sessions, frames, bands, seed, extra_sessions)):
        raise ValueError("sessions, frames, bands, seed and extra_sessions must be integers")
    if len(size) != 2 or not all(is_int(v) for v in size):
        raise ValueError("size must be two integers H W")
    height, width = int(size[0]), int(size[1])
    if sessions < 1:
        raise ValueError(f"--sessions must be >= 1, got {sessions}")
    if extra_sessions < 0:
        raise ValueError(f"--extra-sessions must be >= 0, got {extra_sessions}")
    if sessions + extra_sessions > MAX_SESSIONS:
        raise ValueError(f"--sessions + --extra-sessions must be <= {MAX_SESSIONS}, "
                         f"got {sessions + extra_sessions}")
    if not 1 <= frames <= MAX_FRAMES:
        raise ValueError(f"--frames must be in 1..{MAX_FRAMES}, got {frames}")
    if height < MIN_SIDE or width < MIN_SIDE:
        raise ValueError(f"--size H W must both be >= {MIN_SIDE}, got {height} {width}")
    if not 2 <= bands <= MAX_BANDS:
        raise ValueError(f"--bands must be in 2..{MAX_BANDS}, got {bands}")
    if seed < 0:
        raise ValueError(f"--seed must be >= 0, got {seed}")
    return height, width


def generate(
    out_dir: str | os.PathLike[str],
    sessions: int = 6,
    frames: int = 8,
    size: Sequence[int] = (16, 16),
    bands: int = 16,
    seed: int = 0,
    extra_sessions: int = 0,
) -> dict[str, Any]:
    """Write (or refresh) the example dataset under ``out_dir``; returns a summary.

    Raises ``ValueError`` for bad arguments (before touching the disk).
    """
    height, width = _validate(sessions, frames, size, bands, seed, extra_sessions)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a directory")

    wl = wavelengths_nm(bands)
    names = session_names(sessions, extra_sessions)
    files: dict[str, bytes] = {
        "tiff/categories.json": _json_bytes({"categories": CATEGORIES}),
        "npz/categories.json": _json_bytes({"categories": CATEGORIES}),
    }
    n_anomalous = n_defects = 0
    for index, session in enumerate(names):
        frame_list = _session_frames(seed, index, frames, height, width, wl)
        logical_id = f"npz/{session}"
        for k, frame in enumerate(frame_list):
            n_anomalous += bool(frame.defects)
            n_defects += len(frame.defects)
            files[f"tiff/images/{session}_f{k:03d}.tif"] = _tiff_bytes(frame.cube, wl)
            files[f"tiff/labels/{session}_f{k:03d}.png"] = _png_bytes(frame.class_mask)
            files[f"npz/{session}/frame_{k:04d}.npz"] = _npz_bytes([
                ("cube", frame.cube, _CUBE_COMPRESSION),
                ("wavelengths", wl, _CUBE_COMPRESSION),
                ("mask", (frame.class_mask > 0).astype(np.int32), _MASK_COMPRESSION),
                ("class_mask", frame.class_mask, _MASK_COMPRESSION),
                ("source", np.array(logical_id), _CUBE_COMPRESSION),
            ])
        files[f"npz/annotations/{session}.json"] = _json_bytes(
            _coco(session, frame_list, height, width)
        )

    out.mkdir(parents=True, exist_ok=True)
    written = sum(_write_if_changed(out / rel, data) for rel, data in sorted(files.items()))
    removed = _remove_stale(out, set(files))
    return {
        "out": str(out),
        "sessions": names,
        "frames": len(names) * frames,
        "anomalous_frames": n_anomalous,
        "defects": n_defects,
        "files": len(files),
        "bytes": sum(len(d) for d in files.values()),
        "written": written,
        "unchanged": len(files) - written,
        "removed": removed,
    }


# -- CLI -----------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, exit 2 (no usage dump)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="generate.py",
        description="Write a small deterministic synthetic hyperspectral dataset "
        "(tiff/ + npz/ layouts, see examples/README.md).",
    )
    p.add_argument("--out", required=True, help="output folder (created if missing)")
    p.add_argument("--sessions", type=int, default=6, help="base sessions (default 6)")
    p.add_argument("--frames", type=int, default=8, help="frames per session (default 8)")
    p.add_argument("--size", type=int, nargs=2, default=(16, 16), metavar=("H", "W"),
                   help="frame height and width in pixels (default 16 16)")
    p.add_argument("--bands", type=int, default=16,
                   help="spectral bands over 450..900 nm (default 16)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--extra-sessions", type=int, default=0,
                   help="sessions appended after the base ones on later days; base files "
                   "stay byte-identical (default 0)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        summary = generate(args.out, sessions=args.sessions, frames=args.frames,
                           size=tuple(args.size), bands=args.bands, seed=args.seed,
                           extra_sessions=args.extra_sessions)
    except ValueError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    print(
        f"{summary['out']}: {len(summary['sessions'])} sessions, {summary['frames']} frames "
        f"({summary['anomalous_frames']} anomalous, {summary['defects']} defects), "
        f"{summary['files']} files, {summary['bytes']} bytes; written {summary['written']}, "
        f"unchanged {summary['unchanged']}, removed {summary['removed']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
