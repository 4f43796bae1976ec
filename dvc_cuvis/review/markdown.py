"""Text from data in markdown: the pull-request comment of ``diff --md`` shows names,
params values and revisions as text, never as markup.

Sample names, groups, paths, params values and revisions come from branches anyone can
push, and the comment renders in every reviewer's browser.  A value goes in a code span or
a code fence that it cannot close (a backtick run longer than any in it), or, as inline
text, with every character markdown could act on escaped; control characters are first
shown as visible escapes (:func:`dvc_cuvis.errors.terminal`), so no newline in a value can
start a line of markdown.  Ordinary names come out as before (`` `name` ``, `` ``` ``).
"""

from __future__ import annotations

import re

from dvc_cuvis.errors import terminal

__all__ = ["WORD_JOINER", "code_cell", "code_fence", "code_span", "md_text"]

#: ASCII punctuation but ``@``: CommonMark lets a backslash make each one literal.
_MD_PUNCT = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?\[\\\]^_`{|}~])""")
_BACKTICKS = re.compile("`+")
#: Put after every ``@``: no @-mention or e-mail autolink starts there (invisible).
WORD_JOINER = "\u2060"


def md_text(text: str) -> str:
    """``text`` as literal inline markdown (a table cell too): no emphasis, link, image,
    HTML, entity, heading, list, cell break or @-mention can start in it."""
    return _MD_PUNCT.sub(r"\\\1", terminal(text)).replace("@", "@" + WORD_JOINER)


def code_span(text: str) -> str:
    """``text`` as one markdown code span that it cannot close (ordinary text: `` `text` ``)."""
    body = terminal(text) or " "  # no empty code span exists: one space shows as nothing
    longest = max((len(m) for m in _BACKTICKS.findall(body)), default=0)
    ticks = "`" * (longest + 1)
    pad = body[:1] == "`" or body[-1:] == "`" or (
        body[:1] == " " and body[-1:] == " " and body.strip(" ") != "")
    return f"{ticks} {body} {ticks}" if pad else f"{ticks}{body}{ticks}"


def code_cell(text: str) -> str:
    """``text`` as a code span in a table cell: a ``|`` in it cannot start another cell
    (GFM reads ``\\|`` there as a literal pipe, inside the code span too)."""
    return code_span(text).replace("|", "\\|")


def code_fence(lines: list[str]) -> str:
    """The fence for a code block holding ``lines`` (escaped with
    :func:`~dvc_cuvis.errors.terminal`): longer than any backtick run in them, so no line can
    close it (ordinary lines: `` ``` ``)."""
    longest = max((len(m) for line in lines for m in _BACKTICKS.findall(line)), default=0)
    return "`" * max(3, longest + 1)
