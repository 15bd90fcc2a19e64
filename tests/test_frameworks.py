"""Framework modules, run for real inside their hash-locked environments.

Each framework's environment is built with bench.envs.ensure_env (minutes on first use, then
cached), and bench.frameworks._probe trains every workload spec in it on small learnable data.
The two probes run at the same time with one thread each (2-core machines), which also checks
that DLREPRO_THREADS is obeyed. The CNN specs the probe does not train (the large ones) are only
built, to check that both frameworks build the same model (equal parameter counts).
The shared checks are in tests/frameworkcheck.py.
"""

from __future__ import annotations

import pytest

from bench.frameworks import known_frameworks
from tests import frameworkcheck as check

FRAMEWORKS = ("pytorch", "keras")
WORKLOADS = ("cnn-mnist", "lstm-imdb", "cnn-cifar10", "cnn-svhn", "lstm-ptb", "seq2seq-manythings")
# Workloads whose smoke-sized training must lower the loss within the probe's 3 epochs. cnn-cifar10
# and cnn-svhn train too (3 x 4 and 3 x 2 steps), but their loss barely moves that soon (PyTorch's
# default initialization: 2.302 -> 2.300 in 8 epochs of cnn-cifar10), so they are not held to it.
LEARNS = ("cnn-mnist", "lstm-imdb", "lstm-ptb", "seq2seq-manythings")
# Every other CNN spec (cnn-cifar100, the largest): built but not trained, to keep this test short.
COUNT_ONLY = tuple(w for w in check.CNN_SPECS if w not in WORKLOADS)
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


@pytest.fixture(scope="module")
def probes() -> dict[str, dict]:
    """Probe output per framework: {"workloads": {name: {...}}, "versions", "nan_raised", ...}."""
    return check.run_probes(FRAMEWORKS, WORKLOADS)


@pytest.mark.slow
@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_loss_falls_and_accuracy_is_sane(probes, framework, workload):
    check.assert_trains(probes[framework]["workloads"][workload], workload, framework, loss_falls=workload in LEARNS)


@pytest.fixture(scope="module")
def built_counts() -> dict[str, dict[str, int]]:
    """Parameter counts of the CNN specs the probe does not train, per framework: {fw: {workload: n}}."""
    if not COUNT_ONLY:
        return {fw: {} for fw in FRAMEWORKS}
    return check.run_in_envs(FRAMEWORKS, ["-c", COUNT_SCRIPT, "{fw}", ",".join(COUNT_ONLY)], "parameter count", 600)


@pytest.mark.slow
def test_cnn_parameter_counts_are_equal(probes, built_counts):
    # Every CNN spec: the same model in every framework, with Keras' count worked out by hand (conv
    # 'same' with strides, pools with strides and TensorFlow's 'same' rule included: a wrong output
    # size changes the dense layer's count).
    for fw in FRAMEWORKS:
        counts = {w: probes[fw]["workloads"][w]["param_count"] for w in WORKLOADS if w in check.CNN_SPECS}
        check.assert_every_cnn_spec_counted({**counts, **built_counts[fw]})


@pytest.mark.slow
@pytest.mark.parametrize("workload", ("lstm-imdb", "lstm-ptb", "seq2seq-manythings"))
def test_lstm_parameter_counts_differ_by_the_second_bias(probes, workload):
    """torch.nn.LSTM keeps two bias vectors per gate (b_ih and b_hh, as cuDNN does), Keras one."""
    keras_count = probes["keras"]["workloads"][workload]["param_count"]
    assert keras_count == check.KERAS_COUNTS[workload]
    check.assert_lstm_second_bias(probes["pytorch"]["workloads"][workload]["param_count"], workload)


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_lstm_reads_the_last_real_step(probes, framework):
    check.assert_lstm_ignores_padding(probes[framework])


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_non_finite_loss_raises(probes, framework):
    check.assert_nan_raised(probes[framework])


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_info_records_what_was_used(probes, framework):
    check.checked_infos(probes[framework], WORKLOADS)


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_reported_versions_match_the_lock(probes, framework):
    check.assert_versions_match_lock(framework, probes[framework]["versions"], PINNED[framework])
