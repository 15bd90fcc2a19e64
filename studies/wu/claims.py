"""Wu et al.'s claims (other-studies.md): epochs, batch size, learning rate, BLAS backend and threads."""

from __future__ import annotations

from typing import Any

from analysis import sweeps
from analysis.claims import (
    Claim,
    ClaimResult,
    ResultsTable,
    epoch_linearity,
    insufficient,
    not_in_campaign,
    verdict_for,
)
from analysis.stats import describe, format_number
from analysis.transfer import ACCURACY_TOLERANCE_PP
from studies.wu import tables as wu

STUDY = "Wu et al."

# Wu et al.: a learning rate "hardly" changes time when the slowest is within this factor of the fastest.
TIME_SIMILAR_FACTOR = 1.2

# "About 5×" (Wu et al.: Eigen beats MKL by 5.47× on Server-1, 5.08× on Server-2): within a factor of 2 of 5.
ABOUT_FIVE_LOW, ABOUT_FIVE_HIGH = 2.5, 10.0
# "More threads than needed slow training down": the largest thread count swept is at least this much slower
# than the fastest count.
SLOWDOWN_MIN = 1.10
# The sweep values of TensorFlow's two backends (bench/blas_backends.py): Eigen, and oneDNN, the library that
# was MKL-DNN when the study built TensorFlow with MKL (--config=mkl): the kit's stand-in for the study's MKL.
EIGEN, MKL_STAND_IN = "eigen", "onednn"


def _value(by_value: dict[Any, list[dict[str, Any]]], column: str) -> dict[Any, float]:
    """{sweep value: the mean of column over its runs that measured it}, values with none left out."""
    means = {v: describe(r[column] for r in rows).mean for v, rows in by_value.items()}
    return {v: m for v, m in means.items() if m is not None}


def _ids(groups: list[sweeps.Group]) -> list[str]:
    return [r["run_id"] for _, by_value in groups for rows in by_value.values() for r in rows]


def _sweep_extremes(t: ResultsTable, varied: str, column: str, word: str, unit: str) -> ClaimResult:
    """Reproduced when the column's mean at the largest varied value is below the mean at the smallest."""
    groups = sweeps.sweep_groups(t.ok_rows, varied)
    if not groups:
        return not_in_campaign(f"runs of one workload and framework at >= 2 values of {varied}")
    parts, holds, ids = [], True, []
    for key, by_value in groups:
        means = _value(by_value, column)
        if len(means) < 2:
            continue
        lo, hi = min(means), max(means)
        holds &= means[hi] < means[lo]
        ids += [r["run_id"] for rows in by_value.values() for r in rows]
        parts.append(f"{sweeps.group_label(key)}: {word} {format_number(means[lo])} {unit} at {varied} {lo:g}, "
                     f"{format_number(means[hi])} {unit} at {hi:g}")
    if not parts:
        return insufficient(f"no {word} measured in the {varied} sweep", _ids(groups))
    return ClaimResult(verdict_for(holds), "; ".join(parts), tuple(ids))


def wu_time_proportional_to_epochs(t: ResultsTable) -> ClaimResult:
    """The same test as DLBench claim 8 on the runs of Wu's workloads: per successful run with at least 3
    epochs, cumulative training time against epoch number is a straight line with R² ≥ 0.99. Reproduced when
    every run passes."""
    return epoch_linearity(t)


def wu_larger_batch_lower_accuracy(t: ResultsTable) -> ClaimResult:
    """Successful runs of a batch-size sweep (their sweep point names batch_size alone: make wu-cpu-batch), grouped
    by workload, framework, device, runner, profile, data and epoch count, at >= 2 batch sizes: reproduced when
    in every such group the mean test accuracy at the largest batch is below that at the smallest; not
    reproduced otherwise. Insufficient data (not in this campaign) without a batch-size sweep."""
    return _sweep_extremes(t, "batch_size", "test_accuracy", "accuracy", "%")


def wu_learning_rate_changes_accuracy_not_time(t: ResultsTable) -> ClaimResult:
    """Successful runs of a learning-rate sweep (their sweep point names learning_rate alone: make wu-cpu-lr or
    wu-gpu-lr), grouped by workload, framework, device, runner, profile, data and epoch count, at >= 2 learning
    rates: reproduced when in every such group the mean test accuracies span more than 2 points and the slowest
    mean training time is within 1.2× of the fastest; not reproduced otherwise. Insufficient data (not in this
    campaign) without a learning-rate sweep."""
    groups = sweeps.sweep_groups(t.ok_rows, "learning_rate")
    if not groups:
        return not_in_campaign("runs of one workload and framework at >= 2 learning rates")
    parts, holds, ids = [], True, []
    for key, by_lr in groups:
        accs, times = _value(by_lr, "test_accuracy"), _value(by_lr, "training_time_s")
        if len(accs) < 2 or len(times) < 2 or min(times.values()) <= 0:
            continue
        spread = max(accs.values()) - min(accs.values())
        factor = max(times.values()) / min(times.values())
        holds &= spread > ACCURACY_TOLERANCE_PP and factor <= TIME_SIMILAR_FACTOR
        ids += [r["run_id"] for rows in by_lr.values() for r in rows]
        lrs = ", ".join(f"{lr:g}" for lr in by_lr)
        parts.append(f"{sweeps.group_label(key)}: learning rates {lrs}, accuracy "
                     f"{format_number(min(accs.values()))}-{format_number(max(accs.values()))} % (spread "
                     f"{spread:.2f} pp), training time {format_number(min(times.values()))}-"
                     f"{format_number(max(times.values()))} s (max/min {factor:.2f}×)")
    if not parts:
        return insufficient("no accuracy and time measured in the learning-rate sweep", _ids(groups))
    return ClaimResult(verdict_for(holds), "; ".join(parts), tuple(ids))


def _asked_and_loaded(rows: list[dict[str, Any]], asked: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The runs whose record agrees with the backend asked for (or records none), and the ids of the others."""
    kept = [r for r in rows if not r.get("blas_loaded") or r["blas_loaded"] == asked]
    return kept, [r["run_id"] for r in rows if r not in kept]


def wu_eigen_beats_mkl(t: ResultsTable) -> ClaimResult:
    """Successful TensorFlow CPU runs of a BLAS sweep (their sweep point names blas alone: make wu-cpu-blas),
    grouped by workload, runner, profile, data and epoch count, with runs at blas=eigen and at blas=onednn
    (oneDNN: the library that was MKL-DNN when the study built TensorFlow with MKL; the kit's stand-in for it).
    A run whose record names another backend than it asked for (the run table's blas_loaded, from run.json's
    environment.library_settings TF_ENABLE_ONEDNN_OPTS) is left out; one that records none counts as asked.
    Reproduced when in every group the mean oneDNN training time is 2.5× to 10× the mean Eigen time (about 5×:
    the study's 5.47× and 5.08×, Tables 10 and 11); not reproduced otherwise. Insufficient data (not in this
    campaign) without such runs."""
    blas_rows = [r for r in t.ok_rows if sweeps.sweep_axes(r) == {"blas"}]
    if not blas_rows:
        return not_in_campaign("TensorFlow CPU runs of one workload at blas=eigen and blas=onednn")
    groups = [(k, v) for k, v in sweeps.sweep_groups(blas_rows, "blas", min_points=1)
              if k["framework"] == "tensorflow" and k["device"] == "cpu"]
    parts, holds, ids, mismatched = [], True, [], []
    for key, by_blas in groups:
        eigen, eig_off = _asked_and_loaded(by_blas.get(EIGEN, []), EIGEN)
        mkl, mkl_off = _asked_and_loaded(by_blas.get(MKL_STAND_IN, []), MKL_STAND_IN)
        mismatched += eig_off + mkl_off
        t_eigen = describe(r["training_time_s"] for r in eigen).mean
        t_mkl = describe(r["training_time_s"] for r in mkl).mean
        if t_eigen is None or t_mkl is None or t_eigen <= 0:
            continue
        ratio = t_mkl / t_eigen
        holds &= ABOUT_FIVE_LOW <= ratio <= ABOUT_FIVE_HIGH
        ids += [r["run_id"] for r in eigen + mkl]
        unrecorded = sum(not r.get("blas_loaded") for r in eigen + mkl)
        parts.append(f"{sweeps.group_label(key)}: eigen {format_number(t_eigen)} s, onednn {format_number(t_mkl)} s, "
                     f"onednn/eigen {ratio:.2f}×" + (f" ({unrecorded} run{'s' if unrecorded > 1 else ''} recorded no "
                                                     "backend: counted as asked)" if unrecorded else ""))
    off = f"; left out, their record names another backend than asked: {', '.join(mismatched)}" if mismatched else ""
    if not parts:
        seen = sorted({f"{k['framework']}/{k['device']}: {'/'.join(map(str, v))}" for k, v in
                       sweeps.sweep_groups(blas_rows, "blas", min_points=1)})
        return insufficient("no TensorFlow CPU group of the BLAS sweep has successful runs at both eigen and onednn "
                            f"(the sweep's runs: {'; '.join(seen) or 'none successful'}){off}",
                            [r["run_id"] for r in blas_rows])
    return ClaimResult(verdict_for(holds), "; ".join(parts) + "; the study: 5.47× (Server-1), 5.08× (Server-2)"
                       + off, tuple(ids))


def wu_too_many_threads_slow(t: ResultsTable) -> ClaimResult:
    """Successful CPU runs of a thread sweep (their sweep point names threads alone: make wu-cpu-threads),
    grouped by workload, framework, runner, profile, data and epoch count, at >= 2 thread counts, whose
    records say OpenBLAS did their BLAS work (the run table's blas_loaded names openblas: run.json's
    environment.libraries); groups of another BLAS are named and left out, as the claim is OpenBLAS's.
    Reproduced when in every OpenBLAS group the mean training time at the largest thread count is at least
    1.1× the fastest count's; not reproduced otherwise. Insufficient data (not in this campaign) without a
    thread sweep; insufficient data when none of its groups ran on OpenBLAS."""
    groups = [(k, v) for k, v in sweeps.sweep_groups(t.ok_rows, "threads") if k["device"] == "cpu"]
    if not groups:
        return not_in_campaign("runs of one workload and framework at >= 2 thread counts")
    parts, others, holds, ids = [], [], True, []
    for key, by_n in groups:
        loaded = {a for rows in by_n.values() for r in rows for a in (wu.loaded_apis(r) or {"not recorded"})}
        times = _value(by_n, "training_time_s")
        if loaded != {"openblas"} or len(times) < 2:
            others.append(f"{sweeps.group_label(key)} ({'+'.join(sorted(loaded))})")
            continue
        best, top = min(times, key=times.get), max(times)
        slowdown = times[top] / times[best]
        holds &= slowdown >= SLOWDOWN_MIN
        ids += [r["run_id"] for rows in by_n.values() for r in rows]
        parts.append(f"{sweeps.group_label(key)}: fastest {format_number(times[best])} s at {best} threads, "
                     f"{format_number(times[top])} s at {top} ({slowdown:.2f}×)")
    rest = f"; not OpenBLAS, left out: {', '.join(others)}" if others else ""
    if not parts:
        return insufficient("no thread-sweep group whose runs recorded OpenBLAS doing their BLAS work" + rest,
                            _ids(groups))
    return ClaimResult(verdict_for(holds), "; ".join(parts) + rest, tuple(ids))


def wu_cpu_use_falls_with_batch(t: ResultsTable) -> ClaimResult:
    """Successful runs of a batch-size sweep (make wu-cpu-batch), grouped as for Wu-2, at >= 2 batch sizes:
    reproduced when in every such group the mean CPU utilization (cpu_util_mean_pct) at the largest batch is
    below that at the smallest; not reproduced otherwise. Insufficient data (not in this campaign) without a
    batch-size sweep."""
    return _sweep_extremes(t, "batch_size", "cpu_util_mean_pct", "CPU", "%")


CLAIMS: list[Claim] = [
    Claim("Wu-1", STUDY, "Training time is proportional to the number of epochs.",
          wu_time_proportional_to_epochs, load_sensitive=True, decided_by=("wu-cpu-defaults",)),
    Claim("Wu-2", STUDY, "A larger batch lowers accuracy at a fixed number of epochs.",
          wu_larger_batch_lower_accuracy, decided_by=("wu-cpu-batch",)),
    Claim("Wu-3", STUDY, "The learning rate changes accuracy but hardly the training time.",
          wu_learning_rate_changes_accuracy_not_time, load_sensitive=True, decided_by=("wu-cpu-lr",)),
    Claim("Wu-4", STUDY, "TensorFlow with Eigen beats TensorFlow with MKL by about 5× on CPU.",
          wu_eigen_beats_mkl, load_sensitive=True, decided_by=("wu-cpu-blas",)),
    Claim("Wu-5", STUDY, "More OpenBLAS threads than needed slow training down.",
          wu_too_many_threads_slow, load_sensitive=True, decided_by=("wu-cpu-threads",)),
    Claim("Wu-6", STUDY, "CPU use falls as the batch size grows.", wu_cpu_use_falls_with_batch,
          load_sensitive=True, decided_by=("wu-cpu-batch",)),
]
