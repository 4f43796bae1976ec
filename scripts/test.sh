#!/usr/bin/env bash
# The test command (README, .ci/run): installs everything into .venv, then lint, types, tests,
# and a quick benchmark smoke run. Works on a fresh machine with Python 3.11 and pip.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# Each step's wall time goes to stderr ("time: <step> <s> s"): the installs are timed apart
# from the checks, as they vary with the package registry (docs/development.md).
T0=$SECONDS
# A machine may set PYTHONDONTWRITEBYTECODE: then every process of the run (each test's
# dvc-cuvis and dvc) would compile every module it imports from source, again and again.
unset PYTHONDONTWRITEBYTECODE
took() { echo "time: $1 $((SECONDS - T0)) s" >&2; T0=$SECONDS; }
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# The tests that depend on what DVC itself reads or writes (marker lowest_dvc: DVC's state
# database, dvc.lock parsing, conformance with dvc status, the hand-over) run again on the
# lowest supported DVC (pyproject: dvc>=3.54,<4; 3.54 is the first whose dvc-data has
# State.get_many), in a second environment inside .venv/. DVC before 3.66 sets no upper bound
# on pathspec but fails to import with pathspec>=0.13, hence the pin. pip is one process on
# one core: this install runs beside the main one (and beside apt-get), from the start.
LOW=.venv/dvc-low
low_install() {
    { [ -x "$LOW/bin/python" ] || "$PY" -m venv "$LOW"; } \
    && "$LOW/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip \
    && "$LOW/bin/python" -m pip install -q --no-compile --disable-pip-version-check \
        "dvc==3.54.0" "pathspec<0.13" "cuvis-ai-schemas>=0.14.2,<0.15" "pydantic>=2.12" \
        "numpy>=2.0" gitpython pyyaml "ruamel.yaml.clib>=0.2.7" "tifffile>=2024.1" \
        "pillow>=10" pytest pytest-xdist hypothesis \
    && "$LOW/bin/python" -m pip install -q --no-compile --disable-pip-version-check \
        --no-deps -e . \
    && "$LOW/bin/python" -c 'import dvc; assert dvc.__version__.startswith("3.54."), dvc.__version__'
}
# Then the tests that run there (marker lowest_dvc), at a lower priority (nice): beside the
# installs and the main tests, they take what those leave idle (a worker waiting, the end of
# the run). They have a pytest session and temporary folder of their own. The random
# sequences of changes are left out there: each change of theirs runs there alone.
LOW_TMP=$(mktemp -d)
low_tests() {
    low_install >.venv/dvc-low.log 2>&1 || { cat .venv/dvc-low.log; echo "error: the DVC" \
        "3.54 environment could not be installed (log above: .venv/dvc-low.log)"; return 3; }
    nice -n 15 "$LOW/bin/pytest" -n 2 -q -p no:cacheprovider --basetemp "$LOW_TMP/t" \
        -m lowest_dvc -k "not random_change_sequences" \
        tests/digests tests/materialize/test_dvc_handover.py tests/repo/test_dvc_conformance.py \
        tests/repo/test_repo.py tests/check/test_drift_contract.py
}
low_tests >.venv/dvc-low-tests.log 2>&1 &
LOW_PID=$!
# Browser tests use Debian's chromium (headless), the SSH-remote tests Debian's sshd on
# 127.0.0.1. What is missing is installed (root, apt-get), beside the pip installs; if that
# is impossible the run fails: a green run has opened the report in a browser and pushed
# over SSH.
apt_needs=()
{ command -v chromium || command -v chromium-browser; } >/dev/null 2>&1 \
    && command -v chromedriver >/dev/null 2>&1 || apt_needs+=(chromium chromium-driver)
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || apt_needs+=(openssh-server)
APT_PID=
if [ ${#apt_needs[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "error: ${apt_needs[*]} missing and cannot be installed (not root, or no" \
             "apt-get): install them, then rerun (the browser and SSH-remote tests need them)" >&2
        kill "$LOW_PID" 2>/dev/null || true
        exit 1
    fi
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        "${apt_needs[@]}"; } >.venv/apt.log 2>&1 &
    APT_PID=$!
fi
# On the way out (a failure, ^C), the jobs beside the tests stop with their children.
trap 'for p in ${LOW_PID:-} ${MISMATCH_PID:-} ${APT_PID:-} ${LINT_PID:-} ${SMOKE_PID:-}; do
    pkill -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done; rm -rf "$LOW_TMP"' EXIT
# A current pip first: the venv's bundled pip (23.2) spends twice the CPU on the installs below.
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
# torch is pinned to the CPU build on local disk (an unpinned torch pulls a multi-GB CUDA build).
# --no-compile: Python compiles (once) the modules the run imports, not all of torch's.
.venv/bin/python -m pip install -q --no-compile --disable-pip-version-check -e ".[test]" \
    "torch==2.13.0" "pytorch-lightning>=2.4" "lightning>=2.4"
# Reference implementations for differential tests (they import without torch).
.venv/bin/python -m pip install -q --no-compile --disable-pip-version-check --no-deps \
    "cuvis-ai-core==0.18.6" "cuvis-ai-dataloader==0.8.2"
# What `pip install torch==2.13.0 "dvc-cuvis[plugin]"` gives a user: PyPI's torchvision (built
# for PyPI's CUDA torch) beside the CPU torch, which pip takes for its torch==2.13.0; Lightning
# then fails to import inside torchvision. .venv/torch-mismatch holds that torchvision and sees
# the main environment's packages through a .pth file; tests/train/test_torch_mismatch.py runs
# our training modules there. It installs beside apt-get, once the main environment is in place.
MISMATCH=.venv/torch-mismatch
{ { [ -x "$MISMATCH/bin/python" ] || "$PY" -m venv --without-pip "$MISMATCH"; } \
    && .venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$(
        "$MISMATCH/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'
        )/main-environment.pth" \
    && "$MISMATCH/bin/python" -m pip install -q --no-compile --disable-pip-version-check \
        "torch==2.13.0" torchvision; } >.venv/torch-mismatch.log 2>&1 &
MISMATCH_PID=$!
if [ -n "$APT_PID" ]; then
    wait "$APT_PID" || { cat .venv/apt.log >&2; echo "error: could not install" \
        "${apt_needs[*]} with apt-get (log above)" >&2; exit 1; }
    APT_PID=
fi
wait "$MISMATCH_PID" || { cat .venv/torch-mismatch.log >&2; echo "error: the torch/torchvision" \
    "mismatch environment could not be installed (log above)" >&2; exit 1; }
MISMATCH_PID=
took "installs (main environment, torch-mismatch, chromium, sshd)"
# In CI the browser test fails instead of skipping when no browser is found.
export CI="${CI:-true}"
# Beside the tests, at a lower priority (nice), as the DVC 3.54 tests: lint, types and import
# layers in one job, a quick smoke run of two benchmarks (each one process; --quick enforces
# no target) in another, so that what is left of them when the tests end has both cores
# (bench_check's quick run, 25 CPU s of torch imports and DataLoader workers, is run by
# hand: docs/development.md). A finding of any of them fails the run, once the main tests
# are through.
{ nice -n 15 .venv/bin/ruff check dvc_cuvis tests benchmarks examples testbeds \
    && nice -n 15 .venv/bin/mypy && nice -n 15 .venv/bin/lint-imports --no-cache \
    && echo "lint: ok"; } >.venv/lint.log 2>&1 &
LINT_PID=$!
{ nice -n 15 .venv/bin/python -m benchmarks.bench_core --quick \
    && nice -n 15 .venv/bin/python -m benchmarks.bench_plugin --quick; } >.venv/smoke.log 2>&1 &
SMOKE_PID=$!
# Every test (the fast tier alone: pytest -m "not slow"); the docs' strict build is one.
# A whole run (no arguments) has each worker build its share of the shared repositories
# first, side by side, instead of one waiting for the other (tests/helpers/repos.py).
if [ $# -eq 0 ]; then export DVC_CUVIS_TEST_PREBUILD=1; fi
.venv/bin/pytest -n 2 -q "$@"
unset DVC_CUVIS_TEST_PREBUILD
took "pytest (beside it, niced: lint, benchmark smoke runs, DVC 3.54 tests)"
wait "$LINT_PID" || { cat .venv/lint.log >&2; echo "error: ruff, mypy or lint-imports" \
    "found a problem (log above: .venv/lint.log)" >&2; exit 1; }
LINT_PID=
grep -E "^(Success|lint:|Contracts)" .venv/lint.log | tail -3
wait "$SMOKE_PID" || { cat .venv/smoke.log >&2; echo "error: a benchmark's smoke run" \
    "failed (log above: .venv/smoke.log)" >&2; exit 1; }
SMOKE_PID=
took "lint, types, import layers, benchmark smoke runs (what they took after the tests)"
wait "$LOW_PID" || { tail -60 .venv/dvc-low-tests.log >&2; echo "error: a test failed on" \
    "DVC 3.54, or its environment could not be installed (log above:" \
    ".venv/dvc-low-tests.log)" >&2; exit 1; }
LOW_PID=
tail -1 .venv/dvc-low-tests.log
took "pytest -m lowest_dvc on DVC 3.54 (what it took after the above)"
echo "benchmarks: quick smoke run ok"
