"""A memo of DVC's resolution of a templated dvc.yaml, so that a check need not import DVC.

Expanding ``${...}``, ``foreach`` and ``matrix`` is DVC's job (``dvc.parsing``), and
importing DVC to do it is most of a ``dvc-cuvis check``'s time. The resolution is
a pure function of a few files, so it is kept, keyed by their bytes:

- the dvc.yaml itself;
- ``params.yaml`` beside it (DVC's default variables) and every file a ``vars`` entry names,
  anywhere in the dvc.yaml, relative to the dvc.yaml's folder and to each stage's ``wdir``;
- DVC's config files (``parsing`` settings): the repository's ``.dvc/config`` and
  ``.dvc/config.local``, the global and the system one;
- the installed DVC version.

Any change to one of them (or a file appearing or going away) is another key, and DVC
resolves again. The memo lives in ``.dvc/tmp/dvc-cuvis/resolved/`` (DVC's own temporary
folder, never committed): a local convenience, lost without harm. A memo that cannot be
read or written is ignored.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from dvc_cuvis._io import atomic_write_text
from dvc_cuvis.limits import loads_json
from dvc_cuvis.paths.roots import dvc_root

#: Bump when what the memo holds changes.
MEMO_VERSION = 1


def _vars_files(node: object, wdir: str = "") -> Iterator[tuple[str, str]]:
    """(wdir, file) for every file a ``vars`` entry names under ``node``."""
    if isinstance(node, dict):
        here = str(node["wdir"]) if isinstance(node.get("wdir"), str) else wdir
        for key, value in node.items():
            if key == "vars" and isinstance(value, list):
                for item in value:
                    if isinstance(item, str):
                        yield here, item.split(":", 1)[0]
            else:
                yield from _vars_files(value, here)
    elif isinstance(node, list):
        for item in node:
            yield from _vars_files(item, wdir)


def _config_files(repo: Path | None) -> list[Path]:
    """DVC's config files that may hold ``parsing`` settings."""
    home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    found = [Path(os.environ.get("DVC_GLOBAL_CONFIG_DIR") or home / "dvc") / "config",
             Path(os.environ.get("DVC_SYSTEM_CONFIG_DIR") or "/etc/xdg/dvc") / "config"]
    if repo is not None:
        found += [repo / ".dvc" / "config", repo / ".dvc" / "config.local"]
    return found


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "-"


def memo_key(root: Path, repo: Path | None, text: str, data: Mapping[str, object]) -> str:
    """The key of a resolution (``repo``: the DVC repository holding ``root``): the digest
    of every input DVC's resolver reads."""
    try:
        dvc_version = metadata.version("dvc")
    except metadata.PackageNotFoundError:
        dvc_version = "-"
    h = hashlib.sha256(f"v{MEMO_VERSION}\0dvc {dvc_version}\0".encode())
    h.update(hashlib.sha256(text.encode("utf-8")).digest())
    inputs = {("", "params.yaml")} | set(_vars_files(data))
    for wdir, name in sorted(inputs):
        h.update(f"\0{wdir}\0{name}\0{_digest(root / wdir / name)}".encode())
    for cfg in _config_files(repo):
        h.update(f"\0{cfg}\0{_digest(cfg)}".encode())
    return h.hexdigest()


def _memo_path(root: Path, repo: Path) -> Path:
    """Where the memo of ``root``'s dvc.yaml lives in the DVC repository ``repo``."""
    where = os.path.relpath(os.path.abspath(root), os.path.abspath(repo))
    name = hashlib.sha256(where.encode()).hexdigest()[:16]
    return repo / ".dvc" / "tmp" / "dvc-cuvis" / "resolved" / f"{name}.json"


def resolved_stages(root: Path, text: str, data: Mapping[str, object],
                    resolve: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``resolve()`` (DVC's resolution of ``root``'s dvc.yaml), from the memo when its
    inputs are unchanged; a fresh result is kept for the next call."""
    repo = dvc_root(root)
    if repo is None:
        return resolve()
    path = _memo_path(root, repo)
    key = memo_key(root, repo, text, data)
    with contextlib.suppress(OSError, ValueError):
        memo = loads_json(path.read_bytes(), path)  # damaged or nested: resolved afresh
        if (isinstance(memo, dict) and memo.get("key") == key
                and isinstance(memo.get("stages"), dict)):
            return memo["stages"]
    stages = resolve()
    try:  # what the memo will answer, so that the first call answers the same
        body = json.dumps({"key": key, "stages": stages}, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # not plain JSON values: not kept
        return stages
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, body + "\n")
    kept: dict[str, Any] = json.loads(body)["stages"]
    return kept
