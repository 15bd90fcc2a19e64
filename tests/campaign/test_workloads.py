"""The workload specs' quick profiles learn: every cpu-lstm workload, trained at its quick sizes in PyTorch and
Keras on synthetic data through `python -m campaign run` (the local runner's environments, DLREPRO_VENV_ROOT),
ends with a test accuracy clearly above its majority rate, the accuracy of always guessing the most frequent
label of the run's own test rows (bench.frameworks.common.majority_rate). Each run is trained once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import prepared, schema
from bench.frameworks import common
from campaign import specs

REPO = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("pytorch", "keras")
WORKLOADS = tuple(specs.load_targets()["cpu-lstm"]["workloads"])
# How far above the majority rate a quick run must end: a run that learnt nothing ends at the rate itself
# (PTB's 2-epoch quick runs did, at 0.0494), and one that learns clears it by 0.09 or more.
MARGIN = 0.05

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """{(framework, workload): run folder} of one quick campaign on synthetic data, two threads per run."""
    root = tmp_path_factory.mktemp("quick")
    datasets = sorted({specs.load(w)["dataset"] for w in WORKLOADS})
    subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", str(root / "data"), "--datasets",
                    *datasets, "-q"], cwd=REPO, check=True)
    subprocess.run([sys.executable, "-m", "campaign", "run", "--frameworks", " ".join(FRAMEWORKS),
                    "--workloads", " ".join(WORKLOADS), "--profile", "quick", "--repeats", "1", "--data",
                    "synthetic", "--data-root", str(root / "data"), "--results", str(root / "results"),
                    "--campaign", "quick", "--threads", "2", "--runner", "local"],
                   cwd=REPO, check=True, timeout=3600)
    runs = {}
    for run_dir in schema.iter_run_dirs(root / "results" / "quick"):
        config = schema.read_run(run_dir)["config"]
        runs[(config["framework"], config["workload"])] = run_dir
    return runs


def majority_rate_of(run_dir: Path) -> float:
    """The majority rate of the test rows a run was evaluated on (its request's rows of the prepared data)."""
    request = json.loads((run_dir / "request.json").read_text())
    data = prepared.load(Path(request["data"]["path"]), request["data"]["train_indices"],
                         request["data"]["test_indices"])
    data = prepared.bind_roles(data, request["spec"].get("arrays"))
    return common.majority_rate(data.test["y"], data.test.get("y_len"))


@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_quick_profile_learns_above_the_majority_rate(quick_runs, framework, workload):
    run = schema.read_run(quick_runs[(framework, workload)])
    assert run["status"] == "ok", run["failure"]
    floor = majority_rate_of(quick_runs[(framework, workload)])
    accuracy = run["results"]["test_accuracy"]
    assert accuracy > floor + MARGIN, f"{framework} {workload}: test accuracy {accuracy:.4f}, majority rate {floor:.4f}"
