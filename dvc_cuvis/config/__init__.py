"""Configuration: option specs per verb, the params file and its sections, "did you mean".
"""

from __future__ import annotations

from dvc_cuvis.config.options import (
    Option,
    OptionSet,
    check_keys,
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

__all__ = [
    "Option",
    "OptionSet",
    "check_keys",
    "check_value",
    "closest",
    "did_you_mean",
    "diff_params",
    "edit_distance",
    "load_params",
    "misspelled_section",
    "section",
]
