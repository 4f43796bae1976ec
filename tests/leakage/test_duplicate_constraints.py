"""The duplicate constraints wired in: materialize signs each frame while its cube is in memory,
``check`` and the train guard read the signatures from the summaries shards and refuse a frame
whose content sits in two stages; unsigned frames are named with the command that signs them;
a damaged shard is exit 2 with nothing written.  Real npz frames enumerated, baked,
materialized and checked in-process."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dvc_cuvis.check.drift import DriftError, verify
from dvc_cuvis.check.duplicates import (
    Duplicates,
    check_duplicates,
    split_audit,
    stored_signatures,
)
from dvc_cuvis.check.fixes import Workspace
from dvc_cuvis.check.summaries import (
    SplitSummaries,
    missing_note,
    read_split_summaries,
    unpulled,
)
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
    to_record,
)
from dvc_cuvis.materialize.summary_store import shard_files, shard_of, write_shard
from dvc_cuvis.model.constraints import ConstraintResult
from dvc_cuvis.model.frame_names import frame_name
from dvc_cuvis.model.frame_read import read_npz
from dvc_cuvis.model.resolution import Resolution, resolve
from dvc_cuvis.model.splits import load_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import read_universe, write_universe
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


def _sig(content: int, phash: int, axis: int) -> Signature:
    """A hand-made signature: its content, its hash, a spectral shape along one of 4 axes
    (shapes of different axes are never near)."""
    return Signature(f"{content:032x}", phash, tuple(float(k == axis) for k in range(4)))


# a (3 copies), b and c (2 copies each): exact; n: a near pair (1 bit, one shape); u: unsigned
# (no entry, an entry without a signature, another version, no entry); w.tif: a whole file
SIGNED = {("a.cu3s", 0): _sig(1, 0, 0), ("a.cu3s", 1): _sig(1, 0, 0), ("a.cu3s", 2): _sig(1, 0, 0),
          ("b.cu3s", 0): _sig(2, 0xFFFF, 1), ("b.cu3s", 1): _sig(2, 0xFFFF, 1),
          ("c.cu3s", 0): _sig(3, 0xFFFF << 16, 2), ("c.cu3s", 1): _sig(3, 0xFFFF << 16, 2),
          ("n.cu3s", 0): _sig(4, 0xFFFF << 32, 3), ("n.cu3s", 1): _sig(5, 1 | 0xFFFF << 32, 3),
          ("w.tif", None): _sig(6, 0xFFFF << 48, 0)}
UNSIGNED = {("u.cu3s", 1): {"md5": "m"}, ("u.cu3s", 2): {SIGNATURE_KEY: {"v": 2}}}
UIDS = ["a.cu3s#0", "a.cu3s#1", "a.cu3s#2", "b.cu3s#0", "b.cu3s#1", "c.cu3s#0", "c.cu3s#1",
        "n.cu3s#0", "n.cu3s#1", "u.cu3s#0", "u.cu3s#1", "u.cu3s#2", "u.cu3s#3", "w.tif"]


def _signed_folder(folder: Path) -> Universe:
    """A materialized folder's universe.csv (the samples above) and its summaries shards."""
    uni = Universe.from_records([{"source": u.split("#")[0], "index": u.partition("#")[2]}
                                 for u in UIDS])
    write_universe(uni, folder / "universe.csv")
    shards: dict[str, dict[str, Any]] = {}
    for (src, index), entry in [*((k, {SIGNATURE_KEY: to_record(s)}) for k, s in SIGNED.items()),
                                *UNSIGNED.items()]:
        name = frame_name(src, index or 0)
        shards.setdefault(shard_of(name), {})[name] = entry
    for shard, entries in shards.items():
        write_shard(folder / shard, entries, fsync=False)
    return read_universe(folder / "universe.csv")


def _split(folder: Path, stages: dict[str, str]) -> tuple[Resolution, SplitSummaries]:
    """A split of the samples (stage -> spaced uids) resolved, and the summaries ``check``
    reads for it."""
    doc = {stage: [{"kind": "file_indices", "source": u.split("#")[0],
                    "ids": [int(u.split("#")[1])]} if "#" in u else {"kind": "files",
                                                                      "paths": [u]}
                   for u in uids.split()] for stage, uids in stages.items()}
    (folder / "splits.json").write_text(json.dumps(doc))
    res = resolve(load_splits(folder / "splits.json"), read_universe(folder / "universe.csv"))
    return res, read_split_summaries(res, folder)


def test_the_duplicate_constraints_word_for_word(tmp_path: Path) -> None:
    folder = tmp_path / "mat dir"
    _signed_folder(folder)
    fix = f"dvc-cuvis materialize --sign-only --out-dir {shlex.quote(folder.as_posix())}"
    exact = [("a.cu3s#0", "train", "a.cu3s#1", "val"), ("a.cu3s#0", "train", "a.cu3s#2", "test"),
             ("a.cu3s#1", "val", "a.cu3s#2", "test"), ("b.cu3s#0", "train", "b.cu3s#1", "test"),
             ("c.cu3s#0", "val", "c.cu3s#1", "test")]
    lines = tuple(f"{a} ({sa}) = {b} ({sb})" for a, sa, b, sb in exact)
    near = "n.cu3s#0 (train) ~ n.cu3s#1 (val)"
    unsigned = ["u.cu3s#0", "u.cu3s#1", "u.cu3s#2", "u.cu3s#3"]

    def content(sev: str) -> ConstraintResult:
        return ConstraintResult(
            "content_duplicate", sev, "violated", 5, lines,
            f"5 pair(s) of frames with one content in different stages: {'; '.join(lines[:3])}"
            " (+2 more)")

    def near_(sev: str) -> ConstraintResult:
        return ConstraintResult("near_duplicate", sev, "violated", 1, (near,),
                                f"1 pair(s) of near-copy frames in different stages: {near}")

    def unavailable(sev: str) -> ConstraintResult:
        return ConstraintResult(
            "content_duplicate", sev, "unavailable", 4, tuple(unsigned),
            "4 frame(s) without a signature, not compared: u.cu3s#0, u.cu3s#1, u.cu3s#2 "
            f"(+1 more); sign them: {fix}")

    pairs = {"content_duplicate": {"count": 5, "more": "", "pairs": [
                 {"a": a, "a_stage": sa, "b": b, "b_stage": sb} for a, sa, b, sb in exact]},
             "near_duplicate": {"count": 1, "more": "", "pairs": [
                 {"a": "n.cu3s#0", "a_stage": "train", "b": "n.cu3s#1", "b_stage": "val",
                  "distance": 1}]},
             "unsigned": {"count": 4, "frames": unsigned, "more": "", "fix": fix}}
    # every copy across stages; then the copies within train, only the near pair across
    across = _split(folder, {"train": "a.cu3s#0 b.cu3s#0 n.cu3s#0 u.cu3s#0 w.tif",
                             "val": "a.cu3s#1 c.cu3s#0 n.cu3s#1 u.cu3s#1",
                             "test": "a.cu3s#2 b.cu3s#1 c.cu3s#1 u.cu3s#2 u.cu3s#3"})
    within = _split(folder, {"train": "a.cu3s#0 a.cu3s#1 a.cu3s#2 b.cu3s#0 b.cu3s#1 c.cu3s#0 "
                                      "c.cu3s#1 n.cu3s#0 u.cu3s#0 u.cu3s#1 w.tif",
                             "val": "n.cu3s#1 u.cu3s#2", "test": "u.cu3s#3"})
    cases = [  # split, content, near -> results, the pairs listed, fails, re-bake mode
        (across, "error", "warn", [content("error"), near_("warn")], pairs, True, "exact"),
        (across, "warn", "error", [content("warn"), near_("error")], pairs, True, "near"),
        (across, "off", "warn", [near_("warn")], ["near_duplicate", "unsigned"], False, "exact"),
        (across, "warn", "off", [content("warn")], ["content_duplicate", "unsigned"], False,
         "exact"),
        (within, "error", "warn", [near_("warn"), unavailable("error")],
         ["near_duplicate", "unsigned"], True, "exact"),
        (within, "warn", "off", [unavailable("warn")], ["unsigned"], False, "exact"),
        (within, "off", "warn", [near_("warn")], ["near_duplicate", "unsigned"], False, "exact")]
    by_stages = {"across": {"train_val": {"exact": 1, "near": 1},
                            "train_test": {"exact": 2, "near": 0},
                            "val_test": {"exact": 2, "near": 0}},
                 "within": {"train_val": {"exact": 0, "near": 1},
                            "train_test": {"exact": 0, "near": 0},
                            "val_test": {"exact": 0, "near": 0}}}
    for (_, read), con, nea, results, listed, fails, mode in cases:
        got = check_duplicates(read, con, nea)
        n_exact = 5 if read is across[1] else 0
        assert (got.results, got.failed, got.folder) == (results, fails, folder), (con, nea)
        assert got.counts == {"content_duplicates": n_exact, "near_duplicates": 1,
                              "unsigned_frames": 4}
        assert got.details == {
            "duplicates": {"exact": n_exact, "near": 1, "unsigned": 4},
            "duplicates_by_stages": by_stages["across" if n_exact else "within"],
            "duplicate_pairs": {k: pairs[k] for k in listed}}, (con, nea)
        assert got.rebake() == (
            f"re-bake keeping each group of copies in one stage: add --keep-duplicates-together "
            f"{mode} --summaries {shlex.quote(folder.as_posix())} to dvc-cuvis bake "
            f"(params.yaml: bake.keep_duplicates_together: {mode}), then check again")
    for read in (across[1], within[1], None):
        assert check_duplicates(read, "off", "off") == Duplicates()
    assert Duplicates().rebake() == (
        "re-bake keeping each group of copies in one stage: add --keep-duplicates-together "
        "exact to dvc-cuvis bake (params.yaml: bake.keep_duplicates_together: exact), then "
        "check again")
    found = split_audit(within[0], folder)
    assert (found.exact, found.within_stage, found.unsigned) == ((), 4, tuple(unsigned))
    assert [(p.first, p.second, p.distance) for p in found.near] == [
        ("n.cu3s#0", "n.cu3s#1", 1)]


def test_stored_signatures_of_every_sample_and_what_stops_them(tmp_path: Path) -> None:
    folder = tmp_path / "mat dir"
    uni = _signed_folder(folder)
    got = stored_signatures(uni, None)  # the universe's own folder: summaries/ beside it
    assert (got.where, got.sign) == (
        folder.as_posix(),
        f"dvc-cuvis materialize --sign-only --out-dir {shlex.quote(folder.as_posix())}")
    assert got.by_uid == {  # an unsigned sample before signed ones; the whole file at 0
        **dict.fromkeys(UIDS), **{f"{s}#{i}" if i is not None else s: sig
                                   for (s, i), sig in SIGNED.items()}}
    assert stored_signatures(read_universe(folder / "universe.csv"), folder).by_uid == (
        got.by_uid)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_universe(uni, elsewhere / "universe.csv")
    beside = ("no materialized folder beside it holds the frames' signatures; give "
              "--summaries DIR (bake.summaries: the folder dvc-cuvis materialize wrote)")
    for universe, given, message in [
            (read_universe(elsewhere / "universe.csv"), None,
             f"{elsewhere / 'universe.csv'}: {beside}"),
            (Universe.from_records([{"source": "a.cu3s", "index": 0}]), None,
             f"universe: {beside}"),
            (uni, tmp_path / "nowhere", f"{tmp_path / 'nowhere'}: no such materialized folder "
             "(--summaries names the folder materialize wrote: its frames/ and summaries/)")]:
        with pytest.raises(DvcCuvisError) as err:
            stored_signatures(universe, given)
        assert str(err.value) == message
    shard = folder / shard_of(frame_name("b.cu3s", 0))
    write_shard(shard, {frame_name("b.cu3s", 0): {SIGNATURE_KEY: "x"}}, fsync=False)
    with pytest.raises(DvcCuvisError) as err:
        stored_signatures(uni, folder)
    assert str(err.value) == (f"{shard}: damaged or foreign frame signature (not an object); "
                              "rerun dvc-cuvis materialize on its folder, which rebuilds it")


# --- check/summaries.py: where the summaries are missing, and what the note says ----------


def test_a_summaries_folder_not_pulled_and_a_missing_one(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / ".dvc").mkdir(parents=True)  # the project's root: find_lock looks no higher
    (proj / "done").mkdir()
    (proj / "part").mkdir()  # frames fetched for one stage, no summaries/
    (proj / "whole/summaries").mkdir(parents=True)
    (proj / "tracked.dvc").write_text("outs:\n- path: tracked\n")
    lock = ("stages:\n  mat:\n    cmd: dvc-cuvis materialize\n    outs:\n    - path: out\n"
            "    - path: part\n    - path: whole\n")
    (proj / "custom.lock").write_text(lock)
    (proj / "bad.lock").write_text("stages: [unclosed\n")
    other = tmp_path / "other"
    (other / ".dvc").mkdir(parents=True)
    (other / "dvc.lock").write_text(lock)
    custom, bad = proj / "custom.lock", proj / "bad.lock"
    assert [unpulled(folder, given) for folder, given in [
        (proj / "tracked", None),      # a .dvc file tracks it
        (proj / "out", custom),        # the given lock records it
        (proj / "elsewhere", custom),  # ...but not this one
        (proj / "out", None),          # no dvc.lock in its project
        (other / "out", None),         # its project's own dvc.lock records it
        (proj / "out", bad),           # an unreadable lock names no fix
        (proj / "out", proj / "absent.lock"),
        (proj / "done", custom),       # present: nothing to pull
        (proj / "part", custom),       # recorded, here without summaries/: not all pulled
        (proj / "whole", custom),      # recorded, and its summaries/ is here
    ]] == [True, True, False, False, True, False, False, False, True, False]
    nowhere = tmp_path / "nowhere"
    with pytest.raises(DvcCuvisError) as err:
        read_split_summaries(Resolution(Universe.from_records([]), {}), nowhere)
    assert str(err.value) == (f"{nowhere}: no such materialized folder (--summaries names the "
                              "folder materialize wrote: its frames/ and summaries/)")


def test_the_note_on_missing_summaries_word_for_word(tmp_path: Path) -> None:
    ws = Workspace(None, cwd=tmp_path)
    mat, done, raw = tmp_path / "mat dir", tmp_path / "done", tmp_path / "raw"
    for folder in (mat, done / "frames", raw):
        folder.mkdir(parents=True)
    (mat / "universe.csv").write_text("source,index\n")
    splits = tmp_path / "splits.json"
    redo = ("dvc-cuvis materialize --universe done/universe.csv --splits splits.json "
            "--out-dir given")
    sign = "dvc-cuvis materialize --sign-only --out-dir"
    rematerialize = ("dvc-cuvis materialize --universe raw/universe.csv --splits splits.json "
                     "--out-dir raw/materialized")
    cases = [  # folder, universe, splits, pull (None: left to its default) -> fix, then
        (tmp_path / "out", done / "universe.csv", splits, True, "dvc pull out", ""),
        (mat, None, None, False, f"{sign} 'mat dir'", ""),
        (None, done / "universe.csv", splits, False, f"{sign} done", ""),
        (tmp_path / "given", done / "universe.csv", splits, None, redo, ""),
        (None, raw / "universe.csv", splits, False, rematerialize,
         "then check with --summaries raw/materialized"),
        (None, None, splits, False, "", "materialize the split with dvc-cuvis materialize, "
         "then pass its folder as summaries")]
    kinds = ["content_duplicate", "spectral_shift"]
    without = [f"a.cu3s#{i}" for i in range(7)]
    for folder, universe, split, pull, fix, then in cases:
        for frames, verdict in ((7, "not run"), (9, "incomplete")):
            kw = {} if pull is None else {"pull": pull}
            note = missing_note(kinds, "no summaries", without, frames, ws, folder, universe,
                                split, **kw)
            line = (f"content_duplicate and spectral_shift {verdict}: no summaries; 7 of "
                    f"{frames} frame(s) without a spectral summary: a.cu3s#0, a.cu3s#1, "
                    "a.cu3s#2, a.cu3s#3, a.cu3s#4 (+2 more)")
            line += (f"; produce them: {fix}" + (f", {then}" if then else "") if fix
                     else f"; {then}")
            assert note == {"constraints": kinds, "why": "no summaries", "count": 7,
                            "frames": without[:5], "more": "(+2 more)", "fix": fix,
                            "then": then, "line": line}, (folder, universe, pull)
