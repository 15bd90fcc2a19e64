"""What every framework test checks, run for real inside the framework's hash-locked environment.

run_probe / run_probes build the environment with images.envs.ensure_env (minutes on first use, then
cached), resolve the workloads' smoke specs on the host (campaign.specs) into a JSON file, and run
`python -m tests.bench.frameworks.probe FRAMEWORK --specs FILE` in it with one thread; the assert_*
functions hold a probe's output to the same properties in every framework (test_pytorch_keras.py,
test_tensorflow.py, test_mxnet.py, test_chainer.py, test_theano.py beside this file).
The test_* functions at the end are the tests a one-framework file makes in the same words: such a
file imports them (pytest collects them there, with that file's `probe` fixture); `import *` gets
those in __all__, the ones every such file makes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from bench.modelplan import plan
from campaign import specs as spec
from images import envs
from tests import background

__all__ = [
    "test_loss_falls_and_accuracy_is_sane",
    "test_every_cnn_spec_has_the_keras_count",
    "test_lstm_reads_the_last_real_step",
    "test_non_finite_loss_raises",
]

REPO = Path(__file__).resolve().parents[3]
# Trainable parameters in Keras' convention (one LSTM bias per gate), worked out by hand; equal to
# keras.Model.count_params() of the same spec (keras 3.15; test_pytorch_keras.py checks it).
KERAS_COUNTS = {
    # conv 3x3x1x32+32, conv 3x3x32x64+64, dense 12*12*64*128+128, dense 128*10+10
    "cnn-mnist": 320 + 18_496 + 1_179_776 + 1_290,
    # conv 3x3: 3->32, 32->32, 32->64, 64->64 ('same', 'valid', pool 2, twice); dense 6*6*64*512+512, 512*10+10
    "cnn-cifar10": 896 + 9_248 + 18_496 + 36_928 + 1_180_160 + 5_130,
    # conv 3x3 ('same', 'valid', pool 2, three times): 3->128, 128->128, 128->256, 256->256, 256->512, 512->512
    # (32 -> 30 -> 15 -> 13 -> 6 -> 4 -> 2); dense 2*2*512*1024+1024, 1024*100+100
    "cnn-cifar100": 3_584 + 147_584 + 295_168 + 590_080 + 1_180_160 + 2_359_808 + 2_098_176 + 102_500,
    # conv 5x5 'same': 3->48, 48->64, 64->128, 128->160, 160->192, 3 x 192->192, 2x2 pools with strides
    # 2, 1, 2, 1, ... and 'same' padding (32 -> 2); dense 2*2*192*3072+3072, 3072*10+10
    "cnn-svhn": 3_648 + 76_864 + 204_928 + 512_160 + 768_192 + 3 * 921_792 + 2_362_368 + 30_730,
    # Shi et al.'s AlexNet-R: conv 5x5 'same' 3->32, 32->32, 32->64; pools 3/2 (32 -> 15 -> 7 -> 3); dense 3*3*64*10+10
    "alexnet-r-cifar10": 2_432 + 25_632 + 51_264 + 5_770,
    # Shams et al.'s Caffe LeNet: conv 5x5 1->20, 20->50 ('valid', pools 2/2: 28 -> 24 -> 12 -> 8 -> 4); dense
    # 4*4*50*500+500, 500*10+10
    "lenet-mnist": 520 + 25_050 + 400_500 + 5_010,
    # Shams et al.'s Caffe "quick" ConvNet: conv 5x5 'same' 3->32, 32->32, 32->64; 'same' pools 3/2 (32 -> 16 -> 8
    # -> 4, Caffe's rounded-up sizes); dense 4*4*64*64+64, 64*10+10
    "convnet-cifar10": 2_432 + 25_632 + 51_264 + 65_600 + 650,
    # Shi et al.'s AlexNet-S: conv 3->64 11x11, 64->192 5x5, 192->384, 384->256, 256->256 3x3 (227 -> 55 -> 27 -> 13
    # -> 6); dense 6*6*256*4096+4096, 4096*4096+4096, 4096*1000+1000
    "alexnet-s-synthetic": 23_296 + 307_392 + 663_936 + 884_992 + 590_080 + 37_752_832 + 16_781_312 + 4_097_000,
    # embedding 5000x32, LSTM 4*(32*100 + 100*100 + 100), dense 100+1
    "lstm-imdb": 5000 * 32 + 4 * (32 * 100 + 100 * 100 + 100) + 101,
    # embedding 10000x128, LSTM 128->1024, LSTM 1024->1024, dense 1024*10000+10000 (at every step)
    "lstm-ptb": 10_000 * 128 + 4 * (128 * 1024 + 1024 * 1024 + 1024) + 4 * (2 * 1024 * 1024 + 1024) + 10_250_000,
    # two embeddings 10000x256, two LSTMs 256->256, dense 256*10000+10000
    "seq2seq-manythings": 2 * 10_000 * 256 + 2 * 4 * (2 * 256 * 256 + 256) + 2_570_000,
}
assert KERAS_COUNTS == {
    "cnn-mnist": 1_199_882,
    "cnn-cifar10": 1_250_858,
    "cnn-cifar100": 6_777_060,
    "alexnet-r-cifar10": 85_098,
    "lenet-mnist": 431_080,
    "convnet-cifar10": 145_578,
    "alexnet-s-synthetic": 61_100_840,
    "cnn-svhn": 6_724_266,
    "lstm-imdb": 213_301,
    "lstm-ptb": 24_645_392,
    "seq2seq-manythings": 8_740_624,
}
# The optimizer settings a module records for the stepped-softmax LSTM workloads (the spec's, defaults filled):
# lstm-ptb's Adadelta with the authors' epsilon, seq2seq-manythings' Adam at the authors' lr (docs/notebook-parity.md).
LSTM_OPTIMIZERS = {
    "lstm-ptb": {"name": "adadelta", "lr": 1.0, "rho": 0.95, "epsilon": 1e-6, "weight_decay": 0.0},
    "seq2seq-manythings": {"name": "adam", "lr": 1e-4, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8,
                           "weight_decay": 0.0},
}
# What every framework's probe trains (smoke sizes): every DLBench CNN and LSTM workload, read from the study's
# specs (the detector has tests of its own: tests/bench/detection/).
PROBED = tuple(w for w in spec.known_workloads()
               if spec.load(w)["study"] == "dlbench" and spec.load(w)["family"] in ("cnn", "lstm"))
# Sequence workloads whose LSTM outputs must not depend on padding (the probe measures it).
PADDED = ("lstm-imdb", "seq2seq-manythings")
# The probed CNN specs: built in every framework with KERAS_COUNTS' count. The other studies' networks
# are trained in every framework by their own slow tests (tests/studies/shi/, tests/studies/shams/test_study.py).
CNN_SPECS = tuple(w for w in PROBED if spec.load(w)["family"] == "cnn")


def framework_env() -> dict[str, str]:
    """The environment variables a framework's scripts run with: one thread, the repo importable."""
    return {**os.environ, "PYTHONPATH": str(REPO), "DLREPRO_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}


def run_in_envs(frameworks: Iterable[str], args: Sequence[str], what: str, timeout: int) -> dict[str, dict]:
    """Run `python *args` in every framework's environment at once ("{fw}" in args: the framework's
    name); parse the JSON last line each prints. {framework: output}."""
    pythons = {fw: envs.ensure_env(fw).python for fw in frameworks}
    procs = {
        fw: subprocess.Popen(
            [str(python), *[fw if a == "{fw}" else a for a in args]],
            cwd=REPO, env=framework_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )
        for fw, python in pythons.items()
    }
    out = {}
    for fw, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, f"{fw} {what} failed (exit {proc.returncode}):\n{stderr[-4000:]}"
        out[fw] = json.loads(stdout.strip().splitlines()[-1])
    return out


def run_in_env(framework: str, args: Sequence[str], what: str, timeout: int) -> dict:
    """run_in_envs for one framework: its parsed JSON output."""
    return run_in_envs([framework], args, what, timeout)[framework]


def run_probes(frameworks: Iterable[str], workloads: Iterable[str], timeout: int = 900) -> dict[str, dict]:
    """The probe of each framework, run at the same time: {framework: {"workloads": {name: {...}},
    "versions", "nan_raised", "nan_message"}}."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="probe-specs-") as fh:
        json.dump(smoke_specs(workloads), fh)
        fh.flush()
        out = run_in_envs(frameworks, ["-m", "tests.bench.frameworks.probe", "{fw}", "--specs", fh.name], "probe",
                          timeout)
    sys.stderr.write(
        "probe seconds: "
        + ", ".join(f"{fw}/{w}={r['seconds']}" for fw, o in out.items() for w, r in o["workloads"].items())
        + "\nparameter counts: "
        + ", ".join(f"{fw}/{w}={r['param_count']}" for fw, o in out.items() for w, r in o["workloads"].items())
        + "\n"
    )
    return out


def smoke_specs(workloads: Iterable[str]) -> dict[str, dict]:
    """What the probe reads: {"train": {name: smoke spec}, "nan_check": cnn-mnist's smoke spec}."""
    return {"train": {name: spec.load(name, "smoke") for name in workloads},
            "nan_check": spec.load("cnn-mnist", "smoke")}


def run_probe(framework: str, workloads: Iterable[str], timeout: int = 900) -> dict:
    """One framework's probe output: {"workloads": {name: {...}}, "versions", "nan_raised", "nan_message"},
    and "framework": its name."""
    return {**run_probes([framework], workloads, timeout)[framework], "framework": framework}


def probe_fixture(framework: str, workloads: Iterable[str], module: str, weight: float, timeout: int = 900):
    """A module-scoped fixture `probe`: run_probe(framework, workloads, timeout), run once, in the
    background beside the other framework probes (tests/background.py; `weight`: its rough seconds,
    `module`: the test module's __name__)."""
    workloads = tuple(workloads)
    return background.fixture(f"{framework} probe", lambda _tmp: run_probe(framework, workloads, timeout),
                              weight=weight, module=module, fixture_name="probe")


def assert_trains(result: dict, workload: str, framework: str) -> None:
    """Sane losses and accuracies; the loss falls within the probe's epochs; dropout is off at test
    time; cnn-mnist beats chance."""
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


def lstm_units() -> int:
    layers = spec.load("lstm-imdb")["model"]["layers"]
    return next(layer["units"] for layer in layers if layer["type"] == "lstm")


def assert_keras_counts(counts: dict[str, int]) -> None:
    """Each named spec's parameter count is Keras' count of it."""
    assert counts, "no parameter counts"
    assert counts == {name: KERAS_COUNTS[name] for name in counts}


def assert_every_cnn_spec_counted(counts: dict[str, int]) -> None:
    """Every CNN spec was built, each with Keras' parameter count."""
    assert set(counts) == set(CNN_SPECS)
    assert_keras_counts(counts)


def second_bias(workload: str) -> int:
    """Extra numbers of cuDNN-style LSTMs (b_ih and b_hh) over Keras' one bias: 4 gates x units per LSTM.

    Same computation (the two biases only ever appear as their sum).
    """
    return sum(4 * units for units in plan(spec.load(workload)).lstm_units)


def assert_lstm_second_bias(count: int, workload: str = "lstm-imdb") -> None:
    """A workload's count in a framework whose LSTMs have two bias vectors per gate."""
    units = lstm_units()
    keras_count = 5000 * 32 + 4 * (32 * units + units * units + units) + (units + 1)
    assert keras_count == KERAS_COUNTS["lstm-imdb"] == 213_301
    assert second_bias("lstm-imdb") == 400 and second_bias("lstm-ptb") == 8192
    assert count - KERAS_COUNTS[workload] == second_bias(workload)


def assert_lstm_ignores_padding(probe: dict) -> None:
    # Outputs must not change when the post-padding is cut off: the padding is never read.
    for workload in PADDED:
        if workload in probe["workloads"]:
            assert probe["workloads"][workload]["padding_max_abs_diff"] < 1e-5, workload


def assert_nan_raised(probe: dict) -> None:
    assert probe["nan_raised"], probe["nan_message"]
    assert re.search(r"(nan|inf)", probe["nan_message"])


def checked_infos(probe: dict, workloads: Iterable[str]) -> dict[str, dict]:
    """The named workloads' infos, {workload: info}, once assert_info_basics has passed for each."""
    infos = {workload: probe["workloads"][workload]["info"] for workload in workloads}
    for workload, info in infos.items():
        assert_info_basics(info, workload)
    return infos


def assert_info_basics(info: dict, workload: str) -> None:
    """What every framework's info records: the device, one thread obeyed, the layout, the spec's
    optimizer and the kernel of the workload's family."""
    assert info["device_name"]
    assert info["threads"]["intra_op"] == 1  # DLREPRO_THREADS=1 was obeyed
    assert info["data_layout"]
    assert info["optimizer"]["name"] == spec.load(workload)["training"]["optimizer"]["name"]
    expected_kernel = "conv2d" if workload.startswith("cnn") else "lstm"
    assert expected_kernel in info["kernels"]


def assert_versions_match_lock(framework: str, versions: dict[str, str], pinned: dict[str, str]) -> None:
    """Each reported version (versions() key -> the package pinned for it) is the one in the lock."""
    lock = envs.ensure_env(framework).lock_path.read_text()
    for key, package in pinned.items():
        pin = re.search(rf"^{re.escape(package)}==(\S+)", lock, re.MULTILINE)
        assert pin, f"{package} is not pinned in the {framework} lock"
        assert versions[key] == pin.group(1), f"{framework} imported {key} {versions[key]}"


# -- tests a one-framework file imports, run with its module's `probe` fixture ------------------
@pytest.mark.slow
@pytest.mark.parametrize("workload", PROBED)
def test_loss_falls_and_accuracy_is_sane(probe, workload):
    # Dropout is off at test time (e.g. chainer.config.train False): two evaluations agree exactly.
    assert_trains(probe["workloads"][workload], workload, probe["framework"])


@pytest.mark.slow
def test_every_cnn_spec_has_the_keras_count(probe):
    # Keras' count, worked out by hand in KERAS_COUNTS: conv 'same' with strides and pools with
    # TensorFlow's 'same' rule included (a wrong output size changes the dense layer's count).
    assert_every_cnn_spec_counted({w: probe["workloads"][w]["param_count"] for w in CNN_SPECS})


@pytest.mark.slow
def test_lstm_reads_the_last_real_step(probe):
    assert_lstm_ignores_padding(probe)


@pytest.mark.slow
def test_non_finite_loss_raises(probe):
    assert_nan_raised(probe)
