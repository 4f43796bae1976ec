"""model/split_state.py: a rule or a baked split."""

from __future__ import annotations

from cuvis_ai_schemas.training.data import DataSplitConfig, Selector

from dvc_cuvis.model.selectors import required_attrs
from dvc_cuvis.model.split_state import has_dir_indices, is_baked, live_kinds, state


def test_rule_vs_baked() -> None:
    rule = DataSplitConfig(
        universe_hash="x",
        train=[Selector(kind="union", of=[Selector(kind="dir_indices", ids=[0]),
                                          Selector(kind="glob", pattern="*")])],
    )
    assert has_dir_indices(rule) and live_kinds(rule) == {"dir_indices", "glob"}
    assert state(rule) == "rule"
    unpinned = DataSplitConfig(train=[Selector(kind="files", paths=["a"])])
    assert not is_baked(unpinned) and live_kinds(unpinned) == set()
    assert required_attrs(DataSplitConfig(
        train=[Selector(kind="tag", any_of=["x"])],
        test=[Selector(kind="except", of=[Selector(kind="all"),
                                          Selector(kind="categories", any_of=["c"])])],
    )) == {"tags", "category_ids"}


def test_a_baked_split_may_mix_both_concrete_kinds() -> None:
    both = DataSplitConfig(universe_hash="ab" * 32,
                           train=[Selector(kind="files", paths=["a"])],
                           test=[Selector(kind="file_indices", source="b", ids=[0])])
    assert is_baked(both) and state(both) == "baked"
    assert not has_dir_indices(both) and live_kinds(both) == set()
    one_live = both.model_copy(update={"val": [Selector(kind="all")]})
    assert not is_baked(one_live) and state(one_live) == "rule"
    assert live_kinds(one_live) == {"all"}
