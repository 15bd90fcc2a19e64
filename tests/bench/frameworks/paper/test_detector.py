"""frcnn-voc2012's detector in the paper images whose framework has one (bench/detection/support.py: MXNet 1.3.0,
Chainer 4.5.0 and Theano 1.0.2), run by inimage.py in each image, bounded as a run's container is: three epochs of
the smoke profile on a synthetic VOC2012 in the real prepared format (the loss falls, the mAP in [0, 1], the hand
parameter count), then bench/detection/parity.py's fixed weights, image and RoIs, whose losses and outputs must be
current PyTorch's (its environment runs tests/bench/detection/probe.py on the same input) within the current era's
tolerances: the 2018 frameworks compute the same detector as today's. TensorFlow 1.11 and Keras 2.2.4 have no
detector module; the planner refuses them in one line (tests/campaign/test_plan.py)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.detection import detector as det
from bench.detection import support
from campaign import specs
from data import synthetic
from tests import background
from tests.bench.detection.test_frameworks import HAND_COUNT, LOSS_RTOL, OUTPUT_RTOL
from tests.bench.frameworks import check
from tests.bench.frameworks.paper import harness

pytestmark = [pytest.mark.slow, pytest.mark.paper_image]

WORKLOAD = "frcnn-voc2012"


def paper_test_frameworks() -> list[str]:
    """The frameworks whose paper images `make test-paper` builds (the Makefile's PAPER_TEST_FRAMEWORKS)."""
    found = re.search(r"^PAPER_TEST_FRAMEWORKS = (.+)$", (harness.REPO / "Makefile").read_text(), re.MULTILINE)
    assert found, "the Makefile names no PAPER_TEST_FRAMEWORKS"
    return found.group(1).split()


FRAMEWORKS = tuple(fw for fw in paper_test_frameworks() if support.has_detector(fw, harness.ERA))


def _run(tmp_path_factory) -> dict:
    root = harness.mktemp(tmp_path_factory, "detector")
    data_root = root / "data"
    folder = synthetic.make_synthetic("voc2012", data_root, sizes=(8, 4), progress=False)
    spec = specs.load(WORKLOAD, "smoke")
    inside = str(Path(harness.DATA_MOUNT) / folder.relative_to(data_root))
    out = {}
    for framework in FRAMEWORKS:
        out[framework] = harness.run_in_image(framework, data_root, {
            "framework": framework, "padding": {}, "evaluations": None, "extra": [], "data": {},
            "detector": {"spec": spec, "data": inside}})["detector"]
        sys.stderr.write(f"paper image {framework} detector: losses {out[framework]['losses']}\n")
    spec_file = root / "spec.json"
    spec_file.write_text(json.dumps(spec))
    out["reference"] = check.run_in_env("pytorch", ["-m", "tests.bench.detection.probe", "pytorch", "--spec",
                                                    str(spec_file), "--data", str(folder), "--epochs", "0"],
                                        "detection probe", timeout=900)["parity"]
    for framework in FRAMEWORKS:
        losses, reference = out[framework]["parity"]["losses"], out["reference"]["losses"]
        worst = max(abs(losses[name] / reference[name] - 1) for name in det.LOSS_NAMES)
        sys.stderr.write(f"paper image {framework} detector: losses within {worst:.1e} (relative) of current "
                         "PyTorch's on the fixed input\n")
    return out


detectors = background.fixture("paper image detectors", _run, weight=420, module=__name__, fixture_name="detectors")


def test_some_paper_image_has_a_detector():
    assert {"mxnet", "chainer", "theano"} <= set(FRAMEWORKS), FRAMEWORKS


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_detector_trains_in_its_paper_image(detectors, framework):
    result = detectors[framework]
    assert result["param_count"] == HAND_COUNT
    assert all(0 < loss < 20 for loss in result["losses"]), result["losses"]
    assert result["losses"][-1] < result["losses"][0], f"{framework}: the loss did not fall: {result['losses']}"
    assert all(0.0 <= m <= 1.0 for m in result["maps"]) and len(result["maps"]) == len(result["losses"])
    assert result["roi_op"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_paper_image_computes_what_current_pytorch_does(detectors, framework):
    mine, reference = detectors[framework]["parity"], detectors["reference"]
    for name in det.LOSS_NAMES:
        assert mine["losses"][name] == pytest.approx(reference["losses"][name], rel=LOSS_RTOL), (framework, name)
    for output in ("logits", "boxes"):
        want = np.asarray(reference[output])
        difference = np.abs(np.asarray(mine[output]) - want).max()
        assert difference <= OUTPUT_RTOL * np.abs(want).max(), (framework, output, difference)
