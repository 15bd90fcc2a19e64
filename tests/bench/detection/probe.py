"""Self-check of one framework's detector, run inside that framework's environment by the tests.

    python -m tests.bench.detection.probe FRAMEWORK --spec SPEC.json --data PREPARED_DIR [--epochs 3]

SPEC.json is frcnn-voc2012's resolved smoke spec (the host resolves it); PREPARED_DIR a prepared synthetic
voc2012 (data/voc.py, the real format). Builds the framework module's trainer (make_trainer, as the entrypoint
does), trains `epochs` epochs on the first 4 training images and evaluates on the first 2 test images after each;
then runs the network's own RoI op on a fixed feature map and fixed RoIs (roi_features), and the network on fixed
weights, a fixed image and fixed RoIs (bench/detection/parity.py). Prints one JSON object:

    {"framework", "param_count", "losses" (per epoch), "maps" (per epoch), "map_again", "roi_max_abs_diff"
     (the RoI op against bench/detection/roialign.reference), "parity" ({"losses": the four of train_step,
     "logits", "boxes": detect's}), "roi_op" (info()["roi_op"]), "seconds", "info"}
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from bench import prepared
from bench.detection import detector as det
from bench.detection import parity, roialign, step
from bench.frameworks import load

SEED = 1234
TRAIN_ROWS, TEST_ROWS = [0, 1, 2, 3], [0, 1]
# A fixed C4-like input: 5 channels over 6 x 7 cells (a 96 x 112 image at stride 16) and RoIs inside, across
# and beyond its border, a sub-cell one and one of fractional corners.
ROI_FEATURES = np.random.RandomState(7).randn(1, 6, 7, 5).astype(np.float32)
ROIS = np.array([[0, 0, 112, 96], [8.5, 4.25, 60.75, 50.5], [-24, -16, 40, 30], [90, 70, 130, 110],
                 [33, 41, 44, 47], [16, 16, 32, 32]], np.float32)


def roi_check(network, detector: det.DetectorPlan) -> float:
    """Largest difference between the network's RoI op and roialign.reference on the fixed input."""
    roi = detector.settings["roi"]
    scale = 1.0 / detector.settings["anchors"]["stride"]
    height, width = ROI_FEATURES.shape[1:3]
    rows, cols = roialign.matrices(ROIS, scale, roi["output"], roi["sampling_ratio"], height, width, roi["aligned"])
    zeros = np.zeros((len(ROIS), 4 * detector.num_classes), np.float32)
    batch = step.RoiBatch(ROIS, rows, cols, None, zeros, zeros)
    got = np.asarray(network.roi_features(ROI_FEATURES, batch), np.float64)
    want = roialign.reference(ROI_FEATURES[0].transpose(2, 0, 1), ROIS, scale, roi["output"], roi["sampling_ratio"],
                              roi["aligned"])
    return float(np.abs(got - want).max())


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, train and check, print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework")
    parser.add_argument("--spec", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--era", default="current")
    args = parser.parse_args(argv)
    with open(args.spec) as fh:
        spec = json.load(fh)
    module = load(args.framework, args.era)
    data = prepared.load(args.data, TRAIN_ROWS, TEST_ROWS)
    started = time.perf_counter()
    trainer = module.make_trainer(spec, data, "cpu", SEED)
    losses, maps = [], []
    for _ in range(args.epochs):
        loss, _ = trainer.train_epoch()
        trainer.synchronize()
        losses.append(loss)
        maps.append(trainer.evaluate())
    result = {
        "framework": args.framework,
        "param_count": trainer.param_count(),
        "losses": losses,
        "maps": maps,
        "map_again": trainer.evaluate(),  # inference mode is deterministic: the same mAP again
        "roi_max_abs_diff": roi_check(trainer.network, det.plan(spec)),
        "parity": parity.run(trainer),
        "info": trainer.info(),
    }
    result["roi_op"] = result["info"].get("roi_op")
    result["seconds"] = round(time.perf_counter() - started, 2)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
