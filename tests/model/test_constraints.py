"""model/constraints.py: upstream's constraints and group leakage on a resolution."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cuvis_ai_schemas.training.data import Constraint

from dvc_cuvis.model.constraints import ConstraintResult, evaluate_constraints, failed_constraints
from dvc_cuvis.model.resolution import Resolution
from dvc_cuvis.model.universe import Universe
from tests.helpers.files import FIXTURES


def _case_refs(case: dict) -> tuple[Universe, dict[str, list[int]]]:
    uni = Universe.from_records(
        {"source": r["source"], "index": r["index"],
         "category_ids": ";".join(map(str, r["category_ids"]))} for r in case["universe"]
    )
    lookup = {(uni.source(p), uni.index(p)): p for p in range(len(uni))}
    stages = {s: [lookup[(src, i)] for src, i in case[s]] for s in ("train", "val", "test")}
    return uni, stages


@pytest.mark.parametrize(
    "case", json.loads((FIXTURES / "constraint_cases.json").read_text())["cases"],
    ids=lambda c: c["name"],
)
def test_constraint_golden_cases(case: dict) -> None:
    from dvc_cuvis.model.resolution import Resolution

    uni, stages = _case_refs(case)
    res = Resolution(uni, {**{k: np.asarray(v, dtype=np.int64) for k, v in stages.items()},
                           "predict": np.arange(len(uni))})
    constraints = [Constraint(**c) for c in case["constraints"]]
    got = evaluate_constraints(res, constraints,
                               available_attrs=frozenset(case["available_attrs"]))
    assert [(r.kind, r.status, r.count, list(r.offending)) for r in got] == [
        (e["kind"], e["status"], e["count"], e["offending"]) for e in case["expected"]
    ]


def test_a_constraint_result_as_json() -> None:
    from dvc_cuvis.model.constraints import ConstraintResult

    many = tuple(f"s{k:03d}" for k in range(101))
    r = ConstraintResult("no_source_overlap", "warn", "violated", 101, many, "101 source(s)")
    assert r.to_dict() == {"kind": "no_source_overlap", "severity": "warn",
                           "status": "violated", "count": 101, "offending": list(many[:100]),
                           "reason": "101 source(s)"}
    assert not r.failed and ConstraintResult("k", "error", "unavailable").failed
    assert ConstraintResult("k", "error", "satisfied").to_dict() == {
        "kind": "k", "severity": "error", "status": "satisfied", "count": 0, "offending": [],
        "reason": ""}


def _upstream_constraints(
    res: Resolution, constraints: list[Constraint], attrs: frozenset[str]
) -> list[tuple]:
    """Upstream's ``evaluate_constraints`` on the same stages, as :func:`_rows`."""
    from cuvis_ai_core.data import selectors as upstream
    from cuvis_ai_schemas.training.data import SampleRef

    def refs(stage: str) -> list[SampleRef]:
        uni = res.universe
        cats = uni.column("category_ids") if uni.has_column("category_ids") else None
        return [SampleRef(source=uni.source(p), index=uni.index(p),
                          category_ids=[int(c) for c in cats[p].split(";") if c] if cats else [])
                for p in res.stages[stage].tolist()]

    got = upstream.evaluate_constraints(refs("train"), refs("val"), refs("test"),
                                        constraints=constraints, available_attrs=attrs)
    return [(r.kind, r.severity, r.status, r.count, list(r.offending), r.reason) for r in got]


def _rows(results: list[ConstraintResult]) -> list[tuple]:
    return [(r.kind, r.severity, r.status, r.count, list(r.offending), r.reason) for r in results]


def test_every_constraint_kind_pinned_and_equal_to_upstream() -> None:
    from dvc_cuvis.model.resolution import Resolution

    rows = [("a", 0, "1"), ("a", 1, "0"), ("b", 0, "0"), ("b", 1, ""), ("c", 0, "2"),
            ("c", 1, "0"), ("d", 0, "0"), ("e", 0, "3")]
    uni = Universe.from_records({"source": s, "index": i, "category_ids": c} for s, i, c in rows)
    at = {uni.uids()[p]: p for p in range(len(uni))}
    pos = lambda *u: np.asarray([at[x] for x in u], dtype=np.int64)  # noqa: E731
    res = Resolution(uni, {"train": pos("a#0", "a#1", "b#0", "b#1"),
                           "val": pos("a#1", "b#0", "c#0", "c#1"),
                           "test": pos("b#1", "c#0", "c#1", "e#0"),
                           "predict": pos()})
    constraints = [Constraint(kind="no_train_anomalous", severity="warn"),
                   Constraint(kind="no_split_overlap"),
                   Constraint(kind="no_source_overlap", severity="warn")]
    expected = [
        ("no_train_anomalous", "warn", "violated", 1, ["a"],
         "1 source(s) with an anomalous frame in train"),
        ("no_split_overlap", "error", "violated", 5, ["a#1", "b#0", "b#1", "c#0", "c#1"],
         "2 shared between train and val; 1 shared between train and test; "
         "2 shared between val and test"),
        ("no_source_overlap", "warn", "violated", 3, ["a", "b", "c"],
         "3 source(s) span >1 of train/val/test"),
    ]
    got = evaluate_constraints(res, constraints)  # attrs default: the universe has category_ids
    assert _rows(got) == expected
    assert _upstream_constraints(res, constraints, frozenset({"category_ids"})) == expected
    assert [r.kind for r in failed_constraints(got)] == ["no_split_overlap"]

    clean = Resolution(uni, {"train": pos("b#0", "d#0"), "val": pos("a#0"), "test": pos("c#1"),
                             "predict": pos()})
    assert _rows(evaluate_constraints(clean, constraints)) == [
        (c.kind.value, c.severity.value, "satisfied", 0, [], "") for c in constraints]


def test_anomalous_in_train_is_unavailable_without_labels_and_the_rest_still_runs() -> None:
    from dvc_cuvis.model.resolution import Resolution

    uni = Universe.from_records({"source": s, "index": 0} for s in ("a", "b"))
    res = Resolution(uni, {"train": np.asarray([0, 1]), "val": np.asarray([1]),
                           "test": np.asarray([], dtype=np.int64), "predict": np.asarray([0])})
    constraints = [Constraint(kind="no_train_anomalous"), Constraint(kind="no_split_overlap")]
    got = evaluate_constraints(res, constraints)  # no category_ids column: no labels
    assert _rows(got) == [
        ("no_train_anomalous", "error", "unavailable", 0, [],
         "the universe has no category_ids column"),
        ("no_split_overlap", "error", "violated", 1, ["b#0"], "1 shared between train and val"),
    ]
    assert [r.kind for r in failed_constraints(got)] == ["no_train_anomalous", "no_split_overlap"]
    # labels said to be available: evaluated (no category id on any row: nothing anomalous)
    told = evaluate_constraints(res, constraints[:1], available_attrs=frozenset({"category_ids"}))
    assert _rows(told) == [("no_train_anomalous", "error", "satisfied", 0, [], "")]
    labelled = Universe.from_records({"source": s, "index": 0, "category_ids": "1"}
                                     for s in ("a", "b"))
    hidden = evaluate_constraints(Resolution(labelled, res.stages), constraints[:1],
                                  available_attrs=frozenset())
    assert hidden[0].status == "unavailable"


def test_source_overlap_names_each_source_as_first_resolved() -> None:
    from dvc_cuvis.model.resolution import Resolution

    # two spellings of one Windows file: compared case-folded, named as train first lists it
    uni = Universe.from_records({"source": s, "index": 0}
                                for s in ("C:/Data/x.cu3s", "c:/data/X.cu3s", "y.cu3s"))
    assert uni.uids() == ["C:/Data/x.cu3s#0", "c:/data/X.cu3s#0", "y.cu3s#0"]
    res = Resolution(uni, {"train": np.asarray([2, 1]), "val": np.asarray([0]),
                           "test": np.asarray([], dtype=np.int64), "predict": np.asarray([0])})
    c = [Constraint(kind="no_source_overlap")]
    expected = [("no_source_overlap", "error", "violated", 1, ["c:/data/X.cu3s"],
                 "1 source(s) span >1 of train/val/test")]
    assert _rows(evaluate_constraints(res, c)) == expected
    assert _upstream_constraints(res, c, frozenset()) == expected


def test_group_leakage_modes_and_offenders() -> None:
    from dvc_cuvis.model.resolution import Resolution

    rows = [("a", "p1"), ("b", "p1"), ("c", "p2"), ("d", ""), ("e", "p3"), ("f", "p3")]
    uni = Universe.from_records({"source": s, "index": 0, "group": g} for s, g in rows)
    stages = {"train": np.asarray([0, 2, 4, 5]), "val": np.asarray([1, 3]),
              "test": np.asarray([2]), "predict": np.asarray([], dtype=np.int64)}
    res = Resolution(uni, stages)
    leak = ("group_leakage", "error", "violated", 2, ["p1", "p2"],
            "2 group(s) span >1 of train/val/test")
    assert _rows(evaluate_constraints(res, [])) == [leak]  # auto: the universe has groups
    assert _rows(evaluate_constraints(res, [], group_leakage="error")) == [leak]
    assert _rows(evaluate_constraints(res, [], group_leakage="warn")) == [
        ("group_leakage", "warn", *leak[2:])]
    assert evaluate_constraints(res, [], group_leakage="off") == []
    ungrouped = Universe.from_records({"source": s, "index": 0} for s, _ in rows)
    plain = Resolution(ungrouped, stages)
    assert evaluate_constraints(plain, []) == []  # auto without a group column: off
    # asked for anyway: every source is its own group, c spans train and test
    assert _rows(evaluate_constraints(plain, [], group_leakage="warn")) == [
        ("group_leakage", "warn", "violated", 1, ["c"], "1 group(s) span >1 of train/val/test")]
    disjoint = Resolution(uni, {**stages, "test": np.asarray([], dtype=np.int64),
                                "val": np.asarray([3])})
    assert _rows(evaluate_constraints(disjoint, [])) == [
        ("group_leakage", "error", "satisfied", 0, [], "")]
