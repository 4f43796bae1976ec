"""A frame's file name under ``frames/``, beside the frame format: one name per
``(source, index)``, invertible, and within the file system's name limits.
"""

from __future__ import annotations

from urllib.parse import unquote

from dvc_cuvis.errors import DvcCuvisError


def frame_name(source: str, index: int) -> str:
    """``frames/<source path>.<index:06d>.npz``: one file per frame, beside its siblings.

    A person browsing the folder finds the source's own folders and, in them, one file
    per frame named after the source file: ``day1/a.cu3s`` frame 3 is
    ``frames/day1/a.cu3s.000003.npz``, a single-frame ``day1/f.npz`` is
    ``frames/day1/f.npz.000000.npz`` (the extension stays, so ``x.tif`` and ``x.tiff`` never
    meet).  A whole-file sample (no index) is read at position 0 and named so.

    Distinct ``(source, index)`` never share a name — unlike upstream's
    ``<parent>_<stem>`` names, where ``day1/raw/s`` and ``day2/raw/s`` collide — because
    :func:`parse_frame_name` inverts it: every path component is escaped (``%``, control
    and Windows-reserved characters, ``.``/``..``, an empty component or a leading ``/``,
    never a letter of any script), and a folder never ends in ``.npz`` (its last ``.`` is
    escaped) while every frame file does, so a file and a folder cannot meet either.  Case
    is kept: two sources that differ only in case get two names, as distinct as the raw
    files they came from.
    """
    *dirs, base = source.split("/")
    enc = [_encode_dir(part) for part in dirs]
    enc.append(f"{_encode_part(base)}.{index:06d}.npz")
    return "frames/" + "/".join(enc)


def parse_frame_name(name: str) -> tuple[str, int]:
    """The ``(source, index)`` a :func:`frame_name` came from (its inverse)."""
    head, sep, rest = name.partition("/")
    stem, dot, digits = rest.rpartition("/")[2].removesuffix(".npz").rpartition(".")
    if head != "frames" or not sep or not dot or not rest.endswith(".npz"):
        raise DvcCuvisError(f"{name!r}: not a frame name (frames/<source>.<index>.npz)")
    parts = [*rest.split("/")[:-1], stem]
    return "/".join(_decode_part(p) for p in parts), int(digits)


_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.,@+=()~ ")


def _encode_part(part: str) -> str:
    if part == "":
        return "%2F"  # a leading "/" (absolute source) or an empty component
    if part in (".", ".."):
        return part.replace(".", "%2E")
    return "".join(
        ch if ch in _SAFE or (ch > "\x7f" and ch.isprintable()) else
        "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        for ch in part)


def _encode_dir(part: str) -> str:
    enc = _encode_part(part)
    if enc.lower().endswith(".npz"):  # only frame files end in .npz
        enc = enc[:-4] + "%2E" + enc[-3:]
    return enc


def _decode_part(enc: str) -> str:
    return "" if enc == "%2F" else unquote(enc, errors="surrogatepass")


def temp_name_bytes(name: str) -> int:
    """Bytes the longest name on disk that writing the file ``name`` makes takes: its temp
    sibling ``.<name>.tmp`` (:func:`~dvc_cuvis._io.atomic_write_parts`)."""
    return len(f".{name}.tmp".encode("utf-8", "surrogatepass"))


def frame_name_problem(name: str, max_bytes: int) -> str | None:
    """Why the frame file ``name`` (a :func:`frame_name`) cannot be written (None when it
    can): one of its folder or file names, the temp sibling included, over ``max_bytes``."""
    *dirs, base = name.split("/")
    for part, size in [*((d, len(d.encode("utf-8", "surrogatepass"))) for d in dirs),
                       (base, temp_name_bytes(base))]:
        if size > max_bytes:
            return (f"its frame name {part[:32]!r}... takes {size} bytes once encoded "
                    f"(temp file included), over the limit of {max_bytes} bytes a name may "
                    "take")
    return None
