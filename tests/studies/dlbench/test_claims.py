"""DLBench's claims 1-9 (studies/dlbench/claims.py) on small hand-made result tables.

Every claim gets a table on which it is reproduced, one on which it is not, and one with too little
data; the evidence strings carry the hand-computed numbers.
"""

from __future__ import annotations

from analysis.claims import INSUFFICIENT, NOT_REPRODUCED, REPRODUCED
from studies.dlbench import claims as dlbench
from tests.resultrows import row
from tests.studies.claimcheck import check, epochs_of

# --- DLBench 1: no framework best on accuracy everywhere ------------------------------------

def test_claim1_reproduced_not_reproduced_insufficient() -> None:
    split = [row("keras", "cnn-mnist", acc=99), row("pytorch", "cnn-mnist", acc=98),
             row("keras", "lstm-imdb", acc=85), row("pytorch", "lstm-imdb", acc=88)]
    res = check(dlbench.no_framework_best_on_accuracy, split)
    assert res.verdict == REPRODUCED
    assert "cnn-mnist/cpu: best keras (99.00 %) of 2" in res.evidence
    assert "lstm-imdb/cpu: best pytorch (88.00 %) of 2" in res.evidence
    assert len(res.run_ids) == 4
    keras_wins = [row("keras", "cnn-mnist", acc=99), row("pytorch", "cnn-mnist", acc=98),
                  row("keras", "lstm-imdb", acc=89), row("pytorch", "lstm-imdb", acc=88)]
    res = check(dlbench.no_framework_best_on_accuracy, keras_wins)
    assert res.verdict == NOT_REPRODUCED and "keras best in every group" in res.evidence
    one_workload = [row("keras", "cnn-mnist", acc=99), row("pytorch", "cnn-mnist", acc=98),
                    row("keras", "cnn-mnist", "gpu", acc=97), row("pytorch", "cnn-mnist", "gpu", acc=98)]
    assert check(dlbench.no_framework_best_on_accuracy, one_workload).verdict == INSUFFICIENT
    one_framework = [row("keras", "cnn-mnist"), row("keras", "lstm-imdb")]
    assert check(dlbench.no_framework_best_on_accuracy, one_framework).verdict == INSUFFICIENT


# --- DLBench 2: GPU about an order of magnitude faster --------------------------------------

def test_claim2_speedups() -> None:
    fast = [row("pytorch", "cnn-mnist", time=100), row("pytorch", "cnn-mnist", "gpu", time=10),
            row("keras", "cnn-mnist", time=100), row("keras", "cnn-mnist", "gpu", time=20)]
    res = check(dlbench.gpu_order_of_magnitude_faster, fast)
    assert res.verdict == REPRODUCED
    assert res.evidence.startswith("2 of 2 pairs ≥ 3.16×") and "pytorch cnn-mnist 10.0×" in res.evidence
    assert "keras cnn-mnist 5.00×" in res.evidence
    half = [row("pytorch", "cnn-mnist", time=100), row("pytorch", "cnn-mnist", "gpu", time=50),
            row("keras", "cnn-mnist", time=100), row("keras", "cnn-mnist", "gpu", time=20)]
    res = check(dlbench.gpu_order_of_magnitude_faster, half)
    assert res.verdict == NOT_REPRODUCED and res.evidence.startswith("1 of 2 pairs")
    assert check(dlbench.gpu_order_of_magnitude_faster, [row("pytorch", "cnn-mnist")]).verdict == INSUFFICIENT


# --- DLBench 3: Keras IMDB faster on CPU ----------------------------------------------------

def test_claim3_keras_imdb() -> None:
    cpu_wins = [row("keras", "lstm-imdb", time=100), row("keras", "lstm-imdb", "gpu", time=125)]
    res = check(dlbench.keras_imdb_cpu_faster, cpu_wins)
    assert res.verdict == REPRODUCED and "CPU 100 s vs GPU 125 s (GPU speedup 0.800×" in res.evidence
    gpu_wins = [row("keras", "lstm-imdb", time=100), row("keras", "lstm-imdb", "gpu", time=50)]
    assert check(dlbench.keras_imdb_cpu_faster, gpu_wins).verdict == NOT_REPRODUCED
    other = [row("pytorch", "lstm-imdb", time=100), row("pytorch", "lstm-imdb", "gpu", time=125),
             row("keras", "lstm-imdb", time=100)]
    assert check(dlbench.keras_imdb_cpu_faster, other).verdict == INSUFFICIENT


# --- DLBench 4: longer time does not imply higher accuracy ----------------------------------

def test_claim4_slowest_vs_most_accurate() -> None:
    chainer_slow = [row("chainer", "cnn-mnist", time=5400, acc=96.4), row("keras", "cnn-mnist", time=360, acc=98),
                    row("pytorch", "cnn-mnist", time=1000, acc=97)]
    res = check(dlbench.longer_time_not_higher_accuracy, chainer_slow)
    assert res.verdict == REPRODUCED
    assert "slowest chainer (5,400 s, 96.40 %), most accurate keras" in res.evidence
    # Times 5400 > 1000 > 360 vs accuracies 96.4 < 97 < 98: every pair discordant, tau = -1.
    assert "tau=-1, p=0.333, n=3" in res.evidence
    slow_best = [row("chainer", "cnn-mnist", time=5400, acc=99), row("keras", "cnn-mnist", time=360, acc=98)]
    res = check(dlbench.longer_time_not_higher_accuracy, slow_best)
    assert res.verdict == NOT_REPRODUCED and res.evidence.startswith("slowest is not the most accurate in 0 of 1")
    assert check(dlbench.longer_time_not_higher_accuracy, [row("keras", "cnn-mnist")]).verdict == INSUFFICIENT


# --- DLBench 5: more CPU/memory does not imply shorter time ---------------------------------

def test_claim5_resources_vs_time() -> None:
    greedy_slow = [row("pytorch", "cnn-mnist", cpu=90, mem=400, time=300), row("keras", "cnn-mnist", cpu=50, mem=500,
                                                                              time=100)]
    res = check(dlbench.more_resources_not_faster, greedy_slow)
    assert res.verdict == REPRODUCED
    assert "most CPU pytorch (90.0 %) is #2 of 2 in time" in res.evidence
    assert "most memory keras (500 MB) is #1 of 2 in time" in res.evidence
    assert res.evidence.startswith("top resource user is not the fastest in 1 of 2 comparisons")
    greedy_fast = [row("pytorch", "cnn-mnist", cpu=90, mem=600, time=100), row("keras", "cnn-mnist", cpu=50,
                                                                               mem=500, time=200)]
    assert check(dlbench.more_resources_not_faster, greedy_fast).verdict == NOT_REPRODUCED
    no_monitor = [row("pytorch", "cnn-mnist", cpu=None, mem=None), row("keras", "cnn-mnist", cpu=None, mem=None)]
    assert check(dlbench.more_resources_not_faster, no_monitor).verdict == INSUFFICIENT


# --- DLBench 6: GPU utilization much higher than CPU ----------------------------------------

def test_claim6_gpu_utilization() -> None:
    busy = [row("pytorch", "cnn-mnist", "gpu", gpu=95, cpu=20), row("pytorch", "lstm-imdb", "gpu", gpu=60, cpu=10)]
    res = check(dlbench.gpu_util_much_higher, busy)
    assert res.verdict == REPRODUCED and "pytorch cnn-mnist: GPU 95.0 % vs CPU 20.0 %" in res.evidence
    idle_cnn = [row("pytorch", "cnn-mnist", "gpu", gpu=70, cpu=10)]  # 7x the CPU, but not close to 100 %
    res = check(dlbench.gpu_util_much_higher, idle_cnn)
    assert res.verdict == NOT_REPRODUCED and "(fails)" in res.evidence
    cpu_bound = [row("pytorch", "lstm-imdb", "gpu", gpu=30, cpu=20)]  # not 2x
    assert check(dlbench.gpu_util_much_higher, cpu_bound).verdict == NOT_REPRODUCED
    unmeasured = [row("pytorch", "cnn-mnist", "gpu", gpu=None), row("pytorch", "cnn-mnist", gpu=None)]
    res = check(dlbench.gpu_util_much_higher, unmeasured)
    assert res.verdict == INSUFFICIENT and res.run_ids == ("pytorch-cnn-mnist-gpu-b128-lr0.01-r1",)


# --- DLBench 7: Theano fails on IMDB and leaks memory ---------------------------------------

def test_claim7_theano() -> None:
    leak = [row("theano", "lstm-imdb", acc=50, mem=5000), row("keras", "lstm-imdb", acc=87, mem=400)]
    res = check(dlbench.theano_imdb_failure_and_leak, leak)
    assert res.verdict == REPRODUCED and "(b) memory 5,000 MB = 12.5× keras" in res.evidence
    nan = [row("theano", "lstm-imdb", status="failed", cause="nan", mem=5000), row("keras", "lstm-imdb", mem=400)]
    # A NaN failure counts as failure to learn (part a holds), but a failed run gives no memory mean for
    # part b: insufficient data, not a guess.
    res = check(dlbench.theano_imdb_failure_and_leak, nan)
    assert res.verdict == INSUFFICIENT and "1 NaN failures" in res.evidence
    learns = [row("theano", "lstm-imdb", acc=87, mem=5000), row("keras", "lstm-imdb", acc=87, mem=400)]
    assert check(dlbench.theano_imdb_failure_and_leak, learns).verdict == NOT_REPRODUCED
    no_leak = [row("theano", "lstm-imdb", acc=50, mem=500), row("keras", "lstm-imdb", mem=400)]
    assert check(dlbench.theano_imdb_failure_and_leak, no_leak).verdict == NOT_REPRODUCED
    res = check(dlbench.theano_imdb_failure_and_leak, [row("keras", "lstm-imdb")])
    assert res.verdict == INSUFFICIENT and res.evidence.startswith("not in this campaign")


# --- DLBench 8: time proportional to epochs -------------------------------------------------

def test_claim8_linearity() -> None:
    a, b = row("keras", "cnn-mnist"), row("pytorch", "cnn-mnist")
    steady = {a["run_id"]: epochs_of([10, 10, 10, 10]), b["run_id"]: epochs_of([12, 10, 10, 10])}
    res = check(dlbench.time_proportional_to_epochs, [a, b], steady)
    assert res.verdict == REPRODUCED and res.evidence.startswith("2 of 2 runs linear (R² ≥ 0.99)")
    # Cumulative 1, 2, 3, 33: Sxy 48.5, Sxx 5, SS_tot 722.75 -> R² = 48.5² / 5 / 722.75 = 0.6509.
    jump = {a["run_id"]: epochs_of([10, 10, 10, 10]), b["run_id"]: epochs_of([1, 1, 1, 30])}
    res = check(dlbench.time_proportional_to_epochs, [a, b], jump)
    assert res.verdict == NOT_REPRODUCED
    assert f"lowest R² {48.5**2 / 5 / 722.75:.4f} (pytorch cnn-mnist repeat 1, 4 epochs)" in res.evidence
    short = {a["run_id"]: epochs_of([10, 10])}
    assert check(dlbench.time_proportional_to_epochs, [a], short).verdict == INSUFFICIENT


# --- DLBench 9: CPU and GPU curves almost the same ------------------------------------------

def test_claim9_curves() -> None:
    cpu, gpu = row("keras", "cnn-mnist"), row("keras", "cnn-mnist", "gpu")
    close = {cpu["run_id"]: epochs_of([1, 1, 1], [0.90, 0.95, 0.98]),
             gpu["run_id"]: epochs_of([1, 1, 1], [0.91, 0.95, 0.97])}
    res = check(dlbench.cpu_gpu_curves_same, [cpu, gpu], close)
    assert res.verdict == REPRODUCED and "mean |CPU − GPU| 0.67 pp over 3 epochs" in res.evidence
    apart = {cpu["run_id"]: epochs_of([1, 1, 1], [0.90, 0.95, 0.98]),
             gpu["run_id"]: epochs_of([1, 1, 1], [0.80, 0.85, 0.90])}
    res = check(dlbench.cpu_gpu_curves_same, [cpu, gpu], apart)
    assert res.verdict == NOT_REPRODUCED and "9.33 pp" in res.evidence
    assert check(dlbench.cpu_gpu_curves_same, [cpu], close).verdict == INSUFFICIENT
