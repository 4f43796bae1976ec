"""Text from data is data: hostile sample names, params values and commit subjects go through
every verb that prints them (diff, diff --md, log, check, resolve) without driving the
terminal or adding anything to the pull-request comment but text; a YAML alias bomb in a
pushed params.yaml is refused in one line (docs/robustness.md, "Text from data is data")."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import colorama
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.config.bounded_yaml import load_bounded_yaml
from dvc_cuvis.errors import shorten, terminal
from dvc_cuvis.limits import LimitError
from dvc_cuvis.model.splits import dumps_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import write_universe
from dvc_cuvis.review.markdown import WORD_JOINER, code_cell, code_fence, code_span, md_text
from tests.helpers.shell import sh

#: Names as a pushed universe.csv can hold them (it cannot hold a newline or CR: its reader
#: splits rows there; the escapers' own tests below cover those).
HOSTILE = [
    "```a ~~~ # Approved",
    "back`tick|pipe",
    "<img src=http://evil/t.png>",
    "<b>bold</b> &amp; *em* _u_",
    "[x](http://evil)",
    "![t](http://evil/t.png)",
    "@org/team",
    "# Approved",
    "\x1b]0;title\x07osc",
    "\x1b[2K\x1b[1G\x1b[32mall checks OK\x1b[0m",
    "bidi\u202egnp.exe\u2066",
    "del\x7fc1\x85\x9b",
    "bell\x07back\x08tab\tff\x0c",
]
SUBJECT = "v1 \x1b]0;t\x07 `x` <img src=http://evil/t.png> @org/team"
PARAM_A = "x`|y\n# Approved\n```\n<img src=http://evil/t.png>"
PARAM_B = "\x1b[2K\r@org/team ``` [x](http://evil) " + "z" * 3000
BOMB = ("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        + "".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n"
                  for p, n in zip("abcd", "bcde", strict=True))
        + "bake:\n  seed: 1\n  constraints: *e\n")


def _universe(n: int, md5: str) -> Universe:
    return Universe.from_records({"source": f"{h}/s{k:02d}.cu3s", "index": i, "md5": md5}
                                 for k, h in enumerate(HOSTILE) for i in range(n))


def _commit(repo: Path, uni: Universe, seed: int, params: dict, msg: str) -> None:
    write_universe(uni, repo / "universe.csv")
    (b,) = bake(uni, BakeOptions(seed=seed, group_by="source"))
    (repo / "splits.json").write_text(dumps_splits(b.config))
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=True))
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-qm", msg, cwd=repo)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """v1 (hostile subject, params A) -> v2 (every source loses a sample, every md5 changes,
    params B) -> v3 (clean params, the workspace); branch ``bomb``: an alias bomb."""
    root = tmp_path_factory.mktemp("hostile")
    sh("git", "init", "-q", cwd=root)
    _commit(root, _universe(3, "0" * 32), 0, {"bake": {"group_by": PARAM_A, "seed": 0}},
            SUBJECT)
    _commit(root, _universe(2, "1" * 32), 1, {"bake": {"group_by": PARAM_B, "seed": 1}}, "v2")
    _commit(root, _universe(2, "1" * 32), 1, {"bake": {"seed": 1}}, "v3")
    sh("git", "checkout", "-qb", "bomb", cwd=root)
    (root / "params.yaml").write_text(BOMB)
    sh("git", "commit", "-qam", "bomb", cwd=root)
    sh("git", "checkout", "-q", "-", cwd=root)
    return root


def assert_terminal_clean(out: str) -> None:
    """No control character but newline and tab, no DEL, C1 or bidi control."""
    bad = re.findall("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e"
                     "\u2066-\u2069]", out)
    assert bad == [], bad


def test_diff_and_log_text_show_hostile_names_escaped(repo: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(repo)
    r = cli("diff", "HEAD~2", "HEAD~1")
    assert r.code == 0, r.err
    assert_terminal_clean(r.out)
    for name in HOSTILE:
        assert f"  {terminal(name)}/s" in r.out, name
    assert "group_by: 'x`|y\\n# Approved" in r.out
    assert f"z…(+{len(repr(PARAM_B)) - 200} chars)" in r.out  # a long value is cut
    r = cli("log")
    assert r.code == 0, r.err
    assert_terminal_clean(r.out)
    assert terminal(SUBJECT) in r.out


ALLOWED_BLOCKS = {"heading", "paragraph", "table", "thead", "tbody", "tr", "th", "td",
                  "fence", "html_block", "inline"}
OURS_HTML = {"<details><summary>Changed samples by source</summary>\n",
             "<details><summary>Samples with new bytes</summary>\n", "</details>\n"}


def test_diff_md_renders_hostile_names_as_text_only(repo: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(repo)
    r = cli("diff", "HEAD~2", "HEAD~1", "--md", "--all", "--by-sample")
    assert r.code == 0, r.err
    tokens = MarkdownIt("commonmark").enable("table").parse(r.out)
    kinds = {t.type.removesuffix("_open").removesuffix("_close") for t in tokens}
    assert kinds <= ALLOWED_BLOCKS, kinds - ALLOWED_BLOCKS
    assert [t.tag for t in tokens if t.type == "heading_open"] == ["h3"]  # ours, no "Approved"
    assert {t.content for t in tokens if t.type == "html_block"} == OURS_HTML
    inline = [c for t in tokens if t.type == "inline" for c in t.children or []]
    assert {c.type for c in inline} <= {"text", "code_inline", "strong_open", "strong_close",
                                        "softbreak", "hardbreak"}
    prose = "".join(c.content for c in inline if c.type == "text")
    assert "@" not in prose and "http" not in prose and "Approved" not in prose
    fences = "".join(t.content for t in tokens if t.type == "fence")
    code = [c.content for c in inline if c.type == "code_inline"]
    for name in HOSTILE:
        assert f"\n{terminal(name)}/s" in "\n" + fences, name  # changed samples, new bytes
        assert fences.count(f"{terminal(name)}/s") >= 2, name
    assert repr(PARAM_A) in code
    cut = f"…(+{len(repr(PARAM_B)) - 200} chars)"
    assert any(c.startswith(repr(PARAM_B)[:50]) and c.endswith(cut) for c in code), code
    widths: list[set[int]] = []  # per table, the cells of each row: no row split by a `|`
    for t in tokens:
        if t.type == "table_open":
            widths.append(set())
        elif t.type == "tr_open":
            widths[-1].add(0)
            row = 0
        elif t.type in ("td_open", "th_open"):
            row += 1
        elif t.type == "tr_close":
            widths[-1] = (widths[-1] - {0}) | {row}
    assert widths == [{4}, {3}, {3}]
    html = MarkdownIt("commonmark").enable("table").render(r.out)
    assert "<img" not in html and "<a " not in html and "<b>" not in html
    assert_terminal_clean(r.out)


def test_check_reports_drift_with_hostile_names_through_colorama(
    repo: Path, cli, monkeypatch, tmp_path: Path,
) -> None:
    """DVC's import wraps stdout in colorama, whose OSC handler crashed on a name (exit 2);
    the missing files' names are data: the verdict is the drift report's, exit 1."""
    monkeypatch.chdir(repo)
    wrap = colorama.AnsiToWin32(sys.stdout)
    assert wrap.should_wrap()  # as colorama.init() wraps a stream that is not a terminal
    monkeypatch.setattr(sys, "stdout", wrap.stream)
    r = cli("check", "--no-enumerate", "--no-lock", "--stat-cache", "none")
    assert r.code == 1, r.err
    assert "[DRIFT] content" in r.out
    assert_terminal_clean(r.out)
    assert terminal(HOSTILE[8]) in r.out and "all checks OK" in r.out
    assert not [line for line in r.out.splitlines() if line.lstrip().startswith("```")]


def test_resolve_names_overlapping_hostile_samples_escaped(repo: Path, cli,
                                                           monkeypatch) -> None:
    monkeypatch.chdir(repo)
    cfg = json.loads((repo / "splits.json").read_text())
    cfg["test"] += cfg["train"] + cfg["val"]  # every sample in two stages: all offend
    (repo / "overlap.json").write_text(json.dumps(cfg))
    try:
        r = cli("resolve", "--splits", "overlap.json")
    finally:
        (repo / "overlap.json").unlink()
    assert r.code == 1, r.err
    assert "constraint no_split_overlap [error]: violated" in r.out
    assert_terminal_clean(r.out + r.err)
    assert terminal(HOSTILE[9]) + "/s09.cu3s#0" in r.out


def test_diff_refuses_a_params_alias_bomb_in_one_line(repo: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(repo)
    r = cli("diff", "HEAD", "bomb", "--md")
    assert r.code == 2
    assert r.out == ""
    assert r.err.count("\n") == 1 and len(r.err) < 400
    assert r.err.startswith("dvc-cuvis: error: bomb:params.yaml: YAML aliases expand")
    assert "DVC_CUVIS_MAX_YAML_ALIASES" in r.err


def test_bounded_yaml_counts_expansions_and_depth(monkeypatch) -> None:
    ordinary = "base: &b {seed: 1}\nbake: *b\nother: *b\nlist: [*b, *b]\n"
    assert load_bounded_yaml(ordinary, "r:p.yaml")["list"] == [{"seed": 1}, {"seed": 1}]
    deep = "[" * 150 + "]" * 150
    with pytest.raises(LimitError, match=r"^r:p\.yaml: YAML nests 101 levels"):
        load_bounded_yaml(deep, "r:p.yaml")
    # depth reached through an alias counts what it names
    through = "a: &a " + "[" * 60 + "]" * 60 + "\nb: " + "[" * 60 + "*a" + "]" * 60 + "\n"
    with pytest.raises(LimitError, match="levels"):
        load_bounded_yaml(through, "r:p.yaml")
    monkeypatch.setenv("DVC_CUVIS_MAX_YAML_ALIASES", "30000")  # a raised ceiling lets it in
    assert len(load_bounded_yaml(BOMB, "r:p.yaml")["e"]) == 10


NEWLINE_NAMES = ["a\n```\n# Approved\n@org/team [x](http://evil) ![t](http://evil/t.png)",
                 "cr\roverwrite", "nul\x00", "````", "` lead", "trail `", "  "]


def _inline(markdown: str) -> list:
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    return [c for t in tokens if t.type == "inline" for c in t.children or []]


def _check_escapers(s: str) -> None:
    shown = terminal(s)
    assert_terminal_clean(shown)
    kids = _inline(f"x{md_text(s)}x")
    assert {k.type for k in kids} == {"text"}
    assert "".join(k.content for k in kids) == f"x{shown}x".replace("@", "@" + WORD_JOINER)
    kids = _inline(f"x {code_span(s)} x")
    assert [k.type for k in kids] == ["text", "code_inline", "text"]
    assert kids[1].content == (shown or " ")
    table = MarkdownIt("commonmark").enable("table").parse(
        f"| a | b |\n|---|---|\n| {code_cell(s)} | {md_text(s)}x |\n")
    cells = [t for t in table if t.type == "inline"][2:]
    assert len(cells) == 2
    assert [k.content for k in cells[0].children or []] == [shown or " "]
    lines = [shown, "```", shown[::-1]]
    fence = code_fence(lines)
    block = MarkdownIt("commonmark").parse("\n".join([fence, *lines, fence]) + "\n")
    assert [t.type for t in block] == ["fence"]
    assert block[0].content == "\n".join(lines) + "\n"


@pytest.mark.parametrize("s", HOSTILE + NEWLINE_NAMES)
def test_escapers_on_the_corpus(s: str) -> None:
    _check_escapers(s)


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=40))
def test_escapers_round_trip_random_text(s: str) -> None:
    _check_escapers(s)


def test_ordinary_text_is_unchanged_and_long_text_cut() -> None:
    name = "day2/session_01.cu3s#0"
    assert terminal(name) == name and code_span(name) == f"`{name}`"
    assert code_fence([name]) == "```"
    assert shorten("abc", 5) == "abc" and shorten("abcdefgh", 5) == "abcde…(+3 chars)"


def test_bakes_warnings_show_hostile_names_escaped(repo: Path, tmp_path: Path, cli,
                                                   monkeypatch) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(repo, copy)
    monkeypatch.chdir(copy)
    r = cli("bake", "--no-params", "--universe", "universe.csv", "--out", "splits.json",
            "--seed", "7", "--group-by", "source")
    assert r.code == 0, r.err
    assert "warning:" in r.err and "moved" in r.err, r.err  # the moves name the samples
    assert_terminal_clean(r.err)
    assert any(terminal(name) in r.err for name in HOSTILE[8:]), r.err
