"""DVC plot templates dvc-cuvis ships: ``init`` writes them under ``.dvc/plots/``.

DVC's built-in templates colour lines by revision, file or field only. The spectra plot
(``report --spectra-plot``: rows of wavelength, stage, mean, std) needs one line per stage,
with its ±1 std band, and across revisions (``dvc plots diff``) a dash per revision: this
template draws exactly that, with DVC's own tooling.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

#: The template's name: ``template: spectra`` in a dvc.yaml ``plots:`` entry.
SPECTRA = "spectra"

SPECTRA_TEMPLATE: dict[str, object] = {
    "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
    "data": {"values": "<DVC_METRIC_DATA>"},
    "title": "<DVC_METRIC_TITLE>",
    "width": 480,
    "height": 280,
    "transform": [{"calculate": "datum.mean - datum.std", "as": "low"},
                  {"calculate": "datum.mean + datum.std", "as": "high"}],
    "encoding": {
        "x": {"field": "<DVC_METRIC_X>", "type": "quantitative", "title": "wavelength (nm)"},
        "color": {"field": "stage", "type": "nominal",
                  "scale": {"domain": ["train", "val", "test"]}},
    },
    "layer": [
        {"mark": {"type": "area", "opacity": 0.15},
         "encoding": {"y": {"field": "low", "type": "quantitative", "title": "mean value",
                            "scale": {"zero": False}},
                      "y2": {"field": "high"}, "detail": {"field": "rev"}}},
        {"mark": {"type": "line", "tooltip": {"content": "data"}},
         "encoding": {"y": {"field": "<DVC_METRIC_Y>", "type": "quantitative"},
                      "strokeDash": {"field": "rev", "type": "nominal"}}},
    ],
}


def template_text(template: Mapping[str, object]) -> str:
    """A template's file text (stable JSON, ``\\n`` at the end)."""
    return json.dumps(template, indent=2, sort_keys=True) + "\n"
