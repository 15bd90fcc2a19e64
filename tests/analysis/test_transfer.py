"""What transfers across hardware (orders, relative times, speedups, tolerance) and the per-campaign
statistics (Wilcoxon pairs, Pearson per run, bootstrap per cell) on hand-made run tables.

Published values are those of studies/dlbench/reference (DLBench CPU MNIST from the authors' logs:
TensorFlow 426.0 s, Keras 449.1 s, PyTorch 1655.9 s; the paper: Keras 360 s CPU, 63 s GPU).
"""

from __future__ import annotations

import pytest

from analysis.reference import ORIGIN_LOGS, ORIGIN_PAPER
from analysis.significance import bootstrap_intervals, epoch_accuracy_correlations, framework_pair_tests
from analysis.summary import summarize
from analysis.transfer import accuracy_verdict, order_comparisons, relative_times, speedups
from tests.resultrows import row

MNIST_CPU = [row("tensorflow", "cnn-mnist", time=80, acc=98.0), row("keras", "cnn-mnist", time=90, acc=99.0),
             row("pytorch", "cnn-mnist", time=200, acc=97.0)]


def test_order_of_frameworks_against_the_authors_logs() -> None:
    orders = order_comparisons(summarize(MNIST_CPU))
    (time_logs,) = [o for o in orders if o.metric == "training_time" and o.origin == ORIGIN_LOGS]
    assert time_logs.frameworks == ["keras", "pytorch", "tensorflow"]
    assert time_logs.order_text(time_logs.measured) == "tensorflow < keras < pytorch"
    assert time_logs.order_text([p.value for p in time_logs.published]) == "tensorflow < keras < pytorch"
    # Same order on 3 items: tau = 1, exact p = 2 / 3! = 1/3.
    assert (time_logs.test.statistic, time_logs.test.p_value, time_logs.test.n) == (1.0, pytest.approx(1 / 3), 3)
    # Authors' logs accuracy: tensorflow 98.5 > pytorch 98.4 > keras 98.28; measured keras > tf > pytorch:
    # pairs (k,p) concordant, (k,t) and (p,t) discordant -> tau = (1 - 2) / 3.
    (acc_logs,) = [o for o in orders if o.metric == "test_accuracy" and o.origin == ORIGIN_LOGS]
    assert acc_logs.test.statistic == pytest.approx(-1 / 3)
    # The paper prints 98 for all three: no order to compare.
    (acc_paper,) = [o for o in orders if o.metric == "test_accuracy" and o.origin == ORIGIN_PAPER]
    assert acc_paper.test.statistic is None and "ties" in acc_paper.test.reason
    # The paper gives a CPU MNIST time for Keras only (of these three): one framework, insufficient.
    (time_paper,) = [o for o in orders if o.metric == "training_time" and o.origin == ORIGIN_PAPER]
    assert (time_paper.frameworks, time_paper.test.statistic) == (["keras"], None)


def test_time_relative_to_the_fastest() -> None:
    rel = {(r.framework, r.published.origin if r.published else None): r for r in relative_times(summarize(MNIST_CPU))}
    keras = rel[("keras", ORIGIN_LOGS)]
    assert keras.measured_relative == pytest.approx(90 / 80) and keras.fastest_measured == "tensorflow"
    assert keras.published_relative == pytest.approx(449.1 / 426.0) and keras.fastest_published == "tensorflow"
    # Only Keras has a paper time among the three: no published ratio from one value.
    assert rel[("keras", ORIGIN_PAPER)].published_relative is None
    assert rel[("pytorch", ORIGIN_LOGS)].published_relative == pytest.approx(1655.9 / 426.0)


def test_gpu_cpu_speedup_with_published_ones() -> None:
    rows = [row("keras", "cnn-mnist", time=90), row("keras", "cnn-mnist", "gpu", time=10),
            row("pytorch", "cnn-mnist", time=200)]
    (sp,) = speedups(summarize(rows))
    assert sp.cpu.key["framework"] == "keras" and sp.value == pytest.approx(9.0)
    derived = [p.value for p in sp.published]
    assert derived == [pytest.approx(360 / 63), pytest.approx(449.1 / 79.3)]  # paper, then authors' logs
    assert sp.published[0].qualifier == "derived: CPU 360 s / GPU 63 s"


def test_accuracy_tolerance_verdicts() -> None:
    assert accuracy_verdict(97.0, 98.0) == "within ±2 pp (-1.00 pp)"
    assert accuracy_verdict(100.0, 98.0) == "within ±2 pp (+2.00 pp)"
    assert accuracy_verdict(95.0, 98.0) == "outside ±2 pp (-3.00 pp)"
    assert accuracy_verdict(None, 98.0) == "no measured value"


def test_wilcoxon_between_frameworks_pairs_repeats_by_index() -> None:
    rows = [row("keras", "cnn-mnist", repeat=i, time=100 + i) for i in range(1, 7)]
    rows += [row("pytorch", "cnn-mnist", repeat=i, time=50 + 2 * i) for i in range(1, 7)]
    rows.append(row("pytorch", "cnn-mnist", repeat=7, time=1))  # no keras repeat 7: not paired
    (time_test, acc_test) = framework_pair_tests(summarize(rows), metrics=["training_time_s", "test_accuracy"])
    assert (time_test.framework_a, time_test.framework_b, time_test.repeats) == ("keras", "pytorch", [1, 2, 3, 4, 5, 6])
    assert (time_test.test.statistic, time_test.test.p_value) == (0.0, pytest.approx(2 / 64))
    assert time_test.verdict() == "differ (p < 0.05)"
    assert len(time_test.run_ids) == 12
    # Equal accuracies in every pair: no non-zero difference, no test.
    assert acc_test.test.statistic is None and acc_test.verdict().startswith("insufficient data")
    few = framework_pair_tests(summarize(rows[:2] + rows[6:8]))
    assert few[0].verdict() == "insufficient data (2 non-zero pairs; p < 0.05 needs at least 6)"


def test_pearson_per_run_and_bootstrap_per_cell() -> None:
    a, b, failed = row("keras", "cnn-mnist"), row("keras", "cnn-mnist", repeat=2), row("keras", "cnn-mnist", repeat=3,
                                                                                     status="failed")
    epochs = {a["run_id"]: [{"epoch": e, "test_accuracy": acc} for e, acc in ((1, 0.2), (2, 0.4), (3, 0.7))],
              b["run_id"]: [{"epoch": 1, "test_accuracy": 0.5}, {"epoch": 2, "test_accuracy": 0.6}]}
    corr = epoch_accuracy_correlations([a, b, failed], epochs)
    assert [c.row["run_id"] for c in corr] == [a["run_id"], b["run_id"]]  # failed runs have no final curve
    # The same points as 1,2,3 vs 2,4,7 scaled by 1/10: r is scale-free.
    assert corr[0].test.statistic == pytest.approx(5 / (2 * 114 / 9) ** 0.5)
    assert corr[1].test.statistic is None
    (time_ci, acc_ci) = bootstrap_intervals(summarize([row("keras", "cnn-mnist", time=0.0, acc=1.0),
                                                       row("keras", "cnn-mnist", repeat=2, time=1.0, acc=1.0)]))
    assert (time_ci.bootstrap.ci_low, time_ci.bootstrap.ci_high) == (0.0, 1.0)
    assert (acc_ci.bootstrap.ci_low, acc_ci.bootstrap.ci_high) == (1.0, 1.0)
