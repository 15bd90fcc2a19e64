"""The performance switches as sweep axes (bench/switches.py) in study files (campaign/study.py) and the planner
(campaign/plan.py): GPU-only ones refused on CPU experiments, each point in its runs' requests and ids, and
frameworks without the switch or models it changes nothing in skipped in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.errors import UsageError
from campaign import plan, study
from tests.campaign.scriptrunner import ScriptRunner, prepared_mnist
from tests.studies.folders import add_study


@pytest.fixture(autouse=True)
def _fresh_cache():
    study.load_study.cache_clear()
    yield
    study.load_study.cache_clear()


def _experiment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, device: str, sweep: str) -> study.Experiment:
    add_study(monkeypatch, tmp_path / "studies", "s",
              '[experiments.s-cpu]\ndevice = "cpu"\nworkloads = ["cnn-mnist"]\n\n'
              f'[experiments.s-x]\ndevice = "{device}"\n' + ('cpu = "s-cpu"\n' if device == "gpu" else "")
              + f'workloads = ["cnn-mnist"]\nsweep = {{ {sweep} }}\n')
    return study.experiment("s-x")


def _plan(tmp_path: Path, experiment: study.Experiment, frameworks: list[str], device: str) -> list[plan.PlannedRun]:
    prepared_mnist(tmp_path / "data")
    m = plan.build_matrix(frameworks, ["cnn-mnist"], device, "smoke", 1, "real", experiment=experiment)
    return plan.plan(m, ScriptRunner("ok"), "t", tmp_path / "results" / "t", tmp_path / "data", threads=None)


def _skipped(capsys) -> list[str]:
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("skipping")]


def test_autotuning_points_enter_the_requests_and_frameworks_without_it_are_skipped(tmp_path, monkeypatch, capsys):
    experiment = _experiment(tmp_path, monkeypatch, "gpu", 'cudnn_autotune = ["on", "off"]')
    assert experiment.points() == [{"cudnn_autotune": "on"}, {"cudnn_autotune": "off"}]
    runs = _plan(tmp_path, experiment, ["pytorch", "theano"], "gpu")
    assert [(r.request["framework"], r.request["sweep"]) for r in runs] == [
        ("pytorch", {"cudnn_autotune": "on"}), ("pytorch", {"cudnn_autotune": "off"})]
    assert len({r.run_id for r in runs}) == 2
    assert _skipped(capsys) == ["skipping cnn-mnist for theano at cudnn_autotune on, cudnn_autotune off: theano's "
                                "module has no cuDNN autotuning switch; cudnn_autotune sweeps run with "
                                "FRAMEWORKS=chainer keras mxnet pytorch tensorflow"]


def test_a_switch_that_changes_nothing_in_the_model_is_skipped(tmp_path, monkeypatch, capsys):
    experiment = _experiment(tmp_path, monkeypatch, "cpu", 'rnn_kernel = ["fused", "plain"]')
    assert _plan(tmp_path, experiment, ["pytorch"], "cpu") == []
    assert _skipped(capsys) == ["skipping cnn-mnist for pytorch at rnn_kernel fused, rnn_kernel plain: rnn_kernel "
                                "changes gru layers, which this model has none of"]


@pytest.mark.parametrize("device, sweep, says", [
    ("cpu", 'cudnn_autotune = ["on", "off"]', "sweeps cudnn_autotune on the CPU, where no cuDNN runs; sweep "
                                              "cudnn_autotune in a GPU experiment"),
    ("gpu", 'cudnn_autotune = ["on", "fast"]', "sweeps cudnn_autotune over ['on', 'fast']; give a list of distinct "
                                               "words from: on, off"),
    ("cpu", 'layout = ["nhwc"]', "give a list of distinct words from: channels_first, channels_last"),
])
def test_a_bad_switch_sweep_is_refused_in_one_line(tmp_path, monkeypatch, device, sweep, says):
    with pytest.raises(UsageError) as caught:
        _experiment(tmp_path, monkeypatch, device, sweep)
    assert says in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("target, device, workload, point", [
    ("ilkarman-autotune-gpu", "gpu", "cnn-cifar10-ilkarman", {"cudnn_autotune": "off"}),
    ("ilkarman-rnn-cpu", "cpu", "gru-imdb", {"rnn_kernel": "plain"}),
    ("ilkarman-rnn-gpu", "gpu", "gru-imdb", {"rnn_kernel": "plain"}),
    ("ilkarman-layout-cpu", "cpu", "cnn-cifar10-ilkarman", {"layout": "channels_last"}),
])
def test_ilkarmans_switch_experiments_sweep_the_workload_each_switch_changes(target, device, workload, point):
    experiment = study.experiment(target)
    assert (experiment.device, experiment.workloads) == (device, (workload,))
    assert len(experiment.points()) == 2 and experiment.points()[1] == point
