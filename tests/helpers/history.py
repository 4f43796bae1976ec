"""Split histories in real git repositories: a universe and the splits baked from it,
committed as one version."""

from __future__ import annotations

from pathlib import Path

import yaml

from dvc_cuvis.baking.core import BakeOptions, bake
from dvc_cuvis.model.splits import dumps_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import write_universe
from tests.helpers.shell import sh


def universe_of(n_sources: int) -> Universe:
    """``n_sources`` sessions over three days, 4 frames each."""
    return Universe.from_records({"source": f"day{s % 3}/s{s:02d}.cu3s", "index": i}
                                 for s in range(n_sources) for i in range(4))


def write_version(repo: Path, uni: Universe, opts: BakeOptions, msg: str,
                  params: dict | None = None, folds: int = 0) -> None:
    """Write universe.csv, splits.json (and ``folds`` fold files) and params.yaml; commit."""
    write_universe(uni, repo / "universe.csv")
    if folds:
        for j, b in enumerate(bake(uni, BakeOptions(**{**opts.__dict__, "folds": folds}))):
            (repo / "splits").mkdir(exist_ok=True)
            (repo / "splits" / f"fold-{j}.json").write_text(dumps_splits(b.config))
    (b,) = bake(uni, opts)
    (repo / "splits.json").write_text(dumps_splits(b.config))
    (repo / "params.yaml").write_text(yaml.safe_dump(
        params or {"bake": {"seed": opts.seed, "strategy": opts.strategy}}, sort_keys=True))
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-qm", msg, cwd=repo)
