"""ilkarman's published times and their mapping onto the kit (studies/ilkarman/tables.py): the mapping is data that
must name real things, and the measured side groups ok runs by benchmark and context with ratios to one base
framework."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis import load
from bench.frameworks import known_frameworks
from campaign import specs
from studies.ilkarman import tables as ilkarman
from tests.analysis.ilkarmanruns import FEATURES, make_ilkarman_run


def test_every_benchmark_maps_to_a_workload_of_the_study_and_a_run_table_column() -> None:
    from analysis.runs import RUN_COLUMNS

    assert [b.benchmark for b in ilkarman.benchmarks()] == list(dict.fromkeys(b for (b, _, _) in ilkarman.published()))
    for bench in ilkarman.benchmarks():
        assert specs.load(bench.workload).get("study") == ilkarman.STUDY, bench.workload
        assert bench.measure in RUN_COLUMNS
    ilkarman_workloads = {w for w in specs.known_workloads() if specs.load(w).get("study") == ilkarman.STUDY}
    assert ilkarman_workloads == {b.workload for b in ilkarman.benchmarks()}


def test_every_article_name_maps_to_a_kit_framework_or_says_not_in_the_kit() -> None:
    named = {n.name: n for n in ilkarman.names()}
    # A name of ilkarman_dlf.csv without a row would be shown as not in the kit without a reason.
    assert {name for (_, name, _) in ilkarman.published()} == set(named)
    assert {n.framework for n in ilkarman.names() if n.framework} == set(known_frameworks("current"))
    assert all(n.note for n in ilkarman.names() if n.framework is None)
    assert ilkarman.gpus() == ["K80", "P100"]


def test_published_by_framework_takes_the_first_name_of_a_framework() -> None:
    # CIFAR-10 on the P100: Gluon 62 s stands for mxnet (the kit's MXNet is Gluon), not the symbolic MXNet's 51 s.
    p100 = ilkarman.published_by_framework("cifar10_cnn_training", "P100")
    assert p100 == {"tensorflow": 57, "pytorch": 51, "mxnet": 62, "chainer": 69, "keras": 76, "theano": 65}
    # The IMDB table spells it 'Pytorch'.
    assert ilkarman.published_by_framework("imdb_rnn_training", "K80")["pytorch"] == 31


def test_measured_groups_average_repeats_and_take_the_fastest_timed_framework_as_base(tmp_path: Path) -> None:
    campaign = tmp_path / "ilkarman-cpu"
    make_ilkarman_run(campaign, "pytorch", "cnn-cifar10-ilkarman", 100.0)
    make_ilkarman_run(campaign, "pytorch", "cnn-cifar10-ilkarman", 120.0, repeat=2)
    make_ilkarman_run(campaign, "mxnet", "cnn-cifar10-ilkarman", 80.0)
    make_ilkarman_run(campaign, "keras", "cnn-cifar10-ilkarman", 300.0, status="failed")
    make_ilkarman_run(campaign, "tensorflow", FEATURES, 20.0)
    make_ilkarman_run(campaign, "pytorch", "cnn-mnist", 5.0)  # not ilkarman's: left out
    cifar, features = ilkarman.measured(load(campaign).to_dict("records"))
    assert (cifar.benchmark.workload, features.benchmark.workload) == ("cnn-cifar10-ilkarman", FEATURES)
    assert cifar.seconds == {"pytorch": 110.0, "mxnet": 80.0}
    assert ilkarman.base_framework(cifar) == "mxnet"
    assert ilkarman.ratios(cifar.seconds, "mxnet") == {"pytorch": pytest.approx(1.375), "mxnet": 1.0}
    assert features.seconds == {"tensorflow": 20.0}
    assert features.context["device"] == "cpu" and features.context["profile"] == "quick"
    # Two frameworks: an order, not evidence either way.
    assert not ilkarman.order_agreement(cifar, "P100").sufficient
