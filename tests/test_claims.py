"""Each claim check of analysis.claims on small hand-made result tables.

Every claim gets a table on which it is reproduced, one on which it is not, and one with too little
data; the evidence strings carry the hand-computed numbers.
"""

from __future__ import annotations

from typing import Any

import pytest

from analysis import claims as c
from analysis.claims import (
    CLAIMS,
    INSUFFICIENT,
    NOT_REPRODUCED,
    REPRODUCED,
    VERDICTS,
    ClaimResult,
    ResultsTable,
    caveat_for,
    evaluate_claims,
)
from tests.resultrows import row


def check(fn: Any, rows: list[dict[str, Any]], epochs: dict[str, list[dict]] | None = None) -> ClaimResult:
    return fn(ResultsTable(rows, epochs or {}))


def epochs_of(times: list[float], accs: list[float] | None = None) -> list[dict[str, Any]]:
    """metrics.jsonl records: epoch_time_s per epoch, test_accuracy as a fraction."""
    accs = accs or [0.5] * len(times)
    return [{"epoch": i, "epoch_time_s": t, "test_accuracy": a} for i, (t, a) in enumerate(zip(times, accs), 1)]


# --- Registry ------------------------------------------------------------------------------

def test_registry_has_the_nine_dlbench_claims_and_documented_checks() -> None:
    ids = [claim.id for claim in CLAIMS]
    assert ids[:9] == [str(i) for i in range(1, 10)] and len(set(ids)) == len(ids)
    assert {claim.study for claim in CLAIMS} >= {"DLBench", "Wu et al.", "Shi et al."}
    for claim in CLAIMS:
        text = claim.test.lower()
        assert "reproduced when" in text or "not in this campaign" in text, claim.id


def test_every_claim_gives_a_verdict_on_an_empty_table() -> None:
    outcomes = evaluate_claims(ResultsTable([], {}))
    assert len(outcomes) == len(CLAIMS)
    assert all(o.result.verdict == INSUFFICIENT and not o.caveat for o in outcomes)
    with pytest.raises(ValueError):
        ClaimResult("probably", "")


def test_caveat_marks_synthetic_data_and_quick_profile() -> None:
    assert caveat_for([row("a", "cnn-mnist")]) == ""
    assert caveat_for([row("a", "cnn-mnist", profile="quick", data_source="synthetic")]) == \
        "on synthetic data / quick profile: not evidence about the paper"
    rows = [row("keras", "cnn-mnist", acc=99, profile="quick"), row("pytorch", "cnn-mnist", acc=98, profile="quick"),
            row("keras", "lstm-imdb", acc=85, profile="quick"), row("pytorch", "lstm-imdb", acc=88, profile="quick")]
    (first,) = [o for o in evaluate_claims(ResultsTable(rows)) if o.claim.id == "1"]
    assert first.result.verdict == REPRODUCED  # still computed ...
    assert first.caveat == "on quick profile: not evidence about the paper"  # ... but flagged


# --- DLBench 1: no framework best on accuracy everywhere ------------------------------------

def test_claim1_reproduced_not_reproduced_insufficient() -> None:
    split = [row("keras", "cnn-mnist", acc=99), row("pytorch", "cnn-mnist", acc=98),
             row("keras", "lstm-imdb", acc=85), row("pytorch", "lstm-imdb", acc=88)]
    res = check(c.no_framework_best_on_accuracy, split)
    assert res.verdict == REPRODUCED
    assert "cnn-mnist/cpu: best keras (99.00 %) of 2" in res.evidence
    assert "lstm-imdb/cpu: best pytorch (88.00 %) of 2" in res.evidence
    assert len(res.run_ids) == 4
    keras_wins = [row("keras", "cnn-mnist", acc=99), row("pytorch", "cnn-mnist", acc=98),
                  row("keras", "lstm-imdb", acc=89), row("pytorch", "lstm-imdb", acc=88)]
    res = check(c.no_framework_best_on_accuracy, keras_wins)
    assert res.verdict == NOT_REPRODUCED and "keras best in every group" in res.evidence
    one_workload = [row("keras", "cnn-mnist", acc=99), row("pytorch", "cnn-mnist", acc=98),
                    row("keras", "cnn-mnist", "gpu", acc=97), row("pytorch", "cnn-mnist", "gpu", acc=98)]
    assert check(c.no_framework_best_on_accuracy, one_workload).verdict == INSUFFICIENT
    one_framework = [row("keras", "cnn-mnist"), row("keras", "lstm-imdb")]
    assert check(c.no_framework_best_on_accuracy, one_framework).verdict == INSUFFICIENT


# --- DLBench 2: GPU about an order of magnitude faster --------------------------------------

def test_claim2_speedups() -> None:
    fast = [row("pytorch", "cnn-mnist", time=100), row("pytorch", "cnn-mnist", "gpu", time=10),
            row("keras", "cnn-mnist", time=100), row("keras", "cnn-mnist", "gpu", time=20)]
    res = check(c.gpu_order_of_magnitude_faster, fast)
    assert res.verdict == REPRODUCED
    assert res.evidence.startswith("2 of 2 pairs ≥ 3.16×") and "pytorch cnn-mnist 10.0×" in res.evidence
    assert "keras cnn-mnist 5.00×" in res.evidence
    half = [row("pytorch", "cnn-mnist", time=100), row("pytorch", "cnn-mnist", "gpu", time=50),
            row("keras", "cnn-mnist", time=100), row("keras", "cnn-mnist", "gpu", time=20)]
    res = check(c.gpu_order_of_magnitude_faster, half)
    assert res.verdict == NOT_REPRODUCED and res.evidence.startswith("1 of 2 pairs")
    assert check(c.gpu_order_of_magnitude_faster, [row("pytorch", "cnn-mnist")]).verdict == INSUFFICIENT


# --- DLBench 3: Keras IMDB faster on CPU ----------------------------------------------------

def test_claim3_keras_imdb() -> None:
    cpu_wins = [row("keras", "lstm-imdb", time=100), row("keras", "lstm-imdb", "gpu", time=125)]
    res = check(c.keras_imdb_cpu_faster, cpu_wins)
    assert res.verdict == REPRODUCED and "CPU 100 s vs GPU 125 s (GPU speedup 0.800×" in res.evidence
    gpu_wins = [row("keras", "lstm-imdb", time=100), row("keras", "lstm-imdb", "gpu", time=50)]
    assert check(c.keras_imdb_cpu_faster, gpu_wins).verdict == NOT_REPRODUCED
    other = [row("pytorch", "lstm-imdb", time=100), row("pytorch", "lstm-imdb", "gpu", time=125),
             row("keras", "lstm-imdb", time=100)]
    assert check(c.keras_imdb_cpu_faster, other).verdict == INSUFFICIENT


# --- DLBench 4: longer time does not imply higher accuracy ----------------------------------

def test_claim4_slowest_vs_most_accurate() -> None:
    chainer_slow = [row("chainer", "cnn-mnist", time=5400, acc=96.4), row("keras", "cnn-mnist", time=360, acc=98),
                    row("pytorch", "cnn-mnist", time=1000, acc=97)]
    res = check(c.longer_time_not_higher_accuracy, chainer_slow)
    assert res.verdict == REPRODUCED
    assert "slowest chainer (5,400 s, 96.40 %), most accurate keras" in res.evidence
    # Times 5400 > 1000 > 360 vs accuracies 96.4 < 97 < 98: every pair discordant, tau = -1.
    assert "tau=-1, p=0.333, n=3" in res.evidence
    slow_best = [row("chainer", "cnn-mnist", time=5400, acc=99), row("keras", "cnn-mnist", time=360, acc=98)]
    res = check(c.longer_time_not_higher_accuracy, slow_best)
    assert res.verdict == NOT_REPRODUCED and res.evidence.startswith("slowest is not the most accurate in 0 of 1")
    assert check(c.longer_time_not_higher_accuracy, [row("keras", "cnn-mnist")]).verdict == INSUFFICIENT


# --- DLBench 5: more CPU/memory does not imply shorter time ---------------------------------

def test_claim5_resources_vs_time() -> None:
    greedy_slow = [row("pytorch", "cnn-mnist", cpu=90, mem=400, time=300), row("keras", "cnn-mnist", cpu=50, mem=500,
                                                                              time=100)]
    res = check(c.more_resources_not_faster, greedy_slow)
    assert res.verdict == REPRODUCED
    assert "most CPU pytorch (90.0 %) is #2 of 2 in time" in res.evidence
    assert "most memory keras (500 MB) is #1 of 2 in time" in res.evidence
    assert res.evidence.startswith("top resource user is not the fastest in 1 of 2 comparisons")
    greedy_fast = [row("pytorch", "cnn-mnist", cpu=90, mem=600, time=100), row("keras", "cnn-mnist", cpu=50,
                                                                               mem=500, time=200)]
    assert check(c.more_resources_not_faster, greedy_fast).verdict == NOT_REPRODUCED
    no_monitor = [row("pytorch", "cnn-mnist", cpu=None, mem=None), row("keras", "cnn-mnist", cpu=None, mem=None)]
    assert check(c.more_resources_not_faster, no_monitor).verdict == INSUFFICIENT


# --- DLBench 6: GPU utilization much higher than CPU ----------------------------------------

def test_claim6_gpu_utilization() -> None:
    busy = [row("pytorch", "cnn-mnist", "gpu", gpu=95, cpu=20), row("pytorch", "lstm-imdb", "gpu", gpu=60, cpu=10)]
    res = check(c.gpu_util_much_higher, busy)
    assert res.verdict == REPRODUCED and "pytorch cnn-mnist: GPU 95.0 % vs CPU 20.0 %" in res.evidence
    idle_cnn = [row("pytorch", "cnn-mnist", "gpu", gpu=70, cpu=10)]  # 7x the CPU, but not close to 100 %
    res = check(c.gpu_util_much_higher, idle_cnn)
    assert res.verdict == NOT_REPRODUCED and "(fails)" in res.evidence
    cpu_bound = [row("pytorch", "lstm-imdb", "gpu", gpu=30, cpu=20)]  # not 2x
    assert check(c.gpu_util_much_higher, cpu_bound).verdict == NOT_REPRODUCED
    unmeasured = [row("pytorch", "cnn-mnist", "gpu", gpu=None), row("pytorch", "cnn-mnist", gpu=None)]
    res = check(c.gpu_util_much_higher, unmeasured)
    assert res.verdict == INSUFFICIENT and res.run_ids == ("pytorch-cnn-mnist-gpu-b128-lr0.01-r1",)


# --- DLBench 7: Theano fails on IMDB and leaks memory ---------------------------------------

def test_claim7_theano() -> None:
    leak = [row("theano", "lstm-imdb", acc=50, mem=5000), row("keras", "lstm-imdb", acc=87, mem=400)]
    res = check(c.theano_imdb_failure_and_leak, leak)
    assert res.verdict == REPRODUCED and "(b) memory 5,000 MB = 12.5× keras" in res.evidence
    nan = [row("theano", "lstm-imdb", status="failed", cause="nan", mem=5000), row("keras", "lstm-imdb", mem=400)]
    # A NaN failure counts as failure to learn (part a holds), but a failed run gives no memory mean for
    # part b: insufficient data, not a guess.
    res = check(c.theano_imdb_failure_and_leak, nan)
    assert res.verdict == INSUFFICIENT and "1 NaN failures" in res.evidence
    learns = [row("theano", "lstm-imdb", acc=87, mem=5000), row("keras", "lstm-imdb", acc=87, mem=400)]
    assert check(c.theano_imdb_failure_and_leak, learns).verdict == NOT_REPRODUCED
    no_leak = [row("theano", "lstm-imdb", acc=50, mem=500), row("keras", "lstm-imdb", mem=400)]
    assert check(c.theano_imdb_failure_and_leak, no_leak).verdict == NOT_REPRODUCED
    res = check(c.theano_imdb_failure_and_leak, [row("keras", "lstm-imdb")])
    assert res.verdict == INSUFFICIENT and res.evidence.startswith("not in this campaign")


# --- DLBench 8: time proportional to epochs -------------------------------------------------

def test_claim8_linearity() -> None:
    a, b = row("keras", "cnn-mnist"), row("pytorch", "cnn-mnist")
    steady = {a["run_id"]: epochs_of([10, 10, 10, 10]), b["run_id"]: epochs_of([12, 10, 10, 10])}
    res = check(c.time_proportional_to_epochs, [a, b], steady)
    assert res.verdict == REPRODUCED and res.evidence.startswith("2 of 2 runs linear (R² ≥ 0.99)")
    # Cumulative 1, 2, 3, 33: Sxy 48.5, Sxx 5, SS_tot 722.75 -> R² = 48.5² / 5 / 722.75 = 0.6509.
    jump = {a["run_id"]: epochs_of([10, 10, 10, 10]), b["run_id"]: epochs_of([1, 1, 1, 30])}
    res = check(c.time_proportional_to_epochs, [a, b], jump)
    assert res.verdict == NOT_REPRODUCED
    assert f"lowest R² {48.5**2 / 5 / 722.75:.4f} (pytorch cnn-mnist repeat 1, 4 epochs)" in res.evidence
    short = {a["run_id"]: epochs_of([10, 10])}
    assert check(c.time_proportional_to_epochs, [a], short).verdict == INSUFFICIENT
    assert check(c.wu_time_proportional_to_epochs, [a, b], jump).verdict == NOT_REPRODUCED


# --- DLBench 9: CPU and GPU curves almost the same ------------------------------------------

def test_claim9_curves() -> None:
    cpu, gpu = row("keras", "cnn-mnist"), row("keras", "cnn-mnist", "gpu")
    close = {cpu["run_id"]: epochs_of([1, 1, 1], [0.90, 0.95, 0.98]),
             gpu["run_id"]: epochs_of([1, 1, 1], [0.91, 0.95, 0.97])}
    res = check(c.cpu_gpu_curves_same, [cpu, gpu], close)
    assert res.verdict == REPRODUCED and "mean |CPU − GPU| 0.67 pp over 3 epochs" in res.evidence
    apart = {cpu["run_id"]: epochs_of([1, 1, 1], [0.90, 0.95, 0.98]),
             gpu["run_id"]: epochs_of([1, 1, 1], [0.80, 0.85, 0.90])}
    res = check(c.cpu_gpu_curves_same, [cpu, gpu], apart)
    assert res.verdict == NOT_REPRODUCED and "9.33 pp" in res.evidence
    assert check(c.cpu_gpu_curves_same, [cpu], close).verdict == INSUFFICIENT


# --- Wu et al. -----------------------------------------------------------------------------

def test_wu_batch_size_claims() -> None:
    sweep = [row("tensorflow", "cnn-mnist", batch=50, acc=99.2, cpu=80), row("tensorflow", "cnn-mnist", batch=5000,
                                                                             acc=95.9, cpu=40)]
    res = check(c.wu_larger_batch_lower_accuracy, sweep)
    assert res.verdict == REPRODUCED and "accuracy 99.2 % at batch_size 50, 95.9 % at 5000" in res.evidence
    assert check(c.wu_cpu_use_falls_with_batch, sweep).verdict == REPRODUCED
    flipped = [row("tensorflow", "cnn-mnist", batch=50, acc=95, cpu=40), row("tensorflow", "cnn-mnist", batch=5000,
                                                                             acc=99, cpu=80)]
    assert check(c.wu_larger_batch_lower_accuracy, flipped).verdict == NOT_REPRODUCED
    assert check(c.wu_cpu_use_falls_with_batch, flipped).verdict == NOT_REPRODUCED
    res = check(c.wu_larger_batch_lower_accuracy, [row("tensorflow", "cnn-mnist")])
    assert res.verdict == INSUFFICIENT and res.evidence.startswith("not in this campaign")


def test_wu_learning_rate_claim() -> None:
    sweep = [row("tensorflow", "cnn-mnist", lr=0.1, acc=90, time=100),
             row("tensorflow", "cnn-mnist", lr=0.001, acc=80, time=105)]
    res = check(c.wu_learning_rate_changes_accuracy_not_time, sweep)
    assert res.verdict == REPRODUCED and "accuracy spread 10.00 pp, time max/min 1.05×" in res.evidence
    slower = [row("tensorflow", "cnn-mnist", lr=0.1, acc=90, time=100),
              row("tensorflow", "cnn-mnist", lr=0.001, acc=80, time=200)]
    assert check(c.wu_learning_rate_changes_accuracy_not_time, slower).verdict == NOT_REPRODUCED
    assert check(c.wu_learning_rate_changes_accuracy_not_time, sweep[:1]).verdict == INSUFFICIENT


def test_claims_without_the_experiment_are_not_in_this_campaign() -> None:
    rows = [row("tensorflow", "cnn-mnist")]
    for fn in (c.wu_eigen_beats_mkl, c.wu_too_many_threads_slow, c.shi_cpu_scaling_past_cores,
               c.ilkarman_cudnn_autotune_helps, c.shams_multi_gpu_scaling):
        res = check(fn, rows)
        assert (res.verdict, res.evidence[:21]) == (INSUFFICIENT, "not in this campaign:")


# --- Shi et al. ----------------------------------------------------------------------------

def test_shi_speedup_and_no_winner() -> None:
    big = [row("pytorch", "cnn-mnist", time=200), row("pytorch", "cnn-mnist", "gpu", time=10),
           row("keras", "cnn-mnist", time=500), row("keras", "cnn-mnist", "gpu", time=10)]
    res = check(c.shi_gpu_one_to_two_orders_faster, big)
    assert res.verdict == REPRODUCED and res.evidence.startswith("median speedup 35.0× over 2 pairs")
    small = [row("pytorch", "cnn-mnist", time=20), row("pytorch", "cnn-mnist", "gpu", time=10)]
    assert check(c.shi_gpu_one_to_two_orders_faster, small).verdict == NOT_REPRODUCED
    assert check(c.shi_gpu_one_to_two_orders_faster, small[:1]).verdict == INSUFFICIENT
    res = check(c.shi_no_tool_fastest_everywhere, big)
    assert res.verdict == NOT_REPRODUCED and "pytorch best in every group" in res.evidence
    mixed = [row("pytorch", "cnn-mnist", time=200), row("keras", "cnn-mnist", time=100),
             row("pytorch", "lstm-imdb", time=100), row("keras", "lstm-imdb", time=300)]
    assert check(c.shi_no_tool_fastest_everywhere, mixed).verdict == REPRODUCED
    assert check(c.shi_no_tool_fastest_everywhere, mixed[:2]).verdict == INSUFFICIENT


def test_verdicts_are_the_three_words() -> None:
    assert VERDICTS == ("reproduced", "not reproduced", "insufficient data")
