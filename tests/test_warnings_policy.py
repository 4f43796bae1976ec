"""The suite's warnings policy (pyproject's ``filterwarnings``): a warning raised in our package
or our tests is an error, and the host packages' own deprecations are silenced by name only."""

from __future__ import annotations

import warnings

import pytest


def _warn(module: str, category: type[Warning]) -> None:
    warnings.warn_explicit("probe", category, f"{module.replace('.', '/')}.py", 1, module=module)


@pytest.mark.parametrize("module", ["dvc_cuvis", "dvc_cuvis.check.drift", "tests.helpers.nodes"])
@pytest.mark.parametrize("category", [UserWarning, DeprecationWarning, RuntimeWarning])
def test_a_warning_of_ours_fails_the_test(module: str, category: type[Warning]) -> None:
    with pytest.raises(category, match="probe"):
        _warn(module, category)


@pytest.mark.parametrize("module", ["dvc.repo.graph", "dvc", "pycocotools.mask"])
def test_the_hosts_deprecations_are_silenced_by_name(module: str) -> None:
    with warnings.catch_warnings(record=True) as seen:
        _warn(module, DeprecationWarning)
    assert seen == []


def test_dvcs_filter_does_not_swallow_ours_or_a_new_kind() -> None:
    with pytest.raises(DeprecationWarning):
        _warn("dvc_cuvis.x", DeprecationWarning)
    with warnings.catch_warnings(record=True) as seen:
        _warn("dvc.repo", RuntimeWarning)
    assert [w.category for w in seen] == [RuntimeWarning]
