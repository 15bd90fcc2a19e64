"""The same detector on the same numbers: a framework's network from fixed weights, on a fixed image with fixed RoIs.

Every framework of either era must compute the same outputs and losses here, up to float32 rounding (the slow tests
compare them across frameworks, and the paper images with the current era): what makes "the same detector in every
framework" a checked statement rather than a design intent. Shipped in the payload so that it runs inside any image.

    run(trainer) -> {"losses": train_step's four, "logits", "boxes": detect's (lists)}

The weights are weights.initial with every bias, batchnorm scale, shift and moving statistic drawn away from its zero
or one, so that a weight a framework sets in the wrong place, or not at all, changes its outputs. The image is the
trainer's first training image, unflipped; the RPN targets are seeded; the RoIs are sampled from fixed RPN outputs
(not the network's), so every framework gets the same RoIs and the same targets. CPython 3.6-clean, NumPy only.
"""

from typing import Dict

import numpy as np

from bench.detection import step, weights
from bench.detection.detector import LOSS_NAMES, DetectorPlan

SEED = 1234


def fixed_weights(detector: DetectorPlan) -> Dict[str, np.ndarray]:
    """weights.initial(SEED) with every bias, beta and moving mean moved by N(0, 0.1) and every gamma and moving
    variance drawn from U(0.5, 1.5)."""
    fixed = weights.initial(detector, SEED)
    rng = np.random.RandomState(99)
    for name, value in fixed.items():
        part = name.rsplit(".", 1)[1]
        if part in ("bias", "beta", "mean"):
            fixed[name] = (value + 0.1 * rng.standard_normal(value.shape)).astype(np.float32)
        elif part in ("gamma", "var"):
            fixed[name] = rng.uniform(0.5, 1.5, value.shape).astype(np.float32)
    return fixed


def run(trainer) -> dict:
    """Set fixed_weights in a DetectionTrainer's network, then detect (inference mode) and one train_step on the
    fixed input: {"losses": the four before the update, "logits", "boxes": detect's, as lists}. The network is
    left trained one step from fixed_weights."""
    detector = trainer.detector
    trainer.network.set_weights(fixed_weights(detector))
    example = trainer.train.example(0, False)
    anchors = step.anchors_for(detector, example)
    rpn = step.rpn_batch(detector, example, anchors, np.random.RandomState(SEED))
    outputs = np.random.RandomState(5)
    roi = step.roi_batch(detector, example, anchors, outputs.randn(len(anchors)), 0.1 * outputs.randn(len(anchors), 4),
                         np.random.RandomState(SEED))
    logits, boxes = trainer.network.detect(example.pixels, lambda objectness, deltas: roi)
    losses = trainer.network.train_step(example.pixels, rpn, lambda objectness, deltas: roi)
    return {"losses": {name: float(losses[name]) for name in LOSS_NAMES},
            "logits": np.asarray(logits, np.float64).tolist(), "boxes": np.asarray(boxes, np.float64).tolist()}
