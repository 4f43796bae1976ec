"""Configuration: option specs per verb, the params file and its sections, the settings rule
(flag > params section > default), "did you mean".
"""

from __future__ import annotations

from dvc_cuvis.config.options import (
    Option,
    OptionSet,
    check_value,
    closest,
    did_you_mean,
)
from dvc_cuvis.config.params import (
    diff_params,
    edit_distance,
    load_params,
    misspelled_section,
    section,
)
from dvc_cuvis.config.settings import Settings, find_params

__all__ = [
    "Option",
    "OptionSet",
    "Settings",
    "check_value",
    "closest",
    "did_you_mean",
    "diff_params",
    "edit_distance",
    "find_params",
    "load_params",
    "misspelled_section",
    "section",
]
