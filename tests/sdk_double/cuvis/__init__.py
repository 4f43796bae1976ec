"""A test double of Cubert's ``cuvis`` SDK (the real one needs libcuvis.so).

It mimics the calls dvc-cuvis makes: ``SessionFile(path)``, ``len(session)``,
``session.get_measurement(i)``, ``session.get_reference(i, ReferenceType.X)``,
``ProcessingContext(session)`` with ``processing_mode`` / ``set_reference`` / ``apply``, and
``mesu.cube.array`` / ``mesu.cube.wavelength``.  A "session file" is a small JSON document:
``{"measurements": N, "height": H, "width": W, "bands": C, "seed": S,
"references": ["White", "Dark"]}``; cube values are a deterministic function of
(seed, index, processing mode), so tests can assert exact bytes.
"""

from __future__ import annotations

import enum
import json
from typing import Any

import numpy as np

CALLS: list[tuple[str, Any]] = []


class ProcessingMode(enum.Enum):
    Raw = 0
    DarkSubtract = 1
    Reflectance = 2
    SpectralRadiance = 3


class ReferenceType(enum.Enum):
    White = 0
    Dark = 1


class SdkSettings:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


def init(settings: Any = None, global_loglevel: Any = None) -> None:
    CALLS.append(("init", None))


class ImageData:
    def __init__(self, array: np.ndarray, wavelength: list[int]) -> None:
        self.array = array
        self.wavelength = wavelength


class Measurement:
    def __init__(self, session: SessionFile, index: int, mode: ProcessingMode | None) -> None:
        self.session, self.index, self.mode = session, index, mode
        self.data: dict[str, Any] = {"cube": True} if mode is not None else {}

    @property
    def cube(self) -> ImageData:
        meta = self.session.meta
        h, w, c = meta["height"], meta["width"], meta["bands"]
        rng = np.random.default_rng([meta["seed"], self.index])
        raw = rng.integers(0, 4096, size=(h, w, c)).astype(np.uint16)
        if self.mode in (None, ProcessingMode.Raw):
            arr: np.ndarray = raw
        else:
            arr = (raw.astype(np.float32) / 4096.0).astype(np.float32)
        wl = [int(450 + k * (450 // max(c - 1, 1))) for k in range(c)]
        return ImageData(arr, wl)


class SessionFile:
    def __init__(self, path: str) -> None:
        CALLS.append(("SessionFile", str(path)))
        try:
            with open(path, encoding="utf-8") as fh:
                self.meta = json.load(fh)
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"cuvis: cannot open session file {path}: {exc}") from None
        self.fps = 10.0

    def __len__(self) -> int:
        return int(self.meta["measurements"])

    def get_measurement(self, index: int) -> Measurement | None:
        CALLS.append(("get_measurement", index))
        if not 0 <= index < len(self):
            return None
        return Measurement(self, index, None)

    def get_reference(self, index: int, ref_type: ReferenceType) -> Measurement | None:
        if ref_type.name in self.meta.get("references", []):
            return Measurement(self, -1 - ref_type.value, None)
        return None


class ProcessingContext:
    def __init__(self, session: SessionFile) -> None:
        self.session = session
        self.processing_mode = ProcessingMode.Raw
        self.references: dict[ReferenceType, Measurement] = {}

    def set_reference(self, mesu: Measurement, ref_type: ReferenceType) -> None:
        self.references[ref_type] = mesu

    def get_reference(self, ref_type: ReferenceType) -> Measurement | None:
        return self.references.get(ref_type) or self.session.get_reference(0, ref_type)

    def apply(self, mesu: Measurement) -> Measurement:
        CALLS.append(("apply", (mesu.index, self.processing_mode.name)))
        return Measurement(mesu.session, mesu.index, self.processing_mode)
