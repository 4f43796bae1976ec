"""Which tests run together under ``pytest -n`` (pytest-xdist).

Every test is a work unit of its own, except those of ``ONE_WORKER_MODULES``: each of those
modules builds a costly repository in a module-scoped fixture (an SSH remote, a pipeline run,
a Dask cluster), so all its tests go to one worker, which builds it once, instead of each
worker building its own.  Units are handed out largest first (xdist's load-scope order): the
grouped modules start early and the single tests fill the end of the run on both workers.

xdist's own ``--dist loadgroup`` does not group here: under pytest 9 the group suffix it adds
to a test's node id is lost, and the marked tests spread over the workers.
"""

from __future__ import annotations

import pytest

ONE_WORKER_MODULES = frozenset({
    "tests/train/test_versioned.py", "tests/repo/test_fetch.py", "tests/repo/test_remote.py",
    "tests/test_pipeline.py", "tests/train/test_lineage.py",
    "tests/review/test_spectra_report.py", "tests/plugin/test_plugin_train.py",
    "tests/train/test_version_trainrun.py", "tests/review/test_remote_history.py",
    "tests/materialize/test_dask_cluster.py", "tests/review/test_history.py",
    "tests/check/test_fix_lines.py",
    "tests/leakage/test_planted_pipeline.py",
})


def scope_of(nodeid: str) -> str:
    """The work unit of a test: its module for ``ONE_WORKER_MODULES``, else the test alone."""
    module = nodeid.split("::", 1)[0]
    return module if module in ONE_WORKER_MODULES else nodeid


def make_scheduler(config: pytest.Config, log: object) -> object:
    """The scheduler for ``--dist load`` (the default of ``-n``); None (xdist's) otherwise."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerModules(LoadScopeScheduling):
        """xdist's load-scope scheduling with :func:`scope_of` as the scope."""

        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return OneWorkerModules(config, log)  # type: ignore[arg-type]
