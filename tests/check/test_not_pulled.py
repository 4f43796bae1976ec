""""Not pulled" has its own error type: a re-scan that fails because the data is not pulled
raises :class:`NotPulledError`, and no other error is taken for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dvc_cuvis.check.drift import _rescan, verify
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.errors import DvcCuvisError, NotPulledError
from dvc_cuvis.model.universe_io import read_universe


def _fails(message: str):
    def rescan():
        raise DvcCuvisError(message)

    return rescan


@pytest.mark.slow  # builds a repository of its own: several seconds
def test_a_rescan_of_data_not_pulled_raises_not_pulled(fresh_clone: Path) -> None:
    uni = read_universe(fresh_clone / "universe.csv")
    with pytest.raises(NotPulledError) as err:
        _rescan(_fails("data/npz: dataset root not found"), StatCache(None), {}, uni)
    assert isinstance(err.value, DvcCuvisError) and err.value.exit_code == 2
    assert "not pulled" in str(err.value) and "dataset root not found" in str(err.value)
    assert isinstance(err.value.__cause__, DvcCuvisError)
    # verify takes it for what it is: the content check says "not pulled", nothing raises
    report = verify(fresh_clone / "splits.json", fresh_clone / "universe.csv",
                    current=_fails("data/npz: dataset root not found"), lock=None)
    assert report.finding("content").status == "not-pulled"
    assert report.finding("universe").status == "ok"


def test_another_error_of_a_rescan_is_not_taken_for_not_pulled(repo: Path) -> None:
    """The data is here: a re-scan error is the user's to see (exit 2), never "not pulled"."""
    uni = read_universe(repo / "universe.csv")
    with pytest.raises(DvcCuvisError, match=r"^a frame that cannot be read$") as err:
        _rescan(_fails("a frame that cannot be read"), StatCache(None), {}, uni)
    assert not isinstance(err.value, NotPulledError)
    with pytest.raises(DvcCuvisError, match=r"^a frame that cannot be read$") as err:
        verify(repo / "splits.json", repo / "universe.csv",
               current=_fails("a frame that cannot be read"), lock=None)
    assert not isinstance(err.value, NotPulledError)


def test_a_not_pulled_error_of_the_rescan_itself_stands(repo: Path) -> None:
    """A re-scan that says "not pulled" itself is believed, without asking DVC again."""
    uni = read_universe(repo / "universe.csv")

    def rescan():
        raise NotPulledError("data/npz: not pulled")

    with pytest.raises(NotPulledError, match=r"^data/npz: not pulled$"):
        _rescan(rescan, StatCache(None), {}, uni)
