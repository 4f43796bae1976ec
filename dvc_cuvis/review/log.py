"""The commits that changed a split (``dvc-cuvis log``), each compared with its predecessor."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from dvc_cuvis.errors import DvcCuvisError, terminal
from dvc_cuvis.model.compare import Version, diff_versions
from dvc_cuvis.model.universe import Universe
from dvc_cuvis.repo.git import CommitInfo
from dvc_cuvis.review.history import GitTree, load_version


@dataclass(frozen=True)
class LogEntry:
    """One commit that changed the split."""

    sha: str
    date: str
    author: str
    subject: str
    counts: dict[str, int]
    universe_hash: str
    moved: int | None
    added: int | None
    removed: int | None
    content: int | None = None


def split_log(
    tree: GitTree, splits_path: str, universe_path: str, *, rev: str = "HEAD",
    max_count: int | None = None,
) -> Iterator[LogEntry]:
    """Commits (newest first) that changed ``splits_path``, each compared with its predecessor."""
    # a re-processed frame changes universe.csv's md5 column but not the split: list both
    commits = tree.git.commits_touching(rev, [splits_path, universe_path],
                                        None if max_count is None else max_count + 1)
    if not commits:
        raise DvcCuvisError(f"no commit in {rev} touches {splits_path}")
    cache: dict[tuple[str, str], Version] = {}
    parsed: dict[str, Universe] = {}

    def version(commit: CommitInfo) -> Version | None:
        split_sha, uni_sha = commit.blob(splits_path), commit.blob(universe_path)
        if split_sha is None or uni_sha is None:
            return None  # the split was deleted in this commit, or has no universe yet
        key = (split_sha, uni_sha)
        if key not in cache:
            cache[key] = load_version(tree, commit.sha, splits_path, universe_path, None,
                                      parsed)
        return cache[key]

    chosen = commits
    versions = [version(c) for c in chosen]
    for k, commit in enumerate(chosen[: max_count or len(chosen)]):
        v = versions[k]
        if v is None:
            continue
        prev = versions[k + 1] if k + 1 < len(versions) else None
        moved = added = removed = content = None
        if prev is not None:
            d = diff_versions(prev, v)
            moved, added, removed = (d.moved, d.transitions_total("new"),
                                     d.transitions_total("removed"))
            content = len(d.content)
        when = datetime.fromtimestamp(commit.committed, tz=UTC).strftime("%Y-%m-%d")
        yield LogEntry(commit.sha[:8], when, commit.author, commit.subject,
                       v.counts(), v.universe.hash[:12], moved, added, removed, content)


def _num(v: int | None) -> str:
    return "-" if v is None else str(v)


def render_log(entries: tuple[LogEntry, ...] | list[LogEntry]) -> str:
    """The ``log`` table: one line per commit (author and subject escaped for a terminal)."""
    lines = [f"{'commit':<9} {'date':<10} {'train':>7} {'val':>6} {'test':>6} {'moved':>6} "
             f"{'+new':>5} {'-gone':>5} {'~bytes':>6}  {'universe':<12}  author: subject"]
    lines += [f"{e.sha:<9} {e.date:<10} {e.counts['train']:>7} {e.counts['val']:>6} "
              f"{e.counts['test']:>6} {_num(e.moved):>6} {_num(e.added):>5} "
              f"{_num(e.removed):>5} {_num(e.content):>6}  "
              f"{e.universe_hash:<12}  {terminal(e.author)}: {terminal(e.subject)}"
              for e in entries]
    return "\n".join(lines) + "\n"
