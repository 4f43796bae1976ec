"""Other projects' split conventions (GloViTa, soma, plain index arrays) and cuvis-ai's
data group and DataModule universe rules.
"""

from __future__ import annotations

from dvc_cuvis.interop.convert import (
    FORMATS,
    export,
    read_folds,
)
from dvc_cuvis.interop.cuvis_ai import (
    data_group,
    format_data_group,
)
from dvc_cuvis.interop.exporting import (
    Exported,
    ExportOptions,
    export_split,
)
from dvc_cuvis.interop.folds import (
    Folds,
    from_resolutions,
)
from dvc_cuvis.interop.modules import (
    MODULES,
    check_module_rules,
    module_for,
)

__all__ = [
    "FORMATS",
    "MODULES",
    "ExportOptions",
    "Exported",
    "Folds",
    "check_module_rules",
    "data_group",
    "export",
    "export_split",
    "format_data_group",
    "from_resolutions",
    "module_for",
    "read_folds",
]
