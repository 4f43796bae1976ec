#!/usr/bin/env bash
# The test command (README, .ci/run): installs everything into .venv, then lint, types, tests,
# and a quick benchmark smoke run. Works on a fresh machine with Python 3.11 and pip.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
# torch is pinned to the CPU build on local disk (an unpinned torch pulls a multi-GB CUDA build).
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]" \
    "torch==2.13.0" "pytorch-lightning>=2.4"
# Reference implementations for differential tests (they import without torch).
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
    "cuvis-ai-core==0.18.6" "cuvis-ai-dataloader==0.8.2"
# Browser tests use Debian's chromium (headless); install it when we can (root, apt).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        chromium chromium-driver >/dev/null) || echo "warning: could not install chromium" >&2
fi
.venv/bin/ruff check dvc_cuvis tests benchmarks examples
.venv/bin/mypy
.venv/bin/pytest -n 2 -q "$@"
.venv/bin/python benchmarks/bench_core.py --quick >/dev/null
.venv/bin/python benchmarks/bench_check.py --quick --device cpu >/dev/null
echo "benchmarks: quick smoke run ok"
