"""ilkarman/DeepLearningFrameworks' claims (other-studies.md; reference/ilkarman_dlf.csv and the notebooks' accuracies
in studies/dlbench/reference/from_original_repos.csv): the article's lessons (cuDNN autotuning, the fused cuDNN RNN
kernel, the convolution layout) and its finding that the frameworks are close in time and accuracy. The kit has no
copy of the article's text: the checks quote the study notes and name the reference tables."""

from __future__ import annotations

from analysis.claims import (
    Claim,
    ClaimResult,
    ResultsTable,
    cell_mean,
    cell_run_ids,
    insufficient,
    measured_groups,
    not_in_campaign,
    verdict_for,
)
from analysis.stats import describe, format_number
from analysis.sweeps import group_label, sweep_groups
from bench import switches
from studies.ilkarman import tables

STUDY = "ilkarman/DLF"
ON, OFF = "on", "off"
FUSED, PLAIN = switches.SWITCHES[switches.RNN_KERNEL].values
# "Matters": the two layouts' training times differ by at least this factor (slower / faster) for some framework.
LAYOUT_MATTERS = 1.10
# "Close": the slowest framework's CIFAR-10 CNN training time at most this many times the fastest's (the article's
# spread: 1.86× on the K80, 1.82× on the P100, over every framework it timed), and the frameworks' test accuracies
# within this many percentage points (its spread: 3.7 pp on the CIFAR-10 CNN, 1.1 pp on the IMDB GRU).
CLOSE_TIME_RATIO = 2.0
CLOSE_ACCURACY_PP = 5.0
CNN_BENCHMARK, GRU_BENCHMARK = "cifar10_cnn_training", "imdb_rnn_training"
# Why the article's tables cannot feed a switch's check: they time each framework in one setting only.
ONE_SETTING = "the article prints each framework's time in one setting only, not with the switch on and off"


def ilkarman_cudnn_autotune_helps(t: ResultsTable) -> ClaimResult:
    """Successful GPU runs of a cudnn_autotune sweep (their sweep point names it alone: make ilkarman-autotune-gpu),
    grouped by workload, framework, runner, profile, data and epoch count, with runs at on and at off. Reproduced
    when in every group the mean training time with autotuning on is below the mean with it off; not reproduced
    otherwise. Insufficient data (not in this campaign) without such runs."""
    groups = [(k, v) for k, v in sweep_groups(t.ok_rows, switches.AUTOTUNE, min_points=1) if k["device"] == "gpu"]
    if not groups:
        return not_in_campaign("GPU runs of one workload and framework with cuDNN autotuning on and off "
                               "(make ilkarman-autotune-gpu)")
    parts, holds, ids = [], True, []
    for key, by_value in groups:
        on = describe(r["training_time_s"] for r in by_value.get(ON, [])).mean
        off = describe(r["training_time_s"] for r in by_value.get(OFF, [])).mean
        if on is None or off is None or on <= 0:
            continue
        holds &= on < off
        ids += [r["run_id"] for rows in by_value.values() for r in rows]
        parts.append(f"{group_label(key)}: on {format_number(on)} s, off {format_number(off)} s, off/on "
                     f"{off / on:.2f}× ({len(by_value[ON])} and {len(by_value[OFF])} runs)")
    if not parts:
        return insufficient("no GPU group of the cudnn_autotune sweep has successful runs both on and off",
                            [r["run_id"] for _, v in groups for rows in v.values() for r in rows])
    return ClaimResult(verdict_for(holds), "; ".join(parts), tuple(ids))


def _switch_means(t: ResultsTable, axis: str) -> list[tuple[str, dict[str, float], list[str]]]:
    """(group label, {value: mean training time}, run ids) of each group of a switch's one-axis sweep with a mean
    time at both of its values."""
    out = []
    for key, by_value in sweep_groups(t.ok_rows, axis):
        means = {v: describe(r["training_time_s"] for r in rows).mean for v, rows in by_value.items()}
        if len(means) == 2 and all(m is not None and m > 0 for m in means.values()):
            out.append((group_label(key), means, [r["run_id"] for rows in by_value.values() for r in rows]))
    return out


def ilkarman_fused_rnn_kernel_faster(t: ResultsTable) -> ClaimResult:
    """Successful runs of an rnn_kernel sweep (make ilkarman-rnn-cpu, ilkarman-rnn-gpu: the IMDB GRU as the fused
    recurrent operator, cuDNN's on a GPU, or its cell stepped over time), grouped by workload, framework, device,
    runner, profile, data and epochs, with a mean training time at both fused and plain. Reproduced when in every
    group the fused kernel's mean time is below the plain one's; not reproduced otherwise. Insufficient data (not
    in this campaign) without such a group. Basis: the study notes' lesson, "use cuDNN RNN kernels"
    (other-studies.md: the IMDB GRU uses "cuDNN where available")."""
    groups = _switch_means(t, switches.RNN_KERNEL)
    if not groups:
        return not_in_campaign("runs of the IMDB GRU with the fused and the plain recurrent kernel "
                               "(make ilkarman-rnn-cpu or ilkarman-rnn-gpu)")
    parts = [f"{label}: fused {format_number(m[FUSED])} s, plain {format_number(m[PLAIN])} s, plain/fused "
             f"{m[PLAIN] / m[FUSED]:.2f}×" for label, m, _ in groups]
    return ClaimResult(verdict_for(all(m[FUSED] < m[PLAIN] for _, m, _ in groups)),
                       "; ".join(parts) + " (reproduced when fused is faster in every group)",
                       tuple(i for *_, ids in groups for i in ids))


def ilkarman_layout_matters(t: ResultsTable) -> ClaimResult:
    """Successful runs of a layout sweep (make ilkarman-layout-cpu, ilkarman-layout-gpu: the CIFAR-10 CNN's
    convolutions in channels-first, NCHW, or channels-last, NHWC, memory), grouped by workload, framework, device,
    runner, profile, data and epochs, with a mean training time in both layouts. Per group the ratio of the
    slower layout's mean time to the faster's. Reproduced when some group's ratio is at least 1.10 (the layout
    changes a framework's time by 10 % or more); not reproduced when every group's is below. Insufficient data
    (not in this campaign) without such a group. Basis: the study notes' lesson, "channels-first vs last
    matters" (other-studies.md)."""
    groups = _switch_means(t, switches.LAYOUT)
    if not groups:
        return not_in_campaign("runs of the CIFAR-10 CNN in both convolution layouts "
                               "(make ilkarman-layout-cpu or ilkarman-layout-gpu)")
    parts, ratios = [], []
    for label, means, _ in groups:
        fast = min(means, key=means.get)
        ratio = max(means.values()) / means[fast]
        ratios.append(ratio)
        parts.append(f"{label}: " + ", ".join(f"{v} {format_number(m)} s" for v, m in means.items())
                     + f"; {fast} faster by {ratio:.2f}×")
    return ClaimResult(verdict_for(max(ratios) >= LAYOUT_MATTERS),
                       "; ".join(parts) + f" (reproduced when some group's ratio is at least {LAYOUT_MATTERS:g}×)",
                       tuple(i for *_, ids in groups for i in ids))


def _workload(benchmark: str) -> str:
    return next(b.workload for b in tables.benchmarks() if b.benchmark == benchmark)


def ilkarman_cnn_times_close(t: ResultsTable) -> ClaimResult:
    """The CIFAR-10 CNN's training runs outside any switch sweep (make ilkarman-train-cpu, ilkarman-train-gpu),
    grouped by device, runner, profile and data (studies.ilkarman.tables.measured), with at least 2 frameworks'
    mean training time. Per group the spread = slowest mean / fastest mean. Reproduced when every group's spread is
    at most 2.0; not reproduced otherwise. Insufficient data without such a group. Basis: ilkarman_dlf.csv, the
    article's CIFAR-10 CNN times (K80: 145-269 s over 12 frameworks, spread 1.86×; P100: 51-93 s over 11, 1.82×),
    the comparison the study notes describe: the "same model written idiomatically in each framework"."""
    workload = _workload(CNN_BENCHMARK)
    groups = [g for g in tables.measured(t.ok_rows) if g.benchmark.workload == workload and len(g.runs) >= 2]
    if not groups:
        return not_in_campaign("CIFAR-10 CNN training runs of 2 or more frameworks (make ilkarman-train-cpu or "
                               "ilkarman-train-gpu)")
    parts, spreads, ids = [], [], []
    for g in groups:
        seconds = g.seconds
        slow, fast = max(seconds, key=seconds.get), min(seconds, key=seconds.get)
        spreads.append(seconds[slow] / seconds[fast])
        ids += [r["run_id"] for rs in g.runs.values() for r in rs]
        parts.append(f"{workload}/{g.context['device']} [{g.context['runner']}]: {len(seconds)} frameworks, fastest "
                     f"{fast} {format_number(seconds[fast])} s, slowest {slow} {format_number(seconds[slow])} s "
                     f"({spreads[-1]:.2f}×)")
    return ClaimResult(verdict_for(max(spreads) <= CLOSE_TIME_RATIO),
                       "; ".join(parts) + f" (reproduced when every spread is at most {CLOSE_TIME_RATIO:g}×)",
                       tuple(ids))


def ilkarman_accuracies_close(t: ResultsTable) -> ClaimResult:
    """The CIFAR-10 CNN's and the IMDB GRU's runs outside any sweep, grouped by workload, device, runner, profile
    and data with at least 2 frameworks' mean test accuracy. Per group the spread = highest mean accuracy - lowest,
    in percentage points. Reproduced when every group's spread is at most 5 pp; not reproduced otherwise.
    Insufficient data without such a group. Basis: the article's notebooks (from_original_repos.csv, its ilkarman
    test_acc rows): CIFAR-10 CNN 75.3-79.0 % over 12 frameworks (3.7 pp), IMDB GRU 85.1-86.2 % over 8 (1.1 pp)."""
    workloads = {_workload(CNN_BENCHMARK), _workload(GRU_BENCHMARK)}
    groups = [(g, cells) for g, cells in measured_groups(t, "test_accuracy")
              if g["workload"] in workloads and not g.get("sweep")]
    if not groups:
        return not_in_campaign("CIFAR-10 CNN or IMDB GRU training runs of 2 or more frameworks with a test accuracy "
                               "(make ilkarman-train-cpu or ilkarman-train-gpu)")
    parts, spreads = [], []
    for g, cells in groups:
        acc = {c.key["framework"]: cell_mean(c, "test_accuracy") for c in cells}
        low, high = min(acc, key=acc.get), max(acc, key=acc.get)
        spreads.append(acc[high] - acc[low])
        parts.append(f"{g['workload']}/{g['device']} [{g['runner']}]: {len(acc)} frameworks, {low} "
                     f"{format_number(acc[low])} % to {high} {format_number(acc[high])} % ({spreads[-1]:.1f} pp)")
    return ClaimResult(verdict_for(max(spreads) <= CLOSE_ACCURACY_PP),
                       "; ".join(parts) + f" (reproduced when every spread is at most {CLOSE_ACCURACY_PP:g} pp)",
                       cell_run_ids(c for _, cells in groups for c in cells))


CLAIMS: list[Claim] = [
    Claim("ilkarman-1", STUDY, "Enabling cuDNN autotuning speeds up training.",
          ilkarman_cudnn_autotune_helps, load_sensitive=True, decided_by=("ilkarman-autotune-gpu",),
          unfed=ONE_SETTING + " (autotuning)"),
    Claim("ilkarman-2", STUDY, "The fused (cuDNN) recurrent kernel trains the GRU faster than its cell stepped "
          "over time.", ilkarman_fused_rnn_kernel_faster, load_sensitive=True,
          decided_by=("ilkarman-rnn-gpu",), unfed=ONE_SETTING + " (the recurrent kernel)"),
    Claim("ilkarman-3", STUDY, "The convolution layout (channels-first or channels-last) matters for training time.",
          ilkarman_layout_matters, load_sensitive=True, decided_by=("ilkarman-layout-gpu",),
          unfed=ONE_SETTING + " (the layout)"),
    Claim("ilkarman-4", STUDY, "The frameworks are close in CIFAR-10 CNN training time (slowest at most 2× the "
          "fastest).", ilkarman_cnn_times_close, load_sensitive=True, decided_by=("ilkarman-train-gpu",)),
    Claim("ilkarman-5", STUDY, "The frameworks reach close test accuracies on the CIFAR-10 CNN and the IMDB GRU "
          "(within 5 pp).", ilkarman_accuracies_close, decided_by=("ilkarman-train-gpu",)),
]
