"""Shi et al.'s study file (campaign/studies/shi.toml) and its FCN-R workload (fcn-r-mnist): the experiments
time mini-batches of one network on CPU (a thread sweep) and GPU, and every current-era framework builds the
same 784-2048-4096-1024-10 network, trained at the smoke sizes through `python -m campaign run` (the local
runner's environments, DLREPRO_VENV_ROOT) on synthetic MNIST."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench import schema
from campaign import specs, study

REPO = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("pytorch", "tensorflow", "mxnet", "keras", "chainer", "theano")
# Weights + biases of each dense layer of FCN-R (784 inputs, 2048-4096-1024 hidden, 10 classes).
FCN_R_PARAMS = (784 * 2048 + 2048) + (2048 * 4096 + 4096) + (4096 * 1024 + 1024) + (1024 * 10 + 10)


def test_shi_experiments_time_fcn_r_on_cpu_threads_and_gpu():
    shi = study.load_study("shi")
    assert (shi.title, shi.claims) == ("Shi et al. (CCBD 2016)", "Shi et al.")
    for name in shi.reference:
        assert (REPO / "analysis" / "reference" / name).is_file(), name
    cpu, gpu = shi.experiments["shi-cpu"], shi.experiments["shi-gpu"]
    assert (cpu.device, gpu.device) == ("cpu", "gpu")
    assert cpu.workloads == gpu.workloads == ("fcn-r-mnist",)
    assert cpu.measurement == gpu.measurement
    assert cpu.measurement["protocol"] == "iterations" and cpu.measurement["warmup_epochs"] == 1
    assert cpu.points(physical_cores=2) == [{"threads": 1}, {"threads": 2}, {"threads": 4}]
    assert gpu.points() == [{}]


def test_fcn_r_is_shis_network_at_table_7s_batch():
    spec = specs.load("fcn-r-mnist")
    dense = [layer for layer in spec["model"]["layers"] if layer["type"] == "dense"]
    assert [layer["units"] for layer in dense] == [2048, 4096, 1024, 10]
    assert [layer["activation"] for layer in dense] == ["sigmoid"] * 3 + ["softmax"]
    assert spec["training"]["batch_size"] == 1024
    # The quick profile's warm-up epoch is a few mini-batches of the paper's size.
    quick = specs.load("fcn-r-mnist", "quick")
    assert quick["training"]["batch_size"] == 1024 and quick["data"]["train_subset"] // 1024 <= 4


@pytest.mark.slow
def test_every_framework_builds_fcn_r_with_the_hand_counted_parameters(tmp_path):
    subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", str(tmp_path / "data"), "--datasets",
                    "mnist", "-q"], cwd=REPO, check=True)
    subprocess.run([sys.executable, "-m", "campaign", "run", "--workloads", "fcn-r-mnist", "--frameworks",
                    " ".join(FRAMEWORKS), "--profile", "smoke", "--repeats", "1", "--data", "synthetic",
                    "--data-root", str(tmp_path / "data"), "--results", str(tmp_path / "results"),
                    "--campaign", "t", "--threads", "2", "--runner", "local"], cwd=REPO, check=True, timeout=3600)
    runs = {run["config"]["framework"]: run
            for run in map(schema.read_run, schema.iter_run_dirs(tmp_path / "results" / "t"))}
    assert sorted(runs) == sorted(FRAMEWORKS)
    for framework, run in runs.items():
        assert run["status"] == "ok", (framework, run["failure"])
    counts = {framework: run["model"]["trainable_params"] for framework, run in runs.items()}
    assert counts == dict.fromkeys(FRAMEWORKS, FCN_R_PARAMS)
