"""The documentation: it builds strictly, and every command it shows parses and is tested.

Every ``dvc-cuvis VERB ...`` line inside a fenced code block of README.md or docs/*.md is
parsed by the real argument parser (optional ``[...]`` groups included, ``...`` elisions
dropped), so a renamed or removed flag breaks this test, not a reader's shell. Each
(verb, flag) pair shown must also appear in some other test module, so no documented option
is left untested. The newcomer workflow block itself is run line by line in
``tests/test_newcomer.py``.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from dvc_cuvis.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)


def _logical_lines(block: str) -> list[str]:
    """Code-block lines with ``\\`` continuations joined."""
    out: list[str] = []
    buf = ""
    for raw in block.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        out.append(buf + line)
        buf = ""
    if buf:
        out.append(buf)
    return out


PLACEHOLDERS = {"N": "2", "K": "0", "R": "0.2", "SECONDS": "5"}


def _cut(rest: str) -> str:
    """``rest`` up to the first shell operator outside ``[...]``; ``a | b`` inside kept as both."""
    out, depth, k = [], 0, 0
    while k < len(rest):
        ch = rest[k]
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if depth == 0 and (ch in ">|;)" or rest.startswith(("&&", "->"), k)):
            break
        out.append(" " if depth and ch == "|" and rest[k - 1:k] == " " else ch)
        k += 1
    return "".join(out)


def _command(line: str) -> list[str] | None:
    """The ``dvc-cuvis`` argument list shown on ``line`` (None when it shows none)."""
    text = re.sub(r"(^|\s)#.*$", "", line)  # a shell comment
    text = text.replace('"$(dvc-cuvis plugins-dir)"', "DIR")
    match = re.search(r"(?:^|[\s;&|(]|\$\()dvc-cuvis(\s.*)?$", text)
    if not match:
        return None
    rest = _cut(match.group(1) or "")
    rest = re.sub(r"(?<=\S)\[[^\]\s]*\]", "", rest)  # an optional suffix: deflate[:L]
    rest = rest.replace("[", " ").replace("]", " ")  # optional groups: their flags count too
    rest = re.sub(r"(?:^|\s)\.\.\.(?=\s|$)", " ", rest)  # elisions
    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    return [PLACEHOLDERS.get(w, w.split("|")[0] if "|" in w and " " not in w else w)
            for w in words]


def _shown_commands() -> list[tuple[str, int, list[str]]]:
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for block in FENCE.finditer(text):
            first = text.count("\n", 0, block.start()) + 2
            for k, line in enumerate(_logical_lines(block.group(1))):
                args = _command(line)
                if args:
                    found.append((f"{doc.relative_to(ROOT)}:{first + k}", first + k, args))
    return found


COMMANDS = _shown_commands()


def test_the_docs_show_commands() -> None:
    verbs = {next((a for a in args if not a.startswith("-")), "") for _, _, args in COMMANDS}
    assert {"init", "enumerate", "bake", "materialize", "check", "diff", "report"} <= verbs


@pytest.mark.parametrize("where,args", [(w, a) for w, _, a in COMMANDS],
                         ids=[w for w, *_ in COMMANDS])
def test_every_shown_command_parses(where: str, args: list[str]) -> None:
    parser, verbs = build_parser()
    if not args or args[0] in ("--help", "-h", "--version"):
        return
    verb = next((a for a in args if not a.startswith("-")), "")
    assert verb in verbs, f"{where}: unknown verb {verb!r}"
    try:
        ns, extras = parser.parse_known_args(args)
    except SystemExit as exc:  # argparse's own refusal
        pytest.fail(f"{where}: `dvc-cuvis {' '.join(args)}` is refused (exit {exc.code})")
    assert not extras, f"{where}: unknown argument(s) {extras}"
    assert ns.command == verb


def _tests_text() -> str:
    me = Path(__file__).name
    return "\n".join(p.read_text() for p in sorted((ROOT / "tests").rglob("test_*.py"))
                     if p.name != me)


def test_every_shown_flag_is_exercised_by_a_test() -> None:
    tests = _tests_text()
    untested = []
    for where, _, args in COMMANDS:
        verb = next((a for a in args if not a.startswith("-")), "")
        for flag in (a.split("=")[0] for a in args if a.startswith("--")):
            if flag in ("--help",):
                continue
            if f'"{flag}"' not in tests and f"'{flag}'" not in tests and f" {flag} " not in tests \
                    and f" {flag}\"" not in tests:
                untested.append(f"{where}: {verb} {flag}")
    assert not untested, "documented flags that no test passes:\n" + "\n".join(untested)


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (pip install -e '.[test]')")
    r = subprocess.run([str(mkdocs), "build", "--strict", "--quiet", "--site-dir",
                        str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "site" / "cli" / "index.html").exists()
