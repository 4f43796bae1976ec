"""``dvc-cuvis init``: dvc.yaml + params.yaml (enumerate, bake, materialize, check) for a repo.

The stages call this package's CLI with ``--params params.yaml`` so every option lives in
params.yaml, where DVC tracks it.  Review outputs (universe.csv, splits.json, metrics)
are ``cache: false``: they are small, committed to git, and read in pull requests.
"""

from __future__ import annotations

from pathlib import Path

from dvc_cuvis._io import atomic_write_text
from dvc_cuvis.errors import DvcCuvisError

DVC_YAML = """\
stages:
  enumerate:
    cmd: dvc-cuvis enumerate --params params.yaml
    deps:
      - {root}
    params:
      - enumerate
    outs:
      - universe.csv:
          cache: false
    metrics:
      - metrics/universe.json:
          cache: false
  bake:
    cmd: dvc-cuvis bake --params params.yaml
    deps:
      - universe.csv
    params:
      - bake
    outs:
      - splits.json:
          cache: false
    metrics:
      - metrics/splits.json:
          cache: false
    plots:
      - plots/stages.json:
          cache: false
          template: bar_horizontal
          x: samples
          y: stage
      - plots/categories.json:
          cache: false
          template: bar_horizontal
          x: samples
          y: category_stage
      - plots/groups.json:
          cache: false
          template: bar_horizontal_sorted
          x: samples
          y: group
  materialize:
    cmd: dvc-cuvis materialize --params params.yaml
    deps:
      - universe.csv
      - splits.json
      - {root}
    params:
      - materialize
    outs:
      - materialized:
          persist: true
  report:
    cmd: dvc-cuvis report --params params.yaml
    deps:
      - universe.csv
      - splits.json
    params:
      - report
    outs:
      - report.html:
          cache: false
  check:
    cmd: dvc-cuvis check --params params.yaml
    deps:
      - universe.csv
      - splits.json
      - materialized
    params:
      - check
    metrics:
      - metrics/check.json:
          cache: false
"""

PARAMS_YAML = """\
enumerate:
  format: {fmt}
  root: {root}
  out: universe.csv
  metrics: metrics/universe.json
bake:
  universe: universe.csv
  out: splits.json
  metrics: metrics/splits.json
  plots: plots
  strategy: hash
  seed: 0
  val_ratio: 0.2
  test_ratio: 0.2
  group_by: auto
materialize:
  universe: universe.csv
  splits: splits.json
  out_dir: materialized
  compress: none
  jobs: 2
check:
  universe: universe.csv
  splits: splits.json
  metrics: metrics/check.json
report:
  universe: universe.csv
  splits: splits.json
  out: report.html
resolve:
  universe: universe.csv
  splits: splits.json
"""


def init_project(repo: Path, *, fmt: str, root: str, force: bool = False) -> list[Path]:
    """Write dvc.yaml and params.yaml into ``repo``; refuses to overwrite unless ``force``."""
    if not repo.is_dir():
        raise DvcCuvisError(f"{repo}: not a directory")
    if Path(root).is_absolute() or ".." in Path(root).parts:
        raise DvcCuvisError(f"--root {root!r} must be a relative path inside the repository")
    files = {
        repo / "dvc.yaml": DVC_YAML.format(root=root),
        repo / "params.yaml": PARAMS_YAML.format(fmt=fmt, root=root),
    }
    existing = [p for p in files if p.exists()]
    if existing and not force:
        names = ", ".join(str(p) for p in existing)
        raise DvcCuvisError(f"{names} already exist; merge the stages by hand or use --force")
    for path, text in files.items():
        atomic_write_text(path, text)
    return list(files)
