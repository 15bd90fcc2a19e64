"""frcnn-voc2012's detector in every framework of the current era, trained for real in its environment on a
prepared synthetic VOC2012 (tests/bench/detection/probe.py, all frameworks at once): the same parameter count
as the hand count, a falling loss, a per-epoch mAP, deterministic inference, the framework's RoI op equal to
RoIAlign's sample-by-sample reference on a fixed input, and, from the same weights on the same image and RoIs,
the same four losses and outputs as the other frameworks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench.detection import detector as det
from bench.detection import support
from campaign import specs
from data import synthetic
from tests.bench.frameworks import check

WORKLOAD = "frcnn-voc2012"
# Trunk (conv1 .. res4) 8,543,296 + res5 14,964,736 (together ResNet-50 without its fc, 23,508,032) + RPN
# (3x3 1024->512 + 512, 1x1 512->9 + 9, 1x1 512->36 + 36) 4,742,189 + class (2048*21 + 21) and box (2048*84 + 84)
# outputs 215,145.
HAND_COUNT = 23_508_032 + (9 * 1024 * 512 + 512) + (512 * 9 + 9) + (512 * 36 + 36) + (2048 * 21 + 21) + (2048 * 84 + 84)
FRAMEWORKS = ("pytorch", "mxnet", "chainer", "tensorflow", "keras", "theano")
ROI_TOLERANCE = 1e-5  # float32 features and weights against a float64 reference
# Parity from the same weights: each framework's four losses, and its inference outputs, against the median of all
# frameworks' (one wrong framework cannot move the median of six). float32 through 53 conv layers in each
# framework's own kernels: LOSS_RTOL, OUTPUT_RTOL (of the largest output) leave room for summation order only.
LOSS_RTOL, OUTPUT_RTOL = 1e-4, 1e-5


def test_the_hand_count_is_the_plan_count():
    from tests.plancount import trainable

    detector = det.plan(specs.load(WORKLOAD, "smoke"))
    assert trainable(detector.trunk) == 8_543_296 and trainable(detector.head) == 14_964_736
    assert trainable(detector.trunk) + trainable(detector.head) + det.extra_params(detector) == HAND_COUNT == 28_465_366


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    root = tmp_path_factory.mktemp("voc")
    folder = synthetic.make_synthetic("voc2012", root, sizes=(8, 4), progress=False)
    spec_file = root / "spec.json"
    spec_file.write_text(json.dumps(specs.load(WORKLOAD, "smoke")))
    implemented = [fw for fw in FRAMEWORKS if _has_detector(fw)]
    return check.run_in_envs(implemented, ["-m", "tests.bench.detection.probe", "{fw}", "--spec", str(spec_file),
                                           "--data", str(folder)], "detection probe", timeout=1800)


def _has_detector(framework: str) -> bool:
    return support.has_detector(framework, "current")


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_detector_trains_in_every_framework(probes, framework):
    if framework not in probes:
        pytest.fail(support.refusal(framework, "current"))
    result = probes[framework]
    assert result["param_count"] == HAND_COUNT
    assert all(0 < loss < 20 for loss in result["losses"]), result["losses"]
    assert result["losses"][-1] < result["losses"][0], f"{framework}: the loss did not fall: {result['losses']}"
    assert len(result["maps"]) == len(result["losses"]) and all(0.0 <= m <= 1.0 for m in result["maps"])
    assert result["map_again"] == result["maps"][-1]
    assert result["roi_max_abs_diff"] < ROI_TOLERANCE, (framework, result["roi_op"], result["roi_max_abs_diff"])


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_same_weights_give_the_same_losses_and_outputs_in_every_framework(probes, framework):
    if framework not in probes:
        pytest.fail(support.refusal(framework, "current"))
    assert len(probes) >= 3, f"parity needs three frameworks or more for a median, not {sorted(probes)}"
    mine = probes[framework]["parity"]
    for name in det.LOSS_NAMES:
        median = float(np.median([result["parity"]["losses"][name] for result in probes.values()]))
        assert mine["losses"][name] == pytest.approx(median, rel=LOSS_RTOL), (framework, name)
    for output in ("logits", "boxes"):
        median = np.median([np.asarray(result["parity"][output]) for result in probes.values()], axis=0)
        difference = np.abs(np.asarray(mine[output]) - median).max()
        assert difference <= OUTPUT_RTOL * np.abs(median).max(), (framework, output, difference)
