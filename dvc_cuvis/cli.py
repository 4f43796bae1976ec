"""``dvc-cuvis`` command line: a thin layer over the library.

Exit codes (scripts and CI rely on them): 0 ok, 1 a check failed, 2 bad input or usage.
Every error is one line on stderr naming the file, row or selector; no tracebacks
(set ``DVC_CUVIS_DEBUG=1`` to see one).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shlex
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from dvc_cuvis import __version__
from dvc_cuvis.errors import DvcCuvisError, ParamsError

EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, exit 2 (argparse's own convention)
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"dvc-cuvis: error: {message}\n")


def _setting(
    args: argparse.Namespace,
    sect: dict[str, Any],
    name: str,
    default: Any,
    kind: type | tuple[type, ...] = str,
) -> Any:
    """Flag value if given, else the params.yaml section's value, else ``default``."""
    value = getattr(args, name, None)
    if value is not None:
        return value
    if sect.get(name) is not None:  # a null in params.yaml means "not set"
        value = sect[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # YAML true/false is not a number here, although Python's bool is an int
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            expected = " or ".join(k.__name__ for k in kinds)
            where = getattr(args, "params", None) or "params.yaml"
            raise ParamsError(f"{where}: {args.command}.{name} must be {expected}, got {value!r}")
        return value
    return default


def _params(args: argparse.Namespace, verb: str) -> dict[str, Any]:
    from dvc_cuvis.params import load_params, section

    path = getattr(args, "params", None)
    return section(load_params(path), verb, path=path or "params.yaml")


# -- resolve ------------------------------------------------------------------------------


def cmd_resolve(args: argparse.Namespace) -> int:
    """Resolve every stage of a splits.json against a universe.csv."""
    from dvc_cuvis.categories import load_category_map
    from dvc_cuvis.splits import (
        evaluate_constraints,
        failed_constraints,
        load_splits,
        resolve,
        stage_stats,
        state,
    )
    from dvc_cuvis.universe import read_universe

    sect = _params(args, "resolve")
    universe_path = Path(_setting(args, sect, "universe", "universe.csv"))
    splits_path = Path(_setting(args, sect, "splits", "splits.json"))
    categories = _setting(args, sect, "categories", None)
    leakage = _setting(args, sect, "group_leakage", "auto")

    cfg = load_splits(splits_path)
    uni = read_universe(universe_path)
    name_to_id = load_category_map(categories) if categories else None
    res = resolve(cfg, uni, name_to_id=name_to_id, where=str(splits_path))
    results = evaluate_constraints(res, cfg.constraints, group_leakage=leakage)
    failed = failed_constraints(results)

    for w in res.warnings:
        print(f"dvc-cuvis: warning: {splits_path}: {w.message()}", file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps(res.as_uid_lists(), ensure_ascii=False) + "\n")
    else:
        stats = stage_stats(res)
        pinned = cfg.universe_hash
        hash_line = "not pinned"
        if pinned:
            hash_line = "matches" if pinned == uni.hash else f"DIFFERS (pinned {pinned[:12]})"
        print(f"splits:   {splits_path} ({state(cfg)})")
        print(f"universe: {universe_path} — {len(uni)} samples, {len(uni.source_names)} "
              f"sources, hash {uni.hash[:12]} ({hash_line})")
        print(f"{'stage':<8} {'samples':>9} {'sources':>8} {'groups':>7}")
        for name, st in stats.items():
            note = "  (empty: whole universe)" if name == "predict" and res.predict_is_all else ""
            print(f"{name:<8} {st['samples']:>9} {st['sources']:>8} {st['groups']:>7}{note}")
        for r in results:
            extra = f" — {r.reason}" if r.reason and r.status != "satisfied" else ""
            shown = ", ".join(r.offending[:5])
            more = f" (+{r.count - 5} more)" if r.count > 5 else ""
            offend = f": {shown}{more}" if r.offending else ""
            print(f"constraint {r.kind} [{r.severity}]: {r.status}{extra}{offend}")
    if failed:
        names = ", ".join(f"{r.kind} {r.status}" for r in failed)
        print(f"dvc-cuvis: check failed: {splits_path}: {names}", file=sys.stderr)
        return EXIT_CHECK_FAILED
    return EXIT_OK


# -- enumerate ----------------------------------------------------------------------------


def _bool(args: argparse.Namespace, sect: dict[str, Any], name: str, default: bool) -> bool:
    value = _setting(args, sect, name, default, bool)
    return bool(value)


def _stat_cache(setting: str | None) -> Any:
    """The stat cache a verb uses: a path, ``none`` (in memory only); unset = the default."""
    from dvc_cuvis.digests import open_stat_cache

    return open_stat_cache(setting or "auto")


def _enumerate_options(
    get: Callable[..., Any], cache: Any = None
) -> tuple[Any, Path, str | None]:
    """EnumerateOptions, output path and metrics path from flags/params (``get``).

    ``cache``: a StatCache already loaded by the caller (loading one costs a JSON parse).
    """
    from dvc_cuvis.sources import EnumerateOptions

    fmt, root = get("format", None), get("root", None)
    if fmt is None or root is None:
        raise DvcCuvisError("enumerate needs --format and --root (or an 'enumerate' section "
                            "with format and root in params.yaml)")
    out = Path(get("out", "universe.csv"))
    if cache is None:
        cache = _stat_cache(get("stat_cache", None))
    categories = get("categories", None)
    progress = get("progress", None, (bool, type(None)))
    opts = EnumerateOptions(
        format=str(fmt),
        root=Path(root),
        out_dir=out.parent if str(out.parent) else Path("."),
        pattern=get("pattern", None),
        images=get("images", "images"),
        labels=get("labels", "labels"),
        annotations=get("annotations", "sibling"),
        categories=Path(categories) if categories else None,
        absolute_sources=bool(get("absolute_sources", False, bool)),
        group=get("group", "auto"),
        hash_content=not get("no_hash", False, bool),
        jobs=max(1, int(get("jobs", 4, int))),
        progress=progress if progress is not None else sys.stderr.isatty(),
        cache=cache,
    )
    return opts, out, get("metrics", None)


def cmd_enumerate(args: argparse.Namespace) -> int:
    """Scan a dataset into a canonical universe.csv plus universe metrics."""
    from dvc_cuvis._io import atomic_write_text, write_json
    from dvc_cuvis.sources import enumerate_universe
    from dvc_cuvis.universe import format_universe

    sect = _params(args, "enumerate")
    opts, out, metrics = _enumerate_options(
        lambda name, default, kind=str: _setting(args, sect, name, default, kind))
    uni, info = enumerate_universe(opts)
    atomic_write_text(out, format_universe(uni))
    if metrics:
        write_json(metrics, info)
    print(f"enumerated {info['samples']} samples from {info['sources']} sources "
          f"({info['format']}) -> {out}; universe_hash {info['universe_hash'][:12]}")
    return EXIT_OK


# -- bake ---------------------------------------------------------------------------------


def cmd_bake(args: argparse.Namespace) -> int:
    """Generate a baked splits.json (or one per fold) with split metrics."""
    from cuvis_ai_schemas.training.data import Constraint
    from pydantic import ValidationError

    from dvc_cuvis._io import atomic_write_text, write_json
    from dvc_cuvis.bake import BakeOptions, bake
    from dvc_cuvis.categories import load_category_map
    from dvc_cuvis.splits import dumps_splits, load_splits
    from dvc_cuvis.universe import read_universe

    sect = _params(args, "bake")
    universe_path = Path(_setting(args, sect, "universe", "universe.csv"))
    out = _setting(args, sect, "out", None)
    out_dir = _setting(args, sect, "out_dir", None)
    metrics = _setting(args, sect, "metrics", None)
    constraints = None
    if "constraints" in sect:
        raw = sect["constraints"]
        if not isinstance(raw, list):
            raise ParamsError(f"{args.params}: bake.constraints must be a list of "
                              "{kind, severity}")
        try:
            constraints = [Constraint.model_validate(c) for c in raw]
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ParamsError(f"{args.params}: bake.constraints: {first.get('msg')}") from None
    opts = BakeOptions(
        strategy=_setting(args, sect, "strategy", "hash"),
        seed=_setting(args, sect, "seed", 0, int),
        val_ratio=_setting(args, sect, "val_ratio", 0.2, (int, float)),
        test_ratio=_setting(args, sect, "test_ratio", 0.2, (int, float)),
        group_by=_setting(args, sect, "group_by", "auto"),
        ad_aware=_bool(args, sect, "ad_aware", False),
        folds=_setting(args, sect, "folds", 0, int),
        predict=_setting(args, sect, "predict", "all"),
        ranges=not _bool(args, sect, "no_ranges", False),
        constraints=constraints,
        allow_removed=_bool(args, sect, "allow_removed", False),
    )
    opts.check()
    if opts.folds and not out_dir:
        raise DvcCuvisError("--folds writes one splits file per fold: give --out-dir DIR")
    if not out:
        out = "splits.json"
    rule_path = _setting(args, sect, "rule", None)
    base_path = _setting(args, sect, "base", None)
    categories = _setting(args, sect, "categories", None)
    uni = read_universe(universe_path)
    imported = _imported_folds(args, sect, uni)
    if imported is not None:
        from dvc_cuvis.bake import bake_imported

        kind, folds = imported
        baked = bake_imported(uni, folds.splits, opts, kind)
        if len(baked) > 1 and not out_dir:
            raise DvcCuvisError(f"the {kind} file has {len(baked)} folds: give --out-dir DIR")
        opts.folds = len(baked) if len(baked) > 1 else 0
    else:
        baked = bake(
            uni, opts,
            from_csv=_bool(args, sect, "from_csv", False),
            rule=load_splits(rule_path) if rule_path else None,
            base=load_splits(base_path) if base_path else None,
            name_to_id=load_category_map(categories) if categories else None,
            where=str(rule_path or base_path or ""),
        )
    if opts.folds:
        folder = Path(out_dir)
        for j, b in enumerate(baked):
            atomic_write_text(folder / f"fold-{j}.json", dumps_splits(b.config))
        if metrics:
            write_json(metrics, {"folds": [b.metrics for b in baked]})
        print(f"baked {len(baked)} folds ({opts.strategy}) -> {folder}/fold-*.json")
        return EXIT_OK
    (result,) = baked
    atomic_write_text(Path(out), dumps_splits(result.config))
    if metrics:
        write_json(metrics, result.metrics)
    plots = _setting(args, sect, "plots", None)
    if plots:
        from dvc_cuvis.bake import plot_data

        names = load_category_map(categories) if categories else None
        for name, rows in plot_data(result.metrics, uni, result.stages, names).items():
            write_json(Path(plots) / name, rows)
    st = result.metrics["stages"]
    counts = " ".join(f"{s}={st[s]['samples']}" for s in ("train", "val", "test"))
    print(f"baked {counts} ({result.metrics.get('source', opts.strategy)}) -> {out}; "
          f"universe_hash {uni.hash[:12]}")
    base_info = result.metrics.get("base")
    if base_info and base_info["removed"]:
        print(f"dvc-cuvis: warning: {base_info['removed']} sample(s) of the base split left the "
              "universe and were dropped", file=sys.stderr)
    if not result.metrics["constraints_ok"]:
        bad = [c["kind"] for c in result.metrics["constraints"]
               if c["severity"] == "error" and c["status"] != "satisfied"]
        print(f"dvc-cuvis: warning: the baked split fails constraint(s) {', '.join(bad)}; "
              "see the split metrics", file=sys.stderr)
    return EXIT_OK


def _imported_folds(
    args: argparse.Namespace, sect: dict[str, Any], uni: Any
) -> tuple[str, Any] | None:
    """Folds read from --from-glovita / --from-soma / --from-indices (None when not asked)."""
    chosen = [(k, _setting(args, sect, f"from_{k}", None))
              for k in ("glovita", "soma", "indices")]
    chosen = [(k, v) for k, v in chosen if v]
    if not chosen:
        return None
    if len(chosen) > 1:
        raise DvcCuvisError("choose one of --from-glovita, --from-soma and --from-indices")
    kind, path = chosen[0]
    id_column = _setting(args, sect, "id_column", "uid")
    if kind == "glovita":
        from dvc_cuvis.interop.glovita import read_glovita

        return kind, read_glovita(Path(path), uni, id_column=id_column)
    if kind == "soma":
        from dvc_cuvis.interop.soma import read_soma

        return kind, read_soma(Path(path), uni, id_column=id_column)
    from dvc_cuvis.interop.indices import read_indices

    return kind, read_indices(Path(path), uni)


def cmd_export(args: argparse.Namespace) -> int:
    """Write a baked split (or its folds) in GloViTa, soma or index-array form."""
    from dvc_cuvis._io import atomic_write_bytes, atomic_write_text, dumps_json, write_json
    from dvc_cuvis.interop import from_resolutions
    from dvc_cuvis.splits import load_splits, resolve
    from dvc_cuvis.universe import read_universe

    sect = _params(args, "export")
    fmt = _setting(args, sect, "to", None)
    if fmt not in ("glovita", "soma", "indices"):
        raise DvcCuvisError("export needs --to glovita, soma or indices")
    uni = read_universe(Path(_setting(args, sect, "universe", "universe.csv")))
    folds_dir = _setting(args, sect, "folds_dir", None)
    if folds_dir:
        files = sorted(Path(folds_dir).glob("fold-*.json"),
                       key=lambda p: int(p.stem.split("-")[1]) if p.stem.split("-")[1].isdigit()
                       else -1)
        if not files:
            raise DvcCuvisError(f"{folds_dir}: no fold-<k>.json files")
    else:
        files = [Path(_setting(args, sect, "splits", "splits.json"))]
    folds = from_resolutions([resolve(load_splits(f), uni, where=str(f)) for f in files])
    out_dir = Path(_setting(args, sect, "out_dir", "export"))
    id_column = _setting(args, sect, "id_column", "uid")
    metrics = _setting(args, sect, "metrics", None)
    written: list[Path] = []
    if fmt == "glovita":
        from dvc_cuvis.interop.glovita import export_glovita, labels_json

        atomic_write_text(out_dir / "splits.json", dumps_json(
            export_glovita(folds, id_column=id_column)))
        written.append(out_dir / "splits.json")
        labels = _setting(args, sect, "labels", "anomaly")
        if labels != "none" and uni.has_column("category_ids"):
            atomic_write_text(out_dir / "labels.json", dumps_json(
                labels_json(uni, id_column=id_column, mode=labels)))
            written.append(out_dir / "labels.json")
    elif fmt == "soma":
        from dvc_cuvis.interop.soma import export_soma

        dataset_csv, splits_csv, identity = export_soma(folds, id_column=id_column)
        atomic_write_text(out_dir / "dataset.csv", dataset_csv)
        atomic_write_text(out_dir / "splits.csv", splits_csv)
        target = Path(metrics) if metrics else out_dir / "identity.json"
        write_json(target, identity)
        written += [out_dir / "dataset.csv", out_dir / "splits.csv", target]
    else:
        from dvc_cuvis.interop.indices import indices_bytes

        for k, stages in enumerate(folds.splits):
            name = "indices.npz" if folds.k == 1 else f"fold-{k}.npz"
            atomic_write_bytes(out_dir / name, indices_bytes(stages, uni))
            written.append(out_dir / name)
    print("wrote " + ", ".join(str(p) for p in written))
    return EXIT_OK


# -- materialize --------------------------------------------------------------------------


def cmd_materialize(args: argparse.Namespace) -> int:
    """Write one deterministic npz per selected frame, incrementally."""
    from dvc_cuvis.materialize import Compression, ReaderParams, materialize, parse_crop
    from dvc_cuvis.splits import load_splits
    from dvc_cuvis.universe import read_universe

    sect = _params(args, "materialize")
    universe_path = Path(_setting(args, sect, "universe", "universe.csv"))
    splits_path = _setting(args, sect, "splits", None)
    out_dir = _setting(args, sect, "out_dir", None)
    if not out_dir:
        raise DvcCuvisError("materialize needs --out-dir (or materialize.out_dir in params.yaml)")
    mode = _setting(args, sect, "processing_mode", "Reflectance")
    params = ReaderParams(
        crop=parse_crop(_setting(args, sect, "crop", None, (str, list))),
        processing_mode=None if str(mode).lower() == "none" else str(mode),
        white_ref=_setting(args, sect, "white_ref", None),
        dark_ref=_setting(args, sect, "dark_ref", None),
        compress=Compression.parse(_setting(args, sect, "compress", "none")),
    )
    cache = _stat_cache(_setting(args, sect, "stat_cache", None))
    uni = read_universe(universe_path)
    cfg = load_splits(splits_path) if splits_path else None
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    result = materialize(
        uni, cfg, Path(out_dir), params,
        select=_setting(args, sect, "select", "splits"),
        jobs=max(1, _setting(args, sect, "jobs", 1, int)),
        executor=_setting(args, sect, "executor", "local"),
        scheduler=_setting(args, sect, "scheduler", None),
        cache=cache,
        lock_wait=float(_setting(args, sect, "lock_wait", 0.0, (int, float))),
        show_progress=show,
    )
    print(f"materialized {len(result.universe)} frames into {out_dir}: {result.written} written, "
          f"{result.kept} unchanged, {result.deleted} deleted")
    return EXIT_OK


# -- check --------------------------------------------------------------------------------


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector for one short command.

    A check builds a few hundred thousand small objects (listings, index entries) that
    live until it ends; each collection would walk all of them again, for nothing.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def cmd_check(args: argparse.Namespace) -> int:
    """Drift check of a split against its universe, the data, and dvc.lock."""
    with _no_cyclic_gc():
        return _check(args)


def _check(args: argparse.Namespace) -> int:
    from dvc_cuvis.categories import load_category_map
    from dvc_cuvis.drift import CHECKS, verify
    from dvc_cuvis.params import load_params, section
    from dvc_cuvis.sources import enumerate_universe

    params = load_params(args.params)
    sect = section(params, "check", path=args.params or "params.yaml")
    universe_path = Path(_setting(args, sect, "universe", "universe.csv"))
    splits_path = Path(_setting(args, sect, "splits", "splits.json"))
    cache = _stat_cache(_setting(args, sect, "stat_cache", None))
    checks_spec = _setting(args, sect, "checks", None, (str, list))
    checks = CHECKS if not checks_spec else (
        checks_spec.split(",") if isinstance(checks_spec, str) else checks_spec)
    current: Any = None
    enum_sect = section(params, "enumerate", path=args.params or "params.yaml")
    if enum_sect and not args.no_enumerate and "universe" in checks:
        opts, out, _ = _enumerate_options(
            lambda name, default, kind=str: enum_sect.get(name, default), cache)
        if Path(os.path.abspath(out)) == Path(os.path.abspath(universe_path)):
            opts.progress = False

            def rescan() -> Any:  # called only if dvc.lock cannot vouch for the data
                return enumerate_universe(opts)[0]

            current = rescan
    lock: str | Path | None = "auto"
    if args.no_lock:
        lock = None
    elif args.lock:
        lock = Path(args.lock)
    categories = _setting(args, sect, "categories", None)
    report = verify(
        splits_path, universe_path,
        current=current,
        deep=bool(args.deep),
        name_to_id=load_category_map(categories) if categories else None,
        group_leakage=_setting(args, sect, "group_leakage", "auto"),
        lock=lock,
        data_dir=_setting(args, sect, "data_dir", None),
        cache=cache,
        checks=checks,
    )
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(report.render())
    metrics = _setting(args, sect, "metrics", None)
    plots = _setting(args, sect, "plots", None)
    if metrics or plots:
        from dvc_cuvis._io import write_json

        if metrics:
            write_json(metrics, {"ok": report.ok,
                                 **{f.check: f.status for f in report.findings}})
        if plots:  # one bar per check: 1 = drift or violation, for `dvc plots diff`
            write_json(Path(plots) / "check.json",
                       [{"check": f.check, "status": f.status, "failed": int(f.failed)}
                        for f in report.findings])
    return report.exit_code


# -- diff / log / install-hook -----------------------------------------------------------


def _split_paths(args: argparse.Namespace, tree: Any) -> tuple[str, str, str | None]:
    """Repository-relative splits, universe and params paths (flags > params.yaml > defaults).

    Flags are relative to the current folder; values in params.yaml to the file's folder.
    """
    from dvc_cuvis.params import load_params, section

    params_file = args.params
    if params_file is None and (tree.root / "params.yaml").is_file():
        params_file = str(tree.root / "params.yaml")
    params = load_params(params_file) if params_file else {}
    where = params_file or "params.yaml"
    resolve_s, bake_s = section(params, "resolve", path=where), section(params, "bake", path=where)
    base = Path(params_file).parent if params_file else Path.cwd()

    def pick(flag: str | None, *candidates: Any, default: str) -> str:
        if flag:
            return str(tree.rel(flag))
        for c in candidates:
            if isinstance(c, str) and c:
                return str(tree.rel(base / c))
        return str(tree.rel(default))

    if args.fold is not None:
        folds = pick(args.folds_dir, bake_s.get("out_dir"), default="splits")
        splits = f"{folds}/fold-{args.fold}.json"
    else:
        splits = pick(args.splits, resolve_s.get("splits"), bake_s.get("out"),
                      default="splits.json")
    universe = pick(args.universe, resolve_s.get("universe"), bake_s.get("universe"),
                    default="universe.csv")
    return splits, universe, (str(tree.rel(params_file)) if params_file else None)


def cmd_diff(args: argparse.Namespace) -> int:
    """Per-sample difference of a split between two revisions (default HEAD vs workspace)."""
    from dvc_cuvis.history import GitTree, diff_versions, load_version, render_markdown, render_text

    tree = GitTree(".")
    splits, universe, params = _split_paths(args, tree)
    revs = list(args.revs)
    if len(revs) > 2:
        raise DvcCuvisError("diff takes at most two revisions: [REV_A [REV_B]]")
    rev_a = revs[0] if revs else "HEAD"
    rev_b = revs[1] if len(revs) == 2 else None
    parsed: dict[str, Any] = {}  # both ends usually share universe.csv: parse it once
    a = load_version(tree, rev_a, splits, universe, params, parsed)
    b = load_version(tree, rev_b, splits, universe, params, parsed)
    d = diff_versions(a, b)
    limit = None if args.all else 20
    if args.json:
        sys.stdout.write(json.dumps(d.to_dict(limit=None if args.all else 200),
                                    ensure_ascii=False, default=str) + "\n")
    elif args.md:
        sys.stdout.write(render_markdown(d, limit=limit))
    else:
        sys.stdout.write(render_text(d, limit=limit))
    return EXIT_OK


def cmd_log(args: argparse.Namespace) -> int:
    """Commits that changed the split, with per-stage counts and samples moved."""
    from dvc_cuvis.history import GitTree, split_log

    tree = GitTree(".")
    splits, universe, _ = _split_paths(args, tree)
    entries = list(split_log(tree, splits, universe, rev=args.rev, max_count=args.max_count))
    if args.json:
        sys.stdout.write(json.dumps([e.__dict__ for e in entries], ensure_ascii=False) + "\n")
        return EXIT_OK
    print(f"{'commit':<9} {'date':<10} {'train':>7} {'val':>6} {'test':>6} {'moved':>6} "
          f"{'+new':>5} {'-gone':>5}  {'universe':<12}  author: subject")
    for e in entries:
        def num(v: int | None) -> str:
            return "-" if v is None else str(v)

        print(f"{e.sha:<9} {e.date:<10} {e.counts['train']:>7} {e.counts['val']:>6} "
              f"{e.counts['test']:>6} {num(e.moved):>6} {num(e.added):>5} {num(e.removed):>5}  "
              f"{e.universe_hash:<12}  {e.author}: {e.subject}")
    return EXIT_OK


HOOK_MARK = "# installed by dvc-cuvis install-hook"


def cmd_install_hook(args: argparse.Namespace) -> int:
    """Install a git pre-commit hook that runs `dvc-cuvis check` when split files are staged."""
    from dvc_cuvis.history import GitTree

    tree = GitTree(".")
    hooks = Path(tree.repo.git_dir) / "hooks"
    hook = hooks / "pre-commit"
    if hook.exists() and HOOK_MARK not in hook.read_text(errors="replace") and not args.force:
        raise DvcCuvisError(f"{hook} exists and is not ours; add `dvc-cuvis check` to it by hand "
                            "or use --force to replace it")
    params = f"--params {shlex.quote(args.params)}" if args.params else ""
    script = f"""#!/bin/sh
{HOOK_MARK}
# Runs the drift check when a splits file or a universe.csv is being committed.
staged=$(git diff --cached --name-only --diff-filter=ACMR \\
  | grep -E '(^|/)(splits[^/]*\\.json|universe\\.csv)$')
[ -z "$staged" ] && exit 0
echo "dvc-cuvis: checking staged split files: $staged" >&2
params="{params}"
[ -z "$params" ] && [ -f params.yaml ] && params="--params params.yaml"
exec dvc-cuvis check $params --no-enumerate
"""
    hooks.mkdir(parents=True, exist_ok=True)
    from dvc_cuvis._io import atomic_write_text

    atomic_write_text(hook, script)
    hook.chmod(0o755)
    print(f"installed {hook}")
    return EXIT_OK


# -- report -------------------------------------------------------------------------------


def cmd_report(args: argparse.Namespace) -> int:
    """Write a self-contained HTML report of a split (and of a change to it with --base)."""
    from dvc_cuvis.categories import load_category_map
    from dvc_cuvis.drift import verify
    from dvc_cuvis.report import ReportInput, render, write
    from dvc_cuvis.splits import evaluate_constraints, load_splits, resolve
    from dvc_cuvis.universe import read_universe

    sect = _params(args, "report")
    out = _setting(args, sect, "out", None)
    if not out:
        raise DvcCuvisError("report needs --out report.html (or report.out in params.yaml)")
    universe_path = Path(_setting(args, sect, "universe", "universe.csv"))
    splits_path = Path(_setting(args, sect, "splits", "splits.json"))
    categories = _setting(args, sect, "categories", None)
    cfg = load_splits(splits_path)
    uni = read_universe(universe_path)
    name_to_id = load_category_map(categories) if categories else None
    res = resolve(cfg, uni, name_to_id=name_to_id, where=str(splits_path))
    constraints = [r.to_dict() for r in evaluate_constraints(res, cfg.constraints)]
    drift = None if args.no_check else verify(cfg, uni, name_to_id=name_to_id, lock="auto")
    diff = None
    base = _setting(args, sect, "base", None)
    if base:
        from dvc_cuvis.history import GitTree, diff_versions, load_version

        tree = GitTree(".")
        parsed: dict[str, Any] = {}
        a = load_version(tree, base, tree.rel(splits_path), tree.rel(universe_path), None,
                         parsed)
        b = load_version(tree, None, tree.rel(splits_path), tree.rel(universe_path), None,
                         parsed)
        diff = diff_versions(a, b)
    title = _setting(args, sect, "title", None) or f"Split report: {splits_path}"
    text = render(ReportInput(title, res, constraints, drift, name_to_id, diff,
                              cfg.universe_hash))
    write(Path(out), text)
    print(f"wrote {out} ({len(text.encode()) // 1024} KiB)")
    return EXIT_OK


# -- init ---------------------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> int:
    """Write a dvc.yaml + params.yaml for the split pipeline into a repo."""
    from dvc_cuvis.project import init_project

    written = init_project(Path(args.dir), fmt=args.format, root=args.root, force=args.force)
    for p in written:
        print(f"wrote {p}")
    print("next: `dvc repro` (then commit universe.csv, splits.json, dvc.lock and metrics/)")
    return EXIT_OK


# -- parser -------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every verb."""
    parser = _Parser(
        prog="dvc-cuvis",
        description="Reproducible, reviewable Cuvis.AI data splits as a DVC pipeline.",
    )
    parser.add_argument("--version", action="version", version=f"dvc-cuvis {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("resolve", help="resolve every stage of a splits.json against a universe")
    p.add_argument("--universe", help="universe.csv (default: params 'resolve.universe' or "
                   "./universe.csv)")
    p.add_argument("--splits", help="splits.json (default: params 'resolve.splits' or "
                   "./splits.json)")
    p.add_argument("--categories", help="category name->id map for 'categories' selectors "
                   "(COCO json, enumerate metrics, or {name: id} json)")
    p.add_argument("--group-leakage", dest="group_leakage",
                   choices=["auto", "error", "warn", "off"],
                   help="group leakage check (auto: error when the universe has a group column)")
    p.add_argument("--params", help="params.yaml to read the 'resolve' section from")
    p.add_argument("--json", action="store_true",
                   help='print {"train": [uid...], "val": ..., "test": ..., "predict": ...}')
    p.set_defaults(func=cmd_resolve)

    p = sub.add_parser("enumerate", help="scan a dataset into a canonical universe.csv")
    p.add_argument("--format", choices=["cu3s", "tiff", "npz", "universe"],
                   help="what the data is (universe: an existing universe.csv)")
    p.add_argument("--root", help="dataset root folder (universe: the universe.csv file)")
    p.add_argument("--out", help="universe.csv to write (default ./universe.csv)")
    p.add_argument("--metrics", help="universe metrics json to write (counts, hash, categories)")
    p.add_argument("--pattern", help="glob under the root (default per format, e.g. **/*.cu3s)")
    p.add_argument("--images", help="tiff: cube folder under the root (default images)")
    p.add_argument("--labels", help="tiff: PNG label folder under the root (default labels)")
    p.add_argument("--annotations", choices=["sibling", "none"],
                   help="cu3s: COCO json next to each session (<stem>.json) or none")
    p.add_argument("--categories", help="category name->id map (COCO json or {name: id})")
    p.add_argument("--absolute-sources", dest="absolute_sources", action="store_true",
                   default=None, help="use absolute posix paths as source ids (GUI contract)")
    p.add_argument("--group", choices=["auto", "parent", "none"],
                   help="group column: auto (npz: the frame's source), parent (folder), none")
    p.add_argument("--no-hash", dest="no_hash", action="store_true", default=None,
                   help="skip content md5 (not recommended: drift checks need it)")
    p.add_argument("--jobs", type=int, help="hashing threads (default 4)")
    p.add_argument("--stat-cache", dest="stat_cache",
                   help="stat cache file, or 'none' (default .dvc/tmp/dvc-cuvis/)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: when stderr is a terminal)")
    p.add_argument("--params", help="params.yaml to read the 'enumerate' section from")
    p.set_defaults(func=cmd_enumerate)

    p = sub.add_parser("bake", help="generate a baked splits.json from a universe")
    p.add_argument("--universe", help="universe.csv (default ./universe.csv)")
    p.add_argument("--out", help="splits.json to write (default ./splits.json)")
    p.add_argument("--out-dir", dest="out_dir", help="folder for fold-<k>.json with --folds")
    p.add_argument("--metrics", help="split metrics json to write")
    p.add_argument("--plots", help="folder for DVC plot data (stages, categories, groups)")
    p.add_argument("--strategy", choices=["hash", "random", "stratified", "multilabel"],
                   help="hash (default; stable under growth), random/stratified (as "
                   "cuvis-ai-dataloader resolve-splits), multilabel (category ids)")
    p.add_argument("--seed", type=int)
    p.add_argument("--val-ratio", dest="val_ratio", type=float)
    p.add_argument("--test-ratio", dest="test_ratio", type=float)
    p.add_argument("--group-by", dest="group_by", choices=["auto", "source", "group", "sample"],
                   help="unit kept together (auto: group column if present, else source)")
    p.add_argument("--ad-aware", dest="ad_aware", action="store_true", default=None,
                   help="train on normal samples only (anomalous ones are left out of train)")
    p.add_argument("--folds", type=int, help="K-fold: test holdout + K validation folds")
    p.add_argument("--predict", choices=["all", "test"],
                   help="predict stage: all (empty = whole universe, default) or mirror test")
    p.add_argument("--no-ranges", dest="no_ranges", action="store_true", default=None,
                   help="write ids as plain integers instead of 'a-b' ranges")
    p.add_argument("--from-csv", dest="from_csv", action="store_true", default=None,
                   help="take the universe's 'split' column")
    p.add_argument("--rule", help="rule-form splits.json to resolve and bake")
    p.add_argument("--base", help="previous baked splits.json: keep it, place new samples")
    p.add_argument("--allow-removed", dest="allow_removed", action="store_true", default=None,
                   help="with --base: drop samples that left the universe instead of failing")
    p.add_argument("--categories", help="category name->id map for 'categories' selectors")
    p.add_argument("--from-glovita", dest="from_glovita", help="import a GloViTa splits.json")
    p.add_argument("--from-soma", dest="from_soma", help="import a soma splits.csv")
    p.add_argument("--from-indices", dest="from_indices", help="import an indices.npz")
    p.add_argument("--id-column", dest="id_column",
                   help="universe column the imported ids name (default uid)")
    p.add_argument("--params", help="params.yaml to read the 'bake' section from")
    p.set_defaults(func=cmd_bake)

    p = sub.add_parser("export", help="write a split as GloViTa, soma or index arrays")
    p.add_argument("--to", choices=["glovita", "soma", "indices"])
    p.add_argument("--universe", help="universe.csv (default ./universe.csv)")
    p.add_argument("--splits", help="baked splits.json (default ./splits.json)")
    p.add_argument("--folds-dir", dest="folds_dir", help="folder of fold-<k>.json (K folds)")
    p.add_argument("--out-dir", dest="out_dir", help="output folder (default ./export)")
    p.add_argument("--id-column", dest="id_column",
                   help="universe column used as the sample id (default uid)")
    p.add_argument("--labels", choices=["anomaly", "categories", "none"],
                   help="glovita: labels.json from category ids (default anomaly 0/1)")
    p.add_argument("--metrics", help="soma: where to write the identity checksums")
    p.add_argument("--params", help="params.yaml to read the 'export' section from")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("materialize", help="write one deterministic npz per selected frame")
    p.add_argument("--universe", help="universe.csv of the raw data (default ./universe.csv)")
    p.add_argument("--splits", help="splits.json selecting the frames (all frames without it)")
    p.add_argument("--out-dir", dest="out_dir",
                   help="output folder: frames/, universe.csv, splits.json, manifest.json")
    p.add_argument("--select", choices=["splits", "all"],
                   help="frames of every stage of the split (default) or the whole universe")
    p.add_argument("--crop", help="TOP,BOTTOM,LEFT,RIGHT pixels removed from cube and masks")
    p.add_argument("--processing-mode", dest="processing_mode",
                   help="cu3s: cuvis.ProcessingMode name, or none (default Reflectance)")
    p.add_argument("--white-ref", dest="white_ref", help="cu3s: white reference CU3S[:FRAME]")
    p.add_argument("--dark-ref", dest="dark_ref", help="cu3s: dark reference CU3S[:FRAME]")
    p.add_argument("--compress", help="none (default) | deflate[:level] | masks[:level]")
    p.add_argument("--jobs", type=int, help="worker processes (default 1)")
    p.add_argument("--executor", choices=["local", "dask"], help="local pool or a Dask cluster")
    p.add_argument("--scheduler", help="Dask scheduler address (with --executor dask)")
    p.add_argument("--lock-wait", dest="lock_wait", type=float,
                   help="seconds to wait for another run on the same folder (default 0)")
    p.add_argument("--stat-cache", dest="stat_cache", help="stat cache file, or 'none'")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--params", help="params.yaml to read the 'materialize' section from")
    p.set_defaults(func=cmd_materialize)

    p = sub.add_parser("check", help="drift check: split vs universe vs data vs dvc.lock")
    p.add_argument("--universe", help="universe.csv (default ./universe.csv)")
    p.add_argument("--splits", help="splits.json (default ./splits.json)")
    p.add_argument("--deep", action="store_true", help="re-hash every file (ignore the cache)")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--lock", help="dvc.lock to compare against (default: the repository's)")
    p.add_argument("--no-lock", dest="no_lock", action="store_true", help="skip staleness")
    p.add_argument("--no-enumerate", dest="no_enumerate", action="store_true",
                   help="do not re-scan the data named in params.yaml's enumerate section")
    p.add_argument("--data-dir", dest="data_dir",
                   help="folder that {DATA_DIR} stands for in GUI-authored splits")
    p.add_argument("--categories", help="category name->id map for 'categories' selectors")
    p.add_argument("--group-leakage", dest="group_leakage",
                   choices=["auto", "error", "warn", "off"])
    p.add_argument("--checks", help="comma list of universe,content,selection,constraints,"
                   "staleness (default all)")
    p.add_argument("--stat-cache", dest="stat_cache", help="stat cache file, or 'none'")
    p.add_argument("--plots", help="folder for DVC plot data (check.json)")
    p.add_argument("--params", help="params.yaml ('check' section; 'enumerate' to re-scan)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("diff", help="per-sample split changes between revisions")
    p.add_argument("revs", nargs="*", metavar="REV",
                   help="REV_A [REV_B] (default HEAD vs the workspace)")
    p.add_argument("--splits", help="splits.json path (default from params.yaml or ./splits.json)")
    p.add_argument("--universe", help="universe.csv path (default from params.yaml)")
    p.add_argument("--params", help="params.yaml (split paths and params sections to compare)")
    p.add_argument("--fold", type=int, help="compare fold K of a K-fold bake")
    p.add_argument("--folds-dir", dest="folds_dir", help="folder of fold-<k>.json files")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--md", action="store_true", help="markdown (a pull-request comment)")
    fmt.add_argument("--json", action="store_true", help="machine-readable")
    p.add_argument("--all", action="store_true", help="list every changed sample")
    p.set_defaults(func=cmd_diff)

    p = sub.add_parser("log", help="commits that changed the split, with stage counts")
    p.add_argument("rev", nargs="?", default="HEAD")
    p.add_argument("--splits", help="splits.json path (default from params.yaml)")
    p.add_argument("--universe", help="universe.csv path (default from params.yaml)")
    p.add_argument("--params", help="params.yaml with the split paths")
    p.add_argument("--fold", type=int, help="log fold K of a K-fold bake")
    p.add_argument("--folds-dir", dest="folds_dir", help="folder of fold-<k>.json files")
    p.add_argument("-n", "--max-count", dest="max_count", type=int)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_log)

    p = sub.add_parser("install-hook", help="git pre-commit hook running `dvc-cuvis check`")
    p.add_argument("--params", help="params.yaml the hook passes to check")
    p.add_argument("--force", action="store_true", help="replace an existing pre-commit hook")
    p.set_defaults(func=cmd_install_hook)

    p = sub.add_parser("report", help="self-contained HTML report of a split")
    p.add_argument("--out", help="report.html to write")
    p.add_argument("--universe", help="universe.csv (default ./universe.csv)")
    p.add_argument("--splits", help="splits.json (default ./splits.json)")
    p.add_argument("--base", help="git revision to compare against (transition heat map)")
    p.add_argument("--categories", help="category name->id map (COCO json or enumerate metrics)")
    p.add_argument("--title", help="page title")
    p.add_argument("--no-check", dest="no_check", action="store_true",
                   help="leave the drift check out of the report")
    p.add_argument("--params", help="params.yaml to read the 'report' section from")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("init", help="write dvc.yaml + params.yaml (the whole pipeline) into a repo")
    p.add_argument("--dir", default=".", help="repository folder (default .)")
    p.add_argument("--format", default="cu3s", choices=["cu3s", "tiff", "npz", "universe"])
    p.add_argument("--root", default="data", help="dataset root inside the repo (default data)")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.set_defaults(func=cmd_init)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dvc-cuvis`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except DvcCuvisError as exc:
        print(f"dvc-cuvis: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("dvc-cuvis: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except MemoryError:
        print("dvc-cuvis: error: out of memory", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # never a traceback for users; opt in with DVC_CUVIS_DEBUG=1
        if os.environ.get("DVC_CUVIS_DEBUG"):
            raise
        print(f"dvc-cuvis: internal error: {type(exc).__name__}: {exc} "
              "(please report it; set DVC_CUVIS_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
