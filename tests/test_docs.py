"""The documentation: it builds strictly, every command it shows parses, and every block a user
would paste runs.

Every ``dvc-cuvis VERB ...`` line inside a fenced code block of README.md or docs/*.md is
parsed by the real argument parser (optional ``[...]`` groups included, ``...`` elisions
dropped), so a renamed or removed flag breaks this test, not a reader's shell. Each
(verb, flag) pair shown must also appear in some other test module, so no documented option
is left untested.

Every fenced block names its language. A ``bash`` or ``python`` block is what a user pastes,
so each one runs here, in a copy of a real repository chosen by the HTML comment on the line
before the block:

* none, or ``<!-- run: dataset -->``: the repository the README's workflow builds (a user's
  dataset repository after its first day; tags ``v1``/``v2`` and a ``main`` branch added);
* ``<!-- run: clone -->``: a ``git clone`` of that repository that has not pulled, its data
  pushed to a local DVC remote (``store``);
* ``<!-- run: example -->``: this project's own example pipeline (``dvc.yaml`` at the top)
  after ``dvc repro``;
* ``<!-- not-run: REASON -->``: not runnable here (a remote, a cluster, a synopsis with
  ``[...]`` groups), with the reason beside the marker;
* ``<!-- newcomer-workflow -->`` and ``<!-- guard-snippet ... -->``: run by
  ``tests/test_newcomer.py``.

A shell line ending in ``# exit N`` must exit with N, every other line with 0.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dvc_cuvis.cli import build_parser
from tests.helpers import forked
from tests.helpers.repos import BUILDERS, copy, pristine
from tests.helpers.shell import ENV, run, sh

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
            if text[block.start():].startswith("```text"):  # what a command printed
                continue
            first = text.count("\n", 0, block.start()) + 2
            for k, line in enumerate(_logical_lines(block.group(1))):
                if re.search(r"#.*\bexit 2\b", line):  # shown being refused
                    continue
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


# --- every block a user would paste runs ---------------------------------------------------

PAGES = [*DOCS, ROOT / "examples/README.md"]
MARK = re.compile(r"<!--\s*(not-run|run|output-of|newcomer-workflow|guard-snippet)\b:?"
                  r"\s*(.*?)\s*-->")
RUNNABLE = {"bash": "shell", "sh": "shell", "python": "python"}
CONTEXTS = ("dataset", "clone", "example")


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its text and the marker above it."""

    page: Path
    line: int
    lang: str
    body: str
    mark: str
    reason: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _blocks(page: Path) -> list[Block]:
    text = page.read_text()
    out = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        mark = MARK.fullmatch(before)
        out.append(Block(page, text.count("\n", 0, m.start()) + 1,
                         text[m.start():].split("\n", 1)[0][3:].strip(), m.group(1),
                         mark.group(1) if mark else "run",
                         (mark.group(2) if mark else "") or ""))
    return out


BLOCKS = [b for page in PAGES for b in _blocks(page)]


def _runs(kind: str, context: str) -> list[Block]:
    return [b for b in BLOCKS if RUNNABLE.get(b.lang) == kind and b.mark == "run"
            and (b.reason or "dataset") == context]


def test_every_block_names_its_language_and_runs_or_says_why_not() -> None:
    problems = []
    for b in BLOCKS:
        if not b.lang:
            problems.append(f"{b.where}: a block without a language (```bash, ```text, ...)")
        elif b.lang in RUNNABLE and b.mark == "not-run" and len(b.reason) < 10:
            problems.append(f"{b.where}: not-run without its reason")
        elif b.lang in RUNNABLE and b.mark == "run" and (b.reason or "dataset") not in CONTEXTS:
            problems.append(f"{b.where}: unknown context {b.reason!r}, one of {CONTEXTS}")
        elif b.lang == "text" and b.mark == "output-of":
            if b.reason.split(":", 1)[0] not in CONTEXTS:
                problems.append(f"{b.where}: output-of CONTEXT: COMMAND, CONTEXT one of {CONTEXTS}")
        elif b.lang not in RUNNABLE and b.mark != "run":
            problems.append(f"{b.where}: a {b.lang} block is never run: drop its marker")
    assert not problems, "\n".join(problems)
    assert len(_runs("shell", "dataset")) >= 10 and _runs("python", "dataset")


def _example_pipeline(work: Path) -> None:
    """This project's example pipeline (dvc.yaml, params.yaml, examples/) after ``dvc repro``."""
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy(ROOT / name, work / name)
    shutil.copytree(ROOT / "examples", work / "examples",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"], ["dvc", "repro", "-q"],
                ["git", "add", "-A"], ["git", "commit", "-qm", "example pipeline"]):
        sh(*cmd, cwd=work)


EXAMPLE = "docs-example-" + hashlib.sha256(b"".join(
    (ROOT / n).read_bytes() for n in ("dvc.yaml", "params.yaml"))).hexdigest()[:10]
BUILDERS.setdefault(EXAMPLE, _example_pipeline)
#: Run in the dataset repository before a block: the revisions the docs name.
_REVS = ("git tag v1 HEAD~1 && git tag v2 HEAD && "
         "{ git rev-parse -q --verify main >/dev/null || git branch main HEAD~1; }")
PRELUDE = {"dataset": _REVS,
           "clone": _REVS + " && dvc remote add -q -d store ../remote && dvc push -q && "
                    "git add .dvc/config && git commit -qm 'DVC remote' && git clone -q . ../clone",
           "example": "true"}
#: Where a block runs, relative to the copy (a clone that has not pulled: beside it).
WHERE = {"clone": "../clone"}


@pytest.fixture(scope="module")
def contexts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Callable[[], Path]]:
    """Each context's built repository, built on first use (once per test session)."""
    from tests.helpers.newcomer import newcomer_repo

    return {"dataset": lambda: newcomer_repo(tmp_path_factory),
            "clone": lambda: newcomer_repo(tmp_path_factory),
            "example": lambda: pristine(EXAMPLE, tmp_path_factory.getbasetemp() / "repos")}


def _copy(contexts: dict[str, Callable[[], Path]], context: str, tmp: Path) -> Path:
    repo = copy(contexts[context](), tmp / "repo")
    sh("bash", "-c", PRELUDE[context], cwd=repo)
    return (repo / WHERE.get(context, ".")).resolve()


WANT = re.compile(r"#.*?\bexit (\d)\b(?::\s*(.*))?$")


def _shell_script(block: Block, out: Path) -> tuple[str, dict[int, tuple[int, str]]]:
    """The block as one script, each logical line's output kept in ``out/<line>``, and what
    each line must give: ``# exit N[: TEXT]`` (``...`` in TEXT skips), else exit 0."""
    lines = ["set -u", 'fail() { cat "$4"; echo "line $1 ended with exit $2, expected $3" >&2; '
             "exit 99; }"]
    wants: dict[int, tuple[int, str]] = {}
    for k, line in enumerate(_logical_lines(block.body), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = WANT.search(line)
        code, text = (int(m.group(1)), (m.group(2) or "").strip()) if m else (0, "")
        n = block.line + k
        wants[n] = (code, text)
        lines.append(f"{{ {line}\n}} >{out}/{n} 2>&1; rc=$?; "
                     f"[ $rc -eq {code} ] || fail {n} $rc {code} {out}/{n}")
    return "\n".join(lines) + "\n", wants


def _says(output: str, text: str) -> bool:
    """``output`` holds the pieces of ``text`` between ``...``, in order."""
    at = 0
    for piece in (p.strip() for p in text.split("...")):
        at = output.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return True


def _params(kind: str) -> list[Any]:
    return [pytest.param(b, c, id=b.where) for c in CONTEXTS for b in _runs(kind, c)]


@pytest.mark.slow
@pytest.mark.parametrize("block,context", _params("shell"))
def test_every_shell_block_runs(block: Block, context: str, contexts: Any,
                                tmp_path: Path) -> None:
    repo = _copy(contexts, context, tmp_path)
    (out := tmp_path / "out").mkdir()
    script, wants = _shell_script(block, out)
    r = run("bash", "-c", script, cwd=repo)
    assert r.returncode == 0, f"{block.where}:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    for n, (_, text) in wants.items():
        said = (out / str(n)).read_text()
        assert _says(said, text), f"{block.page.name}:{n} does not print {text!r}:\n{said}"


#: Imported once here before a python block runs, in a child forked from this process: a
#: block starts as ``python -c`` would (a fresh ``__main__``), without paying for these again.
WARM = forked.installed()


@pytest.mark.slow
@pytest.mark.parametrize("block,context", _params("python"))
def test_every_python_block_runs(block: Block, context: str, contexts: Any,
                                 tmp_path: Path) -> None:
    repo = _copy(contexts, context, tmp_path)
    r = forked.python_c(block.body, repo, ENV, preload=WARM)
    assert r.returncode == 0, f"{block.where}:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"


def _shows(output: str, block: str) -> list[str]:
    """The lines of ``block`` that ``output`` does not show, in order (``...`` or ``…`` in a
    line skips; a line of the block may skip lines of the output)."""
    lines = [ln.rstrip() for ln in output.splitlines()]
    at, missing = 0, []
    for want in (w.rstrip() for w in block.splitlines()):
        if not want.strip():
            continue
        pieces = [p for p in re.split(r"\.\.\.|…", want) if p.strip()]
        k = next((k for k in range(at, len(lines)) if _says(lines[k], "...".join(pieces))),
                 None)
        if k is None:
            missing.append(want)
        else:
            at = k + 1
    return missing


@pytest.mark.slow
@pytest.mark.parametrize("block", [pytest.param(b, id=b.where) for b in BLOCKS
                                   if b.mark == "output-of"])
def test_every_shown_output_is_what_the_command_prints(block: Block, contexts: Any,
                                                       tmp_path: Path) -> None:
    context, command = (x.strip() for x in block.reason.split(":", 1))
    repo = _copy(contexts, context, tmp_path)
    r = run("bash", "-c", command, cwd=repo)
    missing = _shows(r.stdout + r.stderr, block.body)
    assert not missing, (f"{block.where}: `{command}` does not print\n" + "\n".join(missing)
                         + f"\n--- it printed:\n{r.stdout}{r.stderr}")


def test_an_output_block_is_matched_line_by_line() -> None:
    out = "a\nstage  samples\ntrain  54  (x)\nz\n"
    assert _shows(out, "stage  samples\ntrain  ...(x)") == []
    assert _shows(out, "train  54\nstage  samples") == ["stage  samples"]  # order counts
    assert _shows(out, "val  12") == ["val  12"]


# --- pages are for users --------------------------------------------------------------------

ISSUE = re.compile(r"(?<![\w/&])#\d+\b|\bissues? \d+\b|\bthe issue\b", re.I)


def _prose(text: str) -> str:
    """``text`` without fenced blocks, inline code and link targets (where ``#3`` is data)."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)  # lines kept
    text = re.sub(r"`[^`\n]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.sub(r"<https?://[^>]*>|https?://\S+", "", text)


def test_no_page_mentions_an_issue_number() -> None:
    found = [f"{p.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}: {m.group(0)}"
             for p in PAGES for text in [_prose(p.read_text())]
             for m in ISSUE.finditer(text)]
    assert not found, "issue numbers mean nothing to a user:\n" + "\n".join(found)
    assert ISSUE.search("fixed in #20") and ISSUE.search("for issue 24")
    assert ISSUE.search("not the 15 % the issue asks for")
    assert not ISSUE.search(_prose("a uid `day1#3`, [link](page.md#cost), &#8212;"))


# --- every name and path a page shows exists -----------------------------------------------

DOTTED = re.compile(r"\bdvc_cuvis(?:\.[A-Za-z_]\w*)+")
FILE = re.compile(r"(?<![\w./-])((?:dvc_cuvis|tests|benchmarks|scripts|examples|docs)/[\w./-]*\w)")


def _resolves(dotted: str) -> bool:
    """``dotted`` names a module, or an attribute of one (a class's member included)."""
    import importlib

    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        try:
            for name in parts[k:]:
                obj = getattr(obj, name)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.slow  # imports every module a page names: torch and lightning with the plugin
def test_every_module_path_and_file_a_page_names_exists() -> None:
    missing = []
    for page in PAGES:
        text = page.read_text()
        for m in DOTTED.finditer(text):
            if m.group(0).rsplit(".", 1)[-1] in ("yaml", "py") or "__mutmut_" in m.group(0):
                continue  # a file name (dvc_cuvis.yaml), a mutant's name
            if not _resolves(m.group(0)):
                missing.append(f"{page.relative_to(ROOT)}: {m.group(0)}")
        for m in FILE.finditer(text):
            if not (ROOT / m.group(1)).exists():
                missing.append(f"{page.relative_to(ROOT)}: {m.group(1)}")
    assert not missing, "names no user can find:\n" + "\n".join(sorted(set(missing)))
    assert not _resolves("dvc_cuvis.check.drift.no_such_name")
    assert not _resolves("dvc_cuvis.no_such_package.verify")


def test_the_nav_the_index_and_the_readme_list_every_page() -> None:
    import yaml

    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    assert {page for entry in nav for page in entry.values()} == pages
    index = (ROOT / "docs/index.md").read_text()
    assert {p for p in pages if f"]({p})" in index} == pages - {"index.md"}
    readme = (ROOT / "README.md").read_text()
    assert {p for p in pages if f"](docs/{p})" in readme} == pages - {"index.md"}


def _map_bullets() -> dict[str, str]:
    """architecture.md's package map: each package's bullet text (and the leaf modules')."""
    text = (ROOT / "docs/architecture.md").read_text()
    bullets = re.findall(r"^- \*\*(`?[\w ]+/?`?)\*\*:(.*?)(?=^- \*\*|^#|\Z)", text, re.M | re.S)
    return {name.strip("`").rstrip("/"): body for name, body in bullets}


def test_the_architecture_map_names_every_package_and_module() -> None:
    bullets = _map_bullets()
    pkg = ROOT / "dvc_cuvis"
    unnamed = []
    for d in sorted(p for p in pkg.iterdir() if (p / "__init__.py").is_file()):
        body = bullets.get(d.name)
        if body is None:
            unnamed.append(f"{d.name}/ (the package)")
            continue
        for mod in sorted(d.glob("*.py")):
            if mod.stem == "__init__" or (d.name == "cli" and not mod.stem.startswith("_")):
                continue  # cli: one module per verb, named by the verb
            if not re.search(rf"`(?:{d.name}/)?{mod.stem}(?:\.py)?`", body):
                unnamed.append(f"{d.name}/{mod.name}")
    leaf = bullets.get("leaf modules", "")
    unnamed += [m.name for m in sorted(pkg.glob("*.py"))
                if m.stem not in ("__init__", "__main__") and f"`{m.stem}`" not in leaf]
    assert not unnamed, "docs/architecture.md's package map does not name:\n" + "\n".join(unnamed)


def test_the_api_page_names_every_public_name() -> None:
    import dvc_cuvis

    text = (ROOT / "docs/api.md").read_text()
    shown = set(re.findall(r"\w+", "\n".join(re.findall(r"`[^`]*`|from dvc_cuvis import .*",
                                                        text))))
    assert set(dvc_cuvis.__all__) - {"__version__"} <= shown  # (::: targets: the strict build)
