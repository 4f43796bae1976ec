"""Typed errors: every bad input maps to one clear line and exit code 2.

The CLI catches :class:`DvcCuvisError` and prints ``str(err)``; library callers get the
same message.  Errors are ``ValueError`` subclasses so code written against the upstream
resolver (which raises ``ValueError``) keeps working when it switches to this package.
A missing input file is also a ``FileNotFoundError`` (:class:`MissingFileError`), because
upstream's loaders (``load_splits``) raise that and callers catch it.
"""

from __future__ import annotations

from pathlib import Path


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


class RepoError(DvcCuvisError):
    """A repository, revision or YAML file that cannot be read."""


class YamlError(RepoError):
    """Text that is not valid YAML: ``line`` (``":<n>"``, or ``""`` when unknown) and
    ``problem`` for callers that word the error their own way (dvc.lock's reader)."""

    def __init__(self, where: Path | str, line: str, problem: str) -> None:
        """The error naming ``where`` at ``line``."""
        super().__init__(f"{where}{line}: not valid YAML ({problem}); fix or regenerate the file")
        self.line, self.problem = line, problem


class TorchMismatchError(DvcCuvisError):
    """torch and torchvision come from different builds (a CPU torch beside PyPI's CUDA
    torchvision, or versions that do not pair), so Lightning cannot be imported: the message
    names both builds and the command that installs a matching torchvision."""
