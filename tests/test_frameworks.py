"""Framework modules, run for real inside their hash-locked environments.

Each framework's environment is built with bench.envs.ensure_env (minutes on first use, then
cached), and bench.frameworks._probe trains every workload spec in it on small learnable data.
The two probes run at the same time with one thread each (2-core machines), which also checks
that DLREPRO_THREADS is obeyed. The CNN specs the probe does not train (the large ones) are only
built, to check that both frameworks build the same model (equal parameter counts).
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
WORKLOADS = ("cnn-mnist", "lstm-imdb", "cnn-cifar10", "cnn-svhn")
# Workloads whose smoke-sized training must lower the loss within the probe's 3 epochs. cnn-cifar10
# and cnn-svhn train too (3 x 4 and 3 x 2 steps), but their loss barely moves that soon (PyTorch's
# default initialization: 2.302 -> 2.300 in 8 epochs of cnn-cifar10), so they are not held to it.
LEARNS = ("cnn-mnist", "lstm-imdb")
# Every other CNN spec (cnn-cifar100, the largest): built but not trained, to keep this test short.
CNNS = tuple(w for w in spec.known_workloads() if spec.load(w)["family"] == "cnn")
COUNT_ONLY = tuple(w for w in CNNS if w not in WORKLOADS)
# Runs inside a framework's environment: builds each named spec's trainer and prints its parameter count.
COUNT_SCRIPT = """
import json, sys
from bench import spec
from bench.frameworks import load
from bench.frameworks._probe import probe_data
module = load(sys.argv[1])
counts = {}
for name in sys.argv[2].split(","):
    workload = spec.load(name, "smoke")
    counts[name] = module.make_trainer(workload, probe_data(workload), "cpu", 0).param_count()
print(json.dumps(counts))
"""
# versions() key -> the package pinned for it in the framework's lock.
PINNED = {
    "pytorch": {"torch": "torch", "numpy": "numpy"},
    "keras": {"keras": "keras", "tensorflow": "tensorflow-cpu", "numpy": "numpy"},
}


def test_helper_modules_are_not_frameworks():
    names = known_frameworks()
    assert set(FRAMEWORKS) <= set(names)
    assert not [n for n in names if n.startswith("_")]


def _run_in_envs(args: list[str], what: str, timeout: int) -> dict[str, dict]:
    """Run `python *args FRAMEWORK ...` in every framework's environment at once; parse its JSON line."""
    pythons = {fw: envs.ensure_env(fw).python for fw in FRAMEWORKS}
    env = {**os.environ, "PYTHONPATH": str(REPO), "DLREPRO_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    procs = {
        fw: subprocess.Popen(
            [str(python), *[fw if a == "{fw}" else a for a in args]],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )
        for fw, python in pythons.items()
    }
    out = {}
    for fw, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, f"{fw} {what} failed (exit {proc.returncode}):\n{stderr[-4000:]}"
        out[fw] = json.loads(stdout.strip().splitlines()[-1])
    return out


@pytest.fixture(scope="module")
def probes() -> dict[str, dict]:
    """Probe output per framework: {"workloads": {name: {...}}, "versions", "nan_raised", ...}."""
    out = _run_in_envs(
        ["-m", "bench.frameworks._probe", "{fw}", "--workloads", ",".join(WORKLOADS)], "probe", 900
    )
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
    if workload in LEARNS:
        assert losses[-1] < losses[0], f"{framework} {workload}: loss did not fall: {losses}"
    assert 0.0 <= result["test_accuracy"] <= 1.0
    assert all(0.0 <= acc <= 1.0 for acc in result["train_accuracy"])
    # Dropout is off at test time, so two evaluations of the same weights agree exactly.
    assert result["test_accuracy"] == result["test_accuracy_again"]
    if workload == "cnn-mnist":
        chance = 1 / spec.load(workload)["model"]["num_classes"]
        assert result["test_accuracy"] > chance + 0.05, result["test_accuracy"]


@pytest.fixture(scope="module")
def built_counts() -> dict[str, dict[str, int]]:
    """Parameter counts of the CNN specs the probe does not train, per framework: {fw: {workload: n}}."""
    if not COUNT_ONLY:
        return {fw: {} for fw in FRAMEWORKS}
    return _run_in_envs(["-c", COUNT_SCRIPT, "{fw}", ",".join(COUNT_ONLY)], "parameter count", 600)


@pytest.mark.slow
def test_cnn_parameter_counts_are_equal(probes, built_counts):
    counts = {fw: probes[fw]["workloads"]["cnn-mnist"]["param_count"] for fw in FRAMEWORKS}
    # conv 3x3x1x32+32, conv 3x3x32x64+64, dense 12*12*64*128+128, dense 128*10+10
    assert counts == {fw: 320 + 18_496 + 1_179_776 + 1_290 for fw in FRAMEWORKS}
    # Every CNN spec: the same model in every framework (conv 'same' with strides, pools with strides
    # and TensorFlow's 'same' rule included: a wrong output size changes the dense layer's count).
    for workload in CNNS:
        per_fw = {
            fw: probes[fw]["workloads"][workload]["param_count"] if workload in WORKLOADS
            else built_counts[fw][workload]
            for fw in FRAMEWORKS
        }
        assert len(set(per_fw.values())) == 1, f"{workload}: {per_fw}"
        if workload in CNN_PARAMS:
            assert per_fw[FRAMEWORKS[0]] == CNN_PARAMS[workload], workload


# Trainable parameters of the larger CNN specs, worked out by hand.
CNN_PARAMS = {
    # conv 3x3: 3->32, 32->32, 32->64, 64->64 ('same', 'valid', pool 2, twice); dense 6*6*64*512+512, 512*10+10
    "cnn-cifar10": 896 + 9_248 + 18_496 + 36_928 + 1_180_160 + 5_130,
    # conv 5x5 'same': 3->48, 48->64, 64->128, 128->160, 160->192, 3 x 192->192, 2x2 pools with strides
    # 2, 1, 2, 1, ... and 'same' padding (32 -> 2); dense 2*2*192*3072+3072, 3072*10+10
    "cnn-svhn": 3_648 + 76_864 + 204_928 + 512_160 + 768_192 + 3 * 921_792 + 2_362_368 + 30_730,
    # conv 3x3 'same': 3->128, 128->128, 128->256, 256->256, 256->512, 512->512; dense 4*4*512*1024+1024, 1024*100+100
    "cnn-cifar100": 3_584 + 147_584 + 295_168 + 590_080 + 1_180_160 + 2_359_808 + 8_389_632 + 102_500,
}


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
