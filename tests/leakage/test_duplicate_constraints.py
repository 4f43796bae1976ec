"""The duplicate constraints wired in: materialize signs each frame while its cube is in memory,
``check`` and the train guard read the signatures from the summaries shards and refuse a frame
whose content sits in two stages; unsigned frames are named with the command that signs them;
a damaged shard is exit 2 with nothing written.  Real npz frames enumerated, baked,
materialized and checked in-process."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dvc_cuvis.check.drift import DriftError, verify
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.leakage import duplicates
from dvc_cuvis.leakage.duplicates import DuplicateAudit, DuplicatePair, audit, stage_pair
from dvc_cuvis.leakage.signatures import (
    SIGNATURE_KEY,
    SIGNATURE_VERSION,
    Signature,
    from_record,
    signature,
)
from dvc_cuvis.materialize.summary_store import shard_files
from dvc_cuvis.model.frame_read import read_npz
from dvc_cuvis.train.datamodule import guard
from tests.helpers.leakage import planted_copy


def test_a_planted_copy_is_refused_by_check_and_the_guard(tmp_path: Path, cli) -> None:
    first, second = planted_copy(tmp_path)
    out = tmp_path / "out"
    stored = {}  # materialize signed each frame as it wrote it: the npz cube's signature
    for shard in shard_files(out):
        for name, entry in json.loads(shard.read_text())["frames"].items():
            stored[name] = from_record(entry[SIGNATURE_KEY], shard)
    assert len(stored) == 13
    for name, sig in stored.items():
        assert sig == signature(read_npz(str(out / name))["cube"])
    raw = verify(tmp_path / "splits.json", tmp_path / "universe.csv", lock=None, summaries=out)
    found = raw.finding("constraints")
    assert found.status == "violation" and "content_duplicate violated" in found.summary
    pairs = found.details["duplicate_pairs"]["content_duplicate"]
    assert pairs["count"] == 1 and {pairs["pairs"][0]["a"], pairs["pairs"][0]["b"]} == {
        first, second}
    assert "--group" in found.fix or "group" in found.fix
    # the materialized universe finds its own summaries; warn passes and still names the pair
    mat = verify(out / "splits.json", out / "universe.csv", lock=None,
                 content_duplicate="warn").finding("constraints")
    assert mat.status == "ok" and "content_duplicate violated (warn)" in mat.summary
    assert mat.details["duplicates"] == {"exact": 1, "near": 0, "unsigned": 0}
    calls: list[str | None] = []

    def module():  # a DataModule's face: setup() only
        return type("DM", (), {"setup": lambda self, stage=None: calls.append(stage)})()

    kw = {"splits": out / "splits.json", "universe": out / "universe.csv", "lock": None,
          "cache": None}
    with pytest.raises(DriftError, match="content_duplicate"):
        guard(module(), verify_mode="strict", **kw).setup("fit")
    assert calls == []  # refused before the module read a frame
    guard(module(), verify_mode="strict", content_duplicate="off", **kw).setup("fit")
    assert calls == ["fit"]
    run = cli("check", "--no-params", "--universe", tmp_path / "universe.csv", "--splits",
              tmp_path / "splits.json", "--no-lock", "--summaries", out, "--json",
              "--metrics", tmp_path / "m.json")
    assert run.code == 1, run.err
    doc = json.loads(run.out)["checks"]["constraints"]["details"]["duplicate_pairs"]
    assert doc["content_duplicate"]["pairs"][0]["a_stage"] in ("train", "val", "test")
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["content_duplicates"] == 1 and metrics["unsigned_frames"] == 0


def test_unsigned_frames_are_named_with_the_command_that_signs_them(tmp_path: Path,
                                                                     cli) -> None:
    planted_copy(tmp_path)
    out = tmp_path / "out"
    cache = StatCache(tmp_path / "stat-cache.bin")  # a clean verdict is remembered...
    for _ in range(2):
        kept = verify(out / "splits.json", out / "universe.csv", lock=None, cache=cache,
                      content_duplicate="warn")
    assert kept.ok and kept.reused_verdict
    shards = shard_files(out)
    for shard in shards:  # shards as written before signatures existed
        doc = json.loads(shard.read_text())
        for entry in doc["frames"].values():
            entry.pop(SIGNATURE_KEY)
        shard.write_text(json.dumps(doc))
    again = verify(out / "splits.json", out / "universe.csv", lock=None, cache=cache,
                   content_duplicate="warn")  # ...while no shard it read changed
    assert not again.reused_verdict
    assert "content_duplicate unavailable" in again.finding("constraints").summary
    found = verify(out / "splits.json", out / "universe.csv", lock=None).finding("constraints")
    assert found.status == "violation" and "content_duplicate unavailable" in found.summary
    unsigned = found.details["duplicate_pairs"]["unsigned"]
    assert unsigned["count"] == 13 and len(unsigned["frames"]) == 13
    fix = unsigned["fix"]
    assert found.fix == fix and fix.startswith("dvc-cuvis materialize --sign-only --out-dir ")
    frame_bytes = {p: p.read_bytes() for p in (out / "frames").rglob("*.npz")}
    run = cli(*fix.split()[1:])  # the command as printed
    assert run.code == 0 and "signed 13 frame(s)" in run.out, run.err
    assert {p: p.read_bytes() for p in (out / "frames").rglob("*.npz")} == frame_bytes
    again = verify(out / "splits.json", out / "universe.csv", lock=None).finding("constraints")
    assert "content_duplicate violated" in again.summary  # compared now: the copy is found
    # a damaged shard: exit 2 naming it, nothing written
    doc = json.loads(shards[0].read_text())
    next(iter(doc["frames"].values()))[SIGNATURE_KEY] = {"v": SIGNATURE_VERSION,
                                                         "content": "not hex"}
    shards[0].write_text(json.dumps(doc))
    with pytest.raises(DvcCuvisError, match="damaged or foreign frame signature"):
        verify(out / "splits.json", out / "universe.csv", lock=None)
    shards[0].write_text("{not json")
    run = cli("check", "--no-params", "--universe", out / "universe.csv", "--splits",
              out / "splits.json", "--no-lock", "--metrics", tmp_path / "m.json")
    assert run.code == 2 and str(shards[0]) in run.err and "Traceback" not in run.err
    assert not (tmp_path / "m.json").exists()


def test_stage_pairs_their_counts_and_the_worst_pairs_exactly() -> None:
    # a stage outside train/val/test ranks after them, and name order decides among such
    assert [stage_pair(a, b) for a, b in [
        ("val", "train"), ("test", "val"), ("train", "test"), ("holdout", "train"),
        ("train", "holdout"), ("zz", "aa"), ("aa", "zz")]] == [
        ("train", "val"), ("val", "test"), ("train", "test"), ("train", "holdout"),
        ("train", "holdout"), ("aa", "zz"), ("aa", "zz")]
    exact = (DuplicatePair("exact", "a", "test", "b", "train", 0),
             DuplicatePair("exact", "c", "train", "d", "test", 0),
             DuplicatePair("exact", "e", "holdout", "f", "train", 0))
    near = (DuplicatePair("near", "p", "train", "q", "holdout", 4),
            DuplicatePair("near", "m", "val", "n", "test", 1),
            DuplicatePair("near", "k", "train", "z", "test", 1),
            DuplicatePair("near", "k", "train", "y", "val", 1))
    found = DuplicateAudit(exact, near)
    assert found.by_stages() == {  # every pair of STAGE_PAIRS, then the others as met
        ("train", "val"): (0, 1), ("train", "test"): (2, 1), ("val", "test"): (0, 1),
        ("train", "holdout"): (1, 1)}
    assert list(found.by_stages()) == [*duplicates.STAGE_PAIRS, ("train", "holdout")]
    ranked = (*exact, near[3], near[2], near[1], near[0])  # fewest bits, then by name
    assert [found.worst(n) for n in (-1, 0, 1, 5, 7, 99)] == [
        (), (), ranked[:1], ranked[:5], ranked, ranked]
    assert DuplicateAudit().by_stages() == dict.fromkeys(duplicates.STAGE_PAIRS, (0, 0))


def test_content_codes_number_each_distinct_digest_in_digest_order() -> None:
    digests = ["00000000000000020000000000000005", "00000000000000010000000000000005",
               "00000000000000020000000000000005", "ff000000000000000000000000000000",
               "00000000000000010000000000000004"]  # equal low words, unequal high words
    content = np.frombuffer(bytes.fromhex("".join(digests)), dtype="S16")
    codes = duplicates._codes(content)
    assert codes.dtype == np.int64 and codes.tolist() == [2, 1, 2, 3, 0]


def test_the_audit_of_hand_made_signatures_word_for_word() -> None:
    # a, c, e hold one content; b's spectral shape is at cosine exactly 0.5 from theirs and
    # its hash 3 bits from theirs: a near pair at the bound, never an exact one
    same, other = "00000000000000010000000000000005", "00000000000000020000000000000005"
    sigs = {"a": Signature(same, 0, (1.0,)), "b": Signature(other, 0b111, (0.5, 0.5)),
            "c": Signature(same, 0, (1.0,)), "e": Signature(same, 0, (1.0,)), "u": None}
    stage_of = {"a": "train", "b": "val", "c": "test", "e": "train", "u": "val"}
    near = tuple(DuplicatePair("near", x, stage_of[x], y, stage_of[y], 3)
                 for x, y in [("a", "b"), ("b", "c"), ("b", "e")])
    assert audit(stage_of, sigs, cosine=0.5) == DuplicateAudit(
        exact=(DuplicatePair("exact", "a", "train", "c", "test", 0),
               DuplicatePair("exact", "c", "test", "e", "train", 0)),
        near=near, within_stage=1, unsigned=("u",))
    assert audit(stage_of, sigs, cosine=0.5 + 1e-9).near == ()
