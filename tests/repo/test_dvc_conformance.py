"""Conformance with DVC itself: our staleness verdict is ``dvc status``'s, our universe is
what DVC tracks.

One repository is built with the README workflow (git + ``dvc init`` + ``dvc-cuvis init`` +
``dvc repro``) once per session (the ``built`` fixture); each case applies one workspace
change to a fresh copy and compares

* the stages our check calls stale (``dvc-cuvis check --json``, staleness details) with the
  stages ``dvc status --json`` lists (restricted to the stages our check looks at), both run
  in this process (the commands' own entry points: ``main`` and DVC's ``Repo.status``, which
  is what ``dvc status --json`` prints), and
* the frames ``enumerate`` lists with the ``.npz`` files in DVC's own tree of the data
  folder (``dvc_data``'s ``build`` with the repository's ``dvcignore``): never a file DVC
  ignores, never one it tracks left out.

A hypothesis test applies random sequences of the same changes and compares after each.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dvc_cuvis.cli import main
from dvc_cuvis.digests.stat_cache import StatCache
from dvc_cuvis.sources import EnumerateOptions, enumerate_universe
from tests.helpers.shell import sh

pytestmark = [pytest.mark.slow, pytest.mark.lowest_dvc]  # a status per change, ~15 s


@pytest.fixture
def repo(built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(built, copy, symlinks=True)
    return copy


# -- the two sides --------------------------------------------------------------------------


def dvc_verdict(repo: Path) -> set[str] | None:
    """Stages ``dvc status`` lists (None: DVC refuses the workspace).  DVC's own status, in
    this process: the command ``dvc status --json`` prints this dict, and exits non-zero
    wherever it raises (its ``main`` turns any exception into an exit code)."""
    from dvc.repo import Repo

    try:  # from the repository's root, as the command runs there: names relative to it
        with contextlib.chdir(repo), Repo(".") as r:
            return set(r.status())
    except Exception:  # as the command: any refusal is a non-zero exit
        return None


def our_verdict(repo: Path) -> tuple[set[str] | None, set[str]]:
    """Stages our check calls stale (None: it refuses the workspace, exit 2) and the stages
    it compared."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(repo), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check", "--json"])  # as the command runs it, in this process
    if code == 2:
        return None, set()
    assert code in (0, 1), err.getvalue()
    staleness = json.loads(out.getvalue())["checks"]["staleness"]
    details = staleness["details"]
    stale = {m.group(1) for line in details.get("changed", []) + details.get(
        "params_changed", []) for m in [re.search(r"stage ([^\s):]+)", line)] if m}
    assert (staleness["status"] == "drift") == bool(stale), staleness
    return stale, set(details.get("stages", []))


def dvc_tracked_npz(repo: Path, folder: str = "data/npz") -> set[str] | None:
    """The ``.npz`` files in DVC's tree of ``folder`` (None: DVC refuses to build it)."""
    from dvc.repo import Repo
    from dvc_data.hashfile.build import IgnoreInCollectedDirError, build

    with Repo(os.fspath(repo)) as r:
        try:
            _, _, tree = build(r.cache.local, os.fspath(repo / folder), r.fs, "md5",
                               ignore=r.dvcignore, dry_run=True)
        except IgnoreInCollectedDirError:
            return None
    return {"/".join(key) for key, _, _ in tree  # type: ignore[attr-defined]
            if key[-1].endswith(".npz")}


def our_npz(repo: Path, folder: str = "data/npz") -> set[str]:
    """The frames enumerate lists (sources relative to the data folder)."""
    opts = EnumerateOptions(format="npz", root=repo / folder, out_dir=repo,
                            cache=StatCache(None), jobs=1)
    uni, _ = enumerate_universe(opts)
    return set(uni.column("source"))


def assert_agree(repo: Path, case: str) -> None:
    dvc = dvc_verdict(repo)
    ours, compared = our_verdict(repo)
    if dvc is None or ours is None:
        assert dvc is None and ours is None, f"{case}: DVC {dvc}, ours {ours}"
    else:
        assert compared, case
        assert ours == dvc & compared, f"{case}: DVC says {sorted(dvc)}, we say {sorted(ours)}"
    tracked = dvc_tracked_npz(repo)
    if tracked is not None:
        hidden = {p for p in tracked if any(part.startswith(".") for part in p.split("/"))}
        assert our_npz(repo) == tracked - hidden, case


# -- the workspace changes ------------------------------------------------------------------


def frames(repo: Path) -> list[Path]:
    return sorted((repo / "data/npz").rglob("*.npz"))


def ignored_file(repo: Path) -> None:
    with open(repo / ".dvcignore", "a") as fh:
        fh.write("data/npz/**/notes.txt\n")
    (frames(repo)[0].parent / "notes.txt").write_text("taken on a rainy day\n")


def ignored_folder(repo: Path) -> None:
    with open(repo / ".dvcignore", "a") as fh:
        fh.write("data/npz/scratch\n")
    (repo / "data/npz/scratch").mkdir()
    shutil.copy(frames(repo)[0], repo / "data/npz/scratch/x.npz")


def nested_dvcignore(repo: Path) -> None:
    (repo / "data/.dvcignore").write_text("npz/scratch/\n*.tmp\n")
    (repo / "data/npz/scratch").mkdir()
    shutil.copy(frames(repo)[0], repo / "data/npz/scratch/x.npz")
    shutil.copy(frames(repo)[1], repo / "data/npz/half-written.tmp")


def dvcignore_inside_data(repo: Path) -> None:
    (repo / "data/npz/.dvcignore").write_text("scratch\n")
    (repo / "data/npz/scratch").mkdir()
    shutil.copy(frames(repo)[0], repo / "data/npz/scratch/x.npz")


def empty_folder(repo: Path) -> None:
    (repo / "data/npz/empty/deeper").mkdir(parents=True)


def symlinked_file(repo: Path) -> None:
    src = frames(repo)[0]
    (src.parent / "linked.npz").symlink_to(src.name)


def unusual_name(repo: Path) -> None:
    folder = repo / "data/npz/séance 2 ünïcode"
    folder.mkdir()
    shutil.copy(frames(repo)[0], folder / "frame 0 – äö.npz")


def touch(repo: Path) -> None:
    f = frames(repo)[0]
    os.utime(f, None)


def same_bytes_rewrite(repo: Path) -> None:
    f = frames(repo)[0]
    data = f.read_bytes()
    f.unlink()
    f.write_bytes(data)  # a new inode, same bytes


def byte_flip(repo: Path) -> None:
    f = frames(repo)[0]
    data = bytearray(f.read_bytes())
    data[-30] ^= 0x01
    f.write_bytes(bytes(data))


def added_session(repo: Path) -> None:
    src = frames(repo)[0].parent
    shutil.copytree(src, src.with_name(src.name + "_copy"))


def removed_session(repo: Path) -> None:
    shutil.rmtree(frames(repo)[-1].parent)


def _params(repo: Path, edit: Callable[[dict], None]) -> None:
    p = yaml.safe_load((repo / "params.yaml").read_text())
    edit(p)
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))


def unused_params_key(repo: Path) -> None:
    _params(repo, lambda p: p.update(train={"lr": 0.01}))


def bake_param_changed(repo: Path) -> None:
    _params(repo, lambda p: p["bake"].update(seed=p["bake"]["seed"] + 1))


def hand_edited_universe(repo: Path) -> None:
    p = repo / "universe.csv"
    lines = p.read_text().splitlines(keepends=True)
    p.write_text("".join(lines[:-1]))  # one sample dropped by hand


def stage_command_changed(repo: Path) -> None:
    p = repo / "dvc.yaml"
    p.write_text(p.read_text().replace("dvc-cuvis bake --params params.yaml",
                                       "dvc-cuvis bake --params ./params.yaml"))


CHANGES: dict[str, Callable[[Path], None]] = {
    "ignored file": ignored_file,
    "ignored folder of frames": ignored_folder,
    "nested .dvcignore": nested_dvcignore,
    ".dvcignore inside the data folder": dvcignore_inside_data,
    "empty folder": empty_folder,
    "symlinked file": symlinked_file,
    "name with spaces and unicode": unusual_name,
    "touch": touch,
    "same-bytes rewrite": same_bytes_rewrite,
    "byte flip": byte_flip,
    "added session": added_session,
    "removed session": removed_session,
    "unused params key": unused_params_key,
    "bake param changed": bake_param_changed,
    "hand-edited universe.csv": hand_edited_universe,
    "stage command changed": stage_command_changed,
}


def test_the_built_repository_is_up_to_date_for_both(repo: Path) -> None:
    assert dvc_verdict(repo) == set()  # a copy: the built repository is never modified
    assert our_verdict(repo)[0] == set()


@pytest.mark.parametrize("case", list(CHANGES))
def test_each_change_agrees_with_dvc(repo: Path, case: str) -> None:
    CHANGES[case](repo)
    assert_agree(repo, case)


# -- templated dvc.yaml ---------------------------------------------------------------------


def _templated(repo: Path) -> None:
    """dvc.yaml with ``vars`` and ``${...}`` in the bake command, and a ``foreach`` stage
    that reads the split; reproduced, so dvc.lock records the resolved definitions."""
    doc = yaml.safe_load((repo / "dvc.yaml").read_text())
    doc = {"vars": [{"pfile": "params.yaml", "tag": "a"}], **doc}
    doc["stages"]["bake"]["cmd"] = "dvc-cuvis bake --params ${pfile}"
    doc["stages"]["summary"] = {"foreach": ["train", "val"], "do": {
        "cmd": "python -c \"import json; d = json.load(open('splits.json')); "
               "print(len(d['${item}']))\" > summary-${item}-${tag}.txt",
        "deps": ["splits.json"], "outs": [{"summary-${item}-${tag}.txt": {"cache": False}}]}}
    (repo / "dvc.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    sh("dvc", "repro", "-q", cwd=repo)


def test_templated_dvc_yaml_resolved_as_dvc_does(repo: Path) -> None:
    _templated(repo)
    assert_agree(repo, "templated, reproduced")
    assert our_verdict(repo)[1] >= {"bake", "summary@train", "summary@val"}
    p = repo / "dvc.yaml"
    p.write_text(p.read_text().replace("pfile: params.yaml", "pfile: ./params.yaml"))
    assert_agree(repo, "a var used in a command changed")
    assert our_verdict(repo)[0] == {"bake"}


def test_a_foreach_stage_definition_change_agrees(repo: Path) -> None:
    _templated(repo)
    p = repo / "dvc.yaml"
    p.write_text(p.read_text().replace("tag: a", "tag: b"))
    assert_agree(repo, "foreach outputs renamed through a var")
    assert our_verdict(repo)[0] == {"summary@train", "summary@val"}


# -- random sequences -----------------------------------------------------------------------

SEQUENCE_CHANGES = [c for c in CHANGES if c != ".dvcignore inside the data folder"]


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.sampled_from(SEQUENCE_CHANGES), min_size=1, max_size=3, unique=True))
def test_random_change_sequences_agree_after_each_step(built: Path, tmp_path_factory:
                                                       pytest.TempPathFactory,
                                                       steps: list[str]) -> None:
    repo = tmp_path_factory.mktemp("seq") / "repo"
    shutil.copytree(built, repo, symlinks=True)
    done = []
    for step in steps:
        CHANGES[step](repo)
        done.append(step)
        assert_agree(repo, " -> ".join(done))
