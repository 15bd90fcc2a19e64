"""ilkarman/DeepLearningFrameworks' ResNet-50 feature extraction
(studies/ilkarman/workloads/resnet50-features-synthetic.toml, studies/ilkarman/study.toml): the network each framework
really builds is the planned ResNet-50 without its head, and a run through the real CLI records seconds per 1,000
images from its forward passes."""

from __future__ import annotations

import pytest

from bench import inference, modelplan, schema
from campaign import specs
from tests.plancount import trainable
from tests.smokecampaign import smoke_runs

WORKLOAD = "resnet50-features-synthetic"
# torchvision's resnet50 (25,557,032) minus its 2048 x 1000 + 1000 head
PARAMS = 23_508_032


def test_the_plan_counts_the_headless_resnet50():
    assert trainable(modelplan.plan(specs.load(WORKLOAD)).layers) == PARAMS


@pytest.mark.slow
# The ResNet-50 in the study's framework among ours and the kit's reference one: every framework's forward-pass hook
# is timed on a small network in tests/bench/test_iterations.py (Theano's ResNet-50 alone takes minutes of g++).
@pytest.mark.parametrize("framework", ("pytorch", "tensorflow"))
def test_a_smoke_run_records_seconds_per_1000_images_and_the_planned_parameters(tmp_path, framework):
    # The smoke profile: 224 x 224 x 3 images in batches of 2, one warm-up pass and two measured ones.
    run = smoke_runs(tmp_path, [framework], target="ilkarman-features-cpu")[(WORKLOAD, framework)]
    assert run["status"] == "ok", run["failure"]
    assert run["model"] == {"trainable_params": PARAMS, "output_values": 2048, "weights": inference.WEIGHTS}
    timing, results = run["timing"], run["results"]
    assert (timing["protocol"], timing["warmup_iterations"], timing["measured_iterations"]) == ("inference", 1, 2)
    assert results["batch_size"] == 2 and results["images_per_s"] > 0
    assert results["s_per_1000_images"] == pytest.approx(1000 * timing["iteration_time_s"]["mean"] / 2)
    run_dir = next(d for d in schema.iter_run_dirs(tmp_path / "results" / "t"))
    rows = schema.read_iterations(run_dir)
    assert [r["phase"] for r in rows] == ["warmup", "measured", "measured"]
    assert run["device_used"]["loss"].startswith("none: a features model")
