"""Paper-era runs in the report: MXNet 1.3.0 trained in its paper image (harness.run_paper: the docker runner,
CPython 3.6.15) beside current-era runs of the same workloads, specs and data (MXNet 1.9.1, the local runner's
environment), two campaign folders analysed together: one report that keeps the eras apart, with no "outside
their image" caveat (every paper-era run ran in its image)."""

import shutil

import pytest

from analysis import analyze
from bench import schema
from campaign import requests
from campaign.execute import execute_one
from campaign.plan import PlannedRun
from campaign.runners.local import LocalRunner
from tests import background
from tests.bench.frameworks.paper import harness

pytestmark = [pytest.mark.slow, pytest.mark.paper_image]
FRAMEWORK = "mxnet"
WORKLOADS = ("cnn-mnist", "lstm-imdb")
CURRENT = "current-era"


def _report(tmp_path_factory) -> str:
    """report.md of the paper-image campaign and a current-era campaign of MXNet on WORKLOADS, analysed together."""
    root = harness.mktemp(tmp_path_factory, "eras")
    paper = harness.run_paper(FRAMEWORK, root, WORKLOADS, nan=False)
    current_dir = root / "results" / CURRENT
    current_dir.mkdir(parents=True)
    runner = LocalRunner(data_root=paper.data_root)
    environment = runner.prepare(FRAMEWORK)
    for workload in WORKLOADS:
        spec = schema.read_run(paper.runs[workload])["spec"]  # the same resolved spec and the same data
        req = requests.resolve(
            framework=FRAMEWORK, era="current", workload=workload, profile="smoke", spec=spec,
            dataset=harness.write_prepared(paper.data_root, spec), device="cpu", threads=1, seed=0, repeat=1,
            campaign=CURRENT, runner=runner.name, environment=environment)
        record = execute_one(PlannedRun(req, f"{FRAMEWORK} {workload} current"), runner, current_dir, 900)
        assert record["status"] == "ok", record["failure"]
    outputs = analyze([paper.campaign_dir, current_dir], root / "report")
    shutil.rmtree(root / "data")  # the report is what the tests read
    return outputs.report_md.read_text()


# Run in the background beside the paper-image frameworks' runs (tests/background.py).
report = background.fixture("paper image report", _report, weight=35, module=__name__, fixture_name="report")


def test_both_eras_ran_and_are_reported_apart(report):
    section = report.split("## Paper era vs current era", 1)[1].split("\n## ", 1)[0]
    for workload in WORKLOADS:
        row = next(line for line in section.splitlines() if line.startswith(f"| {workload} | mxnet |"))
        assert "1.3.0" in row and "1.9.1" in row, row
    overview = report.split("## Runs overview", 1)[1].split("\n## ", 1)[0]
    # One row per era (never pooled as repeats of one thing), each with its runner: the paper era ran in its image.
    for era, runner in (("paper", "docker"), ("current", "local")):
        assert all(f"| {w} | mxnet | {era} | cpu | {runner} | 1 | 0 |" in overview for w in WORKLOADS), overview


def test_the_paper_era_runs_are_not_called_a_test_environment(report):
    # The paper-era runs ran in their image on CPython 3.6: no "outside their image" caveat.
    assert "outside their image" not in report
    assert "## Departures from the paper's setup" in report
