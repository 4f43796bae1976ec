"""The report's leakage section, built in-process from real npz frames enumerated and
materialized into a tmp folder, with a split written by hand so each pair is planted:

=====================  =====  ========================================
source                 stage  why
=====================  =====  ========================================
rec0/f0.npz            train  scene 0
rec0/f1.npz            train  scene 1
rec1/f0.npz            val    scene 2
rec1/f1.npz            val    scene 3
rec2/f0.npz            test   scene 4; its neighbour rec2/f1 is in val
rec2/f1.npz            val    scene 5
copy/a.npz             val    scene 0 again: exact, train–val
x<script>`y.npz        test   scene 2 again: exact, val–test (a hostile name)
near/b.npz             test   scene 1, 5 % brighter: near, train–test
=====================  =====  ========================================
"""

from __future__ import annotations

import base64
import dataclasses
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dvc_cuvis.check.drift import verify
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.leakage.signatures import SIGNATURE_KEY
from dvc_cuvis.materialize import ReaderParams, materialize_universe
from dvc_cuvis.materialize.summaries import thumbnail
from dvc_cuvis.materialize.summary_store import shard_files, sign_materialized
from dvc_cuvis.model import frame_read
from dvc_cuvis.model.frame_bytes import npz_bytes
from dvc_cuvis.model.frames import Compression
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe_io import read_universe, write_universe
from dvc_cuvis.review.report_run import ReportOptions, report
from dvc_cuvis.review.spectra_html import bmp
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from tests.helpers.leakage import scene

HOSTILE = "x<script>`y.npz"
WAVELENGTHS = np.array([450, 550, 650, 750], dtype=np.int32)
LAYOUT = {  # source -> (stage, scene, gain)
    "rec0/f0.npz": ("train", 0, 1.0), "rec0/f1.npz": ("train", 1, 1.0),
    "rec1/f0.npz": ("val", 2, 1.0), "rec1/f1.npz": ("val", 3, 1.0),
    "rec2/f0.npz": ("test", 4, 1.0), "rec2/f1.npz": ("val", 5, 1.0),
    "copy/a.npz": ("val", 0, 1.0), HOSTILE: ("test", 2, 1.0), "near/b.npz": ("test", 1, 1.05),
}
VOID = {"img", "meta", "br", "hr", "input", "link", "source", "wbr", "col", "area"}


def _planted(root: Path) -> Path:
    """Enumerate the frames of LAYOUT, write its split and materialize it into root/out."""
    data = root / "data"
    for source, (_stage, seed, gain) in LAYOUT.items():
        (data / source).parent.mkdir(parents=True, exist_ok=True)
        cube = (scene(seed) * np.float32(gain)).astype(np.float32)
        (data / source).write_bytes(npz_bytes({"cube": cube, "wavelengths": WAVELENGTHS},
                                              Compression()))
    uni, _ = enumerate_universe(EnumerateOptions(format="npz", root=data, out_dir=root, jobs=1))
    write_universe(uni, root / "universe.csv")
    uni = read_universe(root / "universe.csv")
    split = {"universe_hash": uni.hash, "predict": [], **{
        stage: [{"kind": "files", "paths": sorted(s for s, v in LAYOUT.items()
                                                   if v[0] == stage)}]
        for stage in ("train", "val", "test")}}
    (root / "splits.json").write_text(json.dumps(split))
    materialize_universe(uni, load_splits(root / "splits.json"), root / "out", ReaderParams(),
                         jobs=1)
    return root / "out"


class Leakage(HTMLParser):
    """The leakage section: its table rows, its pairs (kind, distance, images, captions),
    its paragraphs; and every tag checked to close in order (the page parses)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.inside = False
        self.rows: list[list[str]] = []
        self.pairs: list[dict[str, Any]] = []
        self.paragraphs: list[dict[str, Any]] = []
        self._text: list[str] | None = None
        self._attrs: dict[str, str] = {}
        self.feed(text)
        self.close()
        assert self.open == [], f"unclosed tags: {self.open}"

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag not in VOID:
            self.open.append(tag)
        if tag == "section":
            self.inside = a.get("id") == "leakage"
        if not self.inside:
            return
        if tag == "tr" and "data-stage-a" in a:
            self.rows.append([])
        elif tag == "div" and a.get("class") == "pair":
            self.pairs.append({**a, "imgs": [], "captions": []})
        elif tag == "img":
            self.pairs[-1]["imgs"].append(a)
        elif tag in ("td", "figcaption", "p"):
            self._text, self._attrs = [], a

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()
        if tag == "section":
            self.inside = False
        if not self.inside or self._text is None or tag not in ("td", "figcaption", "p"):
            return
        text = "".join(self._text)
        if tag == "td" and self.rows:
            self.rows[-1].append(text)
        elif tag == "figcaption":
            self.pairs[-1]["captions"].append(text)
        elif tag == "p" and not self.pairs:
            self.paragraphs.append({**self._attrs, "text": text})
        self._text = None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)


def _image(img: dict[str, str]) -> bytes:
    return base64.b64decode(img["src"].removeprefix("data:image/bmp;base64,"))


def test_the_report_lists_planted_pairs_per_stage_pair_and_draws_the_worst(
        tmp_path: Path, monkeypatch) -> None:
    out = _planted(tmp_path)
    read: list[str] = []
    real_read = frame_read.read_npz
    monkeypatch.setattr(frame_read, "read_npz", lambda p: read.append(p) or real_read(p))
    opts = ReportOptions(universe=tmp_path / "universe.csv", splits=tmp_path / "splits.json",
                         out=tmp_path / "r.html", check=False, summaries=out)
    page = report(opts).html
    sec = Leakage(page)
    assert sec.rows == [["train–val", "1", "0", "0"], ["train–test", "0", "1", "0"],
                        ["val–test", "1", "0", "1"]]
    # exact pairs first (by name), then the near one; each drawn from its own npz frame
    assert [(p["data-kind"], [i["data-uid"] for i in p["imgs"]]) for p in sec.pairs] == [
        ("exact", ["copy/a.npz#0", "rec0/f0.npz#0"]),
        ("exact", ["rec1/f0.npz#0", f"{HOSTILE}#0"]),
        ("near", ["near/b.npz#0", "rec0/f1.npz#0"])]
    assert sec.pairs[2]["captions"] == ["near/b.npz#0 (test)", "rec0/f1.npz#0 (train)"]
    assert sec.pairs[1]["captions"] == ["rec1/f0.npz#0 (val)", f"{HOSTILE}#0 (test)"]
    for pair in sec.pairs:
        for img in pair["imgs"]:
            source = img["data-uid"].removesuffix("#0")
            cube = (scene(LAYOUT[source][1]) * np.float32(LAYOUT[source][2])).astype(
                np.float32)
            assert _image(img) == bmp(thumbnail(cube, WAVELENGTHS).array()), source
            assert img["data-stage"] == LAYOUT[source][0]
    assert len({str(Path(p).relative_to(out)) for p in read}) == len(read) == 6  # only those
    assert "<script>" not in page and "x&lt;script&gt;`y.npz#0" in page  # text, not markup

    # the page's drift check reads the same summaries: its constraints name these pairs
    drift = report(dataclasses.replace(opts, check=True)).shown.drift
    assert drift is not None and not drift.ok
    found = json.dumps(drift.finding("constraints").details)
    assert "content_duplicate" in found and "copy/a.npz#0" in found, found

    # metrics: the check's counts per pair of stages
    metrics = verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None,
                     summaries=out, checks=("constraints",)).metrics()
    assert {k: v for k, v in metrics.items() if "_train" in k or "_val" in k} == {
        "content_duplicates_train_val": 1, "near_duplicates_train_val": 0,
        "content_duplicates_train_test": 0, "near_duplicates_train_test": 1,
        "content_duplicates_val_test": 1, "near_duplicates_val_test": 0}

    # an unsigned frame: counted, named, with the command that signs it (which works)
    shard = next(s for s in shard_files(out) if s.parent.name == "rec2")
    doc = json.loads(shard.read_text())
    for entry in doc["frames"].values():
        entry.pop(SIGNATURE_KEY)
    shard.write_text(json.dumps(doc))
    unsigned = Leakage(report(opts).html)
    note = next(p for p in unsigned.paragraphs if p.get("data-metric") == "leakage-unsigned")
    assert note["data-count"] == "2" and "rec2/f0.npz#0, rec2/f1.npz#0" in note["text"]
    assert f"dvc-cuvis materialize --sign-only --out-dir {out.as_posix()}" in note["text"]
    sign_materialized(out)
    assert Leakage(report(opts).html).rows == sec.rows

    # no materialized folder: the section says so; none named at all: no section
    gone = Leakage(report(ReportOptions(universe=opts.universe, splits=opts.splits,
                                        check=False, summaries=tmp_path / "nowhere")).html)
    assert any("no materialized folder" in p["text"] for p in gone.paragraphs)
    assert gone.rows[2] == ["val–test", "0", "0", "1"] and gone.pairs == []
    absent = report(ReportOptions(universe=opts.universe, splits=opts.splits,
                                  summaries=tmp_path / "nowhere")).shown.drift
    assert absent is not None and "not run" in json.dumps(  # said, not an error
        absent.finding("constraints").details)
    plain = report(ReportOptions(universe=opts.universe, splits=opts.splits, check=False)).html
    assert 'id="leakage"' not in plain

    # a drawn frame that is a link out of the folder, or damaged: one error naming it
    frame = out / "frames/rec0/f1.npz.000000.npz"
    frame.unlink()
    frame.symlink_to(tmp_path / "data/rec0/f1.npz")
    with pytest.raises(DvcCuvisError, match="leads outside"):
        report(opts)
    frame.unlink()
    frame.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(DvcCuvisError, match=r"f1\.npz\.000000\.npz: cannot read the frame of "
                       r"rec0/f1\.npz#0 .*rerun dvc-cuvis materialize"):
        report(opts)
