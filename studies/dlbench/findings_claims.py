"""DLBench's claims 10 onwards: the findings of its Sections 5.1-5.5 beyond dlbench.md's nine selected claims
(findings.toml names which finding each tests), built from the shared checks of rankings.py and curves.py.

Each claim's basis names where its numbers are: the study notes (shared/studies/dlbench.md) or dlbench.csv's rows
(the numbers the paper prints, with their section); the kit has no copy of the paper's sentences.
"""

from __future__ import annotations

from analysis.claims import Claim
from analysis.transfer import ACCURACY_TOLERANCE_PP
from studies.dlbench.curves import (
    PEAK_METRICS,
    lstm_gpu_speedups,
    no_framework_peaks_earliest,
    peaks_before_last_epoch,
    published,
    resource_use_differs,
)
from studies.dlbench.rankings import Extreme, band_check, experiments_for, experiments_running, ranking_check

CNN_CPU = ("cnn-mnist", "cnn-cifar10", "cnn-cifar100")
LSTM = ("lstm-imdb", "lstm-ptb", "seq2seq-manythings")
# Sec 5.1 / 5.5.1 print PTB accuracy as one range for all frameworks, 17-21.7 % (CPU) and 17-22 % (GPU): frameworks
# "agree" on PTB within that range's width, 22 - 17 points.
PTB_SPREAD_PP = 5.0
# The study notes' sentence the Wilcoxon claims rest on (Protocol).
WILCOXON = "Study notes, Protocol: \"Wilcoxon signed-rank test between frameworks (p < 0.05)\";"
# Why the published tables cannot feed a Wilcoxon test or a per-epoch check (Claim.unfed).
NEEDS_ALL_FIGURES = "needs every framework's figure on each dataset: the paper prints the extremes only"
NEEDS_CURVES = "needs per-epoch accuracy curves: the paper prints peak epochs and r, not the curves"
LOWER_BOUND = ("A '>24 h' lower bound counts as its value: the true time is at least that long, so a framework "
               "printed with one is at least as slow as the value says.")


def _ranking(cid: str, study: str, statement: str, column: str, devices: tuple[str, ...],
             extremes: list[Extreme], basis: str, unfed: str = "") -> Claim:
    workloads = tuple(w for e in extremes for w in e.workloads)
    return Claim(cid, study, statement, ranking_check(column, devices, extremes, basis),
                 load_sensitive=column in ("training_time_s", "cpu_util_mean_pct"),
                 decided_by=experiments_for(devices, workloads), unfed=unfed)


def _band(cid: str, study: str, statement: str, devices: tuple[str, ...], workloads: tuple[str, ...],
          spread_pp: float, below: tuple[str, ...], basis: str) -> Claim:
    return Claim(cid, study, statement, band_check(devices, workloads, spread_pp, below, basis),
                 decided_by=experiments_for(devices, workloads))


def _accuracy_claims(study: str) -> list[Claim]:
    tolerance = (f"About the same: within {ACCURACY_TOLERANCE_PP:g} percentage points "
                 "(analysis.transfer.ACCURACY_TOLERANCE_PP, the spread the paper calls about the same).")
    return [
        _band("10", study, "On CPU, every framework but Chainer reaches about 98 % on MNIST; Chainer is lowest.",
              ("cpu",), ("cnn-mnist",), ACCURACY_TOLERANCE_PP, ("chainer",),
              f"dlbench.csv, Sec 5.1: CPU MNIST accuracy ≈98 % for TensorFlow, Keras, PyTorch, MXNet and Theano, "
              f"Chainer 96.4 %. {tolerance}"),
        _band("11", study, "On CPU CIFAR-10, TensorFlow, Keras, MXNet and Theano reach about 80 %; Chainer (73 %) "
              "and PyTorch (72 %) fall below them.", ("cpu",), ("cnn-cifar10",), ACCURACY_TOLERANCE_PP,
              ("chainer", "pytorch"),
              f"dlbench.csv, Sec 5.1: CPU CIFAR-10 ≈80 % for TensorFlow, Keras, MXNet and Theano; Chainer 73 %, "
              f"PyTorch 72 %. {tolerance}"),
        _ranking("12", study, "On CPU CIFAR-100, Keras is the most accurate (53.8 %) and Chainer the least (28.3 %).",
                 "test_accuracy", ("cpu",), [Extreme(("cnn-cifar100",), ("keras",), False),
                                              Extreme(("cnn-cifar100",), ("chainer",), True)],
                 "dlbench.csv, Sec 5.1: CPU CIFAR-100 Keras 53.8 % (highest), Chainer 28.3 % (lowest)."),
        _band("13", study, "On IMDB every framework but Theano reaches 87-88 %, on CPU and GPU; Theano falls below.",
              ("cpu", "gpu"), ("lstm-imdb",), ACCURACY_TOLERANCE_PP, ("theano",),
              f"dlbench.csv, Sec 5.1 and 5.5.1: IMDB 87-88 % for Keras, PyTorch, TensorFlow, Chainer and MXNet on "
              f"CPU and for four frameworks on GPU; Theano 50 %. {tolerance}"),
        _band("14", study, "On PTB all frameworks reach 17-22 %, on CPU and GPU.", ("cpu", "gpu"), ("lstm-ptb",),
              PTB_SPREAD_PP, (),
              "dlbench.csv, Sec 5.1 and 5.5.1: PTB 17-21.7 % on CPU and 17-22 % on GPU for all frameworks; the "
              f"spread allowed is that range's width, {PTB_SPREAD_PP:g} points."),
        _ranking("15", study, "On CPU Many things, Chainer is the most accurate (99.7 %) and Keras the least (73.3 %).",
                 "test_accuracy", ("cpu",), [Extreme(("seq2seq-manythings",), ("chainer",), False),
                                              Extreme(("seq2seq-manythings",), ("keras",), True)],
                 "dlbench.csv, Sec 5.1: CPU Many things Chainer 99.7 % (highest), Keras 73.3 % (lowest)."),
        _band("21", study, "On GPU, every framework reaches about 98 % on MNIST and about 97 % on SVHN.", ("gpu",),
              ("cnn-mnist", "cnn-svhn"), ACCURACY_TOLERANCE_PP, (),
              f"dlbench.csv, Sec 5.5.1: GPU MNIST ≈98 % and SVHN ≈97 % for all frameworks. {tolerance}"),
        _ranking("22", study, "On GPU, MXNet is the most accurate on CIFAR-100 and TensorFlow the least; Chainer the "
                 "most accurate on Many things and TensorFlow the least.", "test_accuracy", ("gpu",),
                 [Extreme(("cnn-cifar100",), ("mxnet",), False), Extreme(("cnn-cifar100",), ("tensorflow",), True),
                  Extreme(("seq2seq-manythings",), ("chainer",), False),
                  Extreme(("seq2seq-manythings",), ("tensorflow",), True)],
                 "dlbench.csv, Sec 5.5.1: GPU CIFAR-100 MXNet 62.2 % (highest), TensorFlow 40.7 % (lowest); Many "
                 "things Chainer 99.7 %, Theano 96.4 %, PyTorch 94.4 %, TensorFlow 74.7 % (lowest)."),
    ]


def _time_and_resource_claims(study: str) -> list[Claim]:
    return [
        _ranking("16", study, "On CPU CNNs, Chainer is the slowest and Keras the fastest framework.",
                 "training_time_s", ("cpu",),
                 [Extreme(CNN_CPU, ("chainer",), False), Extreme(CNN_CPU, ("keras",), True)],
                 "dlbench.csv, Sec 5.2: CPU CNN times Chainer 1 h 30 (MNIST), 13 h 44 (CIFAR-10), >24 h (CIFAR-100), "
                 f"the highest; Keras 6 min, 1 h 12, 5 h 48, the lowest. {LOWER_BOUND}"),
        _ranking("17", study, "On CPU LSTMs, Theano is the slowest framework (11 h 6 on IMDB, over 24 h on PTB and "
                 "Many things).", "training_time_s", ("cpu",), [Extreme(LSTM, ("theano",), False)],
                 "dlbench.csv, Sec 5.2: CPU IMDB PyTorch and TensorFlow about 4 h, Theano 11 h 6 (highest); Theano "
                 "more than 24 h on PTB and Many things, the only framework printed past the 24 h limit. "
                 + LOWER_BOUND),
        _ranking("18", study, "On CPU CNNs, MXNet uses the least CPU and PyTorch the most.", "cpu_util_mean_pct",
                 ("cpu",), [Extreme(CNN_CPU, ("mxnet",), True), Extreme(CNN_CPU, ("pytorch",), False)],
                 "Issue 30 and the study notes (claim 5: \"PyTorch highest CPU on CNN\"), Sec 5.3: MXNet lowest CPU "
                 "use on CNNs, PyTorch highest (CPU use by Eq. 1-2: mean over cores of each core's active share).",
                 unfed="Sec 5.3 names the extremes without printing the CPU-use figures"),
        _ranking("19", study, "On CPU CIFAR-10 and CIFAR-100, MXNet uses the least memory (403 and 751 MB).",
                 "mem_mean_mb", ("cpu",), [Extreme(("cnn-cifar10", "cnn-cifar100"), ("mxnet",), True)],
                 "dlbench.csv, Sec 5.3: CPU memory MXNet 403 MB (CIFAR-10) and 751 MB (CIFAR-100), the lowest.",
                 unfed="Sec 5.3 prints only MXNet's CNN memory, no other framework's to compare"),
        _ranking("20", study, "On CPU LSTMs, Chainer uses the least memory on PTB and Many things; TensorFlow the most "
                 "on PTB, PyTorch the most on Many things.", "mem_mean_mb", ("cpu",),
                 [Extreme(("lstm-ptb", "seq2seq-manythings"), ("chainer",), True),
                  Extreme(("lstm-ptb",), ("tensorflow",), False),
                  Extreme(("seq2seq-manythings",), ("pytorch",), False)],
                 "dlbench.csv, Sec 5.3: CPU memory Chainer 396.2 MB (PTB) and 1065.4 MB (Many things), the lowest; "
                 "TensorFlow 1831.2 MB on PTB and PyTorch 8647.8 MB on Many things, the highest."),
        _ranking("23", study, "On GPU CNNs: MNIST fastest Chainer/TensorFlow/Keras, slowest MXNet; CIFAR-10 fastest "
                 "Chainer, slowest PyTorch; CIFAR-100 fastest Keras, slowest Theano.", "training_time_s", ("gpu",),
                 [Extreme(("cnn-mnist",), ("chainer", "tensorflow", "keras"), True),
                  Extreme(("cnn-mnist",), ("mxnet",), False), Extreme(("cnn-cifar10",), ("chainer",), True),
                  Extreme(("cnn-cifar10",), ("pytorch",), False), Extreme(("cnn-cifar100",), ("keras",), True),
                  Extreme(("cnn-cifar100",), ("theano",), False)],
                 "dlbench.csv, Sec 5.5.2: GPU MNIST 1 min 3 s for Chainer, TensorFlow and Keras, MXNet 6 min 33 s "
                 "(highest); CIFAR-10 Chainer 7 min 42 s (lowest), PyTorch 43 min 48 s (highest); CIFAR-100 Keras "
                 "1 h 47 (lowest), Theano 4 h 42 (highest)."),
        _ranking("24", study, "On GPU LSTMs, PyTorch has the highest GPU use on PTB and Many things, Theano on IMDB.",
                 "gpu_util_mean_pct", ("gpu",),
                 [Extreme(("lstm-ptb", "seq2seq-manythings"), ("pytorch",), False),
                  Extreme(("lstm-imdb",), ("theano",), False)],
                 "dlbench.csv, Sec 5.5.3: GPU use PyTorch 91.6 % (PTB) and 94.6 % (Many things), the highest; Theano "
                 "66.6 % on IMDB, the highest; Theano and TensorFlow 66-67 % on PTB (GPU use by Eq. 3)."),
        _ranking("25", study, "With the GPU, TensorFlow uses the most CPU on IMDB and PyTorch the least on Many "
                 "things.", "cpu_util_mean_pct", ("gpu",),
                 [Extreme(("lstm-imdb",), ("tensorflow",), False),
                  Extreme(("seq2seq-manythings",), ("pytorch",), True)],
                 "dlbench.csv, Sec 5.5.3: CPU use in the GPU environment TensorFlow 32.2 % on IMDB (highest), PyTorch "
                 "1.5 % on Many things (lowest).",
                 unfed="Sec 5.5.3 prints only the extreme framework's CPU use, no other to compare"),
    ]


def _detector_claims(study: str) -> list[Claim]:
    frcnn = ("frcnn-voc2012",)
    return [
        _band("31", study, "On Faster R-CNN, TensorFlow, MXNet, Theano and Keras reach about the same mAP (62-63.3 %) "
              "on CPU and GPU; Chainer and PyTorch fall below them.", ("cpu", "gpu"), frcnn, ACCURACY_TOLERANCE_PP,
              ("chainer", "pytorch"),
              "dlbench.csv, Sec 5.1 and 5.5.1: Faster R-CNN accuracy (mAP) about 63 % for TensorFlow, MXNet and "
              "Theano, Keras 62 % (CPU) and 63 % (GPU), Chainer 53 % and 59 %, PyTorch 51 % and 51.4 % (the lowest). "
              f"About the same: within {ACCURACY_TOLERANCE_PP:g} percentage points "
              "(analysis.transfer.ACCURACY_TOLERANCE_PP)."),
        _ranking("32", study, "On CPU Faster R-CNN, TensorFlow is the fastest framework (19 h 7; MXNet 21 h 5, the "
                 "others more than 24 h).", "training_time_s", ("cpu",), [Extreme(frcnn, ("tensorflow",), True)],
                 "dlbench.csv, Sec 5.2: CPU Faster R-CNN TensorFlow 19 h 7 (the lowest), MXNet 21 h 5, Keras, Chainer "
                 f"and PyTorch more than 24 h. {LOWER_BOUND}"),
        _ranking("33", study, "On GPU Faster R-CNN, PyTorch has the highest GPU use (54 %) and TensorFlow the lowest "
                 "(34 %).", "gpu_util_mean_pct", ("gpu",),
                 [Extreme(frcnn, ("pytorch",), False), Extreme(frcnn, ("tensorflow",), True)],
                 "dlbench.csv, Sec 5.5.3: GPU use on Faster R-CNN PyTorch 54 % (highest), Chainer 52 %, Keras 47 %, "
                 "MXNet 46 %, TensorFlow 34 % (lowest) (GPU use by Eq. 3)."),
        _ranking("34", study, "With the GPU, MXNet uses the most CPU on Faster R-CNN (18 %); PyTorch, Chainer and "
                 "Theano the least (12 %).", "cpu_util_mean_pct", ("gpu",),
                 [Extreme(frcnn, ("mxnet",), False), Extreme(frcnn, ("pytorch", "chainer", "theano"), True)],
                 "dlbench.csv, Sec 5.5.3: CPU use in the GPU environment on Faster R-CNN MXNet 18 % (highest), Keras "
                 "14 %, TensorFlow 13 %, PyTorch, Chainer and Theano 12 % (lowest)."),
        _ranking("35", study, "With the GPU, Keras uses the most memory on Faster R-CNN (7,366 MB) and Chainer the "
                 "least (729 MB).", "mem_mean_mb", ("gpu",),
                 [Extreme(frcnn, ("keras",), False), Extreme(frcnn, ("chainer",), True)],
                 "dlbench.csv, Sec 5.5.3: memory on Faster R-CNN with the GPU Keras 7,366 MB (highest), TensorFlow "
                 "7,357 MB, Chainer 729 MB (lowest)."),
    ]


def _curve_and_test_claims(study: str) -> list[Claim]:
    peaks = published(PEAK_METRICS)
    return [
        Claim("26", study, "LSTM GPU speed-ups differ by framework: Theano about 11× (IMDB) and >15× (PTB), Chainer "
              "1.5× (IMDB) and >11× (Many things).", lstm_gpu_speedups, load_sensitive=True,
              decided_by=experiments_for(("cpu", "gpu"), LSTM),
              unfed="Sec 5.5.2 prints the LSTM speed-ups, not the CPU and GPU times they divide"),
        Claim("27", study, "Frameworks differ significantly in CPU and memory use (Wilcoxon signed-rank, p < 0.05).",
              resource_use_differs(("cpu_util_mean_pct", "mem_mean_mb"), ("cpu",),
                                   f"{WILCOXON} Sec 5.3 applies it to CPU and memory use."),
              load_sensitive=True, decided_by=experiments_for(("cpu",), (*CNN_CPU, *LSTM)), unfed=NEEDS_ALL_FIGURES),
        Claim("28", study, "Frameworks differ significantly in GPU use (Wilcoxon signed-rank, p < 0.05).",
              resource_use_differs(("gpu_util_mean_pct",), ("gpu",),
                                   f"{WILCOXON} Sec 5.5.3 applies it to GPU use."),
              decided_by=experiments_for(("gpu",), (*CNN_CPU, "cnn-svhn", *LSTM)), unfed=NEEDS_ALL_FIGURES),
        Claim("29", study, "Accuracy peaks before the last epoch (MNIST at 12-14 of 15, CIFAR-10 about 60 of 100, PTB "
              "37 of 50, Theano IMDB 19 of 50, Chainer Many things 50 of 100).", peaks_before_last_epoch,
              decided_by=experiments_running((env, wl) for env, wl, _ in peaks), unfed=NEEDS_CURVES),
        Claim("30", study, "No framework reaches its peak accuracy earliest on every dataset.",
              no_framework_peaks_earliest, decided_by=experiments_for(("cpu",), (*CNN_CPU, *LSTM)),
              unfed=NEEDS_CURVES),
    ]


def finding_claims(study: str) -> list[Claim]:
    """Claims 10-35 carrying the study's name, in id order."""
    out = (_accuracy_claims(study) + _time_and_resource_claims(study) + _curve_and_test_claims(study)
           + _detector_claims(study))
    return sorted(out, key=lambda c: int(c.id))
