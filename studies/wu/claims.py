"""Wu et al.'s claims (other-studies.md, the study's tables): epochs, batch size, learning rate, BLAS backend and
threads; the baseline's claims are studies/wu/default_claims.py's. Each check's docstring quotes what it rests on: the
study notes' paraphrase or the table (the kit has no copy of the paper's text)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
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
from studies.wu import default_claims as defaults
from studies.wu import tables as wu

STUDY = "Wu et al."

# Wu-3: a learning rate "hardly" changes time when, over the groups that decide, the median of slowest / fastest
# rate's mean training time is within this factor (Table 21's three-rate group: 1.018).
TIME_SIMILAR_FACTOR = 1.2
# Wu-3: the learning rate "changes accuracy" when the best and worst rate's mean accuracies differ by at least this
# many points: well above the study's own noise, the largest gap between one setup's accuracies on its two servers
# (0.11 pp: TensorFlow 99.28 vs 99.17 %, Tables 10 and 11), and below its learning-rate change (0.86 pp: 99.45 % at
# 1e-3 vs 98.59 % at 1e-2, Table 21's batch-5,000 group at 60,000 iterations).
ACCURACY_EFFECT_PP = 0.5
# ... and by more than this many times the largest standard deviation of one rate's repeats (where there are
# repeats): the change must stand out of the kit's own run-to-run noise too.
NOISE_FACTOR = 2.0
# Wu-6: how each framework's CPU "total" (user + system + iowait) moves from the smallest to the largest of the kit's
# batch sizes on its own MNIST model, as Tables 10 and 22 print it (Server-1): Theano's falls (99.91 -> 85.49 ->
# 59.87 %), TensorFlow's does not (80.15 -> 86.61 -> 88.82 %; it falls only at 50,000, which the kit does not run).
FALLS, DOES_NOT_FALL = "falls", "does not fall"
CPU_TREND = {"theano": FALLS, "tensorflow": DOES_NOT_FALL}
# W12: the framework whose batch table shows a larger batch training faster (Table 15: TensorFlow, 1,114 -> 987 ->
# 937 s at 50 -> 500 -> 5,000); Theano's Table 18 does not (9,595 s at 50, early-stopped, 10,239 s at 5,000).
BATCH_SPEEDS_UP = "tensorflow"
# W6: the library whose CPU time is mostly system time, against the one it is compared with, per framework (Table
# 10/11: TensorFlow's MKL build 51.65 / 64.99 % system vs Eigen's 7.88 / 15.83 %; Theano's OpenBLAS 44.33 / 69.29 %
# vs MKL's 0.70 / 0.80 %), in the kit's names; and how many times the other's system share it must be at least
# (the published ratios are 4.1× to 87×).
SYSTEM_HEAVY = {"tensorflow": ("onednn", "eigen"), "theano": ("openblas", "mkl")}
SYSTEM_FACTOR = 2.0
OPENBLAS, MKL = "openblas", "mkl"

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


Measure = Callable[[list[dict[str, Any]]], float | None]


def _column(column: str) -> Measure:
    """The mean of a run-table column over runs (None: none measured it)."""
    return lambda rows: describe(r.get(column) for r in rows).mean


def _extremes(by_value: dict[Any, list[dict[str, Any]]], measure: Measure) -> tuple[Any, float, Any, float] | None:
    """(smallest value, its measure, largest value, its measure) of a sweep group, values unmeasured left out."""
    means = {v: m for v, m in ((v, measure(rows)) for v, rows in by_value.items()) if m is not None}
    if len(means) < 2:
        return None
    lo, hi = min(means), max(means)
    return lo, means[lo], hi, means[hi]


def _sweep_extremes(t: ResultsTable, varied: str, measure: Measure, word: str, unit: str, above: bool = False,
                    keep: Callable[[dict[str, Any]], bool] = lambda key: True) -> ClaimResult:
    """Reproduced when, in every sweep group `keep` keeps, the measure at the largest varied value is below (above:
    above) the measure at the smallest."""
    groups = sweeps.sweep_groups(t.ok_rows, varied)
    if not groups:
        return not_in_campaign(f"runs of one workload and framework at >= 2 values of {varied}")
    parts, holds, ids = [], True, []
    for key, by_value in groups:
        ends = _extremes(by_value, measure) if keep(key) else None
        if ends is None:
            continue
        lo, m_lo, hi, m_hi = ends
        holds &= m_hi > m_lo if above else m_hi < m_lo
        ids += [r["run_id"] for rows in by_value.values() for r in rows]
        parts.append(f"{sweeps.group_label(key)}: {word} {format_number(m_lo)} {unit} at {varied} {lo:g}, "
                     f"{format_number(m_hi)} {unit} at {hi:g}")
    if not parts:
        return insufficient(f"no {word} measured in the {varied} sweep's groups that decide", _ids(groups))
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
    return _sweep_extremes(t, "batch_size", _column("test_accuracy"), "accuracy", "%")


def _lr_effect(by_lr: dict[Any, list[dict[str, Any]]]) -> tuple[float, float, float] | None:
    """(accuracy spread in points, the threshold it must reach, slowest / fastest mean time) of a learning-rate group;
    None where accuracy or time is unmeasured at fewer than 2 rates."""
    accs, times = _value(by_lr, "test_accuracy"), _value(by_lr, "training_time_s")
    if len(accs) < 2 or len(times) < 2 or min(times.values()) <= 0:
        return None
    stds = [s for s in (describe(r["test_accuracy"] for r in rows).std for rows in by_lr.values()) if s is not None]
    threshold = max([ACCURACY_EFFECT_PP, *(NOISE_FACTOR * s for s in stds)])
    return max(accs.values()) - min(accs.values()), threshold, max(times.values()) / min(times.values())


def wu_learning_rate_changes_accuracy_not_time(t: ResultsTable) -> ClaimResult:
    """Study notes (other-studies.md, Wu et al.'s claims): "learning rate changes accuracy but hardly time"; Table 21
    (TensorFlow, Server-1's GPU) at batch 5,000 and 60,000 iterations: 99.37 / 99.45 / 98.59 % at 1e-4 / 1e-3 / 1e-2
    in 8,484 / 8,380 / 8,332 s. Successful runs of a learning-rate sweep (their sweep point names learning_rate alone:
    make wu-gpu-lr, or wu-cpu-lr where no GPU is at hand), grouped by workload, framework, device, runner, profile,
    data and epoch count. The groups that decide span all of the kit's rates (studies/wu/study.toml: 1e-4, 1e-3,
    1e-2); the others are shown. Reproduced when in every deciding group the best and worst rate's mean accuracies
    differ by at least 0.5 points (above the study's own noise, 0.11 pp between one setup's accuracies on its two
    servers, Tables 10 and 11; below its 0.86 pp) and by more than twice the largest standard deviation of one rate's
    repeats, and the median over the deciding groups of slowest / fastest rate's mean training time is at most 1.2×
    (Table 21: 1.018×; its two-rate batch-50 group's 1.58× is one of the groups shown); not reproduced otherwise.
    Insufficient data (not in this campaign) without a learning-rate sweep."""
    groups = sweeps.sweep_groups(t.ok_rows, "learning_rate")
    if not groups:
        return not_in_campaign("runs of one workload and framework at >= 2 learning rates")
    rates = set(wu.kit_points(wu.LR_TARGET, "learning_rate"))
    deciding, shown, holds, factors, ids = [], [], True, [], []
    for key, by_lr in groups:
        effect = _lr_effect(by_lr)
        if effect is None:
            continue
        spread, threshold, factor = effect
        batches = "/".join(sorted({str(r["batch_size"]) for rows in by_lr.values() for r in rows}))
        accs = _value(by_lr, "test_accuracy")
        text = (f"{sweeps.group_label(key)} (batch {batches}, {key['epochs_planned']} epochs): rates "
                f"{', '.join(f'{lr:g}' for lr in by_lr)}, accuracy {format_number(min(accs.values()), 4)}-"
                f"{format_number(max(accs.values()), 4)} % (spread {spread:.2f} pp")
        if not rates <= set(by_lr):
            shown.append(f"{text}), time max/min {factor:.2f}×")
            continue
        holds &= spread >= threshold
        factors.append(factor)
        ids += [r["run_id"] for rows in by_lr.values() for r in rows]
        deciding.append(f"{text}, needs >= {threshold:.2f} pp), time max/min {factor:.2f}×")
    rest = f"; shown, not spanning the kit's rates: {'; '.join(shown)}" if shown else ""
    if not deciding:
        return insufficient("no learning-rate group spans all of the kit's rates "
                            f"({', '.join(f'{r:g}' for r in sorted(rates))}) with accuracy and time measured" + rest,
                            _ids(groups))
    median = statistics.median(factors)
    holds &= median <= TIME_SIMILAR_FACTOR
    return ClaimResult(verdict_for(holds), "; ".join(deciding) + f"; median time max/min {median:.2f}× (at most "
                       f"{TIME_SIMILAR_FACTOR:g}×)" + rest, tuple(ids))


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


BlasPair = tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]


def _blas_pairs(t: ResultsTable, pair: Callable[[str], tuple[str, str] | None]
                ) -> tuple[list[BlasPair], list[str], list[dict[str, Any]]]:
    """The CPU groups of the BLAS sweep (make wu-cpu-blas) whose framework has a pair of backends (pair(framework))
    and successful runs at both: (key, the first backend's runs, the second's); runs whose record names another
    backend than asked are left out (their ids returned second); third, the sweep's rows."""
    blas_rows = [r for r in t.ok_rows if sweeps.sweep_axes(r) == {"blas"}]
    found, off = [], []
    for key, by_blas in sweeps.sweep_groups(blas_rows, "blas", min_points=1):
        backends = pair(key["framework"]) if key["device"] == "cpu" else None
        if backends is None:
            continue
        (first, first_off), (second, second_off) = (_asked_and_loaded(by_blas.get(b, []), b) for b in backends)
        off += first_off + second_off
        if first and second:
            found.append((key, first, second))
    return found, off, blas_rows


def _blas_result(t: ResultsTable, pair: Callable[[str], tuple[str, str] | None], needs: str,
                 compare: Callable[[str, list[dict[str, Any]], str, list[dict[str, Any]]], tuple[bool, str] | None]
                 ) -> ClaimResult:
    """A verdict over the BLAS sweep's pairs (_blas_pairs): compare(first name, its runs, second name, its runs) gives
    (holds, text) per group, None where unmeasured; reproduced when it holds in every group."""
    found, off, blas_rows = _blas_pairs(t, pair)
    if not blas_rows:
        return not_in_campaign(needs)
    left = f"; left out, their record names another backend than asked: {', '.join(off)}" if off else ""
    parts, holds, ids = [], True, []
    for key, first, second in found:
        first_name, second_name = pair(key["framework"]) or ("", "")
        outcome = compare(first_name, first, second_name, second)
        if outcome is None:
            continue
        holds &= outcome[0]
        ids += [r["run_id"] for r in first + second]
        parts.append(f"{sweeps.group_label(key)}: {outcome[1]}")
    if not parts:
        return insufficient(f"no CPU group of the BLAS sweep holds {needs}{left}", [r["run_id"] for r in blas_rows])
    return ClaimResult(verdict_for(holds), "; ".join(parts) + left, tuple(ids))


def _faster(first: str, a: list[dict[str, Any]], second: str, b: list[dict[str, Any]]) -> tuple[bool, str] | None:
    t_a, t_b = (describe(r["training_time_s"] for r in rows).mean for rows in (a, b))
    if t_a is None or not t_b:
        return None
    return t_b < t_a, (f"{first} {format_number(t_a)} s, {second} {format_number(t_b)} s ({first}/{second} "
                       f"{t_a / t_b:.2f}×)")


def _system_heavy(first: str, a: list[dict[str, Any]], second: str, b: list[dict[str, Any]]) -> tuple[bool, str] | None:
    s_a, s_b = (describe(r.get("cpu_system_mean_pct") for r in rows).mean for rows in (a, b))
    if s_a is None or s_b is None:
        return None
    return s_a >= SYSTEM_FACTOR * s_b, (f"system CPU {format_number(s_a)} % with {first}, {format_number(s_b)} % "
                                        f"with {second} (needs >= {SYSTEM_FACTOR:g}×)")


def wu_mkl_beats_openblas(t: ResultsTable) -> ClaimResult:
    """Tables 10 and 11: MKL trains faster than OpenBLAS in every framework that has both (Theano 11,555 vs 7,137 s on
    Server-1, 17,279 vs 692 s on Server-2; Caffe and Torch7 likewise, which the kit does not run). Successful CPU
    runs of a BLAS sweep (make wu-cpu-blas) at blas=openblas and blas=mkl, grouped by workload, framework, runner,
    profile, data and epoch count; a run whose record names another backend than asked is left out, as for Wu-4.
    Reproduced when in every group the mean MKL training time is below the mean OpenBLAS time; not reproduced
    otherwise. Insufficient data without such runs (the kit's sweep runs Theano's mkl only in an image that carries
    Intel's MKL)."""
    return _blas_result(t, lambda fw: (OPENBLAS, MKL), "runs of one workload at blas=openblas and blas=mkl", _faster)


def wu_system_cpu_with_slow_blas(t: ResultsTable) -> ClaimResult:
    """Tables 10 and 11: the slow library's CPU time is largely system time: TensorFlow's MKL build 51.65 / 64.99 %
    system against Eigen's 7.88 / 15.83 % (Server-1 / Server-2), Theano's OpenBLAS 44.33 / 69.29 % against MKL's
    0.70 / 0.80 % (4.1× to 87×). Successful CPU runs of a BLAS sweep (make wu-cpu-blas), grouped as for Wu-4, of
    TensorFlow at onednn (the kit's stand-in for the MKL build) and eigen, and of Theano at openblas and mkl; a run
    whose record names another backend than asked is left out. System CPU: cpu_system_mean_pct, the machine's
    system and interrupt share as sysstat splits it. Reproduced when in every group the first library's mean system
    share is at least 2× the second's; not reproduced otherwise. Insufficient data without such runs."""
    return _blas_result(t, SYSTEM_HEAVY.get, "runs at TensorFlow's onednn and eigen or Theano's openblas and mkl "
                        "with the CPU split recorded", _system_heavy)


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


def _own_mnist(key: dict[str, Any]) -> bool:
    """Whether a sweep group is a framework's own MNIST default in that framework (the model Tables 15, 18 and 22
    measure)."""
    return wu.own_model(key["workload"], key["framework"], wu.REFERENCE_DATASET)


def wu_cpu_use_falls_with_batch(t: ResultsTable) -> ClaimResult:
    """Study notes (other-studies.md, Wu et al.'s claims): "CPU use falls as batch size grows"; Tables 10 and 22
    (Server-1) show it for Theano's model (99.91 -> 85.49 -> 59.87 % at batch 50 -> 500 -> 5,000), not for
    TensorFlow's (80.15 -> 86.61 -> 88.82 %; it falls only at 50,000, which the kit does not run). CPU use is Wu's
    "total": user + system + iowait percent of the machine (studies.wu.tables.cpu_total; DLBench's Eq. 1-2,
    cpu_util_mean_pct, leaves iowait out). Successful runs of a batch-size sweep (make wu-cpu-batch), grouped as for
    Wu-2, at >= 2 batch sizes; the groups that decide are Theano's and TensorFlow's own MNIST model in their own
    framework (wu2019_models.csv), the others are shown. Reproduced when Theano's total at the largest batch is
    below that at the smallest and TensorFlow's is not; not reproduced otherwise. Insufficient data (not in this
    campaign) without a batch-size sweep."""
    groups = sweeps.sweep_groups(t.ok_rows, "batch_size")
    if not groups:
        return not_in_campaign("runs of one workload and framework at >= 2 batch sizes")
    deciding, shown, holds, ids = [], [], True, []
    for key, by_batch in groups:
        ends = _extremes(by_batch, wu.cpu_total)
        if ends is None:
            continue
        lo, m_lo, hi, m_hi = ends
        trend = CPU_TREND.get(key["framework"]) if _own_mnist(key) else None
        text = (f"{sweeps.group_label(key)}: user + system + iowait {format_number(m_lo)} % at batch {lo:g}, "
                f"{format_number(m_hi)} % at {hi:g}")
        if trend is None:
            shown.append(text)
            continue
        holds &= (m_hi < m_lo) if trend == FALLS else (m_hi >= m_lo)
        ids += [r["run_id"] for rows in by_batch.values() for r in rows]
        deciding.append(f"{text} (the study: {trend})")
    rest = f"; shown, not the study's own model and framework: {'; '.join(shown)}" if shown else ""
    if not deciding:
        return insufficient("no batch-size group of Theano's or TensorFlow's own MNIST model with the CPU split "
                            "(user, system, iowait) recorded" + rest, _ids(groups))
    return ClaimResult(verdict_for(holds), "; ".join(deciding) + rest, tuple(ids))


def wu_larger_batch_faster(t: ResultsTable) -> ClaimResult:
    """Table 15 (TensorFlow's MNIST default, Server-1, 18.18 epochs): training takes 1,114 / 987 / 937 s at batch 50 /
    500 / 5,000 (and 1,180 s at 50,000, which the kit does not run). Successful runs of a batch-size sweep (make
    wu-cpu-batch) of TensorFlow's own MNIST model in TensorFlow, grouped as for Wu-2 (the other groups are left out:
    Theano's Table 18 does not show it). Reproduced when in every such group the mean training time at the largest
    batch is below that at the smallest; not reproduced otherwise. Insufficient data (not in this campaign) without
    a batch-size sweep."""
    return _sweep_extremes(t, "batch_size", _column("training_time_s"), "training time", "s",
                           keep=lambda key: _own_mnist(key) and key["framework"] == BATCH_SPEEDS_UP)


def wu_memory_grows_with_batch(t: ResultsTable) -> ClaimResult:
    """Table 22 with Table 10 (Server-1): average memory 737 / 765 / 1,812 MB at batch 50 / 500 / 5,000 for
    TensorFlow's MNIST default, 773 / 1,622 / 1,458 MB for Theano's (11,204 MB at TensorFlow's 50,000, not run by the
    kit). Successful runs of a batch-size sweep (make wu-cpu-batch), grouped as for Wu-2, at >= 2 batch sizes:
    reproduced when in every group the mean memory (mem_mean_mb: the run's process tree, resident) at the largest
    batch is above that at the smallest; not reproduced otherwise. Insufficient data (not in this campaign) without
    a batch-size sweep."""
    return _sweep_extremes(t, "batch_size", _column("mem_mean_mb"), "memory", "MB", above=True)


# Why the study's own tables cannot feed a check (Claim.unfed).
NO_EPOCH_TIMES = "needs per-epoch times: wu2019.csv prints whole trainings only"
NO_THREAD_TABLE = "needs the thread sweep's times: wu2019.csv holds no OPENBLAS_NUM_THREADS table"

CLAIMS: list[Claim] = [
    Claim("Wu-1", STUDY, "Training time is proportional to the number of epochs.",
          wu_time_proportional_to_epochs, load_sensitive=True, decided_by=("wu-cpu-defaults",),
          unfed=NO_EPOCH_TIMES),
    Claim("Wu-2", STUDY, "A larger batch lowers accuracy at a fixed number of epochs.",
          wu_larger_batch_lower_accuracy, decided_by=("wu-cpu-batch",)),
    Claim("Wu-3", STUDY, "The learning rate changes accuracy (by 0.5 points or more) but hardly the training time "
          "(median slowest/fastest within 1.2×).",
          wu_learning_rate_changes_accuracy_not_time, load_sensitive=True, decided_by=("wu-gpu-lr", "wu-cpu-lr")),
    Claim("Wu-4", STUDY, "TensorFlow with Eigen beats TensorFlow with MKL by about 5× on CPU.",
          wu_eigen_beats_mkl, load_sensitive=True, decided_by=("wu-cpu-blas",)),
    Claim("Wu-5", STUDY, "More OpenBLAS threads than needed slow training down.",
          wu_too_many_threads_slow, load_sensitive=True, decided_by=("wu-cpu-threads",), unfed=NO_THREAD_TABLE),
    Claim("Wu-6", STUDY, "CPU use (user + system + iowait) responds to the batch size per framework: Theano's falls as "
          "the batch grows, TensorFlow's does not fall up to batch 5,000.", wu_cpu_use_falls_with_batch,
          load_sensitive=True, decided_by=("wu-cpu-batch",)),
    Claim("Wu-7", STUDY, "No framework's default dominates on both training time and accuracy.",
          defaults.wu_no_framework_dominates, load_sensitive=True, decided_by=("wu-cpu-defaults", "wu-gpu-defaults")),
    Claim("Wu-8", STUDY, "Each framework's default model reaches the accuracy the study published for it.",
          defaults.wu_default_accuracy_as_published, decided_by=("wu-cpu-defaults", "wu-gpu-defaults")),
    Claim("Wu-9", STUDY, "The GPU trains each default model at least 2× faster than the CPU.",
          defaults.wu_gpu_faster_than_cpu, load_sensitive=True, decided_by=("wu-cpu-defaults", "wu-gpu-defaults")),
    Claim("Wu-10", STUDY, "TensorFlow's default trains faster at a larger batch (up to 5,000) at a fixed number of "
          "epochs.", wu_larger_batch_faster, load_sensitive=True, decided_by=("wu-cpu-batch",)),
    Claim("Wu-11", STUDY, "Memory use grows with the batch size.", wu_memory_grows_with_batch,
          decided_by=("wu-cpu-batch",)),
    # No image of the kit has an MKL build of Theano (make wu-cpu-blas runs OpenBLAS against the reference BLAS):
    # no make target decides it yet, though Wu's tables feed it.
    Claim("Wu-12", STUDY, "MKL trains faster than OpenBLAS.", wu_mkl_beats_openblas, load_sensitive=True),
    Claim("Wu-13", STUDY, "The slow BLAS library spends its CPU time in the kernel: at least 2× the other's system "
          "share.", wu_system_cpu_with_slow_blas, load_sensitive=True, decided_by=("wu-cpu-blas",)),
]
