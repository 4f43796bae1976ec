"""The repository: the one git client, dvc.lock and dvc.yaml through DVC's resolver, what
tracks a path, pulling a split's files, and setting a repository up (``init``,
``install-hook``).
"""

from __future__ import annotations

from dvc_cuvis.repo.fetching import (
    Fetched,
    FetchOptions,
    fetch_stages,
)
from dvc_cuvis.repo.git import (
    Git,
    tracked_by,
)
from dvc_cuvis.repo.hooks import (
    Installed,
    install_hook,
)
from dvc_cuvis.repo.lockfile import (
    Change,
    Comparison,
    LockFile,
    LockReadError,
    Stage,
    compare,
    find_lock,
    lookup,
    vouched_below,
)
from dvc_cuvis.repo.project import (
    Init,
    init_project,
)
from dvc_cuvis.repo.pull import (
    FetchFile,
    FetchPlan,
    FetchResult,
    fetch,
    not_pulled,
    plan_fetch,
    verify_files,
)

__all__ = [
    "Change",
    "Comparison",
    "FetchFile",
    "FetchOptions",
    "FetchPlan",
    "FetchResult",
    "Fetched",
    "Git",
    "Init",
    "Installed",
    "LockFile",
    "LockReadError",
    "Stage",
    "compare",
    "fetch",
    "fetch_stages",
    "find_lock",
    "init_project",
    "install_hook",
    "lookup",
    "not_pulled",
    "plan_fetch",
    "tracked_by",
    "verify_files",
    "vouched_below",
]
