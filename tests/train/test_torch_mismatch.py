"""A torchvision of another build than torch: our training modules say so in one line.

``pip install torch==2.13.0 "dvc-cuvis[plugin]"`` on a CPU machine puts PyPI's (CUDA-linked)
torchvision beside the CPU torch, and every import of Lightning then dies inside torchvision
(``operator torchvision::nms does not exist``).  ``scripts/test.sh`` builds exactly that
environment (``.venv/torch-mismatch``: PyPI's torchvision, and the main environment's CPU
torch through a ``.pth`` file); the first test runs our training modules there, in one child
process.  The others give :func:`torchvision_problem` the versions of other
pairs, in-process.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dvc_cuvis.errors import DvcCuvisError, TorchMismatchError
from dvc_cuvis.train import lightning_env

ROOT = Path(__file__).resolve().parents[2]
#: Where scripts/test.sh builds the mismatched environment (the variable: another one).
VENV = Path(os.environ.get("DVC_CUVIS_TORCH_MISMATCH_VENV") or ROOT / ".venv/torch-mismatch")

#: In the mismatched environment: SplitDataModule, then the plugin's modules; each error's
#: class, exit code and message, one per line.
PROBE = """\
from dvc_cuvis import SplitDataModule
import dvc_cuvis.plugin as plugin
for make in (lambda: SplitDataModule("u.csv", "s.json"), lambda: plugin.DvcNpzMultiDataModule):
    try:
        make()
    except Exception as exc:
        print(type(exc).__name__, getattr(exc, "exit_code", None), str(exc).replace("\\n", "|"))
"""


@pytest.mark.child_process
def test_a_cuda_torchvision_beside_a_cpu_torch_is_one_line_with_the_fix(tmp_path: Path) -> None:
    python = VENV / "bin/python"
    if not python.is_file():
        why = f"no mismatched environment at {VENV} (scripts/test.sh builds it)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {why}")
        pytest.skip(why)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run = subprocess.run([str(python), "-c", PROBE], cwd=tmp_path, env={**env, "PYTHONPATH":
                         str(ROOT)}, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert len(lines) == 2, run.stdout
    fix = ('python -m pip uninstall -y torchvision && python -m pip install "torch==2.13.0" '
           "torchvision --index-url https://download.pytorch.org/whl/cpu")
    for line, module in zip(lines, ("pytorch_lightning", "dvc_cuvis.plugin.datamodules"),
                            strict=True):
        assert line.startswith(f"TorchMismatchError 2 importing {module} fails in torchvision "
                               "(RuntimeError: operator torchvision::nms does not exist): "
                               "torchvision 0.28.0 (PyPI's build) does not match torch "
                               "2.13.0+cpu (the cpu build); "), line
        assert line.endswith(fix) and "|" not in line


def _versions(monkeypatch: pytest.MonkeyPatch, torch: str, vision: str | None, pin: str | None,
              ) -> None:
    found = {"torch": torch, "torchvision": vision}
    monkeypatch.setattr(lightning_env, "_version", found.get)
    monkeypatch.setattr(lightning_env, "torchvision_pin", lambda: pin)


def _from_torchvision() -> RuntimeError:
    return RuntimeError("operator torchvision::nms does not exist")


@pytest.mark.parametrize(("torch", "vision", "pin", "says", "fix"), [
    ("2.13.0", "0.28.0+cpu", "2.13.0", "torchvision 0.28.0+cpu (the cpu build) does not match "
     "torch 2.13.0 (PyPI's build)", 'install "torch==2.13.0" torchvision'),
    ("2.13.0+cu128", "0.29.0+cu128", "2.14.0", "torchvision 0.29.0+cu128 is built for torch "
     "2.14.0, not torch 2.13.0+cu128", "torchvision --index-url "
     "https://download.pytorch.org/whl/cu128"),
    ("2.13.0+cpu", "0.28.0+cpu", "2.13.0", "torchvision 0.28.0+cpu does not load with torch "
     "2.13.0+cpu", "torchvision --index-url https://download.pytorch.org/whl/cpu"),
])
def test_each_kind_of_pair_is_named_with_the_index_of_torch_s_build(
        monkeypatch: pytest.MonkeyPatch, torch: str, vision: str, pin: str | None, says: str,
        fix: str) -> None:
    _versions(monkeypatch, torch, vision, pin)
    problem = lightning_env.torchvision_problem(_from_torchvision())
    assert problem is not None and problem.startswith(says + "; ")
    assert problem.endswith(fix)


def test_an_error_that_does_not_come_from_torchvision_is_left_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _versions(monkeypatch, "2.13.0+cpu", "0.28.0", "2.13.0")  # mismatched, but not the cause
    with pytest.raises(ModuleNotFoundError, match="no_such_module_here"):
        lightning_env.import_stack("no_such_module_here")
    assert lightning_env.torchvision_problem(_from_torchvision()) is not None
    _versions(monkeypatch, "2.13.0+cpu", None, None)
    assert lightning_env.torchvision_problem(_from_torchvision()) is None  # none installed
    assert issubclass(TorchMismatchError, DvcCuvisError) and TorchMismatchError.exit_code == 2
