"""A tiny statistical cuvis-ai node for the plugin's real-trainer tests (no tests here).

``ChannelMeanScore`` learns the per-channel mean of the train frames (its statistical
initialization) and scores each pixel by its distance to it: a statistical pipeline as
small as cuvis-ai's RX, so the tests run ``restore_trainrun`` without the cuvis-ai
framework.  ``FRAMES`` records every frame the node is given, per stage, so a test can tell
a run that trained from one that stopped before reading a frame.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from cuvis_ai_core.node.node import Node
from cuvis_ai_schemas.enums import NodeCategory, NodeTag
from cuvis_ai_schemas.pipeline import PortSpec

#: (phase, frames) for each batch the node saw: "fit" in the statistical fit, "forward" after.
FRAMES: list[tuple[str, int]] = []


class ChannelMeanScore(Node):
    """Per-channel mean of the train split; score = mean absolute distance to it."""

    # declared, as cuvis-ai asks of every node (else it warns on each pipeline built)
    _category = NodeCategory.MODEL
    _tags = frozenset({NodeTag.HYPERSPECTRAL, NodeTag.ANOMALY})

    INPUT_SPECS: ClassVar[dict[str, PortSpec]] = {
        "cube": PortSpec(dtype=torch.float32, shape=(-1, -1, -1, -1))}
    OUTPUT_SPECS: ClassVar[dict[str, PortSpec]] = {
        "scores": PortSpec(dtype=torch.float32, shape=(-1, -1, -1, 1))}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.register_buffer("mean", torch.tensor(float("nan")))
        self._requires_initial_fit_override = True

    def statistical_initialization(self, input_stream: Any) -> None:
        total, count = None, 0
        for batch in input_stream:
            cube = batch["cube"].to(torch.float64)
            FRAMES.append(("fit", int(cube.shape[0])))
            part = cube.sum(dim=(0, 1, 2))
            total = part if total is None else total + part
            count += cube.shape[0] * cube.shape[1] * cube.shape[2]
        if total is None:
            raise RuntimeError("ChannelMeanScore: no train frames")
        self.mean = (total / count).to(torch.float32)
        self._statistically_initialized = True

    def forward(self, cube: torch.Tensor, **_: Any) -> dict[str, torch.Tensor]:
        FRAMES.append(("forward", int(cube.shape[0])))
        return {"scores": (cube - self.mean).abs().mean(dim=-1, keepdim=True)}
