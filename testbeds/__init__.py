"""Local servers that both the tests and the benchmarks start: a real ``sshd`` on 127.0.0.1
(:mod:`testbeds.sshd`) and a Dask cluster of real processes (:mod:`testbeds.dask_cluster`).

They live here, beside ``tests/`` and ``benchmarks/`` rather than inside either, so that
neither of those imports the other (``tests/test_architecture.py`` and
``tests/test_benchmarks.py`` hold both directions). Nothing here imports ``tests`` or
``benchmarks``.
"""
