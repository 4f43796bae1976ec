"""The dataset record as values: stored JSON reads back byte for byte, stage changes parsed
once, and no lineage module keeps a cache of its own (the keeper owns its memo)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from dvc_cuvis._io import dumps_json
from dvc_cuvis.train.lineage import finish, take
from dvc_cuvis.train.lineage_compare import describe_text
from dvc_cuvis.train.lineage_hooks import Lineage
from dvc_cuvis.train.lineage_values import LineageRecord, Transition

#: A record as dvc-cuvis wrote it before the record was a value (checkpoint / trainrun file).
STORED = """{
  "kind": "dvc-cuvis dataset record",
  "format": 1,
  "dvc_cuvis": "0.1.0",
  "module": "dvc_npz_multi",
  "repo": {"root": "/data/ds", "origin": "git@example.com:t/d.git",
           "commit": "66a344d0a1fa5cfee8bde9b9e83aab6db21437a9", "dirty": false},
  "splits": {"path": "data/splits.json", "sha256": "ae55"},
  "universe": {"path": null, "md5": null, "listing_hash": "cecb"},
  "universe_hash": "cecb",
  "stages": {"train": 5, "val": 0, "test": 1, "predict": null},
  "data": [{"path": "data", "md5": "123.dir", "source": "data.dvc", "stage": null},
           {"path": "raw", "md5": "9.dir", "source": "dvc.lock", "stage": "enumerate"}],
  "split": {"train": [{"kind": "file_indices", "source": "a.npz", "ids": ["0-3", 5]}],
            "test": [{"kind": "files", "paths": ["b.npz"]}], "universe_hash": "cecb"},
  "check": {"mode": "strict", "verdict": "failed", "reused_verdict": true,
            "failed": ["content", "universe"]}
}"""


def test_a_stored_record_reads_back_to_the_same_bytes() -> None:
    doc = json.loads(STORED)
    value = LineageRecord.from_json(doc)
    assert dumps_json(value.to_json()) == dumps_json(doc)
    assert value.universe.listing_hash == "cecb" and value.check.failed == ("content",
                                                                            "universe")
    assert value.data[1].stage == "enumerate" and value.repo.dirty is False
    doc["universe"] = {"path": "u.csv", "md5": "m"}  # a file, not a listing: no listing_hash
    assert dumps_json(LineageRecord.from_json(doc).to_json()) == dumps_json(doc)


def test_a_stage_change_is_parsed_once() -> None:
    assert Transition.parse("train->test") == Transition("train", "test")
    assert str(Transition("new", "val")) == "new->val"
    assert [Transition.parse(k).is_move for k in ("a->b", "new->b", "a->removed")] == [
        True, False, False]
    changes = {"moved": 2, "added": 1, "removed": 0, "modified_files": None,
               "transitions": {"new->train": 1, "train->test": 2}}
    assert describe_text(changes).startswith("2 sample(s) moved (train->test 2), 1 added")


def test_the_keeper_owns_its_memo(tmp_path: Path) -> None:
    (tmp_path / "universe.csv").write_text("source,index\na.npz,0\n")
    (tmp_path / "splits.json").write_text(json.dumps(
        {"train": [{"kind": "file_indices", "source": "a.npz", "ids": [0]}]}))
    a, b = Lineage("a"), Lineage("b")
    first = a.take(None, tmp_path / "splits.json", tmp_path / "universe.csv", mode="off",
                   report=None)
    assert a.memo.facts and not b.memo.facts  # nothing shared between keepers
    assert a.value is take(tmp_path / "splits.json", tmp_path / "universe.csv", module="a",
                           mode="off", report=None, memo=a.memo)  # the same answer, reused
    assert first["stages"]["train"] == 1 and finish(a.value) is a.value  # no repository


def test_no_lineage_module_keeps_a_module_level_cache() -> None:
    found = []
    for path in sorted((Path(__file__).parents[2] / "dvc_cuvis/train").glob("lineage*.py")):
        for node in ast.parse(path.read_text()).body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            empty = (isinstance(value, ast.Dict | ast.Set | ast.List) and not getattr(
                value, "keys", getattr(value, "elts", None))) or (
                isinstance(value, ast.Call) and getattr(value.func, "id", "") in ("dict", "set"))
            if empty:
                found.append(f"{path.name}:{node.lineno}")
    assert not found, f"module-level caches: {found}"
