"""model/resolution.py: a split's stages as positions in a universe, the stage codes."""

from __future__ import annotations

import numpy as np
import pytest
from cuvis_ai_schemas.training.data import DataSplitConfig, Selector

from dvc_cuvis.errors import DvcCuvisError, SelectorError
from dvc_cuvis.model.resolution import Resolution, resolve
from dvc_cuvis.model.selectors import Resolver
from dvc_cuvis.model.universe import Universe


def _error(fn, *args, **kwargs) -> str:
    with pytest.raises(DvcCuvisError) as info:
        fn(*args, **kwargs)
    return str(info.value)


def test_dir_indices_split_refuses_a_changed_universe() -> None:
    uni = Universe.from_records({"source": "a", "index": i} for i in range(3))
    cfg = DataSplitConfig(universe_hash=uni.hash, train=[Selector(kind="dir_indices", ids=[2])])
    assert resolve(cfg, uni).uids("train") == ["a#2"]
    grown = Universe.from_records({"source": "a", "index": i} for i in range(4))
    with pytest.raises(SelectorError, match="universe changed since the split was written"):
        resolve(cfg, grown)


def test_zero_match_error_names_stage_selector_and_suggests() -> None:
    uni = Universe.from_records({"source": "day1/session.cu3s", "index": i} for i in range(3))
    cfg = DataSplitConfig(val=[Selector(kind="file_indices", source="day1/sesion.cu3s", ids=[0])])
    with pytest.raises(SelectorError) as info:
        resolve(cfg, uni, where="splits.json")
    msg = str(info.value)
    assert msg.startswith("splits.json: val[0]: selector file_indices(source='day1/sesion.cu3s')")
    assert "did you mean 'day1/session.cu3s'?" in msg


def test_partial_match_is_reported_not_fatal() -> None:
    uni = Universe.from_records({"source": "a", "index": i} for i in range(7))
    r = Resolver(uni)
    got = r.resolve([Selector(kind="file_indices", source="a", ids=[0, 999, "5-6"])], stage="train")
    assert uni.uids(got) == ["a#0", "a#5", "a#6"]
    (w,) = r.warnings
    assert w.missing == (999,) and w.requested == 4
    assert "matched 3 of 4 requested indices; missing: 999" in w.message()


def test_one_stage_code_and_its_tie_rule() -> None:
    """A row in several of train/val/test takes the first of them (train, val, test);
    resolution, history and the report all read the same code."""
    from dvc_cuvis.model.compare import Version
    from dvc_cuvis.model.resolution import stage_codes
    from dvc_cuvis.model.splits import STAGE_CODE_NAMES, UNASSIGNED
    from dvc_cuvis.review.report import _sources_section

    uni = Universe.from_records({"source": f"s{k}.cu3s", "index": 0} for k in range(6))
    pos = lambda *p: np.asarray(p, dtype=np.int64)  # noqa: E731
    stages = {"train": pos(0, 1), "val": pos(1, 2, 4), "test": pos(4, 0, 3),
              "predict": pos(0, 1, 2, 3, 4, 5)}
    codes = stage_codes(stages, len(uni))
    assert codes.tolist() == [0, 0, 1, 2, 1, UNASSIGNED]  # 0: train+test, 1: train+val, 4: val+test
    assert STAGE_CODE_NAMES[UNASSIGNED] == "unassigned"
    res = Resolution(uni, stages)
    assert res.assignment().tolist() == codes.tolist()
    assert Version("x", uni, stages, None, []).state().tolist() == codes.tolist()
    html = _sources_section(res)  # sources per stage, counted by the same code
    for name, n in (("train", 2), ("val", 2), ("test", 1), ("unassigned", 1)):
        assert f'data-stage="{name}" data-metric="sources">{n}<' in html, name


def test_stage_codes_are_int8() -> None:
    from dvc_cuvis.model.resolution import stage_codes

    codes = stage_codes({s: np.asarray([], dtype=np.int64) for s in ("train", "val", "test")}, 3)
    assert codes.dtype == np.int8 and codes.tolist() == [3, 3, 3]


def test_only_a_pinned_split_with_dir_indices_guards_its_universe() -> None:
    from dvc_cuvis.model.resolution import check_pinned_universe

    uni = Universe.from_records({"source": "a", "index": i} for i in range(3))
    grown = Universe.from_records({"source": "a", "index": i} for i in range(4))
    positional = DataSplitConfig(universe_hash=uni.hash,
                                 train=[Selector(kind="dir_indices", ids=[2])])
    check_pinned_universe(positional, uni)  # its own universe: fine
    message = (f"universe changed since the split was written (pinned {uni.hash[:12]}..., "
               f"now {grown.hash[:12]}...) and it still uses positional dir_indices; re-bake it "
               "(`dvc-cuvis bake --rule ...`)")
    assert _error(check_pinned_universe, positional, grown) == f"splits.json: {message}"
    assert _error(check_pinned_universe, positional, grown, where="s.json") == f"s.json: {message}"
    assert _error(resolve, positional, grown, where="s.json") == f"s.json: {message}"
    assert _error(resolve, positional, grown) == f"splits.json: {message}"
    # unpinned positional, or pinned without positions: upstream's guard does not apply
    unpinned = positional.model_copy(update={"universe_hash": None})
    assert resolve(unpinned, grown).uids("train") == ["a#2"]
    by_name = DataSplitConfig(universe_hash=uni.hash,
                              train=[Selector(kind="file_indices", source="a", ids=[3])])
    assert resolve(by_name, grown).uids("train") == ["a#3"]


def test_resolve_prefixes_errors_with_where_only_when_given() -> None:
    uni = Universe.from_records({"source": "a", "index": i} for i in range(2))
    cfg = DataSplitConfig(train=[Selector(kind="all")],
                          test=[Selector(kind="files", paths=["a"]),
                                Selector(kind="files", paths=["z"])])
    bare = _error(resolve, cfg, uni)
    assert bare == ("test[1]: selector files('z') matched 0 samples — source 'z' is not in the "
                    "universe (a selector must match at least one sample; fix or remove it)")
    assert _error(resolve, cfg, uni, where="s.json") == f"s.json: {bare}"


def test_resolve_uses_the_name_map_and_keeps_an_explicit_predict() -> None:
    uni = Universe.from_records(
        {"source": "a", "index": i, "category_ids": c} for i, c in enumerate(["0", "2", "2;5"]))
    cfg = DataSplitConfig(train=[Selector(kind="categories", any_of=["scratch"])],
                          val=[Selector(kind="file_indices", source="a", ids=[0, 7])],
                          predict=[Selector(kind="file_indices", source="a", ids=[2]),
                                   Selector(kind="file_indices", source="a", ids=[0])])
    res = resolve(cfg, uni, name_to_id={"scratch": 5})
    assert res.as_uid_lists() == {"train": ["a#2"], "val": ["a#0"], "test": [],
                                  "predict": ["a#2", "a#0"]}
    assert res.predict_is_all is False
    assert [w.message() for w in res.warnings] == [
        "val[0]: selector 'file_indices' of 'a' matched 1 of 2 requested indices; missing: 7"]
    whole = resolve(cfg.model_copy(update={"predict": []}), uni, name_to_id={"scratch": 5})
    assert whole.predict_is_all is True and whole.uids("predict") == ["a#0", "a#1", "a#2"]
    assert whole.stages["predict"].dtype == np.int64
