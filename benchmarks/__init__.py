"""The benchmarks: each ``bench_*`` module runs as ``python -m benchmarks.bench_core`` (from the
repository root), ``--quick`` for a smoke run.  ``_common`` holds what they share (rows,
targets, workspace, the JSON report).  The local SSH server and Dask cluster that the tests
start too live in the top-level ``testbeds`` package, so that neither ``tests`` nor
``benchmarks`` imports the other."""
