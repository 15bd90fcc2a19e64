"""DLBench's claims (studies/dlbench/claims.py and the checks of rankings.py and curves.py) on small hand-made result
tables, and its published numbers as run-table rows (published.py).

Every claim gets a table on which it is reproduced, one on which it is not, and one with too little
data; the evidence strings carry the hand-computed numbers.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from analysis.claims import INSUFFICIENT, NOT_REPRODUCED, REPRODUCED
from analysis.reference import PublishedValue
from studies.dlbench import claims as dlbench
from studies.dlbench import published
from studies.dlbench.rankings import experiments_for
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
    leak = [row("theano", "lstm-imdb", acc=50, mem=25000), row("keras", "lstm-imdb", acc=87, mem=400)]
    res = check(dlbench.theano_imdb_failure_and_leak, leak)
    assert res.verdict == REPRODUCED and "(b) memory 25,000 MB = 62.5× keras (a leak: ≥ 50×)" in res.evidence
    # 12.5x the next framework is a large footprint, not the paper's >50x leak.
    big = [row("theano", "lstm-imdb", acc=50, mem=5000), row("keras", "lstm-imdb", acc=87, mem=400)]
    res = check(dlbench.theano_imdb_failure_and_leak, big)
    assert res.verdict == NOT_REPRODUCED and "12.5× keras" in res.evidence
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


# --- Claims 10 onwards: the findings of Section 5 (findings_claims.py) -------------------------

CLAIM = {c.id: c.check for c in dlbench.CLAIMS}


def test_ranking_chainer_slowest_keras_fastest_on_cpu_cnns() -> None:
    as_paper = [row("chainer", "cnn-mnist", time=5400), row("keras", "cnn-mnist", time=360),
                row("pytorch", "cnn-mnist", time=1000)]
    res = check(CLAIM["16"], as_paper)
    assert res.verdict == REPRODUCED and res.evidence.startswith("2 of 2 expectations hold")
    assert "cnn-mnist/cpu: highest training time chainer (5,400 s) of 3; expected chainer: holds" in res.evidence
    assert len(res.run_ids) == 3
    pytorch_slowest = [row("chainer", "cnn-mnist", time=900), row("keras", "cnn-mnist", time=360),
                       row("pytorch", "cnn-mnist", time=1000)]
    res = check(CLAIM["16"], pytorch_slowest)
    assert res.verdict == NOT_REPRODUCED and "expected chainer: fails" in res.evidence
    # Neither named framework ran, or a GPU group: nothing to decide.
    others = [row("pytorch", "cnn-mnist", time=1), row("mxnet", "cnn-mnist", time=2),
              row("chainer", "cnn-mnist", "gpu", time=9), row("keras", "cnn-mnist", "gpu", time=1)]
    assert check(CLAIM["16"], others).verdict == INSUFFICIENT


def test_ranking_a_tie_of_named_frameworks_and_rules_per_workload() -> None:
    # Claim 23: MNIST's fastest is one of Chainer/TensorFlow/Keras (1 min 3 s each in the paper).
    tf_fastest = [row("tensorflow", "cnn-mnist", "gpu", time=60), row("mxnet", "cnn-mnist", "gpu", time=390),
                  row("pytorch", "cnn-mnist", "gpu", time=300)]
    res = check(CLAIM["23"], tf_fastest)
    assert res.verdict == REPRODUCED and "expected chainer/tensorflow/keras: holds" in res.evidence
    pytorch_fastest = [row("tensorflow", "cnn-mnist", "gpu", time=60), row("pytorch", "cnn-mnist", "gpu", time=50)]
    assert check(CLAIM["23"], pytorch_fastest).verdict == NOT_REPRODUCED
    # Claim 20: Chainer least memory on PTB and Many things, TensorFlow most on PTB, PyTorch most on Many things.
    lstm = [row("chainer", "lstm-ptb", mem=400), row("tensorflow", "lstm-ptb", mem=1800),
            row("chainer", "seq2seq-manythings", mem=1000), row("pytorch", "seq2seq-manythings", mem=8600)]
    res = check(CLAIM["20"], lstm)
    assert res.verdict == REPRODUCED and res.evidence.startswith("4 of 4 expectations hold")
    lstm[3] = row("pytorch", "seq2seq-manythings", mem=900)
    res = check(CLAIM["20"], lstm)
    assert res.verdict == NOT_REPRODUCED and res.evidence.startswith("2 of 4 expectations hold")


def test_band_mnist_all_but_chainer_agree_and_chainer_lowest() -> None:
    as_paper = [row("keras", "cnn-mnist", acc=98.3), row("pytorch", "cnn-mnist", acc=98.4),
                row("tensorflow", "cnn-mnist", acc=98.5), row("chainer", "cnn-mnist", acc=96.4)]
    res = check(CLAIM["10"], as_paper)
    assert res.verdict == REPRODUCED
    assert ("cnn-mnist/cpu: 3 frameworks within 0.20 pp (98.30-98.50 %; spread ≤ 2 pp: holds); chainer 96.40 % "
            "below the band: holds") in res.evidence
    apart = [row("keras", "cnn-mnist", acc=98.5), row("pytorch", "cnn-mnist", acc=95.0),
             row("chainer", "cnn-mnist", acc=94.0)]
    res = check(CLAIM["10"], apart)
    assert res.verdict == NOT_REPRODUCED and "within 3.50 pp" in res.evidence and "spread ≤ 2 pp: fails" in res.evidence
    chainer_on_top = [row("keras", "cnn-mnist", acc=98.0), row("pytorch", "cnn-mnist", acc=98.2),
                      row("chainer", "cnn-mnist", acc=98.9)]
    res = check(CLAIM["10"], chainer_on_top)
    assert res.verdict == NOT_REPRODUCED and "chainer 98.90 % below the band: fails" in res.evidence
    assert check(CLAIM["10"], [row("keras", "cnn-mnist"), row("chainer", "cnn-mnist")]).verdict == INSUFFICIENT


def test_band_ptb_allows_the_printed_ranges_width() -> None:
    # 17-22 %: a 4.5-point spread agrees, a 6-point one does not.
    within = [row("keras", "lstm-ptb", "gpu", acc=17.0), row("pytorch", "lstm-ptb", "gpu", acc=21.5)]
    assert check(CLAIM["14"], within).verdict == REPRODUCED
    wider = [row("keras", "lstm-ptb", "gpu", acc=17.0), row("pytorch", "lstm-ptb", "gpu", acc=23.0)]
    res = check(CLAIM["14"], wider)
    assert res.verdict == NOT_REPRODUCED and "spread ≤ 5 pp: fails" in res.evidence


# The other ranking and band claims: (claim, device, workload, row() keyword, values as the paper has them, values
# that break one of its expectations).
OTHERS = [
    ("11", "cpu", "cnn-cifar10", "acc", {"tensorflow": 80, "keras": 80.5, "chainer": 73, "pytorch": 72},
     {"pytorch": 81}),
    ("12", "cpu", "cnn-cifar100", "acc", {"keras": 54, "chainer": 28, "tensorflow": 40}, {"tensorflow": 60}),
    ("13", "gpu", "lstm-imdb", "acc", {"keras": 87.5, "pytorch": 87.9, "theano": 50}, {"theano": 88}),
    ("15", "cpu", "seq2seq-manythings", "acc", {"chainer": 99.7, "keras": 73, "tensorflow": 80}, {"keras": 99.9}),
    ("17", "cpu", "lstm-ptb", "time", {"theano": 90000, "pytorch": 20000}, {"pytorch": 100000}),
    ("18", "cpu", "cnn-cifar10", "cpu", {"mxnet": 30, "pytorch": 90, "keras": 50}, {"mxnet": 95}),
    ("19", "cpu", "cnn-cifar100", "mem", {"mxnet": 700, "keras": 900}, {"mxnet": 1000}),
    ("21", "gpu", "cnn-svhn", "acc", {"keras": 97, "pytorch": 96.5}, {"pytorch": 94}),
    ("22", "gpu", "cnn-cifar100", "acc", {"mxnet": 62, "tensorflow": 40, "keras": 50}, {"tensorflow": 70}),
    ("24", "gpu", "lstm-imdb", "gpu", {"theano": 66, "keras": 30}, {"keras": 70}),
    ("25", "gpu", "lstm-imdb", "cpu", {"tensorflow": 32, "keras": 10}, {"keras": 40}),
    ("31", "cpu", "frcnn-voc2012", "acc", {"tensorflow": 63, "keras": 62, "chainer": 53, "pytorch": 51},
     {"chainer": 64}),
    ("32", "cpu", "frcnn-voc2012", "time", {"tensorflow": 68820, "mxnet": 75900, "keras": 86400}, {"mxnet": 60000}),
    ("33", "gpu", "frcnn-voc2012", "gpu", {"pytorch": 54, "tensorflow": 34, "keras": 47}, {"keras": 30}),
    ("34", "gpu", "frcnn-voc2012", "cpu", {"mxnet": 18, "theano": 12, "keras": 14}, {"keras": 19}),
    ("35", "gpu", "frcnn-voc2012", "mem", {"keras": 7366, "chainer": 729, "tensorflow": 7357}, {"tensorflow": 8000}),
]


@pytest.mark.parametrize(("cid", "device", "workload", "key", "as_paper", "broken"), OTHERS, ids=[o[0] for o in OTHERS])
def test_other_ranking_and_band_claims(cid, device, workload, key, as_paper, broken) -> None:
    def table(values: dict[str, float]) -> list[dict]:
        return [row(fw, workload, device, **{key: v}) for fw, v in values.items()]

    assert check(CLAIM[cid], table(as_paper)).verdict == REPRODUCED, cid
    res = check(CLAIM[cid], table({**as_paper, **broken}))
    assert res.verdict == NOT_REPRODUCED and "fails" in res.evidence, cid
    # One framework alone decides nothing.
    assert check(CLAIM[cid], table(dict(list(as_paper.items())[:1]))).verdict == INSUFFICIENT, cid


def test_lstm_gpu_speedups_fall_on_the_papers_side_of_an_order_of_magnitude() -> None:
    as_paper = [row("theano", "lstm-imdb", time=1100), row("theano", "lstm-imdb", "gpu", time=100),
                row("chainer", "lstm-imdb", time=150), row("chainer", "lstm-imdb", "gpu", time=100)]
    res = check(CLAIM["26"], as_paper)
    assert res.verdict == REPRODUCED
    assert "theano lstm-imdb 11.0× (paper 11 x, exact; ≥ 3.16× expected): holds" in res.evidence
    assert "chainer lstm-imdb 1.50× (paper 1.5 x, exact; < 3.16× expected): holds" in res.evidence
    chainer_fast = as_paper[:2] + [row("chainer", "lstm-imdb", time=1000), row("chainer", "lstm-imdb", "gpu", time=100)]
    res = check(CLAIM["26"], chainer_fast)
    assert res.verdict == NOT_REPRODUCED and "chainer lstm-imdb 10.0×" in res.evidence and "fails" in res.evidence
    # A pair the paper prints no speed-up for decides nothing.
    unprinted = [row("pytorch", "lstm-imdb", time=1000), row("pytorch", "lstm-imdb", "gpu", time=100)]
    assert check(CLAIM["26"], unprinted).verdict == INSUFFICIENT


def _per_workload(fw: str, cpus: list[float], mems: list[float]) -> list[dict]:
    """One run of `fw` on each of the study's six CPU workloads, with these CPU and memory uses."""
    return [row(fw, wl, cpu=c, mem=m) for wl, c, m in zip(CPU_WORKLOADS, cpus, mems, strict=True)]


CPU_WORKLOADS = ("cnn-mnist", "cnn-cifar10", "cnn-cifar100", "lstm-imdb", "lstm-ptb", "seq2seq-manythings")


def test_wilcoxon_on_cpu_and_memory_use_pairs_frameworks_over_the_workloads() -> None:
    keras = _per_workload("keras", [50, 51, 52, 53, 54, 55], [500, 501, 502, 503, 504, 505])
    apart = keras + _per_workload("pytorch", [80, 81, 82, 83, 84, 85], [900, 901, 902, 903, 904, 905])
    res = check(CLAIM["27"], apart)
    # Six differences of one sign: the exact two-sided p is 2 / 2**6 = 0.03125 for both metrics.
    assert res.verdict == REPRODUCED and res.evidence.startswith("2 of 2 framework pairs differ")
    assert "cpu_util_mean_pct keras vs pytorch over 6 workloads" in res.evidence
    assert "p=0.0312" in res.evidence and len(res.run_ids) == 12
    # Differences +1, -2, +3, -4, +5, -6: W = 9, p = 0.69 on both metrics.
    mixed = keras + _per_workload("pytorch", [51, 49, 55, 49, 59, 49], [501, 499, 505, 499, 509, 499])
    res = check(CLAIM["27"], mixed)
    assert res.verdict == NOT_REPRODUCED and res.evidence.startswith("0 of 2 framework pairs differ")
    few = [r for r in apart if r["workload"] in CPU_WORKLOADS[:3]]  # 3 workloads: p >= 0.25 whatever the signs
    assert check(CLAIM["27"], few).verdict == INSUFFICIENT
    # Claim 28 reads GPU use of GPU runs only: these CPU runs decide nothing there.
    assert check(CLAIM["28"], apart).verdict == INSUFFICIENT


def test_peaks_before_the_last_epoch() -> None:
    run = row("keras", "cnn-mnist")  # the paper gives Keras's CPU MNIST peak: epochs 12-14 of 15
    res = check(CLAIM["29"], [run], {run["run_id"]: epochs_of([1, 1, 1], [0.90, 0.99, 0.98])})
    assert res.verdict == REPRODUCED
    assert "keras cnn-mnist/cpu: peak 99.00 % at epoch 2 of 3 (paper peak_accuracy_epoch 13 epoch" in res.evidence
    res = check(CLAIM["29"], [run], {run["run_id"]: epochs_of([1, 1, 1], [0.90, 0.95, 0.99])})
    assert res.verdict == NOT_REPRODUCED and "(fails)" in res.evidence
    unnamed = row("chainer", "cnn-mnist")  # the paper gives no Chainer MNIST peak
    assert check(CLAIM["29"], [unnamed], {unnamed["run_id"]: epochs_of([1, 1, 1], [0.9, 0.99, 0.98])}
                 ).verdict == INSUFFICIENT


def test_no_framework_peaks_earliest_everywhere() -> None:
    rows = [row("keras", "cnn-mnist"), row("pytorch", "cnn-mnist"), row("keras", "lstm-imdb"),
            row("pytorch", "lstm-imdb")]
    early, late = epochs_of([1, 1, 1], [0.9, 0.8, 0.8]), epochs_of([1, 1, 1], [0.7, 0.8, 0.9])
    ids = [r["run_id"] for r in rows]
    split = dict(zip(ids, [early, late, late, early]))
    res = check(CLAIM["30"], rows, split)
    assert res.verdict == REPRODUCED and "cnn-mnist/cpu: best keras (1.000 epoch) of 2" in res.evidence
    keras_first = dict(zip(ids, [early, late, early, late]))
    res = check(CLAIM["30"], rows, keras_first)
    assert res.verdict == NOT_REPRODUCED and "keras best in every group" in res.evidence
    assert check(CLAIM["30"], rows[:2], split).verdict == INSUFFICIENT


def test_published_rows_map_the_csv_onto_the_kits_workloads() -> None:
    by_id = {r["run_id"]: r for r in published.runs()}
    # A framework's own row: CPU MNIST Chainer 96.4 % and 1 h 30 (5,400 s).
    chainer = by_id["published:dlbench:cpu-cnn-mnist-chainer"]
    assert (chainer["test_accuracy"], chainer["training_time_s"], chainer["device"]) == (96.4, 5400.0, "cpu")
    # A '*' row "all frameworks" feeds each of the six; Many things is the seq2seq workload.
    assert {r["framework"] for r in by_id.values() if r["workload"] == "lstm-ptb" and r["device"] == "gpu"} == {
        "chainer", "keras", "mxnet", "pytorch", "tensorflow", "theano"}
    assert by_id["published:dlbench:cpu-seq2seq-manythings-chainer"]["test_accuracy"] == 99.7
    # GPU IMDB's "four frameworks" row names none of them: only PyTorch's and Theano's own accuracies are rows.
    imdb = {r["framework"]: r.get("test_accuracy") for r in by_id.values()
            if r["workload"] == "lstm-imdb" and r["device"] == "gpu"}
    assert imdb == {"pytorch": 87.5, "theano": 50.0, "tensorflow": None}
    # Faster R-CNN's rows (Sec 5.1-5.5.3) are frcnn-voc2012's: CPU mAP 51-63 %, a lower bound of 24 h where the
    # paper says "more than 24 h".
    frcnn = {(r["device"], r["framework"]): r for r in by_id.values() if r["workload"] == "frcnn-voc2012"}
    assert frcnn[("cpu", "pytorch")]["test_accuracy"] == 51 and frcnn[("gpu", "chainer")]["test_accuracy"] == 59
    assert frcnn[("cpu", "keras")]["training_time_s"] == 86400


def test_a_wildcard_row_applies_to_the_frameworks_it_lists() -> None:
    named = ["chainer", "keras", "mxnet", "pytorch", "tensorflow", "theano"]
    listed = PublishedValue("cpu", "cnn", "mnist", "*", "peak_accuracy_epoch", 13, "epoch",
                            "range 12-14 (pytorch tensorflow theano mxnet keras)", "Sec 5.4")
    assert published.row_frameworks(listed, named) == ["pytorch", "tensorflow", "theano", "mxnet", "keras"]
    assert published.row_frameworks(replace(listed, qualifier="approx all frameworks"), named) == named
    assert published.row_frameworks(replace(listed, qualifier="range 87-88 for four (PyTorch: its own)"), named) == []
    assert published.row_frameworks(replace(listed, framework="keras"), named) == ["keras"]


def test_claims_name_the_make_targets_that_run_their_workloads() -> None:
    assert experiments_for(("cpu",), ("cnn-mnist",)) == ("cpu-cnn",)  # the demo runs it too, but decides nothing
    assert experiments_for(("cpu", "gpu"), ("lstm-imdb",)) == ("cpu-lstm", "gpu-lstm")
    assert experiments_for(("gpu",), ("no-such-workload",)) == ()
