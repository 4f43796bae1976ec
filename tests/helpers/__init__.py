"""The tests' helpers (plain functions and classes; the fixtures live in the conftest files).

* :mod:`tests.helpers.shell`: the child environment ``ENV`` and ``sh`` (run a command, fail
  the test on a non-zero exit) and ``run`` (the same, the exit code left to the test); a
  ``dvc`` command runs DVC's command line in this process, with the child's environment;
* :mod:`tests.helpers.forked`: a child forked from the test process, its imports paid for
  (a ``python -c`` block, a CLI run killed at a crash point);
* :mod:`tests.helpers.cli`: ``Run`` and ``run_subprocess`` (the console entry point in a
  child process);
* :mod:`tests.helpers.files`: fixture paths and writers of small data files (universe.csv,
  SDK-double sessions, TIFF cubes and labels, a TIFF + npz project);
* :mod:`tests.helpers.repos`: one builder per repository shape, each built once per test
  run and copied per test; :mod:`tests.helpers.newcomer`: the README workflow's repository;
  :mod:`tests.helpers.remote`: the dataset repository pushed to the SSH server, built once
  per worker and copied with a store of its own;
* :mod:`tests.helpers.history`: split versions committed to git; :mod:`tests.helpers.memo`:
  enumerate runs for the content memo; :mod:`tests.helpers.drift`: ``dvc-cuvis check`` as
  a user runs it, and small universes; :mod:`tests.helpers.browser`: headless chromium;
* :mod:`tests.helpers.crashpoints`: named moments at which a test kills or pauses a run;
* :mod:`tests.helpers.golden`: ``assert_pinned``, output compared with its pinned file;
* :mod:`tests.helpers.nodes`: a tiny statistical cuvis-ai node (needs torch and
  cuvis-ai-core: import it after ``pytest.importorskip``);
* :mod:`tests.helpers.crashpoints`: the kill tests' crash points, patched onto the package
  from outside (in-process, in a child CLI process, or preloaded into Dask workers).

The local SSH server and Dask cluster, which the benchmarks start too, live in
``testbeds/sshd.py`` and ``testbeds/dask_cluster.py`` (neither ``tests/`` nor ``benchmarks/``
imports the other).
"""
