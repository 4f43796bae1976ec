#!/usr/bin/env bash
# The main job (README): install into .venv, then generate the example dataset -> `dvc repro`
# (enumerate -> bake) -> print the split summary. Works on a fresh machine with Python 3.11.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[tiff,coco]"
export PATH="$PWD/.venv/bin:$PATH"
dvc repro
echo
dvc-cuvis resolve --params params.yaml
echo
echo "report: example/report.html   plots: dvc plots show   metrics: dvc metrics show"
