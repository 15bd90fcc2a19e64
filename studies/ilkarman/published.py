"""ilkarman/DeepLearningFrameworks' published numbers as run-table rows (analysis/published.py), so that its claims'
checks read the article's tables as they read a make ilkarman-* campaign.

Times: every row of reference/ilkarman_dlf.csv (through studies.ilkarman.tables), its value in its benchmark's
measure column (ilkarman_benchmarks.csv: training_time_s, s_per_1000_images) on the kit's workload. Accuracies: the
article's notebooks' test accuracies of the CIFAR-10 CNN and the IMDB GRU, which only
studies/dlbench/reference/from_original_repos.csv holds (its rows of study ilkarman, metric test_acc), as rows of
their own (percent).

Each GPU is device "gpu" with the article's GPU in the runner ("published K80", "published P100"): the comparison
groups key on the runner, so the K80's and the P100's numbers stay apart. A name the kit maps to a framework
(ilkarman_frameworks.csv) is that framework where it is the only such name on the benchmark; otherwise (Gluon and
MXNet both stand for mxnet on the CIFAR-10 CNN) and for names the kit has no framework for, the article's name
lower-cased (gluon, caffe2, cntk, keras(cntk), julia-knet).
"""

from __future__ import annotations

from typing import Any

from analysis.published import BY_CLAIMS, PUBLISHED, published_row, row_rule
from analysis.reference import ORIGINAL_REPOS_CSV, read_rows
from studies.ilkarman import tables

# from_original_repos.csv's task names of the accuracy rows -> the article's benchmark (ilkarman_benchmarks.csv).
ACCURACY_TASKS = {"CIFAR-10 CNN": "cifar10_cnn_training", "IMDB GRU": "imdb_rnn_training"}
# from_original_repos.csv's spellings of names ilkarman_frameworks.csv spells otherwise.
SPELLINGS = {"TF": "Tensorflow", "Lasagne": "Lasagne(Theano)"}
ACCURACY_METRIC = "test_acc"


# The ilkarman rows of DLBench's from_original_repos.csv (analysis/sections/not_reproduced.py lists them).
ROW_RULES = (
    row_rule(ORIGINAL_REPOS_CSV.name, f"{BY_CLAIMS} (ilkarman-5: accuracies())", study="ilkarman",
             metric=ACCURACY_METRIC),
    row_rule(ORIGINAL_REPOS_CSV.name, reason="needs a multi-GPU host and a DenseNet-121 ChestXRay workload",
             study="ilkarman", metric="minutes"),
    row_rule(ORIGINAL_REPOS_CSV.name, "duplicates ilkarman_dlf.csv's times, which the ilkarman section compares",
             study="ilkarman"),
)


def _kit_names() -> dict[str, str | None]:
    return {n.name: n.framework for n in tables.names()}


def framework(name: str, on_benchmark: set[str]) -> str:
    """The run table's framework for an article name among the names timed or scored on one benchmark."""
    name = SPELLINGS.get(name, name)
    kit = _kit_names().get(name)
    # One tool however the files spell it (Pytorch, PyTorch): names are compared lower-cased.
    others = {SPELLINGS.get(n, n).lower() for n in on_benchmark if _kit_names().get(SPELLINGS.get(n, n)) == kit}
    return kit if kit and others <= {name.lower()} else name.lower()


def accuracies() -> list[tuple[str, str, str, float]]:
    """(benchmark, article name, hardware, test accuracy in percent) of the article's notebooks, from
    from_original_repos.csv's ilkarman test_acc rows ('|'-separated names and fractions)."""
    out = []
    for r in read_rows(ORIGINAL_REPOS_CSV):
        bench = ACCURACY_TASKS.get(r["dataset_or_task"])
        if r["study"] != "ilkarman" or r["metric"] != ACCURACY_METRIC or bench is None:
            continue
        for name, value in zip(r["framework"].split("|"), r["value"].split("|"), strict=True):
            out.append((bench, name, r["device"], 100 * float(value)))
    return out


def _names_on(benchmark: str) -> set[str]:
    timed = {name for (b, name, _) in tables.published() if b == benchmark}
    return timed | {name for b, name, _, _ in accuracies() if b == benchmark}


def runs() -> list[dict[str, Any]]:
    """The article's times and accuracies as run-table rows, one per number."""
    by_benchmark = {b.benchmark: b for b in tables.benchmarks()}
    out = []
    for (bench, name, gpu), value in tables.published().items():
        b = by_benchmark[bench]
        out.append(published_row(f"ilkarman-dlf:{bench}:{name}:{gpu}", framework(name, _names_on(bench)),
                                 b.workload, "gpu", runner=f"{PUBLISHED} {gpu}", **{b.measure: value}))
    for bench, name, hardware, accuracy in accuracies():
        out.append(published_row(f"ilkarman-notebooks:{bench}:{name}:accuracy", framework(name, _names_on(bench)),
                                 by_benchmark[bench].workload, "gpu", runner=f"{PUBLISHED} {hardware}",
                                 test_accuracy=accuracy))
    return out
