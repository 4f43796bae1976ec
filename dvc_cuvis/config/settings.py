"""Where a verb's settings come from: flag > the verb's params section > built-in default.

One rule for every verb, so a user can predict any command:

1. a flag given on the command line wins;
2. else the value in the verb's section of the params file — ``--params FILE``, else
   ``params.yaml`` in the current folder, else ``params.yaml`` at the repository root
   (``--no-params`` reads no file);
3. else the built-in default shown in ``--help``.

Paths written in a params file are relative to that file's folder (as DVC runs stages there).
Every key of each section a command reads (its own; ``resolve``/``bake`` for the split's
paths; ``enumerate`` for check's re-scan) is checked against the options of that verb: a typo
is an error naming the file, the section, the key and the closest valid key — never ignored.
Sections a command does not read are left alone, so a params.yaml shared with other tools
(a training ``log:`` or ``export:`` section) does not break unrelated verbs.

A key is an :class:`~dvc_cuvis.config.options.Option` of the verb's
:class:`~dvc_cuvis.config.options.OptionSet` (:data:`dvc_cuvis.config.specs.SECTIONS`); the CLI
builds its parsers from the same specs (:mod:`dvc_cuvis.cli._settings`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dvc_cuvis.config.options import Option, refuse_nul
from dvc_cuvis.config.params import load_params, section
from dvc_cuvis.config.specs import SECTIONS
from dvc_cuvis.errors import DvcCuvisError, ParamsError

__all__ = ["READS", "Settings", "find_params", "option", "validate"]

#: Other verbs' sections a verb reads (and so validates): the split's paths from ``resolve``
#: and ``bake``; for ``check`` also how ``enumerate`` made the universe, and every section a
#: stage of the pipeline reads, so a typo there (``materialise:``) is named by ``check``
#: instead of showing as a stale stage that ``dvc repro`` cannot mend.
_SPLIT = ("resolve", "bake")
READS: dict[str, tuple[str, ...]] = {
    "check": (*_SPLIT, "enumerate", "materialize", "report", "export"), "resolve": _SPLIT,
    "report": (*_SPLIT, "enumerate"),
    "export": _SPLIT,
    "diff": _SPLIT, "log": _SPLIT,
}


def option(verb: str, name: str) -> Option | None:
    """The option ``name`` of ``verb`` (None when the verb has no such key)."""
    spec = SECTIONS.get(verb)
    return spec.options.get(name) if spec is not None else None


def find_params(explicit: str | None, no_params: bool) -> Path | None:
    """The params file a command reads: ``--params``, ./params.yaml, or the repo root's."""
    if no_params:
        if explicit:
            raise ParamsError("--params and --no-params contradict each other: give one")
        return None
    if explicit:
        refuse_nul(explicit, "--params")
        return Path(explicit)
    here = Path("params.yaml")
    if _params_file(here):
        return here
    from dvc_cuvis.paths.roots import repo_root

    root = repo_root(Path.cwd())
    if root is not None and _params_file(root / "params.yaml"):
        return Path(os.path.relpath(root / "params.yaml"))
    return None


def _params_file(path: Path) -> bool:
    """True if ``path`` is a params file; something else under that name (a folder, a
    dangling link) is an error, never silently passed over for the built-in defaults."""
    if path.is_file():
        return True
    if not os.path.lexists(path):
        return False
    shown = os.path.relpath(path)
    if path.is_dir():
        what = "is a folder, not a params file"
    elif path.is_symlink():
        what = f"is a symlink to {os.readlink(path)}, which does not exist"
    else:
        what = "is not a regular file"
    raise ParamsError(f"{shown}: {what}; fix or remove it (or pass --params FILE or "
                      "--no-params)")


def validate(params: Mapping[str, object], where: Path | str, verbs: list[str]) -> None:
    """Refuse unknown keys, wrong types and invalid choices in the sections of ``verbs``."""
    for verb in verbs:
        if verb in SECTIONS:
            SECTIONS[verb].check(section(params, verb, path=where), str(where))


class Settings:
    """A verb's settings: flags, then its params section, then defaults (see module doc)."""

    def __init__(self, args: argparse.Namespace, verb: str | None = None) -> None:
        """Read and check the params file the flags in ``args`` name (or the default one)."""
        self.args = args
        self.verb = verb or args.command
        self.file = find_params(getattr(args, "params", None),
                                bool(getattr(args, "no_params", False)))
        self.params: dict[str, Any] = load_params(self.file) if self.file else {}
        if self.file is not None:
            validate(self.params, self.file, [self.verb, *READS.get(self.verb, ())])
        where = self.file or Path("params.yaml")
        self.where = str(where)
        self.section = section(self.params, self.verb, path=where)
        self.base = self.file.parent if self.file is not None else Path(".")

    def of(self, verb: str) -> dict[str, Any]:
        """Another verb's section (check reads how enumerate made the universe)."""
        return section(self.params, verb, path=self.where)

    def from_file(self, name: str, value: object, verb: str | None = None) -> Any:
        """A value read from the params file, as a path relative to the file when it is one."""
        opt = option(verb or self.verb, name)
        return opt.from_params(value, self.base) if opt is not None else value

    def given(self, name: str) -> Any:
        """The flag's value if given, else the section's value (paths made relative to the
        params file), else None: what the user said, without any default."""
        value = getattr(self.args, name, None)
        if value is not None:
            opt = option(self.verb, name)
            if opt is not None and opt.path:
                refuse_nul(value, self._flag_of(name))
            return value
        value = self.section.get(name)
        if value is not None:  # a null in params.yaml means "not set"
            opt = option(self.verb, name)
            if opt is not None:
                opt.check(value, f"{self.where}: {self.verb}.{name}")
            return self.from_file(name, value)
        return None

    def get(self, name: str, default: object = None) -> Any:
        """Flag value if given, else the section's value, else ``default``, else the default
        of the verb's option spec (:mod:`dvc_cuvis.config.specs`)."""
        value = self.given(name)
        if value is not None:
            return value
        if default is None and self.verb in SECTIONS and name in SECTIONS[self.verb].options:
            return SECTIONS[self.verb].default(name)
        return default

    def _flag_of(self, name: str) -> str:
        """The long flag of setting ``name`` (``out_dir`` -> ``--out-dir``)."""
        opt = option(self.verb, name)
        return opt.flags[-1] if opt is not None else "--" + name.replace("_", "-")

    def origin(self, name: str) -> str:
        """Where setting ``name`` came from, as an error names it: the flag the user typed
        (``--out``), else its params key (``params.yaml: export.out``), else its default.

        An error must never blame a flag the user did not type: a value read from the params
        file is named by the file and key it came from.
        """
        if getattr(self.args, name, None) is not None:
            return self._flag_of(name)
        if self.section.get(name) is not None:
            return f"{self.where}: {self.verb}.{name}"
        return f"the default of {self._flag_of(name)}"

    def shown(self, name: str) -> str:
        """Setting ``name`` with its value and origin: ``--to glovita``, or
        ``glovita (from params.yaml: export.to)``."""
        if self.typed(name):
            return f"{self.origin(name)} {self.get(name)}"
        return f"{self.get(name)} (from {self.origin(name)})"

    def typed(self, name: str) -> bool:
        """Whether setting ``name`` was given on the command line."""
        return getattr(self.args, name, None) is not None

    def aside(self, name: str) -> str:
        """How to set aside a value of ``name`` read from the params file (an error's tail);
        empty when the value did not come from the file."""
        if self.typed(name) or self.section.get(name) is None:
            return ""
        return (f" (delete '{name}' from the '{self.verb}' section of {self.where}, or pass "
                "--no-params to read no params file)")

    def exclusive(self, names: tuple[str, ...]) -> None:
        """Refuse two or more of the settings ``names`` at once, naming where each came from."""
        chosen = [n for n in names if self.given(n) not in (None, False)]
        if len(chosen) > 1:
            asides = "".join(dict.fromkeys(self.aside(n) for n in chosen))
            raise DvcCuvisError(f"choose one of {', '.join(self._flag_of(n) for n in names)}: "
                                f"{' and '.join(self.origin(n) for n in chosen)} are both set"
                                f"{asides}")

    def flag(self, name: str) -> bool:
        """A boolean setting (unset = False)."""
        return bool(self.get(name, False))

    def path(self, name: str, default: str | None = None) -> Path | None:
        """A path setting (None when unset and no default)."""
        value = self.get(name, default)
        return Path(value) if value is not None else None

    def required(self, name: str, flag: str) -> Any:
        """A setting the verb cannot do without: one line naming the flag and the key."""
        value = self.get(name)
        if value is None or value == "":
            raise DvcCuvisError(f"{self.verb} needs {flag} (or '{name}' in the '{self.verb}' "
                                f"section of {self.where})")
        return value
