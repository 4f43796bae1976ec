"""Cubert ``.cu3s`` sessions through the cuvis SDK (lazy import; untested against the real SDK).

One sample per measurement: ``source#i`` for ``i in range(len(SessionFile(path)))``.  A
sibling ``<stem>.json`` COCO file (the convention of cuvis-ai's cu3s module) annotates the
session, keyed by image id == measurement index.  Measurement counts are cached by file
stat, so an unchanged session is never reopened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dvc_cuvis.digests.stat_cache import stamp_key
from dvc_cuvis.errors import DvcCuvisError, MissingExtraError
from dvc_cuvis.model.anomalous import is_anomalous
from dvc_cuvis.sources._common import (
    EnumerateOptions,
    Scan,
    list_files,
    locate,
    parallel_map,
    rel_to_out,
    source_id,
)

#: stat cache keys of a session file's measurement count and of an annotation file's summary
COUNT_KEY = stamp_key("cu3s_count")
COCO_KEY = stamp_key("coco")


def require_cuvis() -> Any:
    """The ``cuvis`` module, or a clear error naming the missing SDK."""
    try:
        import cuvis
    except Exception as exc:  # ImportError, or OSError when libcuvis.so is missing
        raise MissingExtraError(
            "the cu3s format needs Cubert's cuvis SDK: install the native SDK (libcuvis) and "
            f"`pip install 'dvc-cuvis[cu3s]'` (import cuvis failed: {exc})"
        ) from None
    return cuvis


def count_measurements(path: Path) -> int:
    """Number of measurements in a session (``len(cuvis.SessionFile(path))``)."""
    cuvis = require_cuvis()
    try:
        return len(cuvis.SessionFile(str(path)))
    except Exception as exc:
        raise DvcCuvisError(f"{path}: cannot open cu3s session ({exc})") from None


def scan_cu3s(opts: EnumerateOptions) -> Scan:
    """Rows for every measurement of every session under the root."""
    if opts.root.is_file():
        sessions, root = [opts.root], opts.root.parent
    else:
        root = opts.root
        found = locate(root, list_files(root, opts.pattern or "**/*.cu3s"))
        sessions = [root / f.rel for f in found]
    require_cuvis()
    from dvc_cuvis.sources.coco import coco_summary

    names = ["source", "index", "materialized_path", "format", "annotation", "tags",
             "category_ids", *(["md5", "annotation_md5"] if opts.hash_content else []),
             *(["group"] if opts.group == "parent" else [])]

    def one(p: Path) -> dict[str, list[Any]]:
        """Columns for one session (cells shared across its frames, not copied)."""
        st = p.stat()
        n = opts.cache.get(p, COUNT_KEY, count_measurements, st)
        ann = p.with_suffix(".json") if opts.annotations == "sibling" else None
        summary = opts.cache.get(ann, COCO_KEY, coco_summary) if ann and ann.is_file() else None
        src = source_id(p, root, opts.absolute_sources)
        cols: dict[str, list[Any]] = {
            "source": [src] * n,
            "index": list(range(n)),
            "materialized_path": [rel_to_out(p, opts.out_dir)] * n,
            "format": ["cu3s"] * n,
            "annotation": [rel_to_out(ann, opts.out_dir) if summary and ann else ""] * n,
        }
        if summary is not None:
            ids = [summary["images"].get(str(i), []) for i in range(n)]
            cols["category_ids"] = [";".join(map(str, x)) for x in ids]
            cols["tags"] = ["anomalous" if is_anomalous(x) else "normal" for x in ids]
        else:
            cols["category_ids"] = [""] * n
            cols["tags"] = ["unlabeled"] * n
        if opts.hash_content:
            cols["md5"] = [opts.cache.md5(p, st)] * n
            cols["annotation_md5"] = [opts.cache.md5(ann) if summary and ann else ""] * n
        if opts.group == "parent":
            cols["group"] = [Path(src).parent.as_posix()] * n
        return cols

    per_session = parallel_map(one, sessions, jobs=opts.jobs, desc="cu3s", show=opts.progress,
                               opts=opts)
    columns: dict[str, list[Any]] = {k: [] for k in names}
    for cols in per_session:
        for k in names:
            columns[k].extend(cols[k])
    categories: dict[str, int] = {}
    for p in sessions:
        ann = p.with_suffix(".json")
        if opts.annotations == "sibling" and ann.is_file():
            for name, cid in opts.cache.get(ann, COCO_KEY, coco_summary)["categories"].items():
                if categories.setdefault(name, cid) != cid:
                    raise DvcCuvisError(
                        f"{ann}: category {name!r} has id {cid} here but {categories[name]} in "
                        "another session's json; category ids must agree across sessions"
                    )
    return Scan([], categories or None, columns=columns)


def _parse_ref(spec: str) -> tuple[Path, int]:
    """``path`` or ``path:N`` (frame N of a reference session; default 0)."""
    head, sep, tail = spec.rpartition(":")
    if sep and head and tail.isdigit():
        return Path(head), int(tail)
    return Path(spec), 0


class Cu3sReader:
    """Reads processed cubes from one session (processing mode, optional white/dark refs)."""

    def __init__(
        self,
        path: Path,
        processing_mode: str | None = "Reflectance",
        white_ref: str | None = None,
        dark_ref: str | None = None,
    ) -> None:
        """Open ``path`` and configure its processing context like cuvis-ai's reader."""
        cuvis = require_cuvis()
        self.path = path
        try:
            self.session = cuvis.SessionFile(str(path))
            self.pc = cuvis.ProcessingContext(self.session)
        except Exception as exc:
            raise DvcCuvisError(f"{path}: cannot open cu3s session ({exc})") from None
        custom: dict[str, bool] = {}
        for spec, kind in ((white_ref, "White"), (dark_ref, "Dark")):
            if not spec:
                continue
            ref_path, frame = _parse_ref(spec)
            if not ref_path.is_file():
                raise DvcCuvisError(f"{kind.lower()} reference {ref_path} not found")
            ref_type = getattr(cuvis.ReferenceType, kind)
            mesu = cuvis.SessionFile(str(ref_path)).get_measurement(frame)
            if mesu is None:
                raise DvcCuvisError(f"{kind.lower()} reference {ref_path}: no measurement {frame}")
            self.pc.set_reference(mesu, ref_type)
            custom[kind] = True
        self.mode = None
        if processing_mode:
            mode = getattr(cuvis.ProcessingMode, processing_mode, None)
            if mode is None:
                raise DvcCuvisError(
                    f"unknown processing_mode {processing_mode!r}; use a cuvis.ProcessingMode "
                    "name such as Raw, Reflectance or SpectralRadiance"
                )

            def has(kind: str) -> bool:
                ref = self.session.get_reference(0, getattr(cuvis.ReferenceType, kind))
                return custom.get(kind, False) or ref is not None

            if processing_mode == "Reflectance" and not (has("White") and has("Dark")):
                raise DvcCuvisError(
                    f"{path}: Reflectance needs White and Dark references (in the session or "
                    "via white_ref/dark_ref)"
                )
            if processing_mode == "SpectralRadiance" and not has("Dark"):
                raise DvcCuvisError(f"{path}: SpectralRadiance needs a Dark reference")
            self.pc.processing_mode = mode
            self.mode = mode

    def __len__(self) -> int:
        return len(self.session)

    def read(self, index: int) -> tuple[Any, Any]:
        """Cube ``[H, W, C]`` float32 and wavelengths ``[C]`` int32 of measurement ``index``."""
        import numpy as np

        mesu = self.session.get_measurement(index)
        if mesu is None:
            raise DvcCuvisError(
                f"{self.path}: measurement {index} is out of range ({len(self)} measurements)"
            )
        if self.mode is not None or "cube" not in getattr(mesu, "data", {}):
            mesu = self.pc.apply(mesu)
        cube = np.asarray(mesu.cube.array, dtype=np.float32)
        wavelengths = np.asarray(mesu.cube.wavelength).ravel().astype(np.int32)
        return cube, wavelengths
