#!/usr/bin/env bash
# Mutation testing of the drift check and the split model (mutmut 3, 2 workers); see
# docs/mutation.md for the scores and the survivors.  Not part of .ci/run (it takes minutes).
#
#   scripts/mutation.sh [MODULE...]   MODULE: drift, selectors, splits (and the modules split
#                                     out of it: split_state, resolution, constraints, stats),
#                                     plugin, one of the
#                                     drift check's other modules (report, tokens, universe,
#                                     content, selection, staleness, facts, fixes), or the
#                                     spectra's (summaries, summary_store, spectra,
#                                     spectra_html, spectra_base), the report's
#                                     charts (svg), the report page (review_report), or
#                                     materialize's summary steps (core_summaries: the
#                                     functions of materialize/core.py that record the
#                                     summaries; tasks_summary: materialize/tasks.py's
#                                     _summary, which takes one), the leakage modules
#                                     (leak_signatures, leak_index, leak_duplicates,
#                                     leak_adjacent, leak_recordings, leak_grids, leak_shift,
#                                     leak_clusters), the content checks (check_duplicates,
#                                     check_spectral, check_summaries, check_readable) or the
#                                     bake's keep-together (bake_together); default: all
#
# Environment: JOBS (workers, default 2), DVC_CUVIS_HYPOTHESIS_EXAMPLES (default 25), FRESH=1 (forget earlier results: rm -rf mutants/),
# RECHECK=1 (run the earlier survivors and "no tests" mutants again first: mutmut keeps a verdict until the code of
# its function changes, so new tests alone do not re-run them).
# The configuration (modules, fast test selection) is [tool.mutmut] in pyproject.toml; mutmut
# works in a copy, mutants/ (git-ignored).  Pipelines the tests need are built once and kept
# in $DVC_CUVIS_TEST_REPOS (tests/helpers/repos.py), not once per mutant.
set -euo pipefail
cd "$(dirname "$0")/.."
KNOWN=(drift selectors splits split_state resolution constraints stats plugin report tokens
       universe content selection staleness facts fixes summaries summary_store spectra
       spectra_html spectra_base svg review_report core_summaries tasks_summary
       leak_signatures leak_index leak_duplicates leak_adjacent leak_recordings leak_grids
       leak_shift leak_clusters check_duplicates check_spectral check_summaries check_readable
       bake_together)  # keep in step with only_mutate in pyproject.toml
# each name -> its module under dvc_cuvis/ (the package map: docs/architecture.md)
declare -A PATH_OF=([drift]=check/drift [selectors]=model/selectors [splits]=model/splits
                    [split_state]=model/split_state [resolution]=model/resolution
                    [constraints]=model/constraints [stats]=model/stats
                    [plugin]=plugin/datamodules [report]=check/report [tokens]=check/tokens
                    [universe]=check/universe [content]=check/content
                    [selection]=check/selection [staleness]=check/staleness
                    [facts]=check/facts [fixes]=check/fixes
                    [summaries]=materialize/summaries [summary_store]=materialize/summary_store
                    [spectra]=review/spectra [spectra_html]=review/spectra_html
                    [spectra_base]=review/spectra_base
                    [svg]=review/svg [review_report]=review/report
                    [core_summaries]=materialize/core [tasks_summary]=materialize/tasks
                    [leak_signatures]=leakage/signatures [leak_index]=leakage/index
                    [leak_duplicates]=leakage/duplicates [leak_adjacent]=leakage/adjacent
                    [leak_recordings]=leakage/recordings [leak_grids]=leakage/grids
                    [leak_shift]=leakage/shift [leak_clusters]=leakage/clusters
                    [check_duplicates]=check/duplicates [check_spectral]=check/spectral
                    [check_summaries]=check/summaries [check_readable]=check/readable
                    [bake_together]=baking/together)
# a name that covers some functions of its module only (the rest of the module is not run)
declare -A FUNCS_OF=([core_summaries]="_thumbnails _refresh_summaries _record_results"
                     [tasks_summary]="_summary")
modules=("$@")
[ ${#modules[@]} -gt 0 ] || modules=("${KNOWN[@]}")
for m in "${modules[@]}"; do
    if [[ " ${KNOWN[*]} " != *" $m "* ]]; then
        echo "mutation.sh: unknown module '$m'; choose from: ${KNOWN[*]}" >&2
        exit 2
    fi
done
[ -x .venv/bin/mutmut ] || .venv/bin/python -m pip install -q --disable-pip-version-check \
    "mutmut==3.8.1"
export DVC_CUVIS_TEST_REPOS="${DVC_CUVIS_TEST_REPOS:-${TMPDIR:-/tmp}/dvc-cuvis-mutation-repos}"
# hypothesis tests run again for every mutant: a small derandomized budget (tests/model/test_differential.py)
export DVC_CUVIS_HYPOTHESIS_EXAMPLES="${DVC_CUVIS_HYPOTHESIS_EXAMPLES:-25}"
if [ "${FRESH:-0}" = 1 ]; then rm -rf mutants; fi
# The leakage modules and the content checks run against their own in-process tests only
# (about 100 tests, 7 s), not the whole selection (whose pipeline tests would cost each
# surviving mutant a quarter of a minute): a smaller selection can only kill fewer mutants, so
# their scores are a lower bound.  mutmut reads one selection per folder, so they run in a
# copy, .mutation/leakage/ (git-ignored), with that selection in its pyproject.toml.
LEAKAGE_NAMES=" leak_signatures leak_index leak_duplicates leak_adjacent leak_recordings leak_grids
                leak_shift leak_clusters check_duplicates check_spectral check_summaries
                check_readable bake_together "
LEAKAGE_TESTS=(tests/leakage/test_duplicates.py tests/leakage/test_duplicate_constraints.py
               tests/leakage/test_recordings.py tests/leakage/test_shift_grids.py
               tests/leakage/test_spectral_defaults.py tests/baking/test_keep_together.py
               tests/review/test_report_leakage.py tests/check/test_drift_findings.py
               tests/materialize/test_summary_steps.py tests/materialize/test_summary_store.py)
ROOT=$PWD
leakage_copy() {  # the sources as they are now, mutmut's state (mutants/) kept
    local work=.mutation/leakage
    mkdir -p "$work"
    # a file is copied only when its bytes changed, and then with a new time: mutmut makes a
    # module's mutants again when its source is newer than them (an unchanged function keeps
    # its verdict), so a copy with the source's own older time would keep stale mutants
    .venv/bin/python - "$work" <<'PY'
import filecmp, shutil, sys
from pathlib import Path
work = Path(sys.argv[1])
for top in ("dvc_cuvis", "tests", "examples", "scripts", "testbeds", ".gitignore"):
    src = Path(top)
    files = [src] if src.is_file() else [p for p in src.rglob("*")
                                         if p.is_file() and "__pycache__" not in p.parts]
    for f in files:
        dest = work / f
        if not dest.is_file() or not filecmp.cmp(f, dest, shallow=False):
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dest)
    if src.is_dir():
        for d in sorted((work / top).rglob("*"), reverse=True):
            if d.is_file() and "__pycache__" not in d.parts and not (d.relative_to(work)).exists():
                d.unlink()
PY
    .venv/bin/python - "$work/pyproject.toml" "${LEAKAGE_TESTS[@]}" <<'PY'
import re, sys
from pathlib import Path
text = Path("pyproject.toml").read_text()
tests = ", ".join(f'"{t}"' for t in sys.argv[2:])
new, n = re.subn(r"pytest_add_cli_args_test_selection = \[.*?\]\n",
                 f"pytest_add_cli_args_test_selection = [{tests}]\n", text, flags=re.S)
assert n == 1, "pyproject.toml: no pytest_add_cli_args_test_selection"
Path(sys.argv[1]).write_text(new)
PY
    echo "$work"
}
status=0
for name in "${modules[@]}"; do
    cd "$ROOT"
    m=${PATH_OF[$name]}
    if [ ! -f "dvc_cuvis/$m.py" ]; then
        echo "mutation: dvc_cuvis/$m.py does not exist, skipped" >&2
        continue
    fi
    if [[ " $(echo $LEAKAGE_NAMES) " == *" $name "* ]]; then  # (echo: one space between)
        cd "$(leakage_copy)"
        ln -sfn "$ROOT/.venv" .venv
    fi
    start=$(date +%s)
    # a module added to only_mutate since mutants/ was made sits there as a plain copy, which
    # mutmut takes as already mutated (none): that copy goes, and mutmut mutates it afresh
    if [ -f "mutants/dvc_cuvis/$m.py" ] && [ ! -f "mutants/dvc_cuvis/$m.py.meta" ]; then
        rm -f "mutants/dvc_cuvis/$m.py"
    fi
    funcs=${FUNCS_OF[$name]:-}
    patterns=("dvc_cuvis.${m//\//.}.*")
    if [ -n "$funcs" ]; then
        patterns=()
        for f in $funcs; do patterns+=("dvc_cuvis.${m//\//.}.x_${f}__mutmut_*"); done
    fi
    if [ "${RECHECK:-0}" = 1 ] && [ -f "mutants/dvc_cuvis/$m.py.meta" ]; then
        # mutmut keeps a verdict until its function changes: after new tests, run the
        # earlier survivors and "no tests" mutants again by name
        mapfile -t again < <(.venv/bin/python -c 'import json, sys
codes = json.load(open(sys.argv[1]))["exit_code_by_key"]
funcs = sys.argv[2].split()
print("\n".join(sorted(k for k, c in codes.items() if c in (0, 5, 33) and (not funcs or any(
    k.split(".")[-1].startswith(f"x_{f}__mutmut_") for f in funcs)))))' \
            "mutants/dvc_cuvis/$m.py.meta" "$funcs")
        if [ ${#again[@]} -gt 0 ]; then
            .venv/bin/mutmut run --max-children "${JOBS:-2}" "${again[@]}" || status=$?
        fi
    fi
    .venv/bin/mutmut run --max-children "${JOBS:-2}" "${patterns[@]}" || status=$?
    echo "mutation: dvc_cuvis/$m.py${funcs:+ ($funcs)} took $(( $(date +%s) - start )) s"
    .venv/bin/python - "$m" "$funcs" <<'EOF'
import json, sys
from collections import Counter
from pathlib import Path

module, funcs = sys.argv[1], sys.argv[2].split()
meta = Path("mutants/dvc_cuvis") / f"{module}.py.meta"
codes = json.loads(meta.read_text())["exit_code_by_key"] if meta.exists() else {}
if funcs:  # the named functions' mutants only
    codes = {k: c for k, c in codes.items()
             if any(k.split(".")[-1].startswith(f"x_{f}__mutmut_") for f in funcs)}
kind = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests",
        36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout",
        None: "not checked"}
counts = Counter(kind.get(c, "suspicious") for c in codes.values())
done = sum(n for k, n in counts.items() if k != "not checked")
caught = counts["killed"] + counts["timeout"]
score = f"{100 * caught / done:.1f} %" if done else "n/a"
scope = f" ({', '.join(funcs)})" if funcs else ""
print(f"mutation: dvc_cuvis/{module}.py{scope}: {len(codes)} mutants, " + ", ".join(
    f"{n} {k}" for k, n in sorted(counts.items())) + f"; score {score} (killed+timeout/checked)")
for name, c in sorted(codes.items()):
    if kind.get(c, "suspicious") in ("survived", "no tests", "suspicious"):
        print(f"    {name}: {kind.get(c, 'suspicious')}")
if counts["no tests"]:
    print("mutation: mutmut ran no test for some mutants; a function added since its last "
          "stats run has no tests attributed: rm mutants/mutmut-stats.json and run again")
EOF
done
exit "$status"
