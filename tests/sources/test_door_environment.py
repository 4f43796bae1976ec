"""A verdict depends on the bytes alone: what this environment lacks (an extra, a
permission) is said as such, never kept as a property of the file, and the printed install
line works as printed (the next run succeeds without any cache being deleted)."""

from __future__ import annotations

import builtins
import os
import sys
from pathlib import Path

import pytest

from tests.helpers.tiff import write_cube, write_label

ARGS = ("enumerate", "--format", "tiff", "--root", "t", "--out", "u.csv", "--no-params")


@pytest.fixture
def cubes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two labelled TIFF cubes under ``t/`` (the working folder is ``tmp_path``)."""
    monkeypatch.chdir(tmp_path)
    for k in range(2):
        write_cube(tmp_path / f"t/images/c{k}.tif", seed=k)
        write_label(tmp_path / f"t/labels/c{k}.png", value=k + 1)
    return tmp_path


@pytest.mark.parametrize(("module", "extra"), [
    ("tifffile", "the tiff format needs tifffile: pip install 'dvc-cuvis[tiff]'"),
    ("PIL.Image", "PNG labels need Pillow: pip install 'dvc-cuvis[tiff]'"),
])
def test_a_missing_extra_is_named_and_not_kept_as_a_damaged_file(
    cubes: Path, cli, monkeypatch: pytest.MonkeyPatch, module: str, extra: str
) -> None:
    with monkeypatch.context() as hidden:  # `import tifffile` raises ImportError inside
        hidden.setitem(sys.modules, module, None)
        if module == "PIL.Image":
            hidden.delattr(sys.modules["PIL"], "Image", raising=False)
        r = cli(*ARGS)
    assert r.code == 2, r.err
    assert r.err.strip() == f"dvc-cuvis: error: {extra}"  # no "damaged", no restore hint
    assert not (cubes / "u.csv").exists()
    # the install line done (the module importable again): the very next run succeeds,
    # with the stat cache of the failed run left where it is
    r = cli(*ARGS)
    assert r.code == 0, r.err
    assert (cubes / "u.csv").read_text().count("\n") == 3


def test_an_unreadable_cube_is_a_permission_error_and_not_kept(
    cubes: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    cube = cubes / "t/images/c1.tif"
    with monkeypatch.context() as denied:
        if os.geteuid() == 0:  # root reads any file: the refusal the kernel gives others
            real = builtins.open

            def refusing(file, *args, **kwargs):
                if os.fspath(file) == os.fspath(cube.resolve()):
                    raise PermissionError(13, "Permission denied", os.fspath(file))
                return real(file, *args, **kwargs)

            denied.setattr(builtins, "open", refusing)
        else:
            cube.chmod(0)
        r = cli(*ARGS)
    cube.chmod(0o644)
    assert r.code == 2, r.err
    assert r.err.strip() == (f"dvc-cuvis: error: {cube.resolve()}: Permission denied; "
                             "permission denied: check the permissions of the file and its "
                             "folder")
    assert cli(*ARGS).code == 0
