"""cuvis-ai-dataloader's universe rules, per DataModule, checked before anything trains.

One universe.csv vocabulary, several readers, each with its own rules (upstream's
``cuvis_ai_dataloader.data._universe.parse_universe`` flags):

``npz_multi``
    every row needs a ``materialized_path`` (an npz has no frame at ``source``) and an
    integer ``index``; a ``split`` column is refused (the module is selector-driven); two
    rows may not share one ``materialized_path``.
``cu3s_multi``
    ``materialized_path`` defaults to ``source`` (a ``.cu3s`` is its own file); a ``split``
    column is the module's own split, used only when no splits.json is given; every row
    needs an integer ``index``.
``tiff_paired``
    has no universe file: it lists its ``images_dir``, one whole-file sample per TIFF.  A
    universe.csv standing for that listing has whole-file rows (empty ``index``) and no
    ``split`` column (nothing would read it).

:data:`MODULE_COLUMN` is the extra universe.csv column (upstream ignores extra columns)
in which a universe states the module it is for; ``dvc-cuvis materialize`` writes
``npz_multi`` there, so ``check`` and ``resolve`` apply those rules without being told.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dvc_cuvis.config.specs import MODULES
from dvc_cuvis.errors import UniverseError

if TYPE_CHECKING:  # the CLI imports MODULES when it builds its parser: keep this light
    from dvc_cuvis.model.universe import Universe

__all__ = ["MODULES", "MODULE_COLUMN", "check_module_rules", "module_for", "module_notes",
           "stated_module"]

#: The upstream DataModules whose universe rules are known here.
#: The universe.csv column stating the module a universe is for (one value on every row).
MODULE_COLUMN = "data_module"


def stated_module(uni: Universe) -> str | None:
    """The module ``uni`` states in its :data:`MODULE_COLUMN` (None when it states none).

    Raises
    ------
    UniverseError
        The rows disagree, or name a module that is not one of :data:`MODULES`.
    """
    if not uni.has_column(MODULE_COLUMN) or not len(uni):
        return None
    values = sorted(set(uni.column(MODULE_COLUMN)))
    if len(values) > 1:
        raise UniverseError(f"column {MODULE_COLUMN!r} names more than one module "
                            f"({', '.join(repr(v) for v in values)}); a universe is read by "
                            "one DataModule", path=uni.path)
    (value,) = values
    if not value:
        return None
    if value not in MODULES:
        raise UniverseError(f"column {MODULE_COLUMN!r} names {value!r}, not one of "
                            f"{', '.join(MODULES)}", path=uni.path)
    return value


def module_for(path: Path | str, given: str | None) -> tuple[str | None, Universe | None]:
    """The module whose rules apply to the universe.csv at ``path``: ``given`` (a flag or
    params value), else the one the file states; and the universe when it had to be read.

    Only the header is read when the file states no module and none is given.
    """
    from dvc_cuvis.model.universe_io import read_header, read_universe

    if given is None and MODULE_COLUMN not in read_header(path):
        return None, None

    uni = read_universe(path)
    return (given or stated_module(uni)), uni


def _first(uni: Universe, rows: list[int]) -> tuple[str, int | None]:
    pos = rows[0]
    return uni.uid(pos), uni.line_of(pos)


def _refuse_shared_files(uni: Universe, paths: list[str]) -> None:
    """Two rows naming one file: the reader's own rule decides (``read_universe`` with
    ``unique_materialized_path=True``), run only when the paths could collide."""
    odd = any("./" in p or "//" in p or "\\" in p or p.endswith("/") for p in paths)
    if (odd or len(set(paths)) != len(paths)) and uni.path is not None:
        from dvc_cuvis.model.universe_io import read_universe

        read_universe(uni.path, unique_materialized_path=True)


def check_module_rules(uni: Universe, module: str) -> list[str]:
    """Apply ``module``'s universe rules to ``uni``; return notes on what the module does.

    Parameters
    ----------
    uni : Universe
        The universe.csv as read.
    module : {"npz_multi", "cu3s_multi", "tiff_paired"}
        The upstream DataModule that will read it.

    Returns
    -------
    list of str
        What the module does with the file that a reader may not expect (e.g. cu3s_multi
        ignores its ``split`` column when a splits.json is given).

    Raises
    ------
    UniverseError
        A row or column that ``module`` refuses at setup, named with its file and line,
        and a module this does not know; or the universe states another module.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from dvc_cuvis.interop.modules import check_module_rules
    >>> from dvc_cuvis import read_universe
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "universe.csv").write_text("source,index\\na.cu3s,0\\na.cu3s,1\\n")
    >>> check_module_rules(read_universe(d / "universe.csv"), "cu3s_multi")
    ["cu3s_multi reads each frame from its 'source' (no materialized_path)"]
    >>> check_module_rules(read_universe(d / "universe.csv"), "npz_multi")
    Traceback (most recent call last):
    ...
    dvc_cuvis.errors.UniverseError: .../universe.csv:2: npz_multi needs a 'materialized_path' ...
    """
    if module not in MODULES:
        raise UniverseError(f"unknown module {module!r}; choose {', '.join(MODULES)}")
    stated = stated_module(uni)
    if stated is not None and stated != module:
        raise UniverseError(f"the universe states {MODULE_COLUMN} {stated!r}, but it is "
                            f"checked as {module!r}; use --module {stated} (or fix the "
                            f"column)", path=uni.path)
    notes: list[str] = []
    indexless = uni.indexless
    bare = [] if indexless is None else [int(p) for p in indexless.nonzero()[0]]
    if module in ("npz_multi", "cu3s_multi") and bare:
        uid, line = _first(uni, bare)
        raise UniverseError(f"{module} needs an integer index on every row; {uid!r} has none "
                            f"({len(bare)} row(s)): a whole-file sample is read by "
                            "tiff_paired, or write the frame's index", path=uni.path, line=line)
    if module == "npz_multi":
        if uni.has_column("split"):
            raise UniverseError("npz_multi refuses a 'split' column: it is selector-driven "
                                "(the split is the splits.json); drop the column, or read "
                                "the universe with cu3s_multi", path=uni.path)
        paths = uni.column("materialized_path")  # all '' when the column is absent
        empty = [p for p, rel in enumerate(paths) if not rel]
        if empty:
            uid, line = _first(uni, empty)
            raise UniverseError(
                f"npz_multi needs a 'materialized_path' on every row (an npz has no frame at "
                f"'source'); {uid!r} has none ({len(empty)} row(s)): point the module at the "
                "universe.csv that `dvc-cuvis materialize` wrote", path=uni.path, line=line)
        _refuse_shared_files(uni, paths)
    elif module == "cu3s_multi":
        if uni.has_column("split"):
            notes.append("cu3s_multi owns the 'split' column: it is used only when the "
                         "trainrun gives no splits.json, and ignored when one is given")
        if not uni.has_column("materialized_path"):
            notes.append("cu3s_multi reads each frame from its 'source' (no materialized_path)")
    else:  # tiff_paired
        if uni.has_column("split"):
            raise UniverseError("tiff_paired has no universe file, so nothing would read the "
                                "'split' column; drop it and give a splits.json",
                                path=uni.path)
        indexed = [p for p in range(len(uni)) if indexless is None or not indexless[p]]
        if indexed:
            uid, line = _first(uni, indexed)
            raise UniverseError(f"tiff_paired reads one cube per TIFF file (a whole-file "
                                f"sample, empty index); {uid!r} has an index: enumerate the "
                                "folder with `dvc-cuvis enumerate --format tiff`",
                                path=uni.path, line=line)
        notes.append("tiff_paired has no universe file: it lists images_dir, which must "
                     "equal this universe (dvc_tiff_paired checks that at setup)")
    return notes


def module_notes(path: Path | str, given: str | None, uni: Universe | None = None,
                 ) -> tuple[str, ...]:
    """Apply the rules of the module that reads ``path`` (``given``, else the one the file
    states) and return its notes; a refused row raises. ``uni``: the universe, if read."""
    if uni is None:
        module, uni = module_for(path, given)
    else:
        module = given or stated_module(uni)
    if module is None or uni is None:
        return ()
    return tuple(check_module_rules(uni, module))
