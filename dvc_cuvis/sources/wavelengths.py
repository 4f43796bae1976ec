"""Band wavelengths given by the user (``--wavelengths`` / params ``enumerate.wavelengths``)
for TIFF cubes that carry no GDAL wavelength tag, in the manner of upstream's
``wavelengths_override``: parsed, checked and written to (and read back from) the
universe.csv ``wavelengths`` column that materialize reads them from."""

from __future__ import annotations

import math
from typing import Any

from dvc_cuvis.errors import ParamsError
from dvc_cuvis.limits import OVER_CEILING, LimitError, Limits, current

#: what the door and materialize name when a cube carries no wavelengths of its own
WAVELENGTH_OPTION = "--wavelengths (params: enumerate.wavelengths)"
#: the nanometre range a wavelength given by ``--wavelengths`` must lie in (UV to far IR)
NM_RANGE = (1.0, 100_000.0)


def parse_wavelengths(value: Any, where: str = "--wavelengths") -> tuple[float, ...] | None:
    """Band wavelengths in nm from a params list, a ``a,b,c`` string or a ``START:STOP:COUNT``
    string (COUNT evenly spaced values, both ends included), for cubes without a GDAL tag;
    None (or an empty value) means "read them from each file".  Refuses what no cube can
    carry: non-numbers, non-finite values, values outside :data:`NM_RANGE`, values not
    strictly increasing, more than the ``max_bands`` ceiling."""
    if value is None or value == "" or value == []:
        return None
    ceiling, env = current().max_bands, Limits.env_name("max_bands")
    if isinstance(value, str):
        text = value.strip()
        if text.count(":") == 2 and "," not in text:
            values = _linspace(text, where, ceiling, env)
        else:
            if text.count(",") >= ceiling:
                raise LimitError(f"{where}: more than {ceiling:,} wavelengths, {OVER_CEILING} "
                                 f"{ceiling:,} ({env} raises it)")
            values = [_number(x, where) for x in text.split(",") if x.strip()]
    elif isinstance(value, (list, tuple)):
        if len(value) > ceiling:
            raise LimitError(f"{where}: {len(value):,} wavelengths, {OVER_CEILING} "
                             f"{ceiling:,} ({env} raises it)")
        values = [_number(x, where) for x in value]
    else:
        raise ParamsError(f"{where} must be a list of numbers or a string, got {value!r}")
    if not values:
        return None
    low, high = NM_RANGE
    for k, v in enumerate(values):
        if not low <= v <= high:
            raise ParamsError(f"{where}: wavelength {v:g} is outside {low:g}..{high:g} nm; "
                              "give band centres in nanometres")
        if k and v <= values[k - 1]:
            raise ParamsError(f"{where}: wavelengths must be strictly increasing, but "
                              f"{v:g} follows {values[k - 1]:g} (band {k})")
    return tuple(values)


def _number(x: Any, where: str) -> float:
    """One wavelength, a finite number (a YAML bool is not one)."""
    if isinstance(x, bool):
        raise ParamsError(f"{where}: {x!r} is not a wavelength in nm")
    try:
        v = float(x.strip() if isinstance(x, str) else x)
    except (TypeError, ValueError):
        raise ParamsError(f"{where}: {x!r} is not a wavelength in nm") from None
    if not math.isfinite(v):
        raise ParamsError(f"{where}: {x!r} is not a finite wavelength in nm")
    return v


def _linspace(text: str, where: str, ceiling: int, env: str) -> list[float]:
    """``START:STOP:COUNT``: COUNT evenly spaced wavelengths from START to STOP inclusive."""
    start_s, stop_s, count_s = text.split(":")
    start, stop = _number(start_s, where), _number(stop_s, where)
    try:
        count = int(count_s.strip())
    except ValueError:
        raise ParamsError(f"{where}: {text!r}: COUNT {count_s!r} in START:STOP:COUNT is not a "
                          "whole number") from None
    if count < 1:
        raise ParamsError(f"{where}: {text!r}: COUNT must be at least 1")
    if count > ceiling:
        raise LimitError(f"{where}: {count:,} wavelengths, {OVER_CEILING} {ceiling:,} "
                         f"({env} raises it)")
    if count == 1:
        return [start]
    step = (stop - start) / (count - 1)
    return [start + k * step for k in range(count - 1)] + [stop]


def format_wavelengths(wavelengths: tuple[float, ...]) -> str:
    """The universe.csv cell of ``wavelengths``: ``;``-separated, shortest exact form."""
    return ";".join(str(int(w)) if w.is_integer() else repr(w) for w in wavelengths)


def cell_wavelengths(cell: str, where: str) -> tuple[float, ...] | None:
    """A universe.csv ``wavelengths`` cell back to numbers (None when empty), checked as the
    option is (a hand-edited cell is refused naming ``where``)."""
    if not cell:
        return None
    return parse_wavelengths(cell.replace(";", ","), where)
