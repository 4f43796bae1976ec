"""Checkpoints read lazily and inertly, and damaged dataset records: one line naming the file
(exit 2), never "internal error"."""

from __future__ import annotations

import collections
import io
import json
import os
import pickle
import resource
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dvc_cuvis.train.lineage import KEY, KIND
from dvc_cuvis.train.lineage_compare import read_records

RECORD = {"kind": KIND, "format": 1, "split": {"train": []}, "data": []}
#: The tensor of the large checkpoint (zeros, deflated: the file is a few hundred KiB).
TENSOR_BYTES = 200 << 20

CHILD = """
import json, resource, sys
from pathlib import Path
from dvc_cuvis.train.lineage_compare import read_records
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
found = read_records(Path(sys.argv[1]))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"grew_kib": after - before, "records": [r for _, r in found]}))
"""


def _capped() -> None:  # the child may never take the machine down, whatever it loads
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def _zip_ckpt(path: Path, payload: bytes, method: int = zipfile.ZIP_STORED) -> Path:
    """A checkpoint as torch lays it out: ``<top>/data.pkl`` and its other members."""
    with zipfile.ZipFile(path, "w", method) as zf:
        zf.writestr("big/data.pkl", payload)
        zf.writestr("big/data/0", bytes(64))
        zf.writestr("big/version", "3\n")
    return path


class _Runs:
    """Pickles as a call of ``os.system``: a checkpoint that would run code if loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return os.system, (f"touch {self.marker}",)


class _Global:
    """A name the pickle refers to (its GLOBAL opcode), as torch's own pickle names them."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:  # (a reduce's function must look callable)
        raise AssertionError("never called")


class _Storage:
    def __init__(self, numel: int) -> None:
        self.numel = numel


class _Zeros:
    """Pickles as torch pickles a float32 tensor whose bytes are the member ``data/0``."""

    def __init__(self, numel: int) -> None:
        self.numel = numel

    def __reduce__(self) -> Any:
        return (_Global("torch._utils", "_rebuild_tensor_v2"),
                (_Storage(self.numel), 0, (self.numel,), (1,), False, collections.OrderedDict()))


class _TorchPickler(pickle._Pickler):  # type: ignore[name-defined]  # the pure-Python one
    """torch.save's ``data.pkl`` without torch: storages as persistent ids, names as GLOBALs."""

    dispatch: ClassVar[dict[type, Any]] = dict(pickle._Pickler.dispatch)  # type: ignore[attr-defined]

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _Storage):
            return ("storage", _Global("torch", "FloatStorage"), "0", "cpu", obj.numel)
        return None

    def _save_global(self, obj: _Global) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch[_Global] = _save_global


def _deflated_checkpoint(path: Path, obj: Any, tensor_bytes: int) -> Path:
    """A torch checkpoint whose one tensor (zeros) is deflated: small on disk, large loaded."""
    buf = io.BytesIO()
    _TorchPickler(buf, protocol=2).dump(obj)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("big/data.pkl", buf.getvalue())
        zf.writestr("big/byteorder", "little")
        with zf.open("big/data/0", "w", force_zip64=True) as fh:
            chunk = bytes(1 << 20)
            for _ in range(tensor_bytes >> 20):
                fh.write(chunk)
        zf.writestr("big/version", "3\n")
    return path


def test_a_checkpoints_record_is_read_without_its_tensors(tmp_path: Path) -> None:
    ckpt = _deflated_checkpoint(tmp_path / "big.ckpt", {
        "state_dict": {"w": _Zeros(TENSOR_BYTES // 4)}, "SplitDataModule": {KEY: RECORD}},
        TENSOR_BYTES)
    assert ckpt.stat().st_size < TENSOR_BYTES // 100
    run = subprocess.run([sys.executable, "-c", CHILD, str(ckpt)], capture_output=True,
                         text=True, timeout=120, preexec_fn=_capped, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout)
    assert out["records"] == [RECORD]
    assert out["grew_kib"] * 1024 < TENSOR_BYTES // 8, out["grew_kib"]  # the old read: > 200 MiB


def test_a_checkpoint_runs_none_of_its_code_and_yields_its_record(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    ckpt = {"hyper_parameters": {"hook": _Runs(marker)},
            "state_dict": collections.OrderedDict(w=_Runs(marker)),
            "SplitDataModule": {KEY: RECORD}}
    for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        path = _zip_ckpt(tmp_path / f"m{method}.ckpt", pickle.dumps(ckpt, protocol=2), method)
        assert read_records(path) == [(str(path), RECORD)]
    assert not marker.exists()


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def test_damaged_records_are_one_line_naming_the_file(tmp_path: Path, cli: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    cases: dict[str, bytes] = {
        "nested.json": json.dumps(RECORD)[:-1].encode() + b', "x": ' + b"[" * 100_000,
        "wrong.json": json.dumps({**RECORD, "data": 5}).encode(),
        "cut.json": json.dumps(RECORD).encode()[:-3],
    }
    for name, text in cases.items():
        (tmp_path / name).write_bytes(text)
    selfish: list[Any] = []
    selfish.append(selfish)
    records = {"nested.ckpt": {**RECORD, "x": _nested(200)},
               "loop.ckpt": {**RECORD, "x": selfish},
               "object.ckpt": {**RECORD, "x": _Runs(tmp_path / "ran")},
               "wrong.ckpt": {**RECORD, "universe": "u.csv"}}
    for name, record in records.items():
        _zip_ckpt(tmp_path / name, pickle.dumps({"M": {KEY: record}}, protocol=2))
    _zip_ckpt(tmp_path / "bomb.ckpt", b"\x80\x02N" + b"r\xff\xff\xff\x7f" + b".")  # memo index
    (tmp_path / "legacy.ckpt").write_bytes(b"\x80\x02\x8a\x0alegacy")  # torch < 1.6: no zip
    names = sorted([*cases, *records, "bomb.ckpt", "legacy.ckpt"])
    monkeypatch.setenv("DVC_CUVIS_MAX_ARRAY_BYTES", "1000000")  # (data.pkl is declared small)
    for name in names:
        run = cli("lineage", tmp_path / name)
        assert run.code == 2, (name, run.out, run.err)
        (line,) = run.err.strip().splitlines()
        assert line.startswith(f"dvc-cuvis: error: {tmp_path / name}: "), line
        assert "internal error" not in line
    big = _zip_ckpt(tmp_path / "big.ckpt", pickle.dumps({"M": {KEY: RECORD}, "pad": bytes(2000)}))
    monkeypatch.setenv("DVC_CUVIS_MAX_ARRAY_BYTES", "1000")
    run = cli("lineage", big)
    assert run.code == 2 and "DVC_CUVIS_MAX_ARRAY_BYTES" in run.err
    assert not (tmp_path / "ran").exists()
