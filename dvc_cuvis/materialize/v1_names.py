"""Frame names of the older layout (format version 1), kept only to find a version-1 folder's
frames, which a rerun renames into the current layout instead of rewriting them.
"""

from __future__ import annotations

from urllib.parse import quote


def _v1_frame_name(source: str, index: int) -> str:
    """The layout of format version 1, ``frames/<encoded source>/<index:06d>.npz``.

    Kept only to find the frames of a version-1 folder, which a rerun renames into the
    current layout instead of rewriting them.
    """
    enc = [_v1_encode_part(part, i == 0) for i, part in enumerate(source.split("/"))]
    return "frames/" + "/".join(enc) + f"/{index:06d}.npz"


def _v1_encode_part(part: str, first: bool) -> str:
    if part == "":
        return "%2F" if first else "%00"
    if part in (".", ".."):
        return part.replace(".", "%2E")
    return quote(part, safe="-_.,@+=()~ ")
