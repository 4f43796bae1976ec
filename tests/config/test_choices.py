"""Every choice list is defined once, and every place that offers or checks it uses that one."""

from __future__ import annotations

import pytest

from dvc_cuvis.errors import DvcCuvisError


def _choices(verb: str, flag: str) -> tuple[str, ...]:
    from dvc_cuvis.cli import build_parser

    _, verbs = build_parser()
    action = next(a for a in verbs[verb]._actions if flag in a.option_strings)
    return tuple(action.choices)


def test_strategies_and_formats_come_from_the_one_list() -> None:
    from dvc_cuvis.baking import SPLITTERS, BakeOptions
    from dvc_cuvis.config.specs import FORMATS, GROUP_BY, PREDICT, STRATEGIES

    assert _choices("bake", "--strategy") == STRATEGIES == tuple(SPLITTERS)
    for name in GROUP_BY:  # --group-by also takes block:N, so BakeOptions checks it
        BakeOptions(group_by=name).check()
    with pytest.raises(DvcCuvisError, match="choose one of auto, source, group, sample, "
                                            "recording or block:N"):
        BakeOptions(group_by="blocks:4").check()
    assert _choices("bake", "--predict") == PREDICT
    assert _choices("enumerate", "--format") == FORMATS == _choices("init", "--format")
    from dvc_cuvis.config.specs import BAKE
    from dvc_cuvis.interop import FORMATS as CONVENTIONS

    assert tuple(n[5:] for n in BAKE.options if n.startswith("from_") and n != "from_csv") \
        == CONVENTIONS  # bake imports every convention export writes, by the one list
    with pytest.raises(DvcCuvisError, match="choose one of hash, random, stratified"):
        BakeOptions(strategy="shuffle").check()


class _Module:
    def setup(self, stage: str | None = None) -> None:
        """A data module's hook (never reached: the mode is refused first)."""


def test_verify_modes_are_checked_by_one_rule_everywhere(tmp_path) -> None:
    from dvc_cuvis.check.drift import VERIFY_MODES, check_verify_mode
    from dvc_cuvis.plugin import datamodules as plugin
    from dvc_cuvis.train.datamodule import SplitDataModule, guard

    assert VERIFY_MODES == ("strict", "warn", "off")
    assert plugin.GUARD_PARAMS["verify"].choices == VERIFY_MODES
    assert [check_verify_mode(m) for m in VERIFY_MODES] == list(VERIFY_MODES)
    message = "verify must be strict, warn or off, got 'loud'"
    with pytest.raises(DvcCuvisError, match=message):
        check_verify_mode("loud")
    with pytest.raises(DvcCuvisError, match=message):
        SplitDataModule(tmp_path / "splits.json", tmp_path / "universe.csv", verify="loud")
    with pytest.raises(DvcCuvisError, match=message):
        guard(_Module(), splits=tmp_path / "s.json", universe=tmp_path / "u.csv",
              verify_mode="loud")
