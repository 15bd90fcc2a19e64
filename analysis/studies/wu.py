"""Wu et al.'s claims (other-studies.md): epochs, batch size, learning rate, BLAS backend and threads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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

STUDY = "Wu et al."

# Wu et al.: a learning rate "hardly" changes time when the slowest is within this factor of the fastest.
TIME_SIMILAR_FACTOR = 1.2

_SWEEP_FIXED = ("workload", "framework", "device", "runner", "profile", "data_source", "epochs_planned")


def _sweep_groups(t: ResultsTable, varied: str, fixed: Sequence[str]
                  ) -> list[tuple[tuple, dict[float, list[dict[str, Any]]]]]:
    """Successful runs grouped by the fixed columns, then by the varied one; groups with >= 2 values."""
    groups: dict[tuple, dict[float, list[dict[str, Any]]]] = {}
    for row in t.ok_rows:
        if row.get(varied) is None:
            continue
        key = tuple(row.get(k) for k in fixed)
        groups.setdefault(key, {}).setdefault(row[varied], []).append(row)
    return [(k, v) for k, v in sorted(groups.items(), key=lambda kv: str(kv[0])) if len(v) >= 2]


def _sweep_extremes(t: ResultsTable, varied: str, fixed: Sequence[str], column: str, word: str,
                    unit: str) -> ClaimResult:
    """Reproduced when the column's mean at the largest varied value is below the mean at the smallest."""
    groups = _sweep_groups(t, varied, fixed)
    if not groups:
        return not_in_campaign(f"runs of one workload and framework at >= 2 values of {varied}")
    parts, holds, ids = [], True, []
    for key, by_value in groups:
        lo, hi = min(by_value), max(by_value)
        m_lo = describe(r[column] for r in by_value[lo]).mean
        m_hi = describe(r[column] for r in by_value[hi]).mean
        if m_lo is None or m_hi is None:
            continue
        holds &= m_hi < m_lo
        ids += [r["run_id"] for rows in by_value.values() for r in rows]
        parts.append(f"{key[1]} {key[0]}/{key[2]}: {word} {format_number(m_lo)} {unit} at {varied} {lo:g}, "
                     f"{format_number(m_hi)} {unit} at {hi:g}")
    if not parts:
        return insufficient(f"no {word} measured in the {varied} sweep")
    return ClaimResult(verdict_for(holds), "; ".join(parts), tuple(ids))


def wu_time_proportional_to_epochs(t: ResultsTable) -> ClaimResult:
    """The same test as DLBench claim 8: per successful run with at least 3 epochs, cumulative training time
    against epoch number is a straight line with R² ≥ 0.99. Reproduced when every run passes."""
    return epoch_linearity(t)


def wu_larger_batch_lower_accuracy(t: ResultsTable) -> ClaimResult:
    """Successful runs of one workload, framework, device, profile, data and epoch count at >= 2 batch sizes
    (same learning rate): reproduced when in every such group the mean test accuracy at the largest batch is
    below that at the smallest; not reproduced otherwise. Insufficient data (not in this campaign) without
    a batch-size sweep."""
    return _sweep_extremes(t, "batch_size", (*_SWEEP_FIXED, "learning_rate"), "test_accuracy", "accuracy", "%")


def wu_learning_rate_changes_accuracy_not_time(t: ResultsTable) -> ClaimResult:
    """Successful runs of one workload, framework, device, profile, data, epoch count and batch size at >= 2
    learning rates: reproduced when in every such group the mean test accuracies span more than 2 points
    and the slowest mean training time is within 1.2× of the fastest; not reproduced otherwise.
    Insufficient data (not in this campaign) without a learning-rate sweep."""
    groups = _sweep_groups(t, "learning_rate", (*_SWEEP_FIXED, "batch_size"))
    if not groups:
        return not_in_campaign("runs of one workload and framework at >= 2 learning rates")
    parts, holds, ids = [], True, []
    for key, by_lr in groups:
        accs = [describe(r["test_accuracy"] for r in rows).mean for rows in by_lr.values()]
        times = [describe(r["training_time_s"] for r in rows).mean for rows in by_lr.values()]
        if None in accs or None in times or min(times) <= 0:
            continue
        spread, factor = max(accs) - min(accs), max(times) / min(times)
        holds &= spread > ACCURACY_TOLERANCE_PP and factor <= TIME_SIMILAR_FACTOR
        ids += [r["run_id"] for rows in by_lr.values() for r in rows]
        parts.append(f"{key[1]} {key[0]}/{key[2]}: {len(by_lr)} learning rates, accuracy spread {spread:.2f} pp, "
                     f"time max/min {factor:.2f}×")
    if not parts:
        return insufficient("no accuracy and time measured in the learning-rate sweep")
    return ClaimResult(verdict_for(holds), "; ".join(parts), tuple(ids))


def wu_eigen_beats_mkl(t: ResultsTable) -> ClaimResult:
    """Needs TensorFlow runs of one workload with the Eigen and with the MKL backend on CPU; the run table
    records no BLAS backend, so this is always insufficient data (not in this campaign)."""
    return not_in_campaign("TensorFlow runs with Eigen and with MKL (the run table records no BLAS backend)")


def wu_too_many_threads_slow(t: ResultsTable) -> ClaimResult:
    """Needs runs of one workload at several OpenBLAS thread counts; campaigns run one thread setting per
    machine, so this is insufficient data (not in this campaign)."""
    return not_in_campaign("an OPENBLAS_NUM_THREADS sweep")


def wu_cpu_use_falls_with_batch(t: ResultsTable) -> ClaimResult:
    """Successful runs of one workload, framework, device, profile, data and epoch count at >= 2 batch sizes:
    reproduced when in every such group the mean CPU utilization at the largest batch is below that at the
    smallest; not reproduced otherwise. Insufficient data (not in this campaign) without a batch sweep."""
    return _sweep_extremes(t, "batch_size", (*_SWEEP_FIXED, "learning_rate"), "cpu_util_mean_pct",
                           "CPU", "%")


CLAIMS: list[Claim] = [
    Claim("Wu-1", STUDY, "Training time is proportional to the number of epochs.",
          wu_time_proportional_to_epochs, load_sensitive=True, decided_by=("cpu-cnn",)),
    Claim("Wu-2", STUDY, "A larger batch lowers accuracy at a fixed number of epochs.",
          wu_larger_batch_lower_accuracy),
    Claim("Wu-3", STUDY, "The learning rate changes accuracy but hardly the training time.",
          wu_learning_rate_changes_accuracy_not_time, load_sensitive=True),
    Claim("Wu-4", STUDY, "TensorFlow with Eigen beats TensorFlow with MKL by about 5× on CPU.",
          wu_eigen_beats_mkl, load_sensitive=True),
    Claim("Wu-5", STUDY, "More OpenBLAS threads than needed slow training down.",
          wu_too_many_threads_slow, load_sensitive=True),
    Claim("Wu-6", STUDY, "CPU use falls as the batch size grows.", wu_cpu_use_falls_with_batch, load_sensitive=True),
]
