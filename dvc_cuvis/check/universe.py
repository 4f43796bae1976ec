"""The universe check: the split's pin against universe.csv, and universe.csv against the
data on disk now (samples added, removed, renamed, re-digested).

It also notes samples on which the two upstream notions of "anomalous" disagree
(:data:`dvc_cuvis.model.anomalous.ANOMALOUS_FOR_PARITY`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis.check.facts import DiskDiff, UniverseFacts, UniverseProblem
from dvc_cuvis.check.fixes import Workspace
from dvc_cuvis.check.report import Finding
from dvc_cuvis.check.tokens import tokenized_hash
from dvc_cuvis.model.anomalous import anomaly_notions_differ, anomaly_notions_note
from dvc_cuvis.model.universe import Universe

__all__ = ["check_universe", "compare_with_disk"]


def check_universe(
    cfg: DataSplitConfig,
    uni: Universe,
    current: Universe | None,
    data_dir: str | None,
    allow_unpinned: bool,
    ws: Workspace | None = None,
    splits: Path | None = None,
) -> Finding:
    """The universe finding (``current``: the data on disk now, None to compare none)."""
    notes: dict[str, str] = {}
    problems: list[tuple[UniverseProblem, str]] = []
    actual = tokenized_hash(uni, data_dir) if data_dir is not None else uni.hash
    if data_dir is not None:
        notes["data_dir"] = data_dir
    if cfg.universe_hash and cfg.universe_hash != actual:
        problems.append((UniverseProblem.PIN, f"universe.csv changed since the split was baked "
                         f"(pinned {cfg.universe_hash[:12]}, now {actual[:12]})"))
    if not cfg.universe_hash:
        notes["note"] = ("the split pins no universe_hash: nothing ties it to the universe "
                         "it was made for")
        if not allow_unpinned:
            problems.append((UniverseProblem.UNPINNED, "the split is unpinned (no "
                             "universe_hash): bake it to pin the universe, or accept it with "
                             "--allow-unpinned"))
    notions = anomaly_notions_differ(uni)
    if notions:
        notes["anomaly_notions"] = anomaly_notions_note(notions)
    disk = compare_with_disk(uni, current) if current is not None else DiskDiff()
    problems += _disk_problems(disk)
    facts = UniverseFacts(notes, tuple(p for p, _ in problems), disk)
    if problems:
        ws = ws or Workspace(uni.path.parent if uni.path is not None else None)
        return Finding("universe", "drift", "; ".join(text for _, text in problems),
                       fix=ws.rebake(splits), facts=facts)
    summary = (f"{len(uni)} samples, hash {actual[:12]} matches the pin" if cfg.universe_hash
               else f"{len(uni)} samples, hash {actual[:12]}; unpinned split (allowed)")
    if current is not None:
        summary += "; universe.csv matches the data on disk"
    return Finding("universe", "ok", summary, facts=facts)


def _disk_problems(disk: DiskDiff) -> list[tuple[UniverseProblem, str]]:
    problems = []
    if disk.added_samples or disk.removed_samples:
        problems.append((UniverseProblem.DISK, "the data on disk differs from universe.csv: "
                         f"{disk.added_samples} sample(s) added, {disk.removed_samples} "
                         "removed"))
    if disk.redigested_samples:
        problems.append((UniverseProblem.REDIGESTED, f"{disk.redigested_samples} sample(s) on "
                         "disk no longer have the md5 that universe.csv records"))
    return problems


def compare_with_disk(uni: Universe, current: Universe) -> DiskDiff:
    """universe.csv against the re-enumeration: samples added, removed, renamed, re-digested."""
    before, now = set(uni.uids()), set(current.uids())
    added, removed = sorted(now - before), sorted(before - now)
    changed = _redigested(uni, current)
    return DiskDiff(
        added_sources=tuple(_sources(current, added)),
        removed_sources=tuple(_sources(uni, removed)),
        renamed=tuple(f"{a} -> {b}" for a, b in _renames(uni, current, added, removed)),
        added_samples=len(added), removed_samples=len(removed),
        redigested_sources=tuple(_sources(current, changed)),
        redigested_samples=len(changed))


def _sources(uni: Universe, uids: Iterable[str]) -> list[str]:
    """The sources of ``uids``, as the universe records them (never parsed out of a uid:
    a source may hold a ``#``)."""
    wanted = set(uids)
    if not wanted:
        return []
    return sorted({s for u, s in uni.rows("uid", "source") if u in wanted})


def _redigested(old: Universe, new: Universe) -> list[str]:
    """uids in both whose recorded md5 differs (only where both carry a digest)."""
    was = dict(old.rows("uid", "md5"))
    return sorted(u for u, d in new.rows("uid", "md5") if d and was.get(u) and was[u] != d)


def _by_source(uni: Universe, uids: set[str]) -> dict[str, tuple[str, ...]]:
    """Source -> the sorted digests of its samples among ``uids`` (sources with a sample
    without a digest are left out: no digest, no pair)."""
    out: dict[str, list[str]] = {}
    for u, s, d in uni.rows("uid", "source", "md5"):
        if u in uids:
            out.setdefault(s, []).append(d)
    return {s: tuple(sorted(v)) for s, v in out.items() if all(v)}


def _renames(
    old: Universe, new: Universe, added: list[str], removed: list[str]
) -> list[tuple[str, str]]:
    """Removed/added source pairs with identical content digests (a rename or move)."""
    if not (added and removed):
        return []
    gone = _by_source(old, set(removed))
    came = _by_source(new, set(added))
    pairs = []
    for src, digest in sorted(gone.items()):
        match = [s for s, d in sorted(came.items()) if d == digest]
        if match:
            pairs.append((src, match[0]))
            came.pop(match[0])
    return pairs
