"""The benchmarks: each ``bench_*`` module runs as ``python -m benchmarks.bench_core`` (from the
repository root), ``--quick`` for a smoke run.  ``_common`` holds what they share (rows,
targets, workspace, the JSON report); ``_sshd`` and ``_dask_cluster`` start a local SSH
server and a Dask cluster (the tests start them from here too)."""
