"""Wilcoxon tests between frameworks on the resource means (DLBench Sec 5.3 CPU use and memory, Sec 5.5.3 GPU use),
and the metrics a cell does not measure, on hand-made run tables (tests/resultrows.py)."""

from __future__ import annotations

import pytest

from analysis.significance import BOOTSTRAP_METRICS, PAIRED_METRICS, bootstrap_intervals, framework_pair_tests
from analysis.summary import summarize
from tests.resultrows import row

REPEATS = range(1, 7)  # six non-zero pairs: the fewest with which p < 0.05 is possible (2/2^6)


def _gpu_rows(mxnet_gpu: float | None) -> list[dict]:
    """Six GPU repeats of keras and mxnet: mxnet uses less CPU in every pair, the same memory in every pair."""
    rows = [row("keras", "cnn-mnist", "gpu", i, time=60 + i, cpu=30.0 + i, mem=900.0, gpu=90.0 + i) for i in REPEATS]
    rows += [row("mxnet", "cnn-mnist", "gpu", i, time=60 + i, cpu=10.0 + 2 * i, mem=900.0, gpu=mxnet_gpu)
             for i in REPEATS]
    return rows


def test_resource_means_are_tested_like_time() -> None:
    tests = {t.metric: t for t in framework_pair_tests(summarize(_gpu_rows(mxnet_gpu=50.0)))}
    assert set(tests) == set(PAIRED_METRICS)
    cpu = tests["cpu_util_mean_pct"]
    # keras - mxnet = (30 + i) - (10 + 2i) = 20 - i > 0 for i = 1..6: all one sign, W = 0, exact p = 2/64.
    assert (cpu.framework_a, cpu.framework_b, cpu.repeats) == ("keras", "mxnet", list(REPEATS))
    assert (cpu.test.statistic, cpu.test.p_value) == (0.0, pytest.approx(2 / 64))
    assert cpu.verdict() == "differ (p < 0.05)" and len(cpu.run_ids) == 12
    gpu = tests["gpu_util_mean_pct"]  # 91..96 against 50
    assert (gpu.test.statistic, gpu.test.p_value) == (0.0, pytest.approx(2 / 64))
    # Equal memory in every pair: no non-zero difference, no test (not 'no difference').
    assert tests["mem_mean_mb"].verdict().startswith("insufficient data")


def test_a_metric_a_cell_does_not_measure_is_skipped() -> None:
    # On the CPU no run carries GPU use: the pair is tested on the four other metrics, GPU use is no row.
    cpu_rows = [row(fw, "cnn-mnist", "cpu", i, cpu=c + i) for fw, c in (("keras", 40.0), ("mxnet", 10.0))
                for i in REPEATS]
    assert [t.metric for t in framework_pair_tests(summarize(cpu_rows))] == [
        "training_time_s", "test_accuracy", "cpu_util_mean_pct", "mem_mean_mb"]
    # The DLBench claims ask for one metric by name: GPU use alone on CPU runs gives nothing, and no error.
    assert framework_pair_tests(summarize(cpu_rows), metrics=["gpu_util_mean_pct"]) == []
    # On the GPU, mxnet ran without a GPU monitor: keras measured it, mxnet did not, so no pair on it.
    assert "gpu_util_mean_pct" not in {t.metric for t in framework_pair_tests(summarize(_gpu_rows(None)))}
    # A column the rows do not carry at all (a published table's rows) is skipped alike.
    assert framework_pair_tests(summarize(cpu_rows), metrics=["iteration_time_mean_s"]) == []


def test_a_cell_whose_runs_all_failed_is_still_paired_on_what_the_group_measures() -> None:
    rows = [row("keras", "cnn-mnist", "cpu", i) for i in REPEATS]
    rows += [row("theano", "cnn-mnist", "cpu", i, status="failed", cause="oom", cpu=None, mem=None) for i in REPEATS]
    tests = framework_pair_tests(summarize(rows))
    assert [t.metric for t in tests] == ["training_time_s", "test_accuracy", "cpu_util_mean_pct", "mem_mean_mb"]
    assert all(t.repeats == [] and t.verdict() == "insufficient data (no pairs)" for t in tests)


def test_bootstrap_intervals_cover_time_and_accuracy_only() -> None:
    intervals = bootstrap_intervals(summarize(_gpu_rows(mxnet_gpu=50.0)))
    assert {b.metric for b in intervals} == set(BOOTSTRAP_METRICS) == {"training_time_s", "test_accuracy"}
