"""The studies' claims as checks over a campaign's results table.

One small function per claim, registered in CLAIMS with the claim's words. Each check reads only the
run table (and the runs' per-epoch records) and returns a verdict — reproduced, not reproduced or
insufficient data — with the numbers behind it and the runs it used. A check's docstring is its
precise test; the report prints it verbatim, so the code and the text cannot disagree.

Verdicts on synthetic data or a non-paper profile are still computed (they exercise the check) but
carry a caveat: they say nothing about the paper.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from analysis.aggregate import CellSummary, summarize
from analysis.reference import device_env, workload_cell
from analysis.stats import INSUFFICIENT_DATA, describe, format_number, kendall, linear_fit
from analysis.transfer import ACCURACY_TOLERANCE_PP, GROUP_KEYS, Speedup, device_pairs, framework_groups, speedups

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INSUFFICIENT = INSUFFICIENT_DATA
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INSUFFICIENT)

# "About an order of magnitude": the nearest power of ten is 10 or more, i.e. speedup >= 10**0.5.
ORDER_OF_MAGNITUDE_LOW = 10**0.5
# "One to two orders of magnitude" (Shi et al.): the nearest power of ten is 10 or 100.
TWO_ORDERS_HIGH = 10**2.5
# "Much higher" GPU than CPU utilization: at least this factor.
MUCH_HIGHER_FACTOR = 2.0
# "Close to 100 %" GPU utilization on CNNs.
NEAR_FULL_GPU_PCT = 90.0
# Failure to learn a balanced binary task: accuracy within 5 points of chance (50 %).
CHANCE_PCT, CHANCE_MARGIN_PP = 50.0, 5.0
# "Leaks memory": mean memory at least this many times the next framework's (the paper saw 50x).
LEAK_FACTOR = 10.0
# Claim 8: cumulative training time vs epoch is a straight line at least this well.
LINEAR_R2_MIN = 0.99
MIN_EPOCHS_FOR_LINEARITY = 3
# Claim 9: CPU and GPU accuracy curves "almost the same": mean |difference| over common epochs.
CURVE_TOLERANCE_PP = ACCURACY_TOLERANCE_PP
# Wu et al.: a learning rate "hardly" changes time when the slowest is within this factor of the fastest.
TIME_SIMILAR_FACTOR = 1.2

PAPER_PROFILE = "paper"
REAL_DATA = "real"


# --- The table the checks read -------------------------------------------------------------

@dataclass
class ResultsTable:
    """The run table (aggregate.RUN_COLUMNS rows, failed runs included) and each run's epoch records."""

    rows: list[dict[str, Any]]
    epochs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    cells: list[CellSummary] = field(init=False)

    def __post_init__(self) -> None:
        self.cells = summarize(self.rows)

    @property
    def ok_rows(self) -> list[dict[str, Any]]:
        """Rows of the runs that finished."""
        return [r for r in self.rows if r["status"] == "ok"]


@dataclass(frozen=True)
class ClaimResult:
    """A check's verdict, the numbers behind it, and the runs it read."""

    verdict: str
    evidence: str
    run_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")


@dataclass(frozen=True)
class Claim:
    """A published claim and the function that tests it."""

    id: str
    study: str
    statement: str
    check: Callable[[ResultsTable], ClaimResult]

    @property
    def test(self) -> str:
        """The check's docstring as one paragraph: the precise test, as the report prints it."""
        return " ".join((inspect.getdoc(self.check) or "").split())


@dataclass(frozen=True)
class ClaimOutcome:
    """A claim with its result and, where it rests on synthetic data or a non-paper profile, a caveat."""

    claim: Claim
    result: ClaimResult
    caveat: str = ""


# --- Helpers -------------------------------------------------------------------------------

def _n(value: float | None, digits: int = 3) -> str:
    return format_number(value, digits)


def _ids(cells: Iterable[CellSummary]) -> tuple[str, ...]:
    return tuple(r["run_id"] for c in cells for r in c.ok_rows)


def _label(group: dict[str, str]) -> str:
    return f"{group['workload']}/{group['device']}"


def _mean(cell: CellSummary, column: str) -> float | None:
    return cell.estimates[column].mean


def _measured_groups(t: ResultsTable, *columns: str, min_frameworks: int = 2
                     ) -> list[tuple[dict[str, str], list[CellSummary]]]:
    """Groups (workload, device, runner, profile, data) with >= min_frameworks cells measuring every column."""
    out = []
    for _, members in framework_groups(t.cells).items():
        measured = [c for c in members if all(_mean(c, col) is not None for col in columns)]
        if len(measured) >= min_frameworks:
            out.append(({k: measured[0].key[k] for k in GROUP_KEYS}, measured))
    return out


def _insufficient(why: str, run_ids: Iterable[str] = ()) -> ClaimResult:
    return ClaimResult(INSUFFICIENT, why, tuple(run_ids))


def _not_in_campaign(needs: str) -> ClaimResult:
    return ClaimResult(INSUFFICIENT, f"not in this campaign: needs {needs}")


def _verdict(holds: bool) -> str:
    return REPRODUCED if holds else NOT_REPRODUCED


def _best(cells: Sequence[CellSummary], column: str, lowest: bool) -> set[str]:
    """Frameworks with the best mean (ties all count as best)."""
    values = {c.key["framework"]: _mean(c, column) for c in cells}
    top = min(values.values()) if lowest else max(values.values())
    return {fw for fw, v in values.items() if v == top}


def _no_single_winner(t: ResultsTable, column: str, lowest: bool, unit: str, what: str) -> ClaimResult:
    groups = _measured_groups(t, column)
    workloads = {g["workload"] for g, _ in groups}
    cells = [c for _, cs in groups for c in cs]
    if len(groups) < 2:
        return _insufficient(f"{len(groups)} (workload, device) group(s) with >= 2 frameworks' {what}; "
                             "needs >= 2", _ids(cells))
    if column == "test_accuracy" and len(workloads) < 2:
        return _insufficient(f"only workload {', '.join(workloads)} has >= 2 frameworks' {what}; "
                             "needs >= 2 workloads", _ids(cells))
    winners = []
    parts = []
    for group, members in groups:
        best = _best(members, column, lowest)
        winners.append(best)
        value = _mean(next(c for c in members if c.key["framework"] in best), column)
        parts.append(f"{_label(group)}: best {'/'.join(sorted(best))} ({_n(value, 4)} {unit}) of {len(members)}")
    everywhere = set.intersection(*winners)
    tail = f"; {'/'.join(sorted(everywhere))} best in every group" if everywhere else "; no framework best everywhere"
    return ClaimResult(_verdict(not everywhere), "; ".join(parts) + tail, _ids(cells))


def _speedup_text(s: Speedup) -> str:
    return f"{s.cpu.key['framework']} {s.cpu.key['workload']} {_n(s.value)}×"


# --- DLBench -------------------------------------------------------------------------------

def no_framework_best_on_accuracy(t: ResultsTable) -> ClaimResult:
    """In every (workload, device) group where at least 2 frameworks have a mean test accuracy, find the
    framework(s) with the highest mean. Reproduced when no framework is highest in every group; not
    reproduced when one is. Insufficient data with fewer than 2 such groups or fewer than 2 workloads."""
    return _no_single_winner(t, "test_accuracy", lowest=False, unit="%", what="accuracy")


def gpu_order_of_magnitude_faster(t: ResultsTable) -> ClaimResult:
    """Speedup = mean CPU training time / mean GPU training time of the same workload and framework (same
    profile and data). Reproduced when more than half of the measured (workload, framework) pairs have a
    speedup of at least 10**0.5 ≈ 3.16 (the nearest order of magnitude is 10× or more); not reproduced
    otherwise. Insufficient data without a workload and framework measured on both devices."""
    pairs = [s for s in speedups(t.cells) if s.value is not None]
    if not pairs:
        return _insufficient("no workload and framework with successful runs on both CPU and GPU")
    fast = [s for s in pairs if s.value >= ORDER_OF_MAGNITUDE_LOW]
    evidence = (f"{len(fast)} of {len(pairs)} pairs ≥ {ORDER_OF_MAGNITUDE_LOW:.2f}×: "
                + ", ".join(_speedup_text(s) for s in pairs))
    return ClaimResult(_verdict(len(fast) * 2 > len(pairs)), evidence, _ids(c for s in pairs for c in (s.cpu, s.gpu)))


def keras_imdb_cpu_faster(t: ResultsTable) -> ClaimResult:
    """Keras on lstm-imdb: reproduced when its mean CPU training time is below its mean GPU training time
    (speedup < 1) in every CPU/GPU pair; not reproduced otherwise. Insufficient data without successful
    Keras lstm-imdb runs on both devices."""
    pairs = [s for s in speedups(t.cells) if s.value is not None
             and s.cpu.key["framework"].lower() == "keras" and s.cpu.key["workload"] == "lstm-imdb"]
    if not pairs:
        return _insufficient("no successful Keras lstm-imdb runs on both CPU and GPU")
    col = "training_time_s"
    evidence = "; ".join(f"CPU {_n(_mean(s.cpu, col))} s vs GPU {_n(_mean(s.gpu, col))} s "
                         f"(GPU speedup {_n(s.value)}×, n={s.cpu.estimates[col].n}/{s.gpu.estimates[col].n})"
                         for s in pairs)
    return ClaimResult(_verdict(all(s.value < 1 for s in pairs)), evidence,
                       _ids(c for s in pairs for c in (s.cpu, s.gpu)))


def longer_time_not_higher_accuracy(t: ResultsTable) -> ClaimResult:
    """In every (workload, device) group where at least 2 frameworks have both a mean training time and a
    mean test accuracy, compare the slowest framework with the most accurate one(s). Reproduced when in at
    least one group the slowest framework is not the most accurate; not reproduced when in every group
    the slowest is also the most accurate. Kendall tau between time and accuracy is shown where a group
    has >= 3 frameworks. Insufficient data without such a group."""
    groups = _measured_groups(t, "training_time_s", "test_accuracy")
    if not groups:
        return _insufficient("no (workload, device) group with >= 2 frameworks measuring time and accuracy")
    counter, parts = 0, []
    for group, members in groups:
        slowest = max(members, key=lambda c: _mean(c, "training_time_s"))
        accurate = _best(members, "test_accuracy", lowest=False)
        contradicts = slowest.key["framework"] not in accurate
        counter += contradicts
        tau = kendall([_mean(c, "training_time_s") for c in members], [_mean(c, "test_accuracy") for c in members])
        tau_text = f", time vs accuracy {tau.text('tau')}" if tau.sufficient else ""
        parts.append(f"{_label(group)}: slowest {slowest.key['framework']} "
                     f"({_n(_mean(slowest, 'training_time_s'))} s, {_n(_mean(slowest, 'test_accuracy'), 4)} %), "
                     f"most accurate {'/'.join(sorted(accurate))}{tau_text}")
    evidence = f"slowest is not the most accurate in {counter} of {len(groups)} groups: " + "; ".join(parts)
    return ClaimResult(_verdict(counter > 0), evidence, _ids(c for _, cs in groups for c in cs))


def more_resources_not_faster(t: ResultsTable) -> ClaimResult:
    """In every (workload, device) group where at least 2 frameworks have a mean training time and a mean CPU
    utilization (resp. mean memory), compare the framework using the most CPU (resp. memory) with the
    fastest. Reproduced when in at least one group and resource the top user is not the fastest; not
    reproduced when the top user is always the fastest. Insufficient data without such a group."""
    parts, checked, counter, used = [], 0, 0, []
    for column, word, unit in (("cpu_util_mean_pct", "CPU", "%"), ("mem_mean_mb", "memory", "MB")):
        for group, members in _measured_groups(t, "training_time_s", column):
            top = max(members, key=lambda c: _mean(c, column))
            fastest = _best(members, "training_time_s", lowest=True)
            rank = sorted(members, key=lambda c: _mean(c, "training_time_s")).index(top) + 1
            checked += 1
            counter += top.key["framework"] not in fastest
            used += members
            parts.append(f"{_label(group)}: most {word} {top.key['framework']} ({_n(_mean(top, column))} {unit}) "
                         f"is #{rank} of {len(members)} in time")
    if not checked:
        return _insufficient("no (workload, device) group with >= 2 frameworks measuring time and CPU or memory")
    evidence = f"top resource user is not the fastest in {counter} of {checked} comparisons: " + "; ".join(parts)
    return ClaimResult(_verdict(counter > 0), evidence, _ids(used))


def gpu_util_much_higher(t: ResultsTable) -> ClaimResult:
    """Over GPU-device cells with both a mean GPU and a mean CPU utilization: reproduced when every cell's
    GPU utilization is at least 2× its CPU utilization and every CNN workload's GPU utilization is at least
    90 % ("close to 100 %"); not reproduced otherwise. The paper's per-core CPU range 9.3-23 % was taken on
    64 cores and is shown for context, not tested. Insufficient data without a GPU cell measuring both."""
    cells = [c for c in t.cells if device_env(c.key["device"]) == "gpu"
             and _mean(c, "gpu_util_mean_pct") is not None and _mean(c, "cpu_util_mean_pct") is not None]
    if not cells:
        return _insufficient("no GPU run with both GPU and CPU utilization measured",
                             _ids(c for c in t.cells if device_env(c.key["device"]) == "gpu"))
    holds, parts = True, []
    for cell in cells:
        gpu, cpu = _mean(cell, "gpu_util_mean_pct"), _mean(cell, "cpu_util_mean_pct")
        cnn = (workload_cell(cell.key["workload"]) or ("",))[0] == "cnn"
        ok = gpu >= MUCH_HIGHER_FACTOR * cpu and (not cnn or gpu >= NEAR_FULL_GPU_PCT)
        holds &= ok
        parts.append(f"{cell.key['framework']} {cell.key['workload']}: GPU {_n(gpu)} % vs CPU {_n(cpu)} %"
                     + ("" if ok else " (fails)"))
    return ClaimResult(_verdict(holds), "; ".join(parts) + "; paper: CNN GPU ~100 %, CPU 9.3-23 % per core",
                       _ids(cells))


def theano_imdb_failure_and_leak(t: ResultsTable) -> ClaimResult:
    """Theano on lstm-imdb, two parts. (a) Failure to learn: mean test accuracy within 5 points of chance
    (≤ 55 %), or runs failed with a NaN loss. (b) Memory leak on CPU: mean memory at least 10× that of the
    next-highest framework (the paper saw 50×). Reproduced when both hold; not reproduced when either part
    is measured and fails. Insufficient data without Theano lstm-imdb runs, or when (b) lacks another
    framework to compare with and (a) holds."""
    theano = [c for c in t.cells if c.key["framework"].lower() == "theano" and c.key["workload"] == "lstm-imdb"]
    if not theano:
        return _not_in_campaign("Theano lstm-imdb runs (none in this campaign set)")
    ids = tuple(r["run_id"] for c in theano for r in c.rows)
    accs = describe(r["test_accuracy"] for c in theano for r in c.ok_rows)
    nan_runs = [r for c in theano for r in c.failed_rows if r["failure_cause"] == "nan"]
    if accs.n == 0 and not nan_runs:
        return _insufficient("no successful or NaN-failed Theano lstm-imdb run", ids)
    part_a = bool(nan_runs) or (accs.mean is not None and accs.mean <= CHANCE_PCT + CHANCE_MARGIN_PP)
    a_text = f"(a) mean accuracy {_n(accs.mean, 4)} % over {accs.n} runs, {len(nan_runs)} NaN failures"
    cpu_theano = [c for c in theano if device_env(c.key["device"]) == "cpu" and _mean(c, "mem_mean_mb")]
    others = [c for c in t.cells if c.key["workload"] == "lstm-imdb" and device_env(c.key["device"]) == "cpu"
              and c.key["framework"].lower() != "theano" and _mean(c, "mem_mean_mb")]
    if not cpu_theano or not others:
        if not part_a:
            return ClaimResult(NOT_REPRODUCED, a_text + "; (b) not measured", ids)
        return _insufficient(a_text + "; (b) needs Theano and another framework's memory on CPU", ids)
    mem = max(_mean(c, "mem_mean_mb") for c in cpu_theano)
    nxt = max(others, key=lambda c: _mean(c, "mem_mean_mb"))
    factor = mem / _mean(nxt, "mem_mean_mb")
    b_text = f"(b) memory {_n(mem)} MB = {_n(factor)}× {nxt.key['framework']}"
    return ClaimResult(_verdict(part_a and factor >= LEAK_FACTOR), f"{a_text}; {b_text}",
                       ids + _ids(others))


def _epoch_linearity(t: ResultsTable) -> ClaimResult:
    fits = []
    for row in t.ok_rows:
        records = sorted(t.epochs.get(row["run_id"], []), key=lambda r: r["epoch"])
        if len(records) < MIN_EPOCHS_FOR_LINEARITY:
            continue
        cumulative = list(accumulate(float(r["epoch_time_s"]) for r in records))
        fit = linear_fit([float(r["epoch"]) for r in records], cumulative, MIN_EPOCHS_FOR_LINEARITY)
        if fit.r_squared is not None:
            fits.append((row, fit))
    if not fits:
        return _insufficient(f"no successful run with >= {MIN_EPOCHS_FOR_LINEARITY} epochs",
                             (r["run_id"] for r in t.ok_rows))
    low = [(row, fit) for row, fit in fits if fit.r_squared < LINEAR_R2_MIN]
    worst_row, worst = min(fits, key=lambda rf: rf[1].r_squared)
    evidence = (f"{len(fits) - len(low)} of {len(fits)} runs linear (R² ≥ {LINEAR_R2_MIN}); lowest R² "
                f"{worst.r_squared:.4f} ({worst_row['framework']} {worst_row['workload']} repeat "
                f"{worst_row['repeat']}, {worst.n} epochs)")
    if low:
        evidence += "; below: " + ", ".join(f"{r['run_id']} ({f.r_squared:.4f})" for r, f in low)
    return ClaimResult(_verdict(not low), evidence, tuple(r["run_id"] for r, _ in fits))


def time_proportional_to_epochs(t: ResultsTable) -> ClaimResult:
    """Per successful run with at least 3 epochs: least-squares line (with intercept, which absorbs a
    warm-up epoch) of cumulative training time (sum of metrics.jsonl epoch_time_s) against epoch number.
    Reproduced when every such run has R² ≥ 0.99; not reproduced when any has less. Insufficient data
    without a run of 3 or more epochs."""
    return _epoch_linearity(t)


def _mean_curve(t: ResultsTable, cell: CellSummary) -> dict[int, float]:
    per_epoch: dict[int, list[float | None]] = {}
    for row in cell.ok_rows:
        for rec in t.epochs.get(row["run_id"], []):
            acc = rec.get("test_accuracy")
            per_epoch.setdefault(rec["epoch"], []).append(None if acc is None else acc * 100)
    out = {e: describe(v).mean for e, v in per_epoch.items()}
    return {e: m for e, m in out.items() if m is not None}


def cpu_gpu_curves_same(t: ResultsTable) -> ClaimResult:
    """For each workload and framework run on both devices: mean test-accuracy curve per device (mean over
    successful repeats at each epoch), then the mean absolute difference over the epochs both curves have.
    Reproduced when every pair differs by at most 2 percentage points on average; not reproduced otherwise.
    Insufficient data without a pair sharing at least 2 epochs."""
    parts, holds, used = [], True, []
    for cpu, gpu in device_pairs(t.cells):
        a, b = _mean_curve(t, cpu), _mean_curve(t, gpu)
        common = sorted(set(a) & set(b))
        if len(common) < 2:
            continue
        mad = math.fsum(abs(a[e] - b[e]) for e in common) / len(common)
        holds &= mad <= CURVE_TOLERANCE_PP
        used += [cpu, gpu]
        parts.append(f"{cpu.key['framework']} {cpu.key['workload']}: mean |CPU − GPU| {mad:.2f} pp over "
                     f"{len(common)} epochs")
    if not parts:
        return _insufficient("no workload and framework with accuracy curves on both CPU and GPU (>= 2 epochs)")
    return ClaimResult(_verdict(holds), "; ".join(parts), _ids(used))


# --- Wu et al. -----------------------------------------------------------------------------

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
        return _not_in_campaign(f"runs of one workload and framework at >= 2 values of {varied}")
    parts, holds, ids = [], True, []
    for key, by_value in groups:
        lo, hi = min(by_value), max(by_value)
        m_lo = describe(r[column] for r in by_value[lo]).mean
        m_hi = describe(r[column] for r in by_value[hi]).mean
        if m_lo is None or m_hi is None:
            continue
        holds &= m_hi < m_lo
        ids += [r["run_id"] for rows in by_value.values() for r in rows]
        parts.append(f"{key[1]} {key[0]}/{key[2]}: {word} {_n(m_lo)} {unit} at {varied} {lo:g}, "
                     f"{_n(m_hi)} {unit} at {hi:g}")
    if not parts:
        return _insufficient(f"no {word} measured in the {varied} sweep")
    return ClaimResult(_verdict(holds), "; ".join(parts), tuple(ids))


def wu_time_proportional_to_epochs(t: ResultsTable) -> ClaimResult:
    """The same test as DLBench claim 8: per successful run with at least 3 epochs, cumulative training time
    against epoch number is a straight line with R² ≥ 0.99. Reproduced when every run passes."""
    return _epoch_linearity(t)


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
        return _not_in_campaign("runs of one workload and framework at >= 2 learning rates")
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
        return _insufficient("no accuracy and time measured in the learning-rate sweep")
    return ClaimResult(_verdict(holds), "; ".join(parts), tuple(ids))


def wu_eigen_beats_mkl(t: ResultsTable) -> ClaimResult:
    """Needs TensorFlow runs of one workload with the Eigen and with the MKL backend on CPU; the run table
    records no BLAS backend, so this is always insufficient data (not in this campaign)."""
    return _not_in_campaign("TensorFlow runs with Eigen and with MKL (the run table records no BLAS backend)")


def wu_too_many_threads_slow(t: ResultsTable) -> ClaimResult:
    """Needs runs of one workload at several OpenBLAS thread counts; campaigns run one thread setting per
    machine, so this is insufficient data (not in this campaign)."""
    return _not_in_campaign("an OPENBLAS_NUM_THREADS sweep")


def wu_cpu_use_falls_with_batch(t: ResultsTable) -> ClaimResult:
    """Successful runs of one workload, framework, device, profile, data and epoch count at >= 2 batch sizes:
    reproduced when in every such group the mean CPU utilization at the largest batch is below that at the
    smallest; not reproduced otherwise. Insufficient data (not in this campaign) without a batch sweep."""
    return _sweep_extremes(t, "batch_size", (*_SWEEP_FIXED, "learning_rate"), "cpu_util_mean_pct",
                           "CPU", "%")


# --- Shi et al. ----------------------------------------------------------------------------

def shi_cpu_scaling_past_cores(t: ResultsTable) -> ClaimResult:
    """Needs runs at several CPU thread counts up to and past the physical cores; not in this campaign."""
    return _not_in_campaign("a CPU thread-count sweep past the physical core count")


def shi_gpu_one_to_two_orders_faster(t: ResultsTable) -> ClaimResult:
    """Speedup = mean CPU time / mean GPU time per workload and framework (as DLBench claim 2). Reproduced
    when the median speedup's nearest order of magnitude is 10× or 100× (10**0.5 ≤ median ≤ 10**2.5); not
    reproduced otherwise. Insufficient data without a pair measured on both devices."""
    pairs = [s for s in speedups(t.cells) if s.value is not None]
    if not pairs:
        return _insufficient("no workload and framework with successful runs on both CPU and GPU")
    values = sorted(s.value for s in pairs)
    mid = len(values) // 2
    median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    evidence = f"median speedup {_n(median)}× over {len(pairs)} pairs: " + ", ".join(_speedup_text(s) for s in pairs)
    return ClaimResult(_verdict(ORDER_OF_MAGNITUDE_LOW <= median <= TWO_ORDERS_HIGH), evidence,
                       _ids(c for s in pairs for c in (s.cpu, s.gpu)))


def shi_no_tool_fastest_everywhere(t: ResultsTable) -> ClaimResult:
    """In every (workload, device) group where at least 2 frameworks have a mean training time, find the
    fastest. Reproduced when no framework is fastest in every group; not reproduced when one is.
    Insufficient data with fewer than 2 such groups."""
    return _no_single_winner(t, "training_time_s", lowest=True, unit="s", what="training time")


# --- ilkarman, Shams et al. ----------------------------------------------------------------

def ilkarman_cudnn_autotune_helps(t: ResultsTable) -> ClaimResult:
    """Needs GPU runs of one workload and framework with cuDNN autotuning on and off; campaigns run one
    setting, so this is insufficient data (not in this campaign)."""
    return _not_in_campaign("GPU runs with cuDNN autotuning on and off")


def shams_multi_gpu_scaling(t: ResultsTable) -> ClaimResult:
    """Needs runs on 1-4 GPUs and several nodes (NVLink vs PCIe); the kit runs one device per run, so this
    is insufficient data (not in this campaign)."""
    return _not_in_campaign("multi-GPU and multi-node runs")


# --- Registry ------------------------------------------------------------------------------

DLBENCH = "DLBench"
CLAIMS: list[Claim] = [
    Claim("1", DLBENCH, "No framework is best on accuracy across all datasets and architectures.",
          no_framework_best_on_accuracy),
    Claim("2", DLBENCH, "GPU shortens training time by about an order of magnitude on most workloads.",
          gpu_order_of_magnitude_faster),
    Claim("3", DLBENCH, "Keras on IMDB LSTM trains faster on CPU alone than with the GPU.", keras_imdb_cpu_faster),
    Claim("4", DLBENCH, "Longer training time does not imply higher accuracy.", longer_time_not_higher_accuracy),
    Claim("5", DLBENCH, "Higher CPU/memory use does not imply shorter training time.", more_resources_not_faster),
    Claim("6", DLBENCH, "GPU utilization is much higher than CPU utilization; CNN GPU use close to 100 %.",
          gpu_util_much_higher),
    Claim("7", DLBENCH, "Theano reaches 50 % on IMDB and leaks memory on IMDB LSTM CPU.",
          theano_imdb_failure_and_leak),
    Claim("8", DLBENCH, "Training time is proportional to the number of epochs.", time_proportional_to_epochs),
    Claim("9", DLBENCH, "Accuracy curves along epochs are almost the same on CPU and GPU.", cpu_gpu_curves_same),
    Claim("Wu-1", "Wu et al.", "Training time is proportional to the number of epochs.",
          wu_time_proportional_to_epochs),
    Claim("Wu-2", "Wu et al.", "A larger batch lowers accuracy at a fixed number of epochs.",
          wu_larger_batch_lower_accuracy),
    Claim("Wu-3", "Wu et al.", "The learning rate changes accuracy but hardly the training time.",
          wu_learning_rate_changes_accuracy_not_time),
    Claim("Wu-4", "Wu et al.", "TensorFlow with Eigen beats TensorFlow with MKL by about 5× on CPU.",
          wu_eigen_beats_mkl),
    Claim("Wu-5", "Wu et al.", "More OpenBLAS threads than needed slow training down.", wu_too_many_threads_slow),
    Claim("Wu-6", "Wu et al.", "CPU use falls as the batch size grows.", wu_cpu_use_falls_with_batch),
    Claim("Shi-1", "Shi et al.", "CPU performance scales poorly past the physical core count.",
          shi_cpu_scaling_past_cores),
    Claim("Shi-2", "Shi et al.", "GPU is one to two orders of magnitude faster than the CPU.",
          shi_gpu_one_to_two_orders_faster),
    Claim("Shi-3", "Shi et al.", "No tool wins everywhere (training speed).", shi_no_tool_fastest_everywhere),
    Claim("ilkarman-1", "ilkarman/DLF", "Enabling cuDNN autotuning speeds up training.",
          ilkarman_cudnn_autotune_helps),
    Claim("Shams-1", "Shams et al.", "Multi-GPU and multi-node scaling depend on the interconnect (NVLink vs PCIe).",
          shams_multi_gpu_scaling),
]


def caveat_for(rows: Iterable[dict[str, Any]]) -> str:
    """'on synthetic data / quick profile: not evidence about the paper' when any row is either; else ''."""
    rows = list(rows)
    parts = []
    if any(r.get("data_source") != REAL_DATA for r in rows):
        parts.append("synthetic data" if any(r.get("data_source") == "synthetic" for r in rows)
                     else "data of unknown origin")
    profiles = sorted({str(r.get("profile")) for r in rows if r.get("profile") != PAPER_PROFILE})
    if profiles:
        parts.append(f"{'/'.join(profiles)} profile")
    return f"on {' / '.join(parts)}: not evidence about the paper" if parts else ""


def evaluate_claims(table: ResultsTable, claims: Sequence[Claim] = CLAIMS) -> list[ClaimOutcome]:
    """Run every claim's check on the table; each outcome carries the caveat of the runs it used."""
    by_id = {r["run_id"]: r for r in table.rows}
    out = []
    for claim in claims:
        result = claim.check(table)
        used = [by_id[i] for i in result.run_ids if i in by_id]
        out.append(ClaimOutcome(claim, result, caveat_for(used) if used else ""))
    return out
