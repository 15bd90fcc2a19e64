"""The quick profiles that depart from the paper's setup to learn in minutes (lstm-ptb, seq2seq-manythings: a
profile with a `departure`) do learn: trained at their quick sizes on synthetic data through
`python -m campaign run` (the local runner's environments, DLREPRO_VENV_ROOT), each ends with a test accuracy
clearly above its majority rate, the accuracy of always guessing the most frequent label of the run's own
test rows. The rate run.json records (dataset.test_majority_rate, computed in the run) is checked against one
computed here from the prepared arrays the run's request names.

PyTorch trains them here; CI's docker campaign runs `make cpu-lstm PROFILE=quick` in PyTorch and Keras, in
images and locally, and requires the same of every one of those runs (analysis.summary.not_learnt).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis.summary import LEARNT_MARGIN_PP
from bench import prepared, request, schema
from campaign import specs, study

REPO = Path(__file__).resolve().parents[2]
DEPARTING = tuple(w for w in study.experiment("cpu-lstm").workloads if "quick" in specs.departing_profiles(w))

pytestmark = pytest.mark.slow


def test_the_quick_profiles_that_depart_are_the_two_that_learnt_nothing():
    assert DEPARTING == ("lstm-ptb", "seq2seq-manythings")


@pytest.fixture(scope="module")
def quick_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of one quick PyTorch campaign on synthetic data (data/, results/quick/), two threads per run."""
    root = tmp_path_factory.mktemp("quick")
    datasets = sorted({specs.load(w)["dataset"] for w in DEPARTING})
    subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", str(root / "data"), "--datasets",
                    *datasets, "-q"], cwd=REPO, check=True)
    subprocess.run([sys.executable, "-m", "campaign", "run", "--frameworks", "pytorch",
                    "--workloads", " ".join(DEPARTING), "--profile", "quick", "--repeats", "1", "--data",
                    "synthetic", "--data-root", str(root / "data"), "--results", str(root / "results"),
                    "--campaign", "quick", "--threads", "2", "--runner", "local"],
                   cwd=REPO, check=True, timeout=1800)
    return root


@pytest.fixture(scope="module")
def quick_runs(quick_root: Path) -> dict[str, Path]:
    """{workload: run folder} of the quick campaign."""
    return {schema.read_run(d)["config"]["workload"]: d for d in schema.iter_run_dirs(quick_root / "results" / "quick")}


def majority_rate_of(run_dir: Path, data_root: Path) -> float:
    """The most frequent label's share of the test labels that count, from the prepared arrays the run read
    (its request's data.path, under `data_root`)."""
    req = json.loads((run_dir / "request.json").read_text())
    data = prepared.load(request.data_folder(req["data"], data_root), req["data"]["train_indices"],
                         req["data"]["test_indices"])
    test = prepared.bind_roles(data, req["spec"].get("arrays")).test
    y, lengths = np.asarray(test["y"]), test.get("y_len")
    if lengths is not None:  # seq2seq: each row's first y_len target tokens count
        y = np.concatenate([row[:n] for row, n in zip(y, lengths, strict=True)])
    return float(np.bincount(y.ravel()).max() / y.size)


@pytest.mark.parametrize("workload", DEPARTING)
def test_the_quick_profile_learns_above_the_majority_rate(quick_root, quick_runs, workload):
    run = schema.read_run(quick_runs[workload])
    assert run["status"] == "ok", run["failure"]
    floor = majority_rate_of(quick_runs[workload], quick_root / "data")
    assert run["dataset"]["test_majority_rate"] == pytest.approx(floor, abs=1e-12)
    accuracy = run["results"]["test_accuracy"]
    assert accuracy > floor + LEARNT_MARGIN_PP / 100, f"{workload}: test accuracy {accuracy:.4f}, majority {floor:.4f}"


@pytest.mark.parametrize("workload", DEPARTING)
def test_the_run_scores_its_final_weights_as_the_study_authors_did(quick_runs, workload):
    """bench/seqaccuracy.py's own definition on the trainer's logits is the framework's evaluate(); the others count
    more steps: Many things' padding (never fewer right than the real steps alone), none on PTB's windows."""
    run = schema.read_run(quick_runs[workload])
    scored = run["results"]["authors_accuracy"]
    assert scored["real_tokens"] == pytest.approx(run["results"]["test_accuracy"], abs=1e-6)
    if workload == "lstm-ptb":  # windows without padding: every definition counts the same steps
        assert scored["padding_counted"] == scored["end_step_counted"] == scored["real_tokens"]
    else:
        assert scored["padding_counted"] != scored["real_tokens"] and scored["end_step_counted"] is not None
