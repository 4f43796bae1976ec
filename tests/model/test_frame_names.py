"""model/frame_names.py: one name per (source, index), invertible, as a person expects."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dvc_cuvis.model.frame_names import frame_name, parse_frame_name

# path components chosen to meet every rule of the encoding: extensions that differ only by
# a suffix or case, names that look like frame files or escapes, dots, empty components,
# odd and non-ASCII characters, a NUL and an unpaired surrogate
_PART = st.one_of(
    st.sampled_from(["x", "X", "x.npz", "X.NPZ", "x.tif", "x.tiff", "x.cu3s", "x.000000.npz",
                     "x.000003", ".", "..", "", "%", "%2F", "%2E", "%00", "a b", "C:", "#1",
                     "Würfel", "e\u0301", "\u00e9", "\x00", "\udcff", "frames", ".npz"]),
    st.text(min_size=0, max_size=12),
)
_SOURCE = st.lists(_PART, min_size=1, max_size=4).map("/".join)
_REF = st.tuples(_SOURCE, st.integers(min_value=0, max_value=2_000_000))


def _check_layout(refs: set[tuple[str, int]]) -> dict[str, tuple[str, int]]:
    names = {frame_name(s, i): (s, i) for s, i in refs}
    assert len(names) == len(refs)  # injective on this set
    folders = set()
    for name, ref in names.items():
        assert parse_frame_name(name) == ref
        parts = name.split("/")
        assert parts[0] == "frames" and parts[-1].endswith(".npz")
        assert all(p not in ("", ".", "..") and "\x00" not in p for p in parts)
        for k in range(2, len(parts)):
            folder = "/".join(parts[:k])
            assert not folder.lower().endswith(".npz")  # no folder looks like a frame file
            folders.add(folder)
    assert not folders & set(names)  # a frame file is never another frame's folder
    return names


@settings(max_examples=300, deadline=None)
@given(st.sets(_REF, max_size=12))
def test_names_are_injective_and_parse_back(refs: set[tuple[str, int]]) -> None:
    _check_layout(refs)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sets(_REF, min_size=1, max_size=8))
def test_names_coexist_on_disk(tmp_path: Path, refs: set[tuple[str, int]]) -> None:
    root = tmp_path / hashlib.sha256(repr(sorted(refs)).encode("utf-8", "surrogatepass")
                                     ).hexdigest()[:12]
    names = _check_layout({(s, i) for s, i in refs if len(s.encode("utf-8", "surrogatepass"))
                           < 60})
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "xb") as fh:  # exclusive: a second writer of one name would fail
            fh.write(b"")
    assert len([p for p in root.rglob("*") if p.is_file()]) == len(names)


def test_the_layout_a_person_expects() -> None:
    assert frame_name("day1/frame_0000.npz", 0) == "frames/day1/frame_0000.npz.000000.npz"
    assert frame_name("day1/a.cu3s", 3) == "frames/day1/a.cu3s.000003.npz"
    assert frame_name("a.npz/s.cu3s", 1) == "frames/a%2Enpz/s.cu3s.000001.npz"  # folder
    assert frame_name("Würfel/Messung 1.cu3s", 0) == "frames/Würfel/Messung 1.cu3s.000000.npz"
    assert frame_name("d/x", 0) == "frames/d/x.000000.npz"
    assert frame_name("d/x", 1_234_567) == "frames/d/x.1234567.npz"
    _check_layout({("x.npz", 0), ("x.npz/s", 0), ("x.tif", 0), ("x.tiff", 0), ("X.tif", 0),
                   ("d/x", 0), ("d/x.000000.npz", 0), ("d/x.000000", 0)})
    with pytest.raises(Exception, match="not a frame name"):
        parse_frame_name("frames/day1/a.cu3s/000003")
