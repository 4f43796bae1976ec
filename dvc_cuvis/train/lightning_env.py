"""Which Lightning package a DataModule runs under, and a training stack that will not import.

Two packages ship the same trainer: ``pytorch_lightning`` (the one cuvis-ai builds on) and
``lightning`` (``import lightning as L``; ``lightning.pytorch``, the one Lightning's own docs
now use).  A Trainer takes only DataModules of its own package (the other's are refused
with ``ValueError: Expected a parent``), so :class:`~dvc_cuvis.train.datamodule.SplitDataModule`
takes its base class from the package in use (:func:`pick_package`, :func:`datamodule_base`).

torch and torchvision must come from one build: PyPI's torchvision is built against PyPI's
(CUDA) torch, and beside a CPU torch its operators fail to register, so every import of
Lightning (through torchmetrics) dies with ``operator torchvision::nms does not exist``.
:func:`import_stack` turns that into one :class:`~dvc_cuvis.errors.TorchMismatchError` line
naming both builds and the command that installs a matching torchvision.  Only installed
packages' metadata is read: torchvision itself is never imported here.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import importlib.util
import re
import sys
from types import ModuleType

from dvc_cuvis.errors import TorchMismatchError, first_line

#: The Lightning packages, the one cuvis-ai builds on first.
PACKAGES: tuple[str, ...] = ("pytorch_lightning", "lightning.pytorch")

#: Where PyTorch publishes each build (``+cpu``, ``+cu128``, ``+rocm6.4``) of torch and
#: torchvision; PyPI's own wheels carry no such tag.
TORCH_INDEX = "https://download.pytorch.org/whl/"

_PIN = re.compile(r"^torch\s*\(?\s*==\s*([^\s;,)]+)")


def installed(package: str) -> bool:
    """Whether ``package`` can be imported (found without importing it or its parent)."""
    try:
        return importlib.util.find_spec(package.split(".")[0]) is not None
    except ValueError:  # a module in sys.modules without a spec
        return package.split(".")[0] in sys.modules


def pick_package() -> str | None:
    """The Lightning package a new DataModule should belong to: the one the program has
    imported when it imported only one, else the first installed (None: neither is)."""
    imported = [p for p in PACKAGES if p in sys.modules]
    if len(imported) == 1:
        return imported[0]
    found = [p for p in PACKAGES if installed(p)]
    return found[0] if found else None


def package_of(module: str) -> str | None:
    """The Lightning package that holds the module named ``module`` (None: neither)."""
    for package in PACKAGES:
        if module == package or module.startswith(package + "."):
            return package
    return None


def host_of(cls: type) -> str | None:
    """The Lightning package whose ``LightningDataModule`` ``cls`` derives from (None: none)."""
    for klass in cls.__mro__:
        if klass.__name__ == "LightningDataModule" and package_of(klass.__module__):
            return package_of(klass.__module__)
    return None


def datamodule_base(package: str) -> type:
    """``package``'s ``LightningDataModule`` (imported through :func:`import_stack`)."""
    base: type = import_stack(package).LightningDataModule
    return base


def import_stack(module: str) -> ModuleType:
    """Import ``module`` (Lightning, or a module built on it); a torch/torchvision
    mismatch that stops it is one :class:`TorchMismatchError` line."""
    try:
        return importlib.import_module(module)
    except Exception as exc:
        problem = torchvision_problem(exc)
        if problem is None:
            raise
        raise TorchMismatchError(
            f"importing {module} fails in torchvision ({type(exc).__name__}: "
            f"{first_line(exc)[:160]}): {problem}") from None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _local(version: str) -> str:
    return version.partition("+")[2]


def _build(version: str) -> str:
    tag = _local(version)
    return f"the {tag} build" if tag else "PyPI's build"


def torchvision_pin() -> str | None:
    """The torch version the installed torchvision was built for (its ``torch==`` pin)."""
    try:
        requires = metadata.requires("torchvision") or []
    except metadata.PackageNotFoundError:
        return None
    pins = [m.group(1) for m in map(_PIN.match, requires) if m]
    return pins[0] if pins else None


def fix_command(torch_version: str) -> str:
    """The command that replaces torchvision by the one built for this torch."""
    public = torch_version.partition("+")[0]
    tag = _local(torch_version)
    index = f" --index-url {TORCH_INDEX}{tag}" if tag else ""
    return (f'python -m pip uninstall -y torchvision && python -m pip install '
            f'"torch=={public}" torchvision{index}')


def torchvision_problem(exc: BaseException) -> str | None:
    """What is wrong between the installed torch and torchvision, with the fix, when ``exc``
    comes from torchvision (its message or a frame of its code); None otherwise."""
    torch_v, vision_v = _version("torch"), _version("torchvision")
    if torch_v is None or vision_v is None or "torchvision" not in _chain_text(exc):
        return None
    pin = torchvision_pin()
    public = torch_v.partition("+")[0]
    if _local(torch_v) != _local(vision_v):
        why = (f"torchvision {vision_v} ({_build(vision_v)}) does not match torch {torch_v} "
               f"({_build(torch_v)})")
    elif pin is not None and pin.partition("+")[0] != public:
        why = f"torchvision {vision_v} is built for torch {pin}, not torch {torch_v}"
    else:
        why = f"torchvision {vision_v} does not load with torch {torch_v}"
    return f"{why}; install torchvision from torch's own build: {fix_command(torch_v)}"


def _chain_text(exc: BaseException) -> str:
    """The messages and the modules of the frames an exception (and its causes) passed."""
    parts: list[str] = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        parts.append(str(cur))
        tb = cur.__traceback__
        while tb is not None:
            parts.append(tb.tb_frame.f_code.co_filename)
            tb = tb.tb_next
        cur = cur.__cause__ or cur.__context__
    return "\n".join(parts)
