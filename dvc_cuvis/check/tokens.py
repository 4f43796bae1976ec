"""GUI-authored splits: sources named through the ``{DATA_DIR}`` token.

The Cuvis.AI GUI writes a split's sources as ``{DATA_DIR}/day2/a.cu3s``; such a split is
checked by putting the data folder in place of the token, and its pin is compared with
the universe's hash spelled with the token (:func:`tokenized_hash`).
"""

from __future__ import annotations

import json
import os

from cuvis_ai_schemas.training.data import DataSplitConfig

from dvc_cuvis.model.selectors import walk
from dvc_cuvis.model.universe import Universe

__all__ = ["TOKEN", "detokenize", "infer_data_dir", "is_tokenized", "resolve_tokens",
           "tokenized_hash"]

TOKEN = "{DATA_DIR}"


def is_tokenized(cfg: DataSplitConfig) -> bool:
    """True if any selector names a source through the ``{DATA_DIR}`` token."""
    for sel in walk(cfg):
        if any(n and TOKEN in n for n in (sel.source, *sel.paths, sel.pattern)):
            return True
    return False


def detokenize(cfg: DataSplitConfig, data_dir: str) -> DataSplitConfig:
    """``cfg`` with ``{DATA_DIR}`` replaced by ``data_dir`` in every source, path and pattern."""
    data = json.loads(json.dumps(cfg.to_dict()).replace(TOKEN, data_dir.rstrip("/")))
    return DataSplitConfig.model_validate(data)


def tokenized_hash(uni: Universe, data_dir: str) -> str:
    """``universe_hash`` with the data-dir prefix of every source written as ``{DATA_DIR}``."""
    prefix = data_dir.rstrip("/") + "/"
    return uni.spelled_hash([TOKEN + "/" + s[len(prefix):] if s.startswith(prefix) else s
                             for s in uni.source_names])


def infer_data_dir(uni: Universe) -> str:
    """The longest common folder of all (absolute) sources."""
    common = os.path.commonpath(uni.source_names) if uni.source_names else ""
    if len(uni.source_names) == 1:
        common = os.path.dirname(common)
    return common


def resolve_tokens(
    cfg: DataSplitConfig, uni: Universe, data_dir: str | None
) -> tuple[DataSplitConfig, str | None]:
    """``cfg`` with ``{DATA_DIR}`` replaced (pin dropped: the universe check compares it
    against tokenized uids), and the data dir used; ``cfg`` itself when untokenized."""
    if not is_tokenized(cfg):
        return cfg, None
    data_dir = (data_dir or infer_data_dir(uni)).rstrip("/")
    return detokenize(cfg, data_dir).model_copy(update={"universe_hash": None}), data_dir
