"""The nesting ceiling of the JSON we read: refused before the parser recurses, measured
exactly (brackets in strings and escapes are text), and for unpickled records too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dvc_cuvis.limits import NestingError, check_nesting, loads_json


def _depth(value: Any) -> int:
    if isinstance(value, dict | list):
        inner = value.values() if isinstance(value, dict) else value
        return 1 + max((_depth(v) for v in inner), default=0)
    return 0


TEXT = st.text(alphabet='[]{}"\\ab\n', max_size=6)
JSON = st.recursive(st.none() | st.integers() | TEXT,
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(TEXT, inner, max_size=3), max_leaves=40)


@settings(max_examples=50, deadline=None)
@given(JSON, st.integers(min_value=1, max_value=8))
def test_the_scan_measures_what_the_parser_would(value: Any, ceiling: int) -> None:
    text = json.dumps(value)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DVC_CUVIS_MAX_NESTING", str(ceiling))
        if _depth(value) > ceiling:
            with pytest.raises(NestingError, match="DVC_CUVIS_MAX_NESTING"):
                loads_json(text, "doc.json")
        else:
            assert loads_json(text, "doc.json") == value


@pytest.mark.parametrize("text", [
    b"[" * 100_000,                               # deeper than the interpreter's stack
    b'{"a": ' * 101 + b"1" + b"}" * 101,          # one level over the ceiling of 100
    b"[" * 150 + b'"' + b"]" * 1000,              # cut inside a string: measured up to the cut
    b'"\\' + b'"' * 50_000 + b"[" * 200,          # escaped quotes: the brackets are not text
])
def test_nesting_beyond_the_ceiling_is_refused_before_the_parser_recurses(text: bytes) -> None:
    with pytest.raises(NestingError, match=r"^doc\.json: JSON nested deeper than 100 levels"):
        loads_json(text, "doc.json")


def test_at_the_ceiling_and_in_strings_it_parses() -> None:
    assert loads_json(b'{"a": ' * 100 + b"1" + b"}" * 100, "x") is not None
    assert loads_json('["' + "[{" * 5000 + '"]', "x") == ["[{" * 5000]


def test_a_record_nested_or_holding_itself_is_refused_and_shared_parts_walked_once() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(NestingError, match=r"^ckpt: a record nested deeper"):
        check_nesting({"x": loop}, "ckpt")
    shared: Any = [1]
    for _ in range(40):
        shared = [shared, shared]  # 2**40 paths, 41 containers
    check_nesting(shared, "ckpt")


def test_a_nested_dir_object_in_the_dvc_cache_is_an_unreadable_version(tmp_path: Path) -> None:
    """A ``.dir`` listing nested past the ceiling (a damaged or crafted cache object) is a
    version that cannot be read, for restore and for the failed-run check alike: never a
    RecursionError out of the parser."""
    from dvc_cuvis.repo.restore import _listing

    bomb = tmp_path / "abc.dir"
    bomb.write_bytes(b"[" * 200_000 + b"]" * 200_000)
    assert _listing(bomb, "data", {"a.npz"}) == {}
