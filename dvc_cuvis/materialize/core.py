"""Deterministic, incremental, parallel npz materialization of a split's frames.

Output folder layout (one DVC output, ``persist: true``)::

    OUT/frames/<source, path-escaped>.<index:06d>.npz   one frame per selected sample
    OUT/universe.csv      source,index,materialized_path,... (paths relative to it)
    OUT/splits.json       the split, resolving against OUT/universe.csv (same identities;
                          a whole-file TIFF sample becomes npz_multi's (source, 0), re-pinned)
    OUT/manifest.json     per frame: recipe key, md5 and size of the written file

*Deterministic*: frame bytes come from :mod:`dvc_cuvis.model.frame_bytes` (sorted members, fixed
zip timestamps and attributes, never pickled), ``source`` is the logical id, and nothing
depends on the checkout path.  *Incremental*: a frame's recipe key covers
the source file's content md5, the index, every reader and writer parameter and the
format version; a rerun rewrites exactly the frames whose key changed (or whose file no
longer matches the manifest) and deletes frames that left the selection; frames of a
folder written in an older layout (format version 1) whose recipe is unchanged are renamed
into the current one, not rewritten.  *Safe*: every
file is written to a temporary sibling and renamed, the manifest is checkpointed, and a
lock file keeps two runs off one folder; an npz input's zip CRCs are checked (while its
frame is hashed, see ``frames.write_frame``) before its frame gets a name, so a damaged
input leaves no frame.  *Parallel*: per-source tasks run on a process
pool (``jobs``) or on a Dask cluster (``executor="dask"``) through the same function; a
local worker takes consecutive tasks in groups and hashes each frame (md5, the slowest
pass) while it writes the next, so small files run near the speed of one md5 per frame;
it maps each npz input rather than reading it (no copy of the input, see
``frames.open_npz_input``), and checks the input's CRCs with libdeflate where the system
has it (``frames.crc32``).  A task that fails ends the run with its error, but only after
the tasks finished before it in its group, and the groups already running, are recorded
(``run_group``): the rerun writes only what is missing.

*Durable* (``sync``, measured in ``benchmarks/bench_materialize.py``): a frame is claimed
only by the manifest, and the manifest is written only after the file system has been
synced (``syncfs``), so it never names a frame a power cut could take.  Frames of a local
run are written without a per-file ``fsync`` (``sync="fs"``): the kernel writes them back
while the next ones are encoded, and the run waits for the disk once per checkpoint (a few
seconds apart) instead of once per file (an fsync per frame is markedly slower: figures in
docs/performance.md).  What a
power cut can lose: the frames written since the last checkpoint — the manifest does not
claim them, so the next run (which checks size and md5 of every claimed frame that its
stat cache cannot vouch for) writes them again; an empty or torn file under a frame's
name is rewritten the same way.  A ``kill -9`` loses nothing written (the page cache
survives the process), and leaves no half-written file under a final name.  Dask workers
may write from other machines, whose page cache a ``syncfs`` here cannot reach: with
``executor="dask"`` each frame is fsynced by its writer (``sync="file"``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from dvc_cuvis._io import atomic_write_text, dumps_json, sync_file_system
from dvc_cuvis.digests.hashing import list_tree
from dvc_cuvis.digests.stat_cache import StatCache, hashing_line
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.interop.modules import MODULE_COLUMN
from dvc_cuvis.materialize.executors import execute
from dvc_cuvis.materialize.lock import output_lock
from dvc_cuvis.materialize.options import MaterializeOptions, ReaderParams
from dvc_cuvis.materialize.planning import (
    FORMAT_VERSION,
    Manifest,
    ManifestEntry,
    Plan,
    plan,
    selected_rows,
)
from dvc_cuvis.materialize.summary_store import THUMBNAIL_CAP, refresh, thumbnail_frames
from dvc_cuvis.materialize.tasks import (
    Summary,
    Written,
    _read_frames,
    _summary,
)
from dvc_cuvis.model.splits import DataSplitConfig, dumps_splits, load_splits
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.model.universe_io import format_universe, read_universe
from dvc_cuvis.paths.roots import dvc_root_of
from dvc_cuvis.progress import progress


@dataclass(frozen=True)
class MaterializeResult:
    """Counts of a run and the universe/splits written beside the frames: everything the
    CLI says of a run, so that a notebook learns the same."""

    written: int
    kept: int
    deleted: int
    universe: Universe
    out_dir: Path
    migrated: int = 0  # frames of an older layout renamed into the current one, not rewritten
    #: what the run repaired on its way, one line each (a damaged manifest or summaries shard)
    notes: list[str] = field(default_factory=list)
    #: where the md5s came from and how many bytes were read to hash (the stat cache's line)
    hashing: str = ""

    def summary(self, out_dir: str | Path | None = None) -> str:
        """The run in one line, the folder named as the caller gave it (default: ``out_dir``)."""
        moved = f", {self.migrated} migrated to the current layout" if self.migrated else ""
        return (f"materialized {len(self.universe)} frames into "
                f"{self.out_dir if out_dir is None else out_dir}: {self.written} written, "
                f"{self.kept} unchanged, {self.deleted} deleted{moved}")


def materialize(opts: MaterializeOptions) -> MaterializeResult:
    """Run ``dvc-cuvis materialize`` from Python, in one call.

    Reads the universe (and the split) the options name and brings ``opts.out_dir`` to the
    bytes of a clean run, as :func:`materialize_universe` does for a universe in memory.

    Parameters
    ----------
    opts : MaterializeOptions
        What to write and how (:meth:`MaterializeOptions.from_settings` for the CLI's rule,
        or keywords); its ``"auto"`` settings are resolved here if they are not yet.

    Returns
    -------
    MaterializeResult
        The counts, the npz universe written to ``OUT/universe.csv``, what was repaired on
        the way (``notes``) and where the md5s came from (``hashing``).

    Raises
    ------
    MissingFileError
        The universe, the split, or a selected sample's file does not exist.
    DvcCuvisError
        Whatever :func:`materialize_universe` refuses (one line naming the file and frame).

    See Also
    --------
    materialize_universe : the same for a universe already in memory.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from dvc_cuvis.materialize import MaterializeOptions, materialize
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> np.savez(d / "a.npz", cube=np.ones((2, 2, 3), np.float32),
    ...          wavelengths=np.array([500, 600, 700]))
    >>> _ = (d / "universe.csv").write_text("source,index,format\\na.npz,0,npz\\n")
    >>> result = materialize(MaterializeOptions(out_dir=d / "out", universe=d / "universe.csv",
    ...                                         select="all", stat_cache=None))
    >>> result.summary("out")
    'materialized 1 frames into out: 1 written, 0 unchanged, 0 deleted'
    """
    opts = opts.resolved()
    uni = read_universe(opts.universe)
    cfg = load_splits(opts.splits) if opts.splits is not None else None
    result = materialize_universe(
        uni, cfg, opts.out_dir, opts.params, select=opts.select, jobs=opts.jobs,
        executor=opts.executor, scheduler=opts.scheduler, cache=opts.cache,
        lock_wait=opts.lock_wait, show_progress=bool(opts.progress), sync=opts.sync,
        summaries=opts.summaries,
    )
    return replace(result, hashing=hashing_line(opts.cache))


def materialize_universe(
    uni: Universe,
    splits_cfg: DataSplitConfig | None,
    out_dir: Path,
    params: ReaderParams,
    *,
    select: str = "splits",
    jobs: int = 1,
    executor: str = "local",
    scheduler: str | None = None,
    cache: StatCache | None = None,
    lock_wait: float = 0.0,
    show_progress: bool = False,
    sync: str = "auto",
    summaries: bool = True,
) -> MaterializeResult:
    """Bring ``out_dir`` to exactly the bytes of a clean run for this universe/split/params.

    ``sync`` is the durability scheme (see the module docstring): ``"fs"`` writes frames
    without a per-file ``fsync`` and syncs the file system once before every manifest
    write; ``"file"`` fsyncs every frame file; ``"auto"`` is ``"fs"`` for the local
    executor and ``"file"`` for Dask, whose workers may write from other machines.

    Training code then reads one small npz per sample (``npz_multi``,
    :class:`~dvc_cuvis.train.datamodule.SplitDataModule`) instead of opening cu3s sessions or
    TIFF cubes, and a rerun after a change rewrites only the frames it affects.

    Parameters
    ----------
    uni : Universe
        The source universe (its ``materialized_path``, else ``source``, names each
        physical file, relative to the universe.csv's folder; ``format`` or the suffix
        tells cu3s, tiff or npz).
    splits_cfg : DataSplitConfig or None
        The split whose samples to write, copied to ``OUT/splits.json`` (re-pinned to the
        new universe when its pin matched ``uni``); None writes no splits.json.
    out_dir : Path
        The output folder (created; one DVC output with ``persist: true``).
    params : ReaderParams
        Everything that changes a frame's bytes: crop, cu3s processing mode and
        references, compression.
    select : {"splits", "all"}, default "splits"
        The split's samples (train, val, test and predict), or every sample of ``uni``.
    jobs : int, default 1
        Worker processes of the local executor.
    executor : {"local", "dask"}, default "local"
    scheduler : str, optional
        Address of a Dask scheduler (default: an in-process cluster).
    cache : StatCache, optional
        Remembers md5s across runs so unchanged inputs are not re-hashed; default: in
        memory, for this call only.
    lock_wait : float, default 0.0
        Seconds to wait for another run holding ``out_dir``'s lock.
    show_progress : bool, default False
        A progress bar on stderr.
    sync : {"auto", "fs", "file"}, default "auto"
        The durability scheme (above).
    summaries : bool, default True
        Record each frame's spectral summary while its cube is in memory
        (:mod:`dvc_cuvis.materialize.summaries`), in ``OUT/summaries/``; a frame kept
        without one is read once more. False leaves valid summaries as they are.

    Returns
    -------
    MaterializeResult
        ``written``, ``kept``, ``deleted`` and ``migrated`` frame counts, ``out_dir``,
        and ``universe``: the npz universe written to ``OUT/universe.csv``.

    Raises
    ------
    MissingFileError
        A selected sample's file or annotation does not exist (also a
        ``FileNotFoundError``).
    SelectorError
        The split still uses ``dir_indices`` and pins another universe.
    DvcCuvisError
        A format that cannot be told, a path leaving the universe's folder, a bad
        ``select``/``executor``/``sync``, another run holding the lock, or a frame that
        cannot be read or written (one line naming the file and frame, also from a
        worker process or a Dask node).

    See Also
    --------
    dvc_cuvis.baking.core.bake : make the split to materialize.
    dvc_cuvis.train.datamodule.SplitDataModule : train on the folder.

    Notes
    -----
    ``select="splits"`` with an empty predict stage writes the *whole* universe, since an
    empty predict means every sample; give predict selectors (e.g. ``BakeOptions(
    predict="test")``) to write only the split's samples.  Selectors that match nothing
    are tolerated here, so a shard's universe picks its own part of a larger split.
    Identities do not change: a frame keeps its ``source`` and ``index`` (a whole-file
    TIFF sample becomes index 0), so the split resolves the same in ``OUT``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from cuvis_ai_schemas.training.data import DataSplitConfig, Selector
    >>> from dvc_cuvis.materialize import ReaderParams, materialize_universe
    >>> from dvc_cuvis import read_universe
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("a", "b", "c"):
    ...     np.savez(d / f"{name}.npz", cube=np.ones((2, 2, 3), np.float32),
    ...              wavelengths=np.array([500, 600, 700]))
    >>> _ = (d / "universe.csv").write_text(
    ...     "source,index,format\\na.npz,0,npz\\nb.npz,0,npz\\nc.npz,0,npz\\n")
    >>> uni = read_universe(d / "universe.csv")
    >>> result = materialize_universe(uni, None, d / "out", ReaderParams(), select="all")
    >>> result.written, result.kept, result.deleted
    (3, 0, 0)
    >>> result.universe.column("materialized_path")
    ['frames/a.npz.000000.npz', 'frames/b.npz.000000.npz', 'frames/c.npz.000000.npz']

    A rerun with a split that names two of the samples writes nothing, keeps two
    frames and deletes the third:

    >>> split = DataSplitConfig(train=[Selector(kind="files", paths=["a.npz"])],
    ...                         predict=[Selector(kind="files", paths=["b.npz"])])
    >>> result = materialize_universe(uni, split, d / "out", ReaderParams())
    >>> result.written, result.kept, result.deleted
    (0, 2, 1)
    >>> header, first = (d / "out" / "universe.csv").read_text().splitlines()[:2]
    >>> header
    'source,index,materialized_path,format,md5,data_module'
    >>> first.startswith("a.npz,0,frames/a.npz.000000.npz,npz,"), first.endswith(",npz_multi")
    (True, True)
    """
    if sync not in ("auto", "fs", "file"):
        raise DvcCuvisError(f"sync {sync!r}: choose auto, fs or file")
    per_file = sync == "file" or (sync == "auto" and executor != "local")
    cache = cache if cache is not None else StatCache(None)
    rows = selected_rows(uni, splits_cfg, select)
    with output_lock(out_dir, wait_s=lock_wait):
        p = plan(uni, rows, out_dir, params, cache)
        thumbs = _thumbnails(uni, p) if summaries else frozenset()
        p.tasks = [replace(t, fsync=t.fsync and per_file, summaries=summaries,
                           thumbs=frozenset(n for _, n in t.frames if n in thumbs))
                   for t in p.tasks]
        for path in p.delete:  # first, so that no stale file or folder is in a new frame's way
            path.unlink(missing_ok=True)
        manifest: Manifest = dict(p.keep)
        if p.migrate:
            manifest.update(_migrate(out_dir, p.migrate, cache))
            _write_manifest(out_dir, manifest)
        results = progress(
            execute(p.tasks, jobs=jobs, executor=executor, scheduler=scheduler),
            total=len(p.tasks), desc="materialize", enabled=show_progress,
        )
        fresh: dict[str, Summary] = {}
        written = _record_results(results, p.recipes, out_dir, manifest, cache, fresh)
        _prune_empty_dirs(out_dir / "frames")
        manifest = {k: manifest[k] for k in sorted(manifest) if k in p.recipes}
        npz_uni = _npz_universe(uni, rows, p.names, manifest, out_dir)
        _write_universe_and_splits(npz_uni, uni, splits_cfg, out_dir)
        # Before the manifest: its one sync of the file system makes the shards durable too.
        _refresh_summaries(out_dir, p, manifest, fresh, thumbs, summaries)
        _write_manifest(out_dir, manifest)
        _hand_over_outputs(out_dir, cache)
        cache.save()
    return MaterializeResult(written, len(p.keep), len(p.delete), npz_uni, out_dir,
                             migrated=len(p.migrate), notes=p.notes)


def _record_results(
    results: Iterable[list[Written]], recipes: dict[str, str], out_dir: Path,
    manifest: Manifest, cache: StatCache, fresh: dict[str, Summary],
) -> int:
    """Enter each written frame in ``manifest`` (checkpointed every few seconds) and its summary in
    ``fresh``; returns the count.

    On a failed frame the manifest is written before the error goes on, so the rerun keeps
    every frame finished before it.
    """
    written = 0
    last_checkpoint = time.monotonic()
    try:
        for batch in results:
            for name, md5, size, summary in batch:
                manifest[name] = {"recipe": recipes[name], "md5": md5, "size": size}
                if summary is not None:
                    fresh[name] = summary
                cache.put(out_dir / name, "md5", md5)  # the next run need not re-hash it
                written += 1
            if time.monotonic() - last_checkpoint > 5:
                _write_manifest(out_dir, manifest)
                last_checkpoint = time.monotonic()
    except BaseException:  # a failed frame: the rerun keeps every frame finished before it
        with contextlib.suppress(Exception):
            _write_manifest(out_dir, manifest)
            cache.save()
        raise
    return written


def _thumbnails(uni: Universe, p: Plan) -> frozenset[str]:
    """The frames whose summaries keep a thumbnail (a capped sample, by uid hash)."""
    return thumbnail_frames({p.names[pos]: uni.uid(pos) for pos in p.rows}, THUMBNAIL_CAP)


def _refresh_summaries(
    out_dir: Path, p: Plan, manifest: Manifest,
    fresh: dict[str, Summary], thumbs: frozenset[str], enabled: bool,
) -> None:
    """Bring the summaries shards in step with the frames of ``manifest``."""

    def again(name: str) -> Summary:
        task = replace(p.inputs[name], thumbs=frozenset({name} & thumbs))
        for _index, frame, arrays, _origin, ceiling in _read_frames(task):
            summary = _summary(task, frame, arrays, ceiling)
            if summary is not None:
                return summary
        raise DvcCuvisError(f"{task.path}: no frame to summarize for {name}")  # unreachable

    frames = {name: (p.inputs[name].source, p.inputs[name].frames[0][0], entry["md5"])
              for name, entry in manifest.items() if name in p.inputs}
    refresh(out_dir, frames, fresh, thumbs, summarize_frame=again if enabled else None,
            sync=False, notes=p.notes)


def _write_universe_and_splits(
    npz_uni: Universe, uni: Universe, splits_cfg: DataSplitConfig | None, out_dir: Path
) -> None:
    """``OUT/universe.csv``, and ``OUT/splits.json`` re-pinned to it when its pin was ``uni``."""
    atomic_write_text(out_dir / "universe.csv", format_universe(npz_uni))
    if splits_cfg is not None:
        copy = splits_cfg
        if splits_cfg.universe_hash == uni.hash:  # re-pin; a stale pin stays stale
            copy = splits_cfg.model_copy(update={"universe_hash": npz_uni.hash})
        atomic_write_text(out_dir / "splits.json", dumps_splits(copy))


def _hand_over_outputs(out_dir: Path, cache: StatCache) -> None:
    """Give DVC's state the md5 of every file in ``out_dir`` (frames: the md5 taken while
    writing them; the small files beside them are hashed here), so that DVC's commit of the
    stage's output reads none of them again (:func:`dvc_cuvis.digests.dvc_state.hand_over`)."""
    from dvc_cuvis.digests.dvc_state import hand_over, hand_over_enabled

    if not hand_over_enabled():
        return
    root = os.path.abspath(out_dir)
    if dvc_root_of(root) is None:
        return
    files = cache.take_hashed()  # inputs read for their md5 (DVC tracks them too)
    try:
        listing = list_tree(root)
    except DvcCuvisError:  # DVC refuses this folder (a .dvcignore in it): nothing to give
        return
    for rel, ino, size, mtime, link in listing:
        if link:
            continue
        stamp = (ino, size, mtime)
        md5, read_stamp = cache.md5_stamped(f"{root}/{rel}", stamp)
        if read_stamp == stamp:
            files.append((f"{root}/{rel}", stamp, md5))
    hand_over(files)


def _migrate(
    out_dir: Path, moves: dict[str, tuple[str, ManifestEntry]], cache: StatCache
) -> Manifest:
    """Rename frames of an older layout into the current one; returns their manifest entries.

    Two passes (old names to temporary ones, emptied old folders pruned, temporary names to
    new ones), because a new file may have the name of an old folder.  A run killed in
    between leaves ``.tmp`` files, which the next run deletes and rewrites.
    """
    frames_dir = out_dir / "frames"
    staged = []
    for k, new in enumerate(sorted(moves)):
        tmp = frames_dir / f".migrate.{k:06d}.tmp"
        os.replace(out_dir / moves[new][0], tmp)
        staged.append((tmp, new))
    _prune_empty_dirs(frames_dir)
    entries = {}
    for tmp, new in staged:
        target = out_dir / new
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, target)
        entries[new] = moves[new][1]
        cache.put(target, "md5", entries[new]["md5"])  # same bytes, new path: never re-hashed
    return entries


def _write_manifest(out_dir: Path, frames: Manifest) -> None:
    """Claim ``frames`` in the manifest, once every byte written so far is durable.

    Frames may have been written without a per-file ``fsync``: the file system is synced
    first, so the manifest (itself fsynced and renamed into place) never claims a frame
    that a power cut could still take away.
    """
    body = {"version": FORMAT_VERSION, "frames": {k: frames[k] for k in sorted(frames)}}
    sync_file_system(out_dir)
    atomic_write_text(out_dir / "manifest.json", dumps_json(body))


def _prune_empty_dirs(root: Path) -> None:
    if not root.is_dir():
        return
    for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            d.rmdir()


def _npz_universe(
    uni: Universe,
    rows: list[int],
    names: dict[int, str],
    manifest: Manifest,
    out_dir: Path,
) -> Universe:
    carry = [c for c in ("group", "tags", "category_ids") if uni.has_column(c)]
    records = []
    for pos in rows:
        name = names[pos]
        rec: dict[str, str | int] = {
            "source": uni.source(pos),
            # npz_multi needs an integer index: a whole-file TIFF cube's frame is its read
            # position 0 (its source, and so every files selector, is unchanged)
            "index": uni.index(pos),
            "materialized_path": name,
            "format": "npz",
            "md5": manifest[name]["md5"],
            MODULE_COLUMN: "npz_multi",  # the universe states its reader (upstream ignores it)
        }
        for c in carry:
            rec[c] = uni.value(c, pos)
        records.append(rec)
    return Universe.from_records(records, path=out_dir / "universe.csv")
