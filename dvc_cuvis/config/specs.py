"""The option spec of every verb (see :mod:`dvc_cuvis.config.options`), in one light module.

Each verb's :class:`~dvc_cuvis.config.options.OptionSet` is the one home of its options' defaults,
help, choices, types and path-ness: the CLI builds its flags and validates params sections from
it, the library's option types take their defaults from it (``EnumerateOptions``,
``ReaderParams``, ``BakeOptions``), and ``init`` writes its params.yaml template from it.  It
imports nothing heavy, so building every verb's parser costs no library import.
"""

from __future__ import annotations

from dvc_cuvis.config.options import Option, OptionSet

FORMATS: tuple[str, ...] = ("cu3s", "tiff", "npz", "universe")

#: Every verb of ``dvc-cuvis``: each may have a section of its name in params.yaml.
VERBS: tuple[str, ...] = ("init", "enumerate", "bake", "resolve", "materialize", "fetch",
                          "check", "diff", "log", "report", "export", "install-hook",
                          "plugins-dir", "lineage")
#: Sections other tools keep in a shared params.yaml that lie close to a verb's name (``loss``
#: and ``logs`` to ``log``, ``batch`` to ``fetch``): known, so never taken for a misspelling.
OTHER_SECTIONS: tuple[str, ...] = ("batch", "data", "logs", "loss", "model", "train")

#: The ``enumerate`` verb's options: flags, params keys, defaults, help (one spec).
ENUMERATE = OptionSet(
    "enumerate",
    Option("format", "what the data is: cu3s sessions (+COCO json), tiff cubes (+PNG labels), "
           "npz frames, or universe (an existing universe.csv)", choices=FORMATS,
           required=True),
    Option("root", "dataset root folder; for --format universe the universe.csv",
           metavar="PATH", path=True, required=True),
    Option("out", "universe.csv to write", "universe.csv", metavar="PATH", path=True),
    Option("metrics", "universe metrics json: counts, hash, categories", metavar="PATH",
           path=True),
    Option("pattern", "glob under the root", shown="per format: **/*.cu3s, **/*.npz, *.tif*"),
    Option("images", "tiff: cube folder under the root", "images"),
    Option("labels", "tiff: PNG label folder under the root", "labels"),
    Option("wavelengths", "tiff: band wavelengths in nm for every cube, as A,B,C or "
           "START:STOP:COUNT (COUNT evenly spaced, ends included); wins over a cube's GDAL "
           "wavelength tag, as upstream's wavelengths_override", kinds=(str, list),
           metavar="NM,...|START:STOP:COUNT", shown="each cube's GDAL_METADATA tag"),
    Option("annotations", "cu3s: COCO json next to each session (<stem>.json) or none",
           "sibling", choices=("sibling", "none")),
    Option("categories", "category name->id map: COCO json or {name: id} json",
           metavar="PATH", path=True),
    Option("absolute_sources", "absolute posix paths as source ids, as the Cuvis.AI GUI "
           "writes them", False, bool, shown="paths relative to the universe.csv"),
    Option("group", "group column: auto (npz: the frame's recording), parent (folder), none",
           "auto", choices=("auto", "parent", "none")),
    Option("no_hash", "skip content md5s; drift checks then cannot see edits", False, bool,
           shown="hash"),
    Option("jobs", "hashing threads (files under 192 KiB on average are read on one thread, "
           "where threads only contend)", 4, int),
    Option("executor", "where files not in the stat cache are read and hashed: local threads "
           "or a Dask cluster", "local", choices=("local", "dask")),
    Option("scheduler", "Dask scheduler address, with --executor dask", metavar="ADDRESS",
           shown="none, an in-process cluster"),
    Option("stat_cache", "stat cache file, or 'none' for memory only", metavar="PATH",
           path=True, shown=".dvc/tmp/dvc-cuvis/stat-cache.bin"),
    Option("progress", "progress bar on stderr", None, bool, negatable=True,
           shown="when stderr is a terminal"),
)


#: The ``materialize`` verb's options: flags, params keys, defaults, help (one spec).
MATERIALIZE = OptionSet(
    "materialize",
    Option("universe", "universe.csv of the raw data", "universe.csv", metavar="PATH",
           path=True),
    Option("splits", "splits.json selecting the frames", metavar="PATH", path=True,
           shown="none, every frame"),
    Option("out_dir", "output folder: frames/, universe.csv, splits.json, manifest.json",
           metavar="DIR", path=True, required=True),
    Option("select", "frames of every stage of the split, or the whole universe", "splits",
           choices=("splits", "all")),
    Option("crop", "TOP,BOTTOM,LEFT,RIGHT pixels removed from cube and masks",
           kinds=(str, list)),
    Option("processing_mode", "cu3s: cuvis.ProcessingMode name, or none", "Reflectance"),
    Option("white_ref", "cu3s: white reference measurement", metavar="CU3S[:FRAME]",
           path=True),
    Option("dark_ref", "cu3s: dark reference measurement", metavar="CU3S[:FRAME]", path=True),
    Option("compress", "none | deflate[:level] | masks[:level]", "none"),
    Option("jobs", "worker processes", 1, int),
    Option("executor", "local process pool or a Dask cluster", "local",
           choices=("local", "dask")),
    Option("scheduler", "Dask scheduler address, with --executor dask", metavar="ADDRESS",
           shown="none, an in-process cluster"),
    Option("lock_wait", "seconds to wait for another run on the same folder", 0.0, float),
    Option("stat_cache", "stat cache file, or 'none'", metavar="PATH", path=True,
           shown=".dvc/tmp/dvc-cuvis/"),
    Option("no_summaries", "record no spectral summaries (summaries/ beside the frames; "
           "the report's spectra section draws them)", False, bool, shown="record them"),
    Option("sign_only", "only sign the frames already in --out-dir whose summaries lack a "
           "signature (read from their npz; nothing else is written)", False, bool,
           shown="materialize"),
    Option("progress", "progress bar on stderr", None, bool, negatable=True,
           shown="when stderr is a terminal"),
)


#: Bake strategies, by name (``dvc_cuvis.baking.splitters.SPLITTERS`` holds the splitter of each).
STRATEGIES: tuple[str, ...] = ("hash", "random", "stratified", "multilabel")
#: What a bake keeps together: ``auto`` = the row's ``group`` cell, else its recording (the
#: session file, or the folder of frame files); also ``block:N``, N contiguous frames of a
#: recording.
GROUP_BY: tuple[str, ...] = ("auto", "source", "group", "sample", "recording")
#: What ``bake --keep-duplicates-together`` merges into one group: frames of one content
#: (``exact``), also near copies (``near``), or nothing (``off``).
KEEP_TOGETHER: tuple[str, ...] = ("off", "exact", "near")
#: The predict stage: ``all`` (written empty = the whole universe) or a copy of test.
PREDICT: tuple[str, ...] = ("all", "test")

#: The ``bake`` verb's options: flags, params keys, defaults, help (one spec); the defaults of
#: :class:`~dvc_cuvis.baking.options.BakeOptions` and ``init``'s bake section come from it.
BAKE = OptionSet(
    "bake",
    Option("universe", "universe.csv", "universe.csv", metavar="PATH", path=True),
    Option("out", "splits.json to write", "splits.json", metavar="PATH", path=True),
    Option("out_dir", "folder for fold-<k>.json with --folds", metavar="DIR", path=True),
    Option("metrics", "split metrics json to write", metavar="PATH", path=True),
    Option("plots", "folder for DVC plot data: stages, categories, groups", metavar="DIR",
           path=True),
    Option("strategy", "hash: stable under growth; random/stratified: as cuvis-ai-dataloader "
           "resolve-splits; multilabel: balances category ids", "hash", choices=STRATEGIES),
    Option("seed", "seed of the assignment", 0, int),
    Option("val_ratio", "share of groups in val", 0.2, float),
    Option("test_ratio", "share of groups in test", 0.2, float),
    Option("group_by", "unit kept together: auto (the group cell, else the recording: "
           "session file or folder of frames), source, group, sample, recording, or block:N "
           "(N contiguous frames of a recording)", "auto"),
    Option("buffer", "leave out of every stage the first K frames after each stage boundary "
           "inside a recording (0: off)", 0, int, shown="0, off"),
    Option("keep_duplicates_together", "merge each cluster of frames of one content (exact) "
           "or of near copies too (near) into one group, with the groups its frames belong "
           "to, from the signatures materialize stored", "off", choices=KEEP_TOGETHER),
    Option("summaries", "the materialized folder whose signatures --keep-duplicates-together "
           "reads", metavar="DIR", path=True,
           shown="the universe's folder when materialize wrote it"),
    Option("ad_aware", "train on normal samples only: anomalous ones stay out of train", False,
           bool),
    Option("folds", "K-fold: a test holdout + K validation folds", 0, int,
           shown="0, no folds"),
    Option("predict", "predict stage: all (empty = whole universe) or a copy of test", "all",
           choices=PREDICT),
    Option("no_ranges", "write ids as plain integers instead of 'a-b' ranges", False, bool,
           shown="ranges"),
    Option("from_csv", "take the universe's 'split' column", False, bool),
    Option("rule", "rule-form splits.json to resolve and bake", metavar="PATH", path=True),
    Option("base", "previous baked splits.json: keep it and place new samples",
           metavar="PATH", path=True),
    Option("allow_removed", "with --base: drop samples that left the universe instead of "
           "failing", False, bool, shown="fail"),
    Option("allow_empty", "accept a stage with a non-zero ratio that receives no sample",
           False, bool, shown="an error"),
    Option("categories", "category name->id map for 'categories' selectors", metavar="PATH",
           path=True),
    Option("from_glovita", "import a GloViTa splits.json", metavar="PATH", path=True),
    Option("from_soma", "import a soma splits.csv", metavar="PATH", path=True),
    Option("from_indices", "import an indices.npz", metavar="PATH", path=True),
    Option("id_column", "universe column the imported ids name", "uid"),
    Option("by_sample", "name each moved group (an npz frame with group_by source) instead of "
           "summing the moves per recording", False, bool, shown="one line per recording"),
    Option("constraints", "the split's constraints (a list; default: the schema's)",
           kinds=(list,), params_only=True),
)


# -- options several verbs share (one definition each) -------------------------------------

#: Severities of the group-leakage check (auto: error when the universe has a group column).
LEAKAGE: tuple[str, ...] = ("auto", "error", "warn", "off")
#: cuvis-ai-dataloader modules whose universe rules ``--module`` applies.
MODULES: tuple[str, ...] = ("npz_multi", "cu3s_multi", "tiff_paired")
#: Split conventions of :mod:`dvc_cuvis.interop`, and the cuvis-ai data group export.
CONVENTIONS: tuple[str, ...] = ("glovita", "soma", "indices")
CUVIS_AI = "cuvis-ai"

_UNIVERSE = Option("universe", "universe.csv", "universe.csv", metavar="PATH", path=True)
_SPLITS = Option("splits", "splits.json", "splits.json", metavar="PATH", path=True)
_CATEGORIES = Option("categories", "category name->id map for 'categories' selectors: COCO "
                     "json, enumerate metrics or {name: id} json", metavar="PATH", path=True)
_LEAKAGE = Option("group_leakage", "group leakage check; auto = error when the universe has "
                  "a group column", "auto", choices=LEAKAGE)
#: Severities of the neighbouring-frames check.
ADJACENT: tuple[str, ...] = ("error", "warn", "off")
_ADJACENT = Option("adjacent_frames", "frames of one recording within --adjacent-k of each "
                   "other in different stages", "warn", choices=ADJACENT)
_ADJACENT_K = Option("adjacent_k", "how many frames apart still count as neighbours", 1, int)
_SHIFT = Option("spectral_shift", "stages whose recordings' mean spectra differ (permutation "
                "test over whole recordings, from the frames' summaries: see --summaries)", "warn",
                choices=ADJACENT)
_GRID = Option("wavelength_grid", "frames of the split on more than one wavelength grid "
               "(from the frames' summaries: see --summaries)", "error", choices=ADJACENT)
_CONTENT_DUP = Option("content_duplicate", "frames of one content (and frames without a "
                      "signature) in different stages", "error", choices=ADJACENT)
_NEAR_DUP = Option("near_duplicate", "near-copy frames in different stages", "warn",
                   choices=ADJACENT)
_CHECK_SUMMARIES = Option("summaries", "the materialized folder whose per-frame summaries the "
                          "leakage checks read (duplicates, spectral shift, wavelength grids); "
                          "without one the spectral checks say they did not run and how to "
                          "produce the summaries", metavar="DIR", path=True,
                          shown="the universe's folder when materialize wrote summaries there")
_MODULE = Option("module", "apply this cuvis-ai-dataloader module's universe rules before "
                 "anything trains (npz_multi: materialized_path on every row, no split column, "
                 "one file per row)", choices=MODULES,
                 shown="the universe's data_module column, else none")
_ALLOW_PARTIAL = Option("allow_partial", "a selector matching only some of its ids is a "
                        "warning, not a failure", False, bool, shown="failure, exit 1")
_ALLOW_UNPINNED = Option("allow_unpinned", "the check accepts a split that pins no "
                         "universe_hash", False, bool,
                         shown="a failure: nothing ties it to its universe")
_STAT_CACHE = Option("stat_cache", "stat cache file, or 'none'", metavar="PATH", path=True,
                     shown=".dvc/tmp/dvc-cuvis/")

#: The ``resolve`` verb's options.
RESOLVE = OptionSet("resolve", _UNIVERSE, _SPLITS, _CATEGORIES, _LEAKAGE, _ALLOW_PARTIAL,
                    _MODULE)

#: The ``check`` verb's options.
CHECK = OptionSet(
    "check",
    _UNIVERSE, _SPLITS,
    Option("deep", "re-hash every file, trusting no cache and not dvc.lock", False, bool),
    Option("lock", "dvc.lock to compare against", metavar="PATH", path=True,
           shown="the repository's"),
    Option("no_lock", "skip the staleness check against dvc.lock", False, bool,
           shown="run it"),
    Option("no_enumerate", "do not re-scan the data named in the params file's enumerate "
           "section", False, bool,
           shown="re-scan, to see added, removed and renamed samples"),
    Option("data_dir", "folder that {DATA_DIR} stands for in GUI-authored splits",
           metavar="DIR", path=True, shown="inferred from the universe"),
    _CATEGORIES, _LEAKAGE, _ADJACENT, _ADJACENT_K, _SHIFT, _GRID, _CONTENT_DUP, _NEAR_DUP,
    _CHECK_SUMMARIES,
    _ALLOW_PARTIAL, _ALLOW_UNPINNED, _MODULE,
    Option("stage", "check only this stage's frames (others absent = not pulled); repeat "
           "for several", choices=("train", "val", "test", "predict"), metavar="STAGE",
           many=True, shown="all stages"),
    Option("checks", "comma list of universe,content,selection,constraints,staleness",
           kinds=(str, list), shown="all"),
    _STAT_CACHE,
    Option("metrics", "metrics json: ok, each check's status and the duplicate counts",
           metavar="PATH", path=True),
    Option("plots", "folder for DVC plot data, check.json", metavar="DIR", path=True),
)

#: The ``report`` verb's options.
REPORT = OptionSet(
    "report",
    Option("out", "HTML file to write (a pipeline's report stage names its own output on its "
           "command line)", "split-report.html", metavar="PATH", path=True),
    _UNIVERSE, _SPLITS,
    Option("base", "git revision to compare against: adds the transition heat map",
           metavar="REV"),
    Option("repo", "with --base: read REV from this repository (a path or git URL), git alone, "
           "at the split's and universe's paths", metavar="URL|PATH",
           shown="this repository"),
    Option("categories", "category name->id map: COCO json or enumerate metrics",
           metavar="PATH", path=True),
    Option("title", "page title", shown="'Split report: <splits>'"),
    Option("no_check", "leave the drift check out of the report", False, bool,
           shown="include it"),
    Option("summaries", "the materialized folder whose spectral summaries the spectra "
           "section draws (no cube is read)", metavar="DIR", path=True,
           shown="leave the spectra out"),
    Option("spectral_shift_threshold", "the per-band standardized mean difference above which "
           "two stages count as spectrally unlike", 2.0, float),
    Option("thumbnails", "false-colour thumbnails shown per stage", 6, int),
    Option("spectra_plot", "write the stages' mean spectra (wavelength, stage, mean, std) here "
           "for dvc plots", metavar="PATH", path=True),
    _ALLOW_PARTIAL, _ALLOW_UNPINNED,
)

#: The ``export`` verb's options.
EXPORT = OptionSet(
    "export",
    Option("to", "the convention to write; cuvis-ai: the trainrun data group of a materialized "
           "split (data_module: dvc_npz_multi)", choices=(*CONVENTIONS, CUVIS_AI),
           required=True),
    _UNIVERSE,
    Option("splits", "baked splits.json", "splits.json", metavar="PATH", path=True),
    Option("folds_dir", "folder of fold-<k>.json files: export all K folds", metavar="DIR",
           path=True),
    Option("out_dir", "output folder", "export", metavar="DIR", path=True),
    Option("id_column", "universe column used as the sample id", "uid"),
    Option("labels", "glovita: labels.json from category ids (anomaly: 0/1)", "anomaly",
           choices=("anomaly", "categories", "none")),
    Option("out", "cuvis-ai: the data-group YAML to write", metavar="PATH", path=True,
           shown="<out-dir>/data.yaml"),
    Option("batch_size", "cuvis-ai: the data group's batch_size", kind=int, shown="1"),
    Option("metrics", "soma: where to write the identity checksums", metavar="PATH",
           path=True, shown="<out-dir>/identity.json"),
)


# -- the cuvis-ai plugin's data modules (a trainrun's ``data.params``) ---------------------

#: What a failed drift check does: strict raises, warn logs, off skips.
VERIFY_MODES: tuple[str, ...] = ("strict", "warn", "off")
_NULLABLE = (str, type(None))

#: The parameters every guarded data module adds to its upstream module's.
GUARD = OptionSet(
    "data module",
    Option("verify", "what a failed drift check does: strict raises, warn logs, off skips",
           "strict", choices=VERIFY_MODES),
    Option("deep", "re-hash every file, trusting no cache", False, bool),
    Option("lock", "dvc.lock for the staleness check: auto (the repository's), a path, or "
           "null (none)", "auto", kinds=_NULLABLE),
    Option("stat_cache", "where digests are remembered: auto (.dvc/tmp/dvc-cuvis), a file, or "
           "null (in memory)", "auto", kinds=_NULLABLE),
    Option("lineage", "folder the dataset record is written to (dataset_lineage.json) when "
           "training reads its first batch; a trainrun's ${output_dir}", kinds=_NULLABLE,
           shown="none (checkpoints still carry it)"),
)

#: A dataset version (:mod:`dvc_cuvis.train.versioned`): train on the split and frames of a git
#: revision of the dataset repository, fetched through DVC and verified by md5.
VERSION = OptionSet(
    "dataset version",
    Option("rev", "git tag, branch or commit of the dataset to train on; splits_path and "
           "universe_csv are read at it", kinds=_NULLABLE, shown="the files as they are"),
    Option("repo", "the dataset repository, a path or git URL", kinds=_NULLABLE, shown="."),
    Option("cache_dir", "DVC cache the frames are fetched into", kinds=_NULLABLE,
           shown="the repository's"),
)

#: ``dvc_tiff_paired``'s own parameter: the universe.csv enumerate wrote (content check).
TIFF_UNIVERSE = OptionSet(
    "dvc_tiff_paired",
    Option("universe_csv", "the universe.csv enumerate wrote: also check content",
           kinds=_NULLABLE),
)


#: The ``fetch`` verb's options.
FETCH = OptionSet(
    "fetch",
    Option("stage", "a stage to fetch: train, val, test or predict; repeat for several",
           choices=("train", "val", "test", "predict"), metavar="STAGE", many=True,
           required=True),
    Option("materialized", "fetch the stage's materialized npz frames instead of the raw "
           "files and annotations", False, bool, shown="raw"),
    Option("materialized_dir", "the materialize output folder", metavar="DIR", path=True,
           shown="the materialize section's out_dir, else materialized"),
    Option("dry_run", "list the files and bytes a fetch would need; download nothing", False,
           bool, shown="fetch"),
    _UNIVERSE, _SPLITS, _CATEGORIES,
    Option("remote", "DVC remote to pull from", shown="the default remote"),
    Option("jobs", "parallel downloads", kind=int, shown="DVC's"),
    Option("progress", "progress bar on stderr", None, bool, negatable=True,
           shown="when stderr is a terminal"),
)


_HISTORY = (
    Option("splits", "splits.json", metavar="PATH", path=True,
           shown="the params file's resolve.splits or bake.out, else splits.json"),
    Option("universe", "universe.csv", metavar="PATH", path=True,
           shown="the params file's resolve.universe or bake.universe, else universe.csv"),
    Option("fold", "fold K of a K-fold bake", kind=int),
    Option("folds_dir", "folder of fold-<k>.json files", metavar="DIR", path=True,
           shown="the params file's bake.out_dir, else splits"),
    Option("repo", "read the history of this repository (a path or git URL) instead of the "
           "current one, from git alone (no data pulled); --splits/--universe are then paths "
           "inside it", metavar="URL|PATH", shown="this repository"),
)

#: The ``diff`` verb's options (its revisions and output format are arguments, not keys).
DIFF = OptionSet("diff", *_HISTORY,
                 Option("all", "list every changed sample", False, bool,
                        shown="the first 20"),
                 Option("by_sample", "one line per changed sample instead of one per "
                        "recording", False, bool, shown="one line per recording"),
                 Option("summaries", "the materialized folder whose per-frame summaries the "
                        "spectral comparison reads at both revisions (no cube is read)",
                        metavar="DIR", path=True,
                        shown="the materialize section's out_dir, else none"),
                 Option("no_spectra", "leave the spectral comparison out", False, bool,
                        shown="compared when a materialized folder is known"))

#: The ``log`` verb's options.
LOG = OptionSet("log", *_HISTORY,
                Option("max_count", "show at most N commits", kind=int, short="-n",
                       shown="all"))


#: The ``lineage`` verb's options (its paths, ``--compare`` and ``--json`` are arguments).
LINEAGE = OptionSet(
    "lineage",
    Option("rev", "git revision to compare each model's dataset version with",
           metavar="REV", shown="the working tree"),
    Option("repo", "the dataset repository (a path)", metavar="PATH", path=True,
           shown="the one the record names, else the current one"),
    Option("fail_on_stale", "exit 1 when any model's split or data has changed since it was "
           "trained", False, bool, shown="exit 0"),
)


#: Each params section's keys: verb -> its option spec, static (every spec above is).
SECTIONS: dict[str, OptionSet] = {spec.verb: spec for spec in (
    ENUMERATE, MATERIALIZE, BAKE, RESOLVE, CHECK, REPORT, EXPORT, FETCH, DIFF, LOG, LINEAGE)}
