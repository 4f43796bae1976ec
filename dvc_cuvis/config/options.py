"""One spec per option: its default, help, choices, type and path-ness, written once.

A verb's options are an :class:`OptionSet` that lives in the library next to the options type
it builds (``sources.ENUMERATE`` for :class:`~dvc_cuvis.sources.EnumerateOptions`, ...), in the
manner of scikit-learn's ``_parameter_constraints``: from that one spec come the command-line
flags (``add_to``), the params.yaml keys and their validation (``keys``), the defaults that
``--help`` shows, the values a verb runs with (``values``: flag > params section > default),
and ``init``'s params.yaml template (``template``).  A library caller builds the same options
from a params section without the CLI (``EnumerateOptions.from_section``), so no verb module
has to import another to learn how a stage was configured.
"""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dvc_cuvis.errors import ParamsError


def closest(word: str, candidates: Iterable[str], *, cutoff: float = 0.5) -> str | None:
    """The candidate nearest to ``word`` (for :func:`did_you_mean`), or None.

    ``cutoff`` is difflib's similarity floor: keys and flags take a loose 0.5, a selector's
    source a stricter 0.6 (a wrong path suggestion misleads more than none).
    """
    found = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=cutoff)
    return found[0] if found else None


def did_you_mean(hint: str | None) -> str:
    """THE "did you mean" tail of an error: ``; did you mean 'val_ratio'?`` (a flag as it is
    typed: ``; did you mean --out-dir?``); '' without a ``hint``."""
    if not hint:
        return ""
    return f"; did you mean {hint}?" if hint.startswith("--") else f"; did you mean '{hint}'?"


def check_value(value: object, accepts: tuple[type, ...], choices: tuple[object, ...] | None,
                where: str) -> Any:
    """``value`` if it has one of the ``accepts`` types (and is one of ``choices``); a null
    means "not set" unless ``accepts`` names ``type(None)`` (then it is checked as a value).
    Otherwise :class:`~dvc_cuvis.errors.ParamsError` naming ``where``."""
    if value is None and type(None) not in accepts:
        return None
    # YAML true/false is not a number here, although Python's bool is an int
    if not isinstance(value, accepts) or (isinstance(value, bool) and bool not in accepts):
        expected = " or ".join("null" if k is type(None) else k.__name__ for k in accepts)
        raise ParamsError(f"{where} must be {expected}, got {value!r}")
    if choices is not None and value is not None and value not in choices:
        more = did_you_mean(closest(str(value), [str(c) for c in choices]))
        raise ParamsError(f"{where}: {value!r} is not one of "
                          f"{', '.join(map(str, choices))}{more}")
    return value


def refuse_nul(value: object, where: str) -> None:
    """Refuse a path setting holding a NUL byte (no file name can): the OS would refuse it
    later as an "embedded null byte" nobody can place; this names the flag or key now."""
    for text in value if isinstance(value, list) else [value]:
        if isinstance(text, str) and "\0" in text:
            raise ParamsError(f"{where}: path {text!r} holds a NUL byte, which no file name "
                              "can hold; fix the path")


@dataclass(frozen=True)
class Option:
    """One option of a verb: the params key (= the flag's dest) and everything about it.

    ``default`` is the built-in value (None: unset); ``shown`` is how ``--help`` names a
    default that is not a plain value ("when stderr is a terminal"); ``kind`` is the Python
    type a params value must have (``bool`` options are switches; with ``negatable`` also
    ``--no-NAME``); ``kinds`` widens what a params file may hold (a list for ``crop``);
    ``params_only`` options have no flag (bake's ``constraints`` list); a ``many`` flag may
    be repeated (its values collect in a list, as a params list gives them).
    """

    name: str
    help: str
    default: Any = None
    kind: type = str
    choices: tuple[object, ...] | None = None
    path: bool = False
    metavar: str | None = None
    shown: str | None = None
    flag: str | None = None
    negatable: bool = False
    required: bool = False
    params_only: bool = False
    kinds: tuple[type, ...] | None = None
    many: bool = False
    short: str | None = None

    @property
    def flags(self) -> list[str]:
        """The option strings (``-n``, ``--max-count``)."""
        long = self.flag or "--" + self.name.replace("_", "-")
        return [self.short, long] if self.short else [long]

    @property
    def accepts(self) -> tuple[type, ...]:
        """The types a params value may have (an int is a valid float)."""
        if self.kinds is not None:
            return self.kinds
        if self.many:
            return (self.kind, list)
        return (int, float) if self.kind is float else (self.kind,)

    def check(self, value: object, where: str) -> Any:
        """``value`` if a params file may hold it for this option (:func:`check_value`; a
        path holds no NUL byte, :func:`refuse_nul`)."""
        value = check_value(value, self.accepts, self.choices, where)
        if self.path:
            refuse_nul(value, where)
        return value

    def from_params(self, value: object, base: Path | str) -> Any:
        """A value read from a params file in folder ``base``: a path option's relative path
        is relative to that file (as DVC runs stages there), so it is joined to ``base``;
        ``none``, ``auto``, absolute paths and every other value stay as written."""
        if (self.path and isinstance(value, str) and value not in ("none", "auto")
                and not os.path.isabs(value) and str(base) not in ("", ".")):
            return os.path.normpath(Path(base) / value)
        return value

    def default_text(self) -> str:
        """The default as ``--help`` shows it."""
        if self.required:
            return "required"
        if self.shown is not None:
            return f"default: {self.shown}"
        if self.default is None:
            return "default: none"
        if self.kind is bool:
            return f"default: {'on' if self.default else 'off'}"
        return f"default: {self.default}"


class OptionSet:
    """The options of one verb, in ``--help`` order."""

    def __init__(self, verb: str, *options: Option) -> None:
        """Collect ``options`` of ``verb`` (names must be unique)."""
        self.verb = verb
        self.options: dict[str, Option] = {}
        for opt in options:
            if opt.name in self.options:
                raise ValueError(f"{verb}: option {opt.name!r} declared twice")
            self.options[opt.name] = opt

    def __iter__(self) -> Iterator[Option]:
        return iter(self.options.values())

    def __getitem__(self, name: str) -> Option:
        return self.options[name]

    def default(self, name: str) -> Any:
        """The built-in default of option ``name``."""
        return self.options[name].default

    @property
    def paths(self) -> tuple[str, ...]:
        """Names of the options whose params values are paths (relative to the file)."""
        return tuple(o.name for o in self if o.path)

    def add_to(self, parser: argparse.ArgumentParser, *, skip: tuple[str, ...] = ()) -> None:
        """Add a flag for every option (argparse defaults stay None: "not given")."""
        for opt in self:
            if opt.params_only or opt.name in skip:
                continue
            text = f"{opt.help} ({opt.default_text()})"
            if opt.kind is bool:
                action: str | type[argparse.Action] = (
                    argparse.BooleanOptionalAction if opt.negatable else "store_true")
                parser.add_argument(*opt.flags, dest=opt.name, action=action, default=None,
                                    help=text)
                continue
            kwargs: dict[str, Any] = {"dest": opt.name, "help": text}
            if opt.kind in (int, float):
                kwargs["type"] = opt.kind
            if opt.choices is not None:
                kwargs["choices"] = list(opt.choices)
            if opt.metavar is not None:
                kwargs["metavar"] = opt.metavar
            if opt.many:
                kwargs["action"] = "append"
            parser.add_argument(*opt.flags, **kwargs)

    def parse(self, words: list[str]) -> argparse.Namespace | None:
        """``words`` (a recorded command line after the verb) parsed as the verb's CLI parses
        them, ``--params``/``--no-params`` included; None where that parser would refuse them."""
        parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
        parser.add_argument("--params")
        parser.add_argument("--no-params", dest="no_params", action="store_true")
        self.add_to(parser)
        try:
            ns, extras = parser.parse_known_args(words)
        except (argparse.ArgumentError, SystemExit):
            return None
        return None if extras else ns

    def values(self, get: Callable[[str, Any], Any]) -> dict[str, Any]:
        """Every option's value: ``get(name, default)`` (flag > section), else the default."""
        return {opt.name: get(opt.name, opt.default) for opt in self}

    def check(self, section: Mapping[str, object], where: str) -> None:
        """Refuse a key of a params ``section`` that is no option (naming the closest valid
        key), and a value of the wrong type or outside its choices."""
        for key in sorted(section, key=str):
            if key not in self.options:
                raise ParamsError(f"{where}: unknown key '{key}' in section '{self.verb}'"
                                  f"{did_you_mean(closest(str(key), list(self.options)))} "
                                  f"(valid keys: {', '.join(sorted(self.options))})")
            self.options[key].check(section[key], f"{where}: {self.verb}.{key}")

    def from_section(self, section: Mapping[str, object], base: Path | str = ".",
                     where: str = "params.yaml") -> dict[str, Any]:
        """Every option's value from a params ``section`` (paths made relative to ``base``,
        the params file's folder), else its default; an unknown key or a wrong type raises
        :class:`~dvc_cuvis.errors.ParamsError` naming the closest valid key."""
        self.check(section, where)
        out = {}
        for opt in self:
            value = section.get(opt.name)
            out[opt.name] = opt.default if value is None else opt.from_params(value, base)
        return out

    def template(self, names: list[str], **given: object) -> dict[str, object]:
        """The params section ``init`` writes: each of ``names`` with its ``given`` value, else
        its built-in default (a name whose value is None is left out)."""
        out: dict[str, object] = {}
        for name in names:
            value = given[name] if name in given else self.options[name].default
            if value is not None:
                out[name] = value
        return out
