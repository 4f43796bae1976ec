"""The CLI's side of the settings rule: argparse parsers built from the verbs' option specs.

The rule itself — flag > the verb's params section > built-in default, which params file is
read, how its keys are checked and its paths resolved — lives in
:mod:`dvc_cuvis.config.settings` (:class:`~dvc_cuvis.config.settings.Settings`); this module
builds each verb's parser from the same :class:`~dvc_cuvis.config.options.OptionSet` and
registers that spec there.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

from dvc_cuvis.config.options import OptionSet, closest, did_you_mean
from dvc_cuvis.errors import OptionError, ParamsError

if TYPE_CHECKING:
    from dvc_cuvis.config.settings import Settings

EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT = 0, 1, 2

EXIT_CODES = "exit codes: 0 ok, 1 a check failed, 2 bad input or usage"
RULE = ("settings: a flag wins over the '{verb}' section of the params file, which wins over\n"
        "the default shown. The params file is --params FILE, else ./params.yaml, else\n"
        "params.yaml at the repository root; --no-params reads none.")


class Parser(argparse.ArgumentParser):
    """argparse without abbreviations; errors are one line (after the usage) and exit 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Print this parser's usage and one error line; exit 2."""
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")

    def unknown(self, extras: list[str]) -> NoReturn:
        """Refuse unrecognized arguments, naming the closest flag of this verb."""
        flags = [s for a in self._actions for s in a.option_strings if s.startswith("--")]
        first = next((e for e in extras if e.startswith("-")), extras[0])
        hint = closest(first.split("=", 1)[0], flags) if first.startswith("--") else None
        self.error(f"unrecognized arguments: {' '.join(extras)}{did_you_mean(hint)}")


def verb_parser(sub: Any, name: str, summary: str, *, section: bool = True) -> Parser:
    """Add a verb: one-line summary, the settings rule and exit codes in its help.

    ``section``: the verb reads a params section (then ``--params``/``--no-params``); its
    keys come from its option spec (:func:`register_options`).
    """
    epilog = (RULE.format(verb=name) + "\n" if section else "") + EXIT_CODES
    p: Parser = sub.add_parser(name, help=summary, description=summary[:1].upper()
                               + summary[1:] + ".", epilog=epilog)
    if section:
        p.add_argument("--params", metavar="FILE",
                       help="params file to read (default: ./params.yaml, else the "
                       "repository root's params.yaml)")
        p.add_argument("--no-params", dest="no_params", action="store_true",
                       help="read no params file")
    return p


def register_options(p: argparse.ArgumentParser, options: OptionSet) -> None:
    """Add the flags of ``options`` to ``p`` (its params keys are the same static spec)."""
    options.add_to(p)



@contextmanager
def named_by(s: Settings, settings: Mapping[str, str] | None = None) -> Iterator[None]:
    """Turn a library's :class:`~dvc_cuvis.errors.OptionError` (which names parameters, as a
    Python caller typed them) into one line naming what this user gave: the flag typed, else
    the params key and how to set it aside, so no error blames a flag that was never typed.

    ``settings``: the setting a parameter is read from where the names differ
    (``{"stages": "stage"}``).  The one mapper of every verb; exit 2.
    """
    try:
        yield
    except OptionError as exc:
        raise ParamsError(option_named(exc, s, settings)) from None


def option_named(exc: OptionError, s: Settings, settings: Mapping[str, str] | None = None,
                 ) -> str:
    """The message of ``exc`` with each parameter named by where ``s`` took it from, and,
    for a value read from the params file, how to set it aside (unless the message says)."""
    from dvc_cuvis.config.settings import option

    setting = dict(settings or {})

    def flag_of(name: str, how: str) -> str:
        opt = option(s.verb, name)
        flag = opt.flags[-1] if opt is not None else "--" + name.replace("_", "-")
        metavar = opt.metavar if opt is not None else None
        return f"{flag} {metavar}" if how == "g" and metavar else flag

    def name_of(param: str, how: str) -> str:
        name = setting.get(param, param)
        if how in ("f", "g"):
            return flag_of(name, how)
        if how == "shown":
            return s.shown(name)
        if how == "aside":
            return s.aside(name)
        if how.startswith("typo="):
            other = setting.get(how[len("typo="):], how[len("typo="):])
            return did_you_mean(flag_of(other, "f") if s.typed(name) else None)
        return s.origin(name)

    forms = exc.forms()
    told = {p for p, how in forms if how == "aside"}
    origins = [p for p, how in forms if not how and p not in told]
    asides = "".join(dict.fromkeys(s.aside(setting.get(p, p)) for p in origins))
    return exc.named(name_of) + asides
