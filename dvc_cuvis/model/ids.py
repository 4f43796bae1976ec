"""The id-range grammar: ``"a-b[:step]"``, inclusive, as selectors and universe.csv cells use it.

A leaf of the model, as upstream keeps ``parse_id_range`` in its own small module: the
selectors (a split's ``ids``) and the universe reader (an ``index`` cell) both import it,
and neither imports the other for it.
"""

from __future__ import annotations

import re

from dvc_cuvis.errors import SelectorError

#: Upstream's range grammar (note: ``\d`` is Unicode-aware there, so it is here too).
_RANGE_RE = re.compile(r"^(\d+)-(\d+)(?::(\d+))?$")

#: The most ids one ``a-b[:step]`` range may expand to, in a selector's ``ids`` and in a
#: universe.csv ``index`` cell alike (:func:`parse_id_range`, the one home of the grammar).
#:
#: Why 10 million: a range costs memory in proportion to its length, not to the text that
#: asks for it, so a ten-character cell must not be able to demand gigabytes.  In a
#: universe.csv every id becomes a row that carries copies of all the row's other cells (a
#: 10M-id cell means gigabytes of rows with typical columns, and 10**8 ten times that); in a
#: selector the ids are an int64 array (8 bytes an id).  Ten times the largest universe
#: the benchmarks target (1M rows) leaves ample room for any real split,
#: and a longer run is written as several ranges.
MAX_RANGE_IDS = 10_000_000


def parse_id_range(text: str) -> range | None:
    """The inclusive ``"a-b[:step]"`` id range ``text`` names, or None if it is no range.

    Upstream's grammar (``cuvis_ai_core.utils.general.expand_range_selectors``, which its
    universe reader uses too): blanks around the text are ignored, ``\\d`` is
    Unicode-aware.  Used by :func:`split_ids` and by the universe.csv reader's ``index``
    cells, with one limit, :data:`MAX_RANGE_IDS`.

    Raises
    ------
    SelectorError
        ``step`` is 0, ``start > stop``, or the range holds more than
        :data:`MAX_RANGE_IDS` ids (upstream's messages for the first two).
    """
    m = _RANGE_RE.match(text.strip())
    if m is None:
        return None
    first, last, every = m.groups()
    start, stop, step = int(first), int(last), int(every or 1)
    if step <= 0:
        raise SelectorError(f"range selector {text!r}: step must be > 0")
    if start > stop:
        raise SelectorError(f"range selector {text!r}: start {start} must be <= stop {stop}")
    count = (stop - start) // step + 1  # counted, not len(): len() overflows past 2**63
    if count > MAX_RANGE_IDS:
        raise SelectorError(f"range selector {text!r} expands to {count} ids (at most "
                            f"{MAX_RANGE_IDS:,}); split it up")
    return range(start, stop + 1, step)
