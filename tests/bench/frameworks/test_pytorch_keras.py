"""The PyTorch and Keras framework modules, run for real inside their hash-locked environments.

Each framework's environment is built with images.envs.ensure_env (minutes on first use, then
cached), and the probe (probe.py beside this file) trains every workload spec in it on small
learnable data. The two probes run at the same time with one thread each (2-core machines),
which also checks that DLREPRO_THREADS is obeyed.
The shared checks are in check.py beside this file.
"""

from __future__ import annotations

import pytest

from bench import blas_backends, collectives, dataparallel, switches
from bench.detection import detector, support
from bench.frameworks import known_frameworks
from campaign import plan, specs, study
from tests import background
from tests.bench.frameworks import check

FRAMEWORKS = ("pytorch", "keras")
WORKLOADS = check.PROBED
# versions() key -> the package pinned for it in the framework's lock.
PINNED = {
    "pytorch": {"torch": "torch", "numpy": "numpy"},
    "keras": {"keras": "keras", "tensorflow": "tensorflow-cpu", "numpy": "numpy"},
}


def test_helper_modules_are_not_frameworks():
    names = known_frameworks()
    assert set(FRAMEWORKS) <= set(names)
    assert not [n for n in names if n.startswith("_")]


def test_every_dlbench_workload_is_trained_by_the_probes():
    # The probes train DLBench's workloads; other studies' workloads have their own slow tests
    # (fcn-r-mnist: tests/studies/shi/test_study.py), and the detector its own probe (tests/bench/detection/).
    dlbench = {w for e in study.load_study("dlbench").experiments.values() for w in e.workloads
               if not detector.is_detector(specs.load(w))}
    assert set(check.PROBED) == dlbench


# What the 2018 paper-era modules cannot do whatever their code: the paper images link one BLAS and run one
# process (no BLAS choice, no data-parallel ranks, no collectives), and channels_last memory is PyTorch 1.5's.
PAPER_CANNOT = (blas_backends.AXIS, switches.LAYOUT)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_paper_era_plans_every_studys_runs_but_what_2018_cannot(framework):
    """Keras 2.2.4 and PyTorch 0.4.1 translate every layer type and have step() and infer(): the planner keeps
    every smoke run of every study's experiments for their paper era (Shi's ResNet-56 under the iterations
    protocol, ilkarman's GRU and ResNet-50 features, Shams' GoogLeNet, Wu's lrn), the rnn_kernel and
    cudnn_autotune switches included, and leaves out only what PAPER_CANNOT and collectives name."""
    kept = set()
    for target, experiment in study.experiments().items():
        for workload in experiment.workloads:
            spec = specs.load(workload, "smoke")
            for point in experiment.points(physical_cores=2):
                resolved = study.apply_point(spec, point, experiment.measurement_for("smoke"))
                why = plan.refusal(framework, "paper", resolved, point)
                if (set(point) & set(PAPER_CANNOT) or point.get(dataparallel.AXIS, 1) > 1
                        or collectives.is_collective(spec) or support.refusal(framework, "paper")
                        and detector.is_detector(spec)):
                    assert why, (target, workload, point)
                    continue
                assert why is None, (target, workload, point, why)
                kept.add((workload, tuple(sorted(point))))
    assert {("resnet56-cifar10", ()), ("gru-imdb", (switches.RNN_KERNEL,)),
            ("resnet50-features-synthetic", ())} <= kept


# Probe output per framework: {"workloads": {name: {...}}, "versions", "nan_raised", ...}; both at once,
# in the background beside the other framework probes (tests/background.py).
probes = background.fixture("pytorch keras probes", lambda _tmp: check.run_probes(FRAMEWORKS, WORKLOADS),
                            weight=130, module=__name__, fixture_name="probes")


@pytest.mark.slow
@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_loss_falls_and_accuracy_is_sane(probes, framework, workload):
    check.assert_trains(probes[framework]["workloads"][workload], workload, framework)


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_cnn_parameter_counts_are_equal(probes, framework):
    # Every CNN spec: the same model in every framework, with Keras' count worked out by hand.
    check.assert_every_cnn_spec_counted(
        {w: probes[framework]["workloads"][w]["param_count"] for w in check.CNN_SPECS})


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
