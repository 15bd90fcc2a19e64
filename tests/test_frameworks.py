"""Framework modules, run for real inside their hash-locked environments.

Each framework's environment is built with bench.envs.ensure_env (minutes on first use, then
cached), and bench.frameworks._probe trains every workload spec in it on small learnable data.
The two probes run at the same time with one thread each (2-core machines), which also checks
that DLREPRO_THREADS is obeyed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench import envs, spec
from bench.frameworks import known_frameworks

REPO = Path(__file__).resolve().parents[1]
FRAMEWORKS = ("pytorch", "keras")
WORKLOADS = ("cnn-mnist", "lstm-imdb")
# versions() key -> the package pinned for it in the framework's lock.
PINNED = {
    "pytorch": {"torch": "torch", "numpy": "numpy"},
    "keras": {"keras": "keras", "tensorflow": "tensorflow-cpu", "numpy": "numpy"},
}


def test_helper_modules_are_not_frameworks():
    names = known_frameworks()
    assert set(FRAMEWORKS) <= set(names)
    assert not [n for n in names if n.startswith("_")]


@pytest.fixture(scope="module")
def probes() -> dict[str, dict]:
    """Probe output per framework: {"workloads": {name: {...}}, "versions", "nan_raised", ...}."""
    pythons = {fw: envs.ensure_env(fw).python for fw in FRAMEWORKS}
    env = {**os.environ, "PYTHONPATH": str(REPO), "DLREPRO_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    procs = {
        fw: subprocess.Popen(
            [str(python), "-m", "bench.frameworks._probe", fw],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )
        for fw, python in pythons.items()
    }
    out = {}
    for fw, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"{fw} probe failed (exit {proc.returncode}):\n{stderr[-4000:]}"
        out[fw] = json.loads(stdout.strip().splitlines()[-1])
    sys.stderr.write(
        "probe seconds: "
        + ", ".join(f"{fw}/{w}={r['seconds']}" for fw, o in out.items() for w, r in o["workloads"].items())
        + "\n"
    )
    return out


@pytest.mark.slow
@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_loss_falls_and_accuracy_is_sane(probes, framework, workload):
    result = probes[framework]["workloads"][workload]
    losses = result["losses"]
    assert all(0 < loss < 10 for loss in losses), losses
    assert losses[-1] < losses[0], f"{framework} {workload}: loss did not fall: {losses}"
    assert 0.0 <= result["test_accuracy"] <= 1.0
    assert all(0.0 <= acc <= 1.0 for acc in result["train_accuracy"])
    # Dropout is off at test time, so two evaluations of the same weights agree exactly.
    assert result["test_accuracy"] == result["test_accuracy_again"]
    if workload == "cnn-mnist":
        chance = 1 / spec.load(workload)["model"]["num_classes"]
        assert result["test_accuracy"] > chance + 0.05, result["test_accuracy"]


@pytest.mark.slow
def test_cnn_parameter_counts_are_equal(probes):
    counts = {fw: probes[fw]["workloads"]["cnn-mnist"]["param_count"] for fw in FRAMEWORKS}
    # conv 3x3x1x32+32, conv 3x3x32x64+64, dense 12*12*64*128+128, dense 128*10+10
    assert counts == {fw: 320 + 18_496 + 1_179_776 + 1_290 for fw in FRAMEWORKS}


@pytest.mark.slow
def test_lstm_parameter_counts_differ_by_the_second_bias(probes):
    """torch.nn.LSTM keeps two bias vectors per gate (b_ih and b_hh, as cuDNN does), Keras one.

    Same computation (the two biases only ever appear as their sum), 4 gates x units more numbers.
    """
    layers = spec.load("lstm-imdb")["model"]["layers"]
    units = next(layer["units"] for layer in layers if layer["type"] == "lstm")
    torch_count = probes["pytorch"]["workloads"]["lstm-imdb"]["param_count"]
    keras_count = probes["keras"]["workloads"]["lstm-imdb"]["param_count"]
    assert keras_count == 5000 * 32 + 4 * (32 * units + units * units + units) + (units + 1) == 213_301
    assert torch_count - keras_count == 4 * units


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_lstm_reads_the_last_real_step(probes, framework):
    # Outputs must not change when the post-padding is cut off: the padding is never read.
    assert probes[framework]["workloads"]["lstm-imdb"]["padding_max_abs_diff"] < 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_non_finite_loss_raises(probes, framework):
    assert probes[framework]["nan_raised"], probes[framework]["nan_message"]
    assert re.search(r"(nan|inf)", probes[framework]["nan_message"])


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_info_records_what_was_used(probes, framework):
    for workload in WORKLOADS:
        info = probes[framework]["workloads"][workload]["info"]
        assert info["device_name"]
        assert info["threads"]["intra_op"] == 1  # DLREPRO_THREADS=1 was obeyed
        assert info["data_layout"]
        assert info["optimizer"]["name"] == spec.load(workload)["training"]["optimizer"]["name"]
        expected_kernel = "conv2d" if workload.startswith("cnn") else "lstm"
        assert expected_kernel in info["kernels"]


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_reported_versions_match_the_lock(probes, framework):
    lock = envs.ensure_env(framework).lock_path.read_text()
    versions = probes[framework]["versions"]
    for key, package in PINNED[framework].items():
        pinned = re.search(rf"^{re.escape(package)}==(\S+)", lock, re.MULTILINE)
        assert pinned, f"{package} is not pinned in the {framework} lock"
        assert versions[key] == pinned.group(1), f"{framework} imported {key} {versions[key]}"
