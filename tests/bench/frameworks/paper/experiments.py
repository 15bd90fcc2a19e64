"""The other studies' protocols and layers in the paper images, planned the way `make <experiment> ERA=paper` plans
them (campaign.plan: the framework's declaration decides what is planned and what is refused in one line) and run
through the docker runner like harness.py's runs.

Each case is an experiment and one of its workloads, picked for what it needs beyond DLBench's epochs of its own
layers (CASES). A paper module's declaration (bench/frameworks/<framework>/__init__.py, held to the module's source
by tests/bench/frameworks/test_capabilities.py) says which it can run; these tests hold the declaration to the image:
every case the planner plans must finish in the 2018 framework with the parameters counted from the plan alone
(tests/plancount.py), and every case it leaves out must be refused in one line naming why. The smoke profile, one
thread (a thread sweep's first point), the kit's synthetic data for a dataset workload (data/synthetic.py)."""

from __future__ import annotations

import contextlib
import io
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench import generated, measurement, modelplan, schema
from campaign import specs, study
from campaign.execute import execute_one
from campaign.plan import build_matrix, plan
from data.synthetic import make_synthetic
from tests import background, plancount
from tests.bench.frameworks.paper import harness

CAMPAIGN = "paper-experiments"
# (experiment, workload): what each needs beyond DLBench's epochs of conv/pool/dense/lstm layers.
CASES = (
    ("shi-cpu", "resnet56-cifar10"),  # step(); residual blocks, batchnorm, bias-free convs, global average pooling
    ("shi-cpu", "lstm32-ptb"),  # step() through an LSTM language model
    ("ilkarman-features-cpu", "resnet50-features-synthetic"),  # infer(); the features output; generated data
    ("ilkarman-train-cpu", "gru-imdb"),  # a GRU
    ("shams-cpu", "googlenet-synthetic"),  # concat (inception branches), average pooling
    ("wu-cpu-defaults", "wu-tf-cifar10"),  # local response normalization
)
REFUSAL = re.compile(r"^skipping (?P<workload>\S+) for (?P<framework>\S+)(?: at .*?)?: (?P<why>.+)$")


@dataclass
class PlannedCases:
    """A framework's cases in its paper image: {case: run folder} for the planned ones, {case: the planner's line}
    for the refused ones."""

    framework: str
    runs: dict[tuple[str, str], Path]
    refused: dict[tuple[str, str], str]

    def record(self, case: tuple[str, str]) -> dict:
        """The case's run.json, validated, once it shows status ok."""
        return harness.finished(self.runs[case])


def run_cases(framework: str, root: Path) -> PlannedCases:
    """Plan every case for `framework` in the paper era (smoke profile, synthetic data, one repeat) and run the
    planned ones through the docker runner, each at its experiment's first sweep point."""
    data_root, campaign_dir = root / "data", root / "results" / CAMPAIGN
    campaign_dir.mkdir(parents=True, exist_ok=True)
    docker = harness.runner(data_root)
    runs, refused, started = {}, {}, time.perf_counter()
    for target, workload in CASES:
        spec = specs.load(workload, "smoke")
        if not generated.is_generated(spec):  # the data a DATA=synthetic campaign reads
            make_synthetic(spec["dataset"], data_root, progress=False)
        matrix = build_matrix([framework], [workload], "cpu", "smoke", 1, "synthetic", era=harness.ERA,
                              experiment=study.experiment(target))
        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            planned = plan(matrix, docker, CAMPAIGN, campaign_dir, data_root, threads=1)
        lines = [m for m in map(REFUSAL.match, said.getvalue().splitlines()) if m]
        if not planned:
            assert len(lines) == 1, said.getvalue()
            refused[(target, workload)] = lines[0]["why"]
            continue
        first = planned[0]
        execute_one(first, docker, campaign_dir, harness.RUN_TIMEOUT_S)
        runs[(target, workload)] = campaign_dir / first.request["run_id"]
    sys.stderr.write(f"paper image {framework}: {len(runs)} of {len(CASES)} experiment cases run, "
                     f"{len(refused)} refused, in {time.perf_counter() - started:.0f} s\n")
    return PlannedCases(framework, runs, refused)


def cases_fixture(framework: str, module: str, weight: float):
    """A module-scoped fixture `cases`: run_cases' output, in the background (tests/background.py)."""

    def run(tmp_path_factory) -> PlannedCases:
        return run_cases(framework, harness.mktemp(tmp_path_factory, f"{framework}-cases"))

    return background.fixture(f"paper image {framework} cases", run, weight=weight, module=module,
                              fixture_name="cases")


# -- the tests every paper-image module makes in the same words (imported there, collected with its `cases`) ----
SHARED_TESTS = ["test_each_case_is_planned_and_run_or_refused_in_one_line", "test_planned_cases_ran_their_protocol"]


def test_each_case_is_planned_and_run_or_refused_in_one_line(cases):
    assert set(cases.runs) | set(cases.refused) == set(CASES) and not set(cases.runs) & set(cases.refused)
    for case, why in cases.refused.items():
        assert why and "\n" not in why and len(why) < 300, (case, why)
    for case in cases.runs:
        record = cases.record(case)
        assert record["config"]["era"] == harness.ERA and record["config"]["framework"] == cases.framework
        assert record["environment"]["framework_version"] == harness.pinned(cases.framework, cases.framework)


def test_planned_cases_ran_their_protocol(cases):
    for (target, workload), run_dir in cases.runs.items():
        record = cases.record((target, workload))
        spec = record["spec"]
        protocol = measurement.of_spec(spec)["protocol"]
        assert record["timing"].get("protocol", measurement.EPOCHS) == protocol, (workload, record["timing"])
        layers = modelplan.plan(spec).layers
        if not any(layer.type == "lstm" for layer in layers):  # an LSTM's bias count differs by framework
            assert record["model"]["trainable_params"] == plancount.planned_params(layers), workload
        if protocol == measurement.EPOCHS:
            assert record["results"]["epochs_completed"] == spec["training"]["epochs"], workload
            continue
        rows = list(schema.read_iterations(run_dir))
        timing = record["timing"]
        assert timing["measured_iterations"] == measurement.of_spec(spec)["iterations"], workload
        assert len(rows) == timing["warmup_iterations"] + timing["measured_iterations"], (workload, len(rows))
        assert all(math.isfinite(row["loss"]) and row["time_s"] > 0 for row in rows), workload
        if protocol == measurement.INFERENCE:
            assert record["model"]["output_values"] == modelplan.output_values(modelplan.plan(spec)), workload
            assert record["results"]["images_per_s"] > 0, workload
