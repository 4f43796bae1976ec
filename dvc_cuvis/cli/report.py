"""``dvc-cuvis report``: a self-contained HTML picture of a split (and of a change to it)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dvc_cuvis.cli._inputs import load_inputs, rescan_options
from dvc_cuvis.cli._settings import EXIT_OK, register_options, verb_parser
from dvc_cuvis.config.settings import Settings
from dvc_cuvis.config.specs import REPORT


def add_parser(sub: Any) -> None:
    """The ``report`` verb's flags (from the one spec, ``specs.REPORT``)."""
    p = verb_parser(sub, "report", "write a self-contained HTML report of a split")
    register_options(p, REPORT)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write a self-contained HTML report of a split (and of a change to it with --base)."""
    from dvc_cuvis.check.drift import CheckOptions, verify
    from dvc_cuvis.model.splits import evaluate_constraints, resolve
    from dvc_cuvis.review.report import ReportInput, render, write

    s = Settings(args)
    out = Path(s.get("out"))
    inp = load_inputs(s)
    res = resolve(inp.cfg, inp.uni, name_to_id=inp.name_to_id, where=str(inp.splits_path))
    constraints = [r.to_dict() for r in evaluate_constraints(res, inp.cfg.constraints)]
    drift = None
    if not s.flag("no_check"):  # the same check `dvc-cuvis check` runs (re-scan included)
        from dvc_cuvis.digests.stat_cache import open_stat_cache

        cache = open_stat_cache("auto")
        current, _ = rescan_options(s, inp.universe_path, cache)
        drift = verify(inp.cfg, inp.uni, CheckOptions(
            name_to_id=inp.name_to_id, current=current, allow_partial=s.flag("allow_partial"),
            allow_unpinned=s.flag("allow_unpinned")), cache)
    diff = None
    base_version: tuple[Any, Any] | None = None
    base = s.get("base")
    repo = s.get("repo")
    if repo and not base:
        from dvc_cuvis.errors import DvcCuvisError

        raise DvcCuvisError(f"{s.origin('repo')} names where --base REV is read: give --base "
                            f"too{s.aside('repo')}")
    if base:
        from dvc_cuvis.model.compare import diff_versions
        from dvc_cuvis.review.history import GitTree, load_pair, load_version, open_tree

        if not repo:
            tree = GitTree(".")
            old, new = load_pair(tree, base, None, str(tree.rel(inp.splits_path)),
                                 str(tree.rel(inp.universe_path)))
            diff = diff_versions(old, new)
            base_version = (tree, old)
        else:  # the base from another repository, the split as it is here
            here = GitTree(".")
            splits_rel, uni_rel = str(here.rel(inp.splits_path)), str(here.rel(inp.universe_path))
            old = load_version(open_tree(repo), base, splits_rel, uni_rel, None)
            diff = diff_versions(old, load_version(here, None, splits_rel, uni_rel, None))
    title = s.get("title") or f"Split report: {inp.splits_path}"
    spectra, note = _spectra(s, res, base_version)
    text = render(ReportInput(title, res, constraints, drift, inp.name_to_id, diff,
                              inp.cfg.universe_hash, spectra, note))
    write(out, text)
    print(f"wrote {out} ({len(text.encode()) // 1024} KiB)")
    return EXIT_OK


def _spectra(s: Settings, res: Any, base: tuple[Any, Any] | None) -> tuple[Any, str]:
    """The split's spectra from the summaries folder (if one is set), and the plot file."""
    from dvc_cuvis._io import write_json
    from dvc_cuvis.materialize.summary_store import shard_files
    from dvc_cuvis.review.spectra import plot_rows, split_spectra

    folder, plot = s.get("summaries"), s.get("spectra_plot")
    spectra, note = None, ""
    if folder and not shard_files(Path(folder)):
        note = (f"no spectral summaries in {folder}: run dvc-cuvis materialize with summaries on "
                "(the default; --no-summaries or materialize.no_summaries turns them off)")
    elif folder:
        spectra = split_spectra(res, Path(folder), threshold=s.get("spectral_shift_threshold"),
                                thumbnails=s.get("thumbnails"))
        if s.get("base"):
            _base_shift(spectra, Path(folder), base, s.get("base"))
    if plot:
        write_json(Path(plot), plot_rows(spectra) if spectra is not None else [])
    return spectra, note


def _base_shift(spectra: Any, folder: Path, base: tuple[Any, Any] | None, rev: str) -> None:
    """Train at ``rev`` against train now, from the local DVC cache (else a note why not)."""
    from dvc_cuvis.review.spectra_base import base_entries, train_shift

    if base is None:
        spectra.base_note = (f"train at {rev} is not compared spectrally: --repo reads git "
                             "alone, and the summaries are data")
        return
    tree, old = base
    entries, why = base_entries(tree, rev, tree.rel(folder))
    if entries:
        now = {grid: stages.get("train", []) for grid, stages in spectra.entries.items()}
        spectra.base, why = train_shift(old, entries, now, spectra.threshold)
    spectra.base_note = "" if spectra.base else f"train at {rev} is left out: {why}"
