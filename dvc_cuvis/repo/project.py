"""``dvc-cuvis init``: a complete split pipeline in a dataset repository.

It writes dvc.yaml + params.yaml (enumerate, bake, materialize, report, check), tracks the
raw data with DVC (so ``dvc checkout`` — the check's own fix — can restore a deleted file),
wires category names where the format has them, and adds to ``.gitignore`` what the verbs
and DVC write outside the pipeline (:data:`IGNORED`), so ``git add -A`` leaves it out.  The
stages call this package's CLI with ``--params params.yaml`` so every option lives in
params.yaml, where DVC tracks it.
Review outputs (universe.csv, splits.json, metrics) are ``cache: false``: they are small,
committed to git, and read in pull requests.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from dvc_cuvis._io import atomic_write_text
from dvc_cuvis.errors import DvcCuvisError
from dvc_cuvis.paths.roots import ancestors, dvc_root
from dvc_cuvis.repo.plot_templates import SPECTRA, SPECTRA_TEMPLATE, template_text

#: What to do after ``dvc-cuvis init`` (printed by it, and shown as is in the README).
NEXT_STEPS = """\
next steps:
  dvc repro                    # enumerate -> bake -> materialize -> report -> check
  git add -A && git commit -qm "Split pipeline"
  dvc-cuvis install-hook       # check the split in every commit that changes it
"""

DVC_YAML = """\
stages:
  enumerate:
    cmd: dvc-cuvis enumerate --params params.yaml
    deps:
      - {root}
    params:
      - enumerate
    outs:
      - universe.csv:
          cache: false
    metrics:
      - metrics/universe.json:
          cache: false
  bake:
    cmd: dvc-cuvis bake --params params.yaml
    deps:
      - universe.csv
      - metrics/universe.json
    params:
      - bake
    outs:
      - splits.json:
          cache: false
    metrics:
      - metrics/splits.json:
          cache: false
    plots:
      - plots/stages.json:
          cache: false
          template: bar_horizontal
          x: samples
          y: stage
      - plots/categories.json:
          cache: false
          template: bar_horizontal
          x: samples
          y: category_stage
      - plots/groups.json:
          cache: false
          template: bar_horizontal_sorted
          x: samples
          y: group
  materialize:
    cmd: dvc-cuvis materialize --params params.yaml
    deps:
      - universe.csv
      - splits.json
      - {root}
    params:
      - materialize
    outs:
      - materialized:
          persist: true
  report:
    cmd: dvc-cuvis report --params params.yaml --out report.html --spectra-plot plots/spectra.json
    deps:
      - universe.csv
      - splits.json
      - metrics/universe.json
      - materialized
    params:
      - report
    outs:
      - report.html                 # in the DVC cache, ignored by git: never a stray commit
    plots:
      - plots/spectra.json:
          cache: false
          template: spectra
          x: wavelength
          y: mean
  check:
    cmd: dvc-cuvis check --params params.yaml --metrics metrics/check.json
    deps:
      - universe.csv
      - splits.json
      - materialized
    params:
      - check
    metrics:
      - metrics/check.json:
          cache: false
"""

PARAMS_YAML = """\
enumerate:
  format: {fmt}
  root: {root}
  out: universe.csv
  metrics: metrics/universe.json
{enum_categories}bake:
  universe: universe.csv
  out: splits.json
  metrics: metrics/splits.json
  plots: plots
{categories}{bake_knobs}materialize:
  universe: universe.csv
  splits: splits.json
  out_dir: materialized
  compress: none
  jobs: 2
check:
  universe: universe.csv
  splits: splits.json
  summaries: materialized
{categories}report:
  universe: universe.csv
  splits: splits.json
  summaries: materialized
{categories}resolve:
  universe: universe.csv
  splits: splits.json
"""


#: What the verbs and DVC write outside the pipeline, for people rather than for git:
#: ``dvc-cuvis report``'s default output and ``dvc plots show``'s folder.
IGNORED: tuple[str, ...] = ("split-report.html", "dvc_plots/")


def ignore_outputs(repo: Path) -> list[str]:
    """Append the :data:`IGNORED` entries ``repo/.gitignore`` lacks (its lines kept as they
    are); returns those added, none on a second run."""
    path = repo / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    have = {line.strip() for line in text.splitlines()}
    missing = [e for e in IGNORED if e not in have and f"/{e}" not in have]
    if missing:
        if text and not text.endswith("\n"):
            text += "\n"
        text += "# written outside the pipeline (dvc-cuvis report, dvc plots show)\n"
        atomic_write_text(path, text + "".join(f"{e}\n" for e in missing))
    return missing


#: The bake knobs ``init`` writes out, with the defaults of the one spec (``specs.BAKE``).
BAKE_KNOBS: tuple[str, ...] = ("strategy", "seed", "val_ratio", "test_ratio", "group_by")


def _bake_knobs() -> str:
    """The ``bake`` section's knob lines of the params template, from ``specs.BAKE``."""
    from dvc_cuvis.config.specs import BAKE

    return "".join(f"  {k}: {v}\n" for k, v in BAKE.template(list(BAKE_KNOBS)).items())


@dataclass
class Init:
    """What ``init`` did: files written, the data tracked, and notes for the user."""

    written: list[Path]
    tracked: str | None = None
    ignored: list[str] = field(default_factory=list)  # entries added to .gitignore
    categories: str | None = None
    notes: list[str] = field(default_factory=list)


def category_source(repo: Path, fmt: str, root: str) -> tuple[str | None, bool]:
    """Where category names come from: (a names file for enumerate, names in the metrics).

    npz and tiff folders may hold a ``categories.json`` ({name: id} or COCO); cu3s sessions
    carry COCO json next to them, which enumerate reads into its metrics by itself.
    """
    data = repo / root
    if fmt in ("npz", "tiff") and (data / "categories.json").is_file():
        return f"{root}/categories.json", True
    if fmt == "cu3s" and data.is_dir() and any(data.rglob("*.json")):
        return None, True
    return None, False


def tracked_by(repo: Path, root: str) -> str | None:
    """What already tracks ``root`` (a ``.dvc`` file above it, git, or a stage's output), or None.

    Such data is left as it is: ``dvc add`` would fail on it, or track it twice.
    """
    from dvc_cuvis.errors import RepoError
    from dvc_cuvis.repo.git import tracked_by as tracker

    try:
        found = tracker(repo / root)
    except RepoError:  # an unreadable dvc.yaml: DVC itself will say so
        return None
    return found[1] if found is not None else None


def track_data(repo: Path, root: str) -> str:
    """``dvc add`` the raw data root (run with this interpreter's DVC); returns the .dvc file."""
    proc = subprocess.run([sys.executable, "-m", "dvc", "add", root], cwd=repo,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = (proc.stderr + "\n" + proc.stdout).splitlines()
        why = next((ln.removeprefix("ERROR:").strip() for ln in lines
                    if ln.startswith("ERROR:")), next((ln for ln in lines if ln.strip()),
                                                      "no output"))
        raise DvcCuvisError(f"`dvc add {root}` failed: {why}; track the data yourself or use "
                            "--no-track")
    return f"{root}.dvc"


def init_project(
    repo: Path | str, *, fmt: str, root: str, force: bool = False, track: bool = True,
    files_only: bool = False,
) -> Init:
    """Write dvc.yaml and params.yaml into ``repo``, track the data, wire category names.

    Refuses to overwrite either file unless ``force``; ``track=False`` leaves the data root
    untracked (for data that another stage or a ``.dvc`` file already tracks, it is left so).
    ``repo`` must be inside a git + DVC repository, or the next steps would fail later (the
    spectra plot's template goes into ``.dvc/plots/``, and a ``.dvc/`` written before ``dvc
    init`` makes it refuse); ``files_only=True`` writes the two files into any folder and
    nothing else.

    Parameters
    ----------
    repo
        The folder of the pipeline, inside a git + DVC repository.
    fmt
        What the data is: ``cu3s``, ``tiff``, ``npz`` or ``universe``.
    root
        The dataset root, relative to ``repo``.

    Returns
    -------
    Init
        The files written, the ``.dvc`` file of the data (``tracked``), the ``.gitignore``
        entries added, where category names come from, and notes for the user.

    Raises
    ------
    DvcCuvisError
        ``repo`` is not a folder of a git + DVC repository, ``root`` leaves it, a file
        exists (without ``force``), or ``dvc add`` fails.
    """
    repo = Path(repo)
    if not repo.is_dir():
        raise DvcCuvisError(f"{repo}: not a directory")
    root = Path(root).as_posix().rstrip("/")
    if Path(root).is_absolute() or ".." in Path(root).parts or root in ("", "."):
        raise DvcCuvisError(f"--root {root!r} must be a relative folder inside the repository")
    names_file, has_names = category_source(repo, fmt, root)
    categories = "  categories: metrics/universe.json\n" if has_names else ""
    files = {
        repo / "dvc.yaml": DVC_YAML.format(root=root),
        repo / "params.yaml": PARAMS_YAML.format(
            fmt=fmt, root=root, categories=categories, bake_knobs=_bake_knobs(),
            enum_categories=f"  categories: {names_file}\n" if names_file else ""),
    }
    existing = [p for p in files if p.exists()]
    if existing and not force:
        names = ", ".join(str(p) for p in existing)
        raise DvcCuvisError(f"{names} already exist; merge the stages by hand or use --force")
    in_git = any((folder / ".git").exists() for folder in ancestors(repo))
    dvc_repo = dvc_root(repo)
    in_dvc = dvc_repo is not None
    result = Init(list(files), categories="metrics/universe.json" if has_names else None)
    if files_only:
        for path, text in files.items():
            atomic_write_text(path, text)
        return result
    if not in_git or not in_dvc:
        missing = " && ".join(c for c, ok in (("git init", in_git), ("dvc init", in_dvc))
                              if not ok)
        raise DvcCuvisError(f"{repo} is not a git + DVC repository: nothing written; run "
                            f"`cd {shlex.quote(str(repo))} && {missing}`, then this command "
                            "again")
    if not (repo / root).exists():
        result.notes.append(f"{root} does not exist yet: put the data there, then "
                            f"`dvc add {root}`")
    elif track:
        owner = tracked_by(repo, root)
        if owner is None:
            result.tracked = track_data(repo, root)
        else:
            result.notes.append(f"{root} is already tracked by {owner}: left as it is")
    if not has_names:
        result.notes.append("no category names found (npz/tiff: a categories.json in the data "
                            "root; cu3s: COCO json next to the sessions): reports show ids")
    for path, text in files.items():
        atomic_write_text(path, text)
    if dvc_repo is not None:  # the spectra plot's template, for `dvc plots show` / `diff`
        template = dvc_repo / ".dvc" / "plots" / f"{SPECTRA}.json"
        template.parent.mkdir(exist_ok=True)
        atomic_write_text(template, template_text(SPECTRA_TEMPLATE))
        result.written.append(template)
    result.ignored = ignore_outputs(repo)
    return result
