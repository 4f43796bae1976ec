"""A checkpoint's plain values read without its tensors, and without running its code.

A Lightning ``.ckpt`` (any ``torch.save`` file since torch 1.6) is a zip: ``<top>/data.pkl``
pickles the checkpoint's dictionary, and each tensor's bytes are a member of their own that
the pickle names by a *persistent id*.  ``dvc-cuvis lineage`` needs one small record from
that dictionary, so only ``data.pkl`` is read: a persistent id becomes a :class:`Stub`
(no tensor member is opened), and so does every class or function the pickle names (none is
imported or called), but for ``collections.OrderedDict``, which holds a state dict's keys.
Memory follows the size of ``data.pkl``, not of the tensors, so a checkpoint of gigabytes
(or a small one whose deflated members would inflate to gigabytes) costs what its pickle
costs.  The pickle is read by Python's own pure-Python unpickler: its memo is a dictionary,
so a pickle that declares a huge memo index cannot make it allocate.  torch is not imported.
"""

from __future__ import annotations

import collections
import pickle
import zipfile
from pathlib import Path
from typing import Any

from dvc_cuvis.errors import DvcCuvisError, first_line
from dvc_cuvis.limits import check_declared, check_nesting, current

__all__ = ["Stub", "plain_record", "read_checkpoint"]

#: The globals a checkpoint's pickle may name for real: plain containers, no behaviour.
_REAL = {("collections", "OrderedDict"): collections.OrderedDict}


class Stub:
    """What a checkpoint's pickle names (a tensor, a class, a function): never looked up,
    never run, holding nothing, so reading the record costs no tensor and runs no code."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        """Accept and drop whatever the pickle hands (a call, a class's arguments)."""

    def __setstate__(self, state: object) -> None:
        """Drop the state the pickle sets."""

    def __setitem__(self, key: object, value: object) -> None:
        """Drop the items the pickle sets."""

    def append(self, value: object) -> None:
        """Drop the items the pickle appends."""

    def extend(self, values: object) -> None:
        """Drop the items the pickle appends."""


class _Unpickler(pickle._Unpickler):  # the pure-Python one: its memo is a dict
    """Unpickles plain values; every global and persistent id becomes :class:`Stub`."""

    def find_class(self, module: str, name: str) -> type:
        """OrderedDict for real, anything else a :class:`Stub` (nothing is imported)."""
        return _REAL.get((module, name), Stub)

    def persistent_load(self, pid: object) -> Stub:
        """A tensor's storage: not read."""
        return Stub()


def _pickle_member(zf: zipfile.ZipFile, path: Path) -> zipfile.ZipInfo:
    """The ``<top>/data.pkl`` member (``<top>``: the first member's folder, as torch reads)."""
    names = zf.namelist()
    top = names[0].split("/", 1)[0] if names else ""
    try:
        info = zf.getinfo(f"{top}/data.pkl")
    except KeyError:
        raise DvcCuvisError(f"{path}: a zip without {top or '<folder>'}/data.pkl: not a torch "
                            "checkpoint") from None
    limits = current()
    check_declared(f"{path}: {info.filename}", info.file_size, limits.max_array_bytes,
                   limits.env_name("max_array_bytes"))
    return info


def read_checkpoint(path: Path) -> Any:
    """The plain values of the checkpoint at ``path`` (tensors and objects as :class:`Stub`);
    one :class:`DvcCuvisError` naming the file for whatever cannot be read."""
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise DvcCuvisError(f"{path}: not a torch checkpoint (not a zip; torch.save writes "
                            "zips since torch 1.6: load and save it again with a newer torch)"
                            ) from None
    except OSError as exc:
        raise DvcCuvisError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    with zf:
        info = _pickle_member(zf, path)
        try:
            with zf.open(info) as fh:
                return _Unpickler(fh).load()
        except Exception as exc:  # a hostile pickle raises any kind; each is one line
            first = first_line(exc, type(exc).__name__)[:200]
            raise DvcCuvisError(f"{path}: a damaged checkpoint ({first})") from None


def plain_record(value: object, where: object) -> bool:
    """True when ``value`` holds JSON's values alone (dicts with string keys, lists, tuples,
    strings, numbers, booleans, None); :class:`LimitError` when nested beyond
    ``max_nesting`` (a container holding itself included)."""
    check_nesting(value, where)
    seen: set[int] = set()
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, str | int | float):  # bool is an int
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict) and all(isinstance(k, str) for k in item):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        else:
            return False
    return True
