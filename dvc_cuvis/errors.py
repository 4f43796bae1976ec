"""Typed errors: every bad input maps to one clear line and exit code 2.

The CLI catches :class:`DvcCuvisError` and prints ``str(err)``; library callers get the
same message.  Errors are ``ValueError`` subclasses so code written against the upstream
resolver (which raises ``ValueError``) keeps working when it switches to this package.
A missing input file is also a ``FileNotFoundError`` (:class:`MissingFileError`), because
upstream's loaders (``load_splits``) raise that and callers catch it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

#: C0 controls (tab and newline included: one field is one line), DEL and C1 controls,
#: the line/paragraph separators, and the bidi marks, embeddings, overrides and isolates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
#: Same, but keeping ``\n`` and ``\t``: for text whose lines are ours.
_UNSAFE_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f"
                                "\u2028-\u202e\u2066-\u2069]")


def first_line(what: object, default: str = "") -> str:
    """The first line of ``str(what)`` (an exception, a log message), stripped; ``default``
    when it says nothing.

    Our errors are one line: a library's multi-line message is cut to its first line here,
    so every such cut is made the same way.
    """
    return (str(what).strip().splitlines() or [default])[0]


def and_more(total: int, shown: int) -> str:
    """`` (+N more)``: what a list cut to its first ``shown`` of ``total`` items leaves out
    ('' when nothing is left out)."""
    return f" (+{total - shown} more)" if total > shown else ""


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: str, *, lines: bool = False) -> str:
    """``text`` with control characters and bidi overrides as visible ``\\x1b``-style
    escapes, so names from data cannot drive the terminal (erase a line, retitle the window,
    reorder what a reader sees); ``lines=True`` keeps ``\\n`` and ``\\t`` (for text whose line
    structure is ours, the fields in it already escaped).  Ordinary text is unchanged."""
    return (_UNSAFE_KEEP_LINES if lines else _UNSAFE).sub(_visible, text)


def shorten(text: str, limit: int = 200) -> str:
    """At most ``limit`` characters of ``text``, saying how many were left out, so one value
    cannot flood a report."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…(+{len(text) - limit} chars)"


class DvcCuvisError(ValueError):
    """Base class: a bad input (file, row, selector or argument); CLI exit code 2."""

    exit_code = 2


class UniverseError(DvcCuvisError):
    """A universe.csv (or in-memory universe) violates the universe contract."""

    def __init__(self, message: str, *, path: Path | str | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")
        self.path = path
        self.line = line


class SelectorError(DvcCuvisError):
    """A selector cannot be resolved against the universe (zero match, bad id, unknown name)."""


class SplitsFileError(DvcCuvisError):
    """A splits.json cannot be read or does not validate as a ``DataSplitConfig``."""


class ParamsError(DvcCuvisError):
    """A params.yaml section is missing, malformed or has an invalid value."""


class OptionError(ParamsError):
    """An option value, or a combination of options, that a verb's options value refuses.

    The one error of every options value (``BakeOptions``, ``CheckOptions``, ...): the rule
    lives once, in the value, and its message names each parameter in ``params`` by a
    ``{name}`` or ``{name!form}`` in ``template``, so a Python caller reads the parameter
    names it typed (``folds must be ...``) and the CLI the flag or params key its user gave
    (:meth:`named`).  The forms: ``{name}`` where the value came from, ``{name!f}`` how to
    give it (the flag), ``{name!g}`` the same with its placeholder, ``{name!shown}`` the
    value and where it came from, ``{name!aside}`` how to set a params value aside, and
    ``{name!typo=other}`` a "did you mean" for a typed flag.  ``values`` holds the values
    ``!shown`` names.  Other braces in the template are text.
    """

    def __init__(self, template: str, *params: str,
                 values: Mapping[str, object] | None = None) -> None:
        """The error of ``template`` naming ``params``, shown by their parameter names."""
        self.template, self.params = template, params
        self.values = dict(values or {})
        super().__init__(self.named(self._bare))

    @property
    def param(self) -> str:
        """The parameter the error is first about (``out_dir``), or ``""``."""
        return self.params[0] if self.params else ""

    def _bare(self, name: str, form: str) -> str:
        """How a Python caller reads a parameter: its name (and value)."""
        if form == "shown":
            return f"{name}={self.values.get(name)!r}"
        return "" if form == "aside" or form.startswith("typo=") else name

    def forms(self) -> list[tuple[str, str]]:
        """Each ``(name, form)`` the template names, in order (``form`` ``""`` for
        ``{name}``)."""
        return [(m.group(1), m.group(2) or "") for m in self._pattern().finditer(self.template)]

    def named(self, name_of: Callable[[str, str], str]) -> str:
        """The message with each parameter named by ``name_of(name, form)`` (the forms of
        the class docstring: ``""``, ``"f"``, ``"g"``, ``"shown"``, ``"aside"``,
        ``"typo=other"``)."""
        if not self.params:
            return self.template
        return self._pattern().sub(lambda m: name_of(m.group(1), m.group(2) or ""),
                                   self.template)

    def _pattern(self) -> re.Pattern[str]:
        """``{name}`` or ``{name!form}`` for the parameters of this error."""
        names = "|".join(re.escape(p) for p in self.params) or "(?!)"
        return re.compile(r"\{(" + names + r")(?:!(f|g|shown|aside|typo=\w+))?\}")


class EmptyStageError(DvcCuvisError):
    """A bake left a stage with a non-zero ratio without any sample (exit 1: a check failed)."""

    exit_code = 1


class MissingFileError(DvcCuvisError, FileNotFoundError):
    """An input file does not exist: exit code 2 here, ``FileNotFoundError`` as upstream."""


class MissingUniverseError(UniverseError, MissingFileError):
    """The universe.csv to read does not exist."""


class MissingSplitsFileError(SplitsFileError, MissingFileError):
    """The splits.json to read does not exist (upstream ``load_splits`` raises the same)."""


class NotPulledError(DvcCuvisError):
    """Files that DVC tracks are not in the workspace because they were never pulled
    (``dvc pull``), as opposed to deleted or wrong: the drift check says "not pulled"."""


class MissingExtraError(DvcCuvisError):
    """An optional dependency (an extra such as ``tiff`` or ``coco``, the cuvis SDK) is not
    installed: a fact of this environment, never of a file, so no verdict on a file may rest
    on it; the message names the extra and the install line that fixes it."""


class RepoError(DvcCuvisError):
    """A repository, revision or YAML file that cannot be read."""


class YamlError(RepoError):
    """Text that is not valid YAML: ``line`` (``":<n>"``, or ``""`` when unknown) and
    ``problem`` for callers that word the error their own way (dvc.lock's reader)."""

    def __init__(self, where: Path | str, line: str, problem: str) -> None:
        """The error naming ``where`` at ``line``."""
        super().__init__(f"{where}{line}: not valid YAML ({problem}); fix or regenerate the file")
        self.line, self.problem = line, problem


#: what to do about each refusal of the file system (``errno`` name -> the advice)
_ADVICE = {
    "ENOSPC": "the disk is full: free space (or write elsewhere) and rerun",
    "EDQUOT": "the disk quota is used up: free space (or write elsewhere) and rerun",
    "EACCES": "permission denied: check the permissions of the file and its folder",
    "EPERM": "operation not permitted: check the permissions of the file and its folder",
    "EROFS": "the file system is read-only: write somewhere writable",
    "EISDIR": "it is a folder where a file belongs: remove it or choose another path",
    "ENOTDIR": "a part of the path is a file where a folder belongs: remove it or choose "
               "another path",
    "EEXIST": "a file is in the way where a folder belongs: remove it or choose another path",
    "ENAMETOOLONG": "the name is too long for the file system: shorten the file or folder "
                    "name",
    "ELOOP": "it is a symlink (or a loop of them) where a file or folder belongs: remove "
             "the link",
}


class FileSystemError(DvcCuvisError, OSError):
    """The file system refused a read or write (disk full, permission, read-only, a folder
    where a file belongs, a name too long): one line naming the file, exit 2; still an
    ``OSError`` (with its ``errno``) for callers that catch those."""

    def __init__(self, exc: OSError, path: Path | str | None = None) -> None:
        """The error of ``exc`` at ``path`` (``exc.filename`` when not given)."""
        import errno

        name = errno.errorcode.get(exc.errno or 0, "")
        where = path if path is not None else exc.filename
        what = exc.strerror or first_line(exc, type(exc).__name__)
        advice = _ADVICE.get(name)
        super().__init__(f"{where if where is not None else '(unknown file)'}: {what}"
                         + (f"; {advice}" if advice else ""))
        self.errno = exc.errno  # (no strerror/filename: str() stays the one line above)


def is_environment_error(exc: BaseException) -> bool:
    """True for an ``OSError`` that the environment caused (full disk, permissions, a
    read-only or odd file system), not a bug: the CLI reports it as one line."""
    import errno

    return isinstance(exc, OSError) and errno.errorcode.get(exc.errno or 0, "") in _ADVICE


class TorchMismatchError(DvcCuvisError):
    """torch and torchvision come from different builds (a CPU torch beside PyPI's CUDA
    torchvision, or versions that do not pair), so Lightning cannot be imported: the message
    names both builds and the command that installs a matching torchvision."""
