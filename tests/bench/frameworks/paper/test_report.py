"""Paper-era runs in the report: trained here through the entrypoint (MXNet 1.3.0 on Python 3.11)
beside current-era runs of the same workloads and data (MXNet 1.9.1), one campaign folder, one
report that keeps the eras apart and says where the paper-era runs really ran."""

import pytest

from analysis import analyze
from bench import schema
from campaign import requests
from campaign.execute import execute_one
from campaign.plan import PlannedRun
from campaign.runners.local import LocalRunner
from tests.bench.frameworks.paper import harness

pytestmark = pytest.mark.slow
WORKLOADS = ("cnn-mnist", "lstm-imdb")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> str:
    """report.md of one campaign holding both eras of MXNet on WORKLOADS."""
    root = tmp_path_factory.mktemp("eras")
    paper = harness.run("mxnet", list(WORKLOADS), root)
    campaign_dir = root / "results" / "paper-py311"
    runner = LocalRunner()
    environment = runner.prepare("mxnet")
    for workload in WORKLOADS:
        spec = schema.read_run(paper[workload])["spec"]  # the same resolved spec and the same data
        dataset = harness.write_prepared(root / "data" / workload, spec)
        req = requests.resolve(
            framework="mxnet", era="current", workload=workload, profile="smoke", spec=spec, dataset=dataset,
            device="cpu", threads=1, seed=0, repeat=1, campaign="paper-py311", runner="local",
            environment=environment)
        assert execute_one(PlannedRun(req, f"mxnet {workload} current"), runner, campaign_dir, 900)["status"] == "ok"
    outputs = analyze(campaign_dir, root / "report")
    return outputs.report_md.read_text()


def test_both_eras_ran_and_are_reported_apart(report):
    section = report.split("## Paper era vs current era", 1)[1].split("\n## ", 1)[0]
    for workload in WORKLOADS:
        row = next(line for line in section.splitlines() if line.startswith(f"| {workload} | mxnet |"))
        assert "1.3.0" in row and "1.9.1" in row, row
    overview = report.split("## Runs overview", 1)[1].split("\n## ", 1)[0]
    for era in ("paper", "current"):  # one row per era: never pooled as repeats of one thing
        assert all(f"| {w} | mxnet | {era} | cpu | 1 | 0 |" in overview for w in WORKLOADS), overview


def test_the_report_says_where_the_paper_era_runs_ran(report):
    assert "paper-era framework versions on Python 3.11, outside their image: a test environment" in report
    assert "## Departures from the paper's setup" in report
