"""dvc-cuvis: reproducible, reviewable Cuvis.AI data splits as a DVC pipeline."""

from __future__ import annotations

__version__ = "0.1.0"
