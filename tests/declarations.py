"""A framework's declaration replaced for one test (bench/frameworks/<framework>/__init__.py CAPABILITIES), so the
planner's refusals can be shown after every real module gained what they refuse: EPOCHS_OF_DLBENCH_LAYERS is the
record every 2018 module had before it gained step(), infer() and the other studies' layers (issue 29)."""

from __future__ import annotations

import importlib

import pytest

from bench import measurement
from bench.frameworks.capabilities import Era, paper_era

# DLBench's own layer vocabulary: no residual vocabulary (batchnorm, activation, avgpool2d, global_avgpool,
# residual), no concat, no lrn, no gru, and no conv2d without bias.
DLBENCH_LAYER_TYPES = ("conv2d", "maxpool2d", "dropout", "flatten", "dense", "embedding", "lstm")
EPOCHS_OF_DLBENCH_LAYERS = paper_era(protocols=(measurement.EPOCHS,), layer_types=DLBENCH_LAYER_TYPES,
                                     bias_free_conv=False)


def declare(monkeypatch: pytest.MonkeyPatch, framework: str, era: str, record: Era = EPOCHS_OF_DLBENCH_LAYERS) -> None:
    """For this test, `framework`'s `era` module declares `record` (by default a 2018 module training DLBench's
    layers for epochs only)."""
    package = importlib.import_module(f"bench.frameworks.{framework}")
    decl = package.CAPABILITIES
    monkeypatch.setattr(package, "CAPABILITIES", decl._replace(eras={**decl.eras, era: record}))
