"""Shi et al.'s claims (other-studies.md, and the paper's conclusions as a third-party copy quotes them): CPU thread
scaling (past the physical cores, from 4 to 16 cores, TensorFlow's), the GPU's speed-up over the CPU, the fastest
tool per network and GPU, and data-parallel training on several GPUs.

The kit has no copy of the paper. The conclusions quoted in the checks' docstrings are those of the arXiv version
in English, as issue 30's research notes found them in a third-party copy (a web page quoting them); Table 7 and
Table 8 are the kit's reference/shi2016_table7.csv and shi2016_table8.csv (studies/shi/published.py feeds them to the
checks). Where a quoted sentence and Table 7 disagree, a check tests what Table 7 shows and its docstring says so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cache

from analysis.claims import (
    ORDER_OF_MAGNITUDE_LOW,
    Claim,
    ClaimResult,
    ResultsTable,
    cell_run_ids,
    insufficient,
    not_in_campaign,
    speedup_text,
    verdict_for,
    winner_result,
)
from analysis.reference import device_env
from analysis.runs import CURRENT_ERA
from analysis.stats import format_number
from analysis.sweeps import Series, finite, minibatch_seconds, series, sweep_groups, swept
from analysis.transfer import speedups
from campaign import specs
from studies.shi import tables

STUDY = "Shi et al."

# "Scales poorly" past the physical cores: the best time past them is less than this much faster than
# the best time within them.
POOR_GAIN = 1.10
# "Many-core CPUs": the study's server has 16 physical cores; its conclusion sets 16 cores against 4.
MANY_CORES = 16
# "Only slightly better" from a quarter of the cores to all of them: less than half the ideal 4× speed-up.
SLIGHT_GAIN = 2.0
# The workload families (studies/*/workloads/*.toml `family`) the study calls FCNs and CNNs.
FCN_FAMILIES = ("fcn",)
CNN_FAMILIES = ("cnn", "resnet")
# The tool the study's Table 7 has fastest on most CNNs on one GPU, and the network its ResNet-50 finding names.
MXNET = "mxnet"
TENSORFLOW = "tensorflow"
RESNET50 = tables.networks()["ResNet-50"]


@cache
def family(workload: str) -> str | None:
    """A workload's family from its spec (studies/*/workloads/<name>.toml: 'fcn', 'cnn', 'resnet', 'lstm'); None for
    a workload no study folder defines."""
    return specs.load(workload).get("family") if workload in specs.known_workloads() else None


def _thread_sweeps(t: ResultsTable) -> list[Series]:
    """The CPU series of a thread sweep (make shi-cpu): runs whose sweep names the thread count, timed in seconds
    per measured mini-batch (iteration protocol, as Shi times it), else by their training time (epoch protocol)."""
    return [s for s in series((r for r in t.ok_rows if swept(r)), training_time=True) if s.device == "cpu"]


@dataclass(frozen=True)
class Gain:
    """One thread sweep's speed-up from one set of thread counts to another: best time before over best time after."""

    framework: str
    text: str
    value: float
    run_ids: tuple[str, ...]


def _cores(sweep: Series) -> int | None:
    """The sweep's host physical cores (None: not recorded, or runs of several machines)."""
    cores = {finite(r.get("physical_cores")) for r in sweep.rows}
    p = next(iter(cores))
    return None if len(cores) != 1 or p is None else int(p)


def _label(sweep: Series, cores: int) -> str:
    others = sweep.context["sweep"]
    return f"{sweep.framework} {sweep.workload} ({cores} cores{', ' + others if others else ''})"


def _past_core_gains(t: ResultsTable) -> list[Gain]:
    """Per CPU thread sweep with counts on both sides of its host's physical cores: the best mean time up to the
    cores over the best past them."""
    out = []
    for sweep in _thread_sweeps(t):
        p = _cores(sweep)
        if p is None:
            continue
        mean = sweep.seconds
        within = {n: v for n, v in mean.items() if n is not None and n <= p}
        past = {n: v for n, v in mean.items() if n is not None and n > p}
        if not within or not past:
            continue
        n_in, n_past = min(within, key=within.get), min(past, key=past.get)
        gain = within[n_in] / past[n_past]
        out.append(Gain(sweep.framework, f"{_label(sweep, p)}: best {format_number(within[n_in], 4)} s at {n_in} "
                        f"threads, {format_number(past[n_past], 4)} s at {n_past} ({format_number(gain)}×)",
                        gain, tuple(r["run_id"] for r in sweep.rows)))
    return out


def shi_cpu_scaling_past_cores(t: ResultsTable) -> ClaimResult:
    """Gain past the physical cores, per CPU thread sweep (a workload and framework run at several thread counts on
    one host: make shi-cpu): the best mean time at thread counts up to the host's physical cores (run.json
    host.cpu_physical_cores) over the best past them; the time is seconds per measured mini-batch (iteration
    protocol), else the training time. Reproduced when the median gain over the sweeps is below 1.10 (most sweeps
    gain less than 10 % or lose); not reproduced otherwise. The sweeps gaining 1.10× or more are named: the study's
    exception is TensorFlow, which still gains there. Insufficient data without a sweep that has counts on both
    sides of the cores. Basis: conclusion (1), "In general, all tools do not scale well on many-core CPUs" (arXiv
    text, third-party copy), and Sec 4.1.2, which per issue 30 notes that TensorFlow still gains past the cores (the
    kit has no copy of its sentence); on Table 7 the median gain over the 53 sweeps is below 1.10 while TensorFlow's
    AlexNet-R on the i7-3820 gains 1.22×, so a rule on every sweep would fail the paper's own numbers."""
    gains = _past_core_gains(t)
    if not gains:
        return not_in_campaign("a CPU thread-count sweep up to and past the physical core count (make shi-cpu)")
    median = statistics.median(g.value for g in gains)
    gaining = [g for g in gains if g.value >= POOR_GAIN]
    evidence = (f"median gain past the physical cores {format_number(median)}× over {len(gains)} sweeps (reproduced "
                f"when below {POOR_GAIN:g}×); {len(gains) - len(gaining)} of {len(gains)} gain less than "
                f"{POOR_GAIN:g}×; gaining {POOR_GAIN:g}× or more: "
                + ("; ".join(g.text for g in gaining) if gaining else "none")
                + "; the others: " + "; ".join(g.text for g in gains if g.value < POOR_GAIN))
    return ClaimResult(verdict_for(median < POOR_GAIN), evidence, tuple(i for g in gains for i in g.run_ids))


def _medians(gains: list[Gain]) -> dict[str, tuple[float, int]]:
    """{framework: (median gain, sweeps)}, frameworks by name."""
    by_fw: dict[str, list[float]] = {}
    for g in gains:
        by_fw.setdefault(g.framework, []).append(g.value)
    return {fw: (statistics.median(v), len(v)) for fw, v in sorted(by_fw.items())}


def shi_tensorflow_scales_best_on_cpu(t: ResultsTable) -> ClaimResult:
    """Per framework, the median gain past the physical cores over its CPU thread sweeps (each sweep's gain as in
    Shi-1: best mean time up to the cores over the best past them). Reproduced when TensorFlow's median gain is at
    least 1.10 and above every other framework's; not reproduced otherwise. Insufficient data without TensorFlow's
    and another framework's sweeps across the cores. Basis: Sec 4.1.2, which per issue 30 notes that TensorFlow
    still gains past the cores (the kit has no copy of its sentence), and a third-party summary of the paper: "With
    32 threads, TensorFlow generally performs better due to its efficient utilization of Eigen"; on Table 7
    TensorFlow's median gain is the only one above 1.10."""
    gains = _past_core_gains(t)
    medians = _medians(gains)
    if TENSORFLOW not in medians or len(medians) < 2:
        return not_in_campaign("CPU thread sweeps up to and past the physical cores of TensorFlow and another "
                               "framework (make shi-cpu)")
    tf = medians[TENSORFLOW][0]
    others = [m for fw, (m, _) in medians.items() if fw != TENSORFLOW]
    shown = ", ".join(f"{fw} {format_number(m)}× ({n} sweeps)" for fw, (m, n) in medians.items())
    return ClaimResult(verdict_for(tf >= POOR_GAIN and tf > max(others)),
                       f"median gain past the physical cores: {shown} (reproduced when tensorflow's is at least "
                       f"{POOR_GAIN:g}× and the highest)", tuple(i for g in gains for i in g.run_ids))


def _many_core_gains(t: ResultsTable) -> list[Gain]:
    """Per CPU thread sweep on a host of at least MANY_CORES physical cores P, timed at P threads: the best mean time
    at up to P/4 threads over the time at P."""
    out = []
    for sweep in _thread_sweeps(t):
        p = _cores(sweep)
        mean = sweep.seconds
        if p is None or p < MANY_CORES or p not in mean:
            continue
        quarter = {n: v for n, v in mean.items() if n is not None and n <= p // 4}
        if not quarter:
            continue
        n_q = min(quarter, key=quarter.get)
        gain = quarter[n_q] / mean[p]
        out.append(Gain(sweep.framework, f"{_label(sweep, p)}: best {format_number(quarter[n_q], 4)} s at {n_q} "
                        f"threads, {format_number(mean[p], 4)} s at {p} ({format_number(gain)}×)",
                        gain, tuple(r["run_id"] for r in sweep.rows)))
    return out


def shi_many_cores_slightly_better(t: ResultsTable) -> ClaimResult:
    """Per CPU thread sweep on a host of at least 16 physical cores P (the study's server has 16), the speed-up from
    a quarter of the cores to all of them: the best mean time at up to P/4 threads over the mean time at P threads
    (seconds per measured mini-batch, else the training time). Reproduced when the median speed-up over the sweeps
    is below 2.0, half the ideal 4× ("only slightly better"); not reproduced otherwise. Insufficient data without
    such a sweep (a host of fewer cores cannot decide it). Basis: conclusion (1), "The performance using 16 CPU
    cores is only slightly better than using 4 CPU cores" (arXiv text, third-party copy); on Table 7's server the
    median over the 30 sweeps is about 1.2×, TensorFlow's sweeps 2.1-3.6× (the exception, as in Shi-1)."""
    gains = _many_core_gains(t)
    if not gains:
        return not_in_campaign(f"a CPU thread sweep on a host of at least {MANY_CORES} physical cores, timed at a "
                               "quarter of them and at all of them (make shi-cpu)")
    median = statistics.median(g.value for g in gains)
    return ClaimResult(verdict_for(median < SLIGHT_GAIN),
                       f"median speed-up from a quarter of the cores to all of them {format_number(median)}× over "
                       f"{len(gains)} sweeps (reproduced when below {SLIGHT_GAIN:g}×, half the ideal 4×): "
                       + "; ".join(g.text for g in gains), tuple(i for g in gains for i in g.run_ids))


@dataclass(frozen=True)
class Speedup:
    """A workload and framework's CPU time over its GPU time, with the runs behind it."""

    workload: str
    text: str
    value: float
    run_ids: tuple[str, ...]


def _per_sample_speedups(t: ResultsTable) -> list[Speedup]:
    """Every workload and framework timed per mini-batch on both devices in one era, profile and data source: the
    best CPU seconds per sample (the mean seconds per mini-batch over the batch size, at the fastest thread count,
    on the fastest CPU) over the best GPU's. Per sample, because an experiment may give a device its own batch size
    (shi-gpu's LSTM runs Table 7's GPU batch, 128, against the CPU's 256)."""
    sides: dict[tuple, dict[str, list[tuple[float, Series]]]] = {}
    shown: dict[tuple, tuple[str, ...]] = {}  # each pair's order in the evidence: by its display text
    for s in series(t.ok_rows):
        batch = finite(s.context["batch_size"])
        if not batch:
            continue
        context = tuple(str(s.context[k]) for k in ("era", "profile", "data_source"))
        key = (s.workload, s.framework, *context, tuple(s.others.items()))
        shown[key] = (s.workload, s.framework, *context, s.context["sweep"])
        per_sample = min(s.seconds.values()) / batch
        sides.setdefault(key, {}).setdefault(s.device, []).append((per_sample, s))
    out = []
    for key, by_device in sorted(sides.items(), key=lambda kv: shown[kv[0]]):
        if "cpu" not in by_device or "gpu" not in by_device:
            continue
        cpu, cpu_series = min(by_device["cpu"], key=lambda v: v[0])
        gpu, gpu_series = min(by_device["gpu"], key=lambda v: v[0])
        used = tuple(r["run_id"] for ser in (cpu_series, gpu_series) for r in ser.rows)
        out.append(Speedup(key[0], f"{key[1]} {key[0]} {format_number(cpu / gpu)}×", cpu / gpu, used))
    return out


def _speedups(t: ResultsTable) -> tuple[list[Speedup], str]:
    """The GPU speed-ups and their unit: per sample where runs are timed per mini-batch, else by the mean training
    times (as DLBench claim 2)."""
    per_sample = _per_sample_speedups(t)
    if per_sample:
        return per_sample, "s per sample"
    pairs = [s for s in speedups(t.cells) if s.value is not None]
    return [Speedup(s.cpu.key["workload"], speedup_text(s), s.value, cell_run_ids((s.cpu, s.gpu)))
            for s in pairs], "training time"


def shi_gpu_significant_speedup(t: ResultsTable) -> ClaimResult:
    """Speed-up = CPU time / GPU time per workload and framework. Runs timed per mini-batch (make shi-cpu, shi-gpu)
    compare seconds per sample, the CPU at its fastest thread count, each side on its fastest machine; other runs
    the mean training times (as DLBench claim 2). "Significant" is taken as at least 10**0.5 ≈ 3.16× (the nearest
    order of magnitude is 10× or more). Reproduced when every FCN and CNN pair (workload family fcn, cnn or resnet)
    speeds up at least that much; not reproduced when one does not. Pairs of other families (the LSTM) are shown
    as context: the sentence is about FCNs and CNNs. Insufficient data without an FCN or CNN pair measured on both
    devices. Basis: conclusion (2), "For FCNs and CNNs, all tools can achieve significant speedup by using
    contemporary GPUs" (arXiv text, third-party copy); the study notes' "one to two orders of magnitude" is not the
    paper's. On Table 7 the smallest FCN/CNN speed-up is about 4.3× (TensorFlow's AlexNet-R)."""
    pairs, unit = _speedups(t)
    scoped = [p for p in pairs if family(p.workload) in FCN_FAMILIES + CNN_FAMILIES]
    if not scoped:
        return insufficient("no FCN or CNN workload and framework with successful runs on both CPU and GPU",
                            (i for p in pairs for i in p.run_ids))
    low = min(scoped, key=lambda p: p.value)
    context = [p for p in pairs if p not in scoped]
    evidence = (f"{len(scoped)} FCN/CNN pairs ({unit}), smallest {low.text} (reproduced when every one is at least "
                f"{format_number(ORDER_OF_MAGNITUDE_LOW)}×): " + ", ".join(p.text for p in scoped))
    if context:
        evidence += "; other networks, context only: " + ", ".join(p.text for p in context)
    return ClaimResult(verdict_for(low.value >= ORDER_OF_MAGNITUDE_LOW), evidence,
                       tuple(i for p in pairs for i in p.run_ids))


def _speed_groups(t: ResultsTable) -> dict[tuple, dict[str, tuple[float, list[dict]]]]:
    """Each comparison group's frameworks, each with its mean time and runs: a group is one thread count (-1: not
    recorded) of the frameworks' series (analysis/sweeps.py) of one workload, device and context (era, runner,
    profile, data, batch size, the sweep's other axes and what the time is: seconds per measured mini-batch,
    else the training time, never both in one group). Grouped on the series' context_key; keyed and ordered by
    what the evidence shows (workload, device, threads, the context's values as text, per mini-batch)."""
    groups: dict[tuple, dict[str, tuple[float, list[dict]]]] = {}
    shown: dict[tuple, tuple] = {}  # each group's order: by its display text
    for s in series(t.ok_rows, training_time=True):
        for threads, seconds in s.seconds.items():
            count = -1 if threads is None else threads
            key = (s.workload, s.device, count, s.context_key(), s.per_minibatch)
            shown[key] = (s.workload, s.device, count, *map(str, s.context.values()), s.per_minibatch)
            groups.setdefault(key, {})[s.framework] = (seconds, s.runs[threads])
    return {shown[k]: groups[k] for k in sorted(groups, key=shown.get)}


def _group_label(key: tuple, with_runner: bool) -> str:
    """A speed group as the evidence names it: 'workload/device[/era] at N threads (other axes)', with its runner
    where the groups are of several (a published table's machines: studies/shi/published.py)."""
    workload, device, threads, era, runner, *_, others, per_batch = key
    label = f"{workload}/{device}" + ("" if era == CURRENT_ERA else f"/{era}")
    label += f" [{runner}]" if with_runner else ""
    label += "" if threads < 0 else f" at {threads} thread{'s' if threads > 1 else ''}"
    return label + (f" ({others})" if others else "")


def _compared(t: ResultsTable) -> list[tuple[tuple, dict[str, tuple[float, list[dict]]]]]:
    """The speed groups with at least 2 frameworks."""
    return [(k, by_fw) for k, by_fw in _speed_groups(t).items() if len(by_fw) >= 2]


def shi_no_tool_fastest_everywhere(t: ResultsTable) -> ClaimResult:
    """In every (workload, device, threads) group (runs of one era, runner, profile, data, batch size and sweep
    point) where at least 2 frameworks have a mean time, find the fastest; the time is seconds per measured
    mini-batch (iteration_time_mean_s) for runs of the iterations protocol (make shi-cpu), else the training
    time, never both in one group. Reproduced when no framework is fastest in every group; not reproduced when
    one is. Insufficient data with fewer than 2 such groups."""
    groups = _compared(t)
    several = len({k[4] for k, _ in groups}) > 1
    values, used = [], []
    for key, by_fw in groups:
        label = _group_label(key, several) + (", s per mini-batch" if key[-1] else ", training time")
        values.append((label, {fw: seconds for fw, (seconds, _) in by_fw.items()}))
        used += [r["run_id"] for _, rs in by_fw.values() for r in rs]
    if len(values) < 2:
        return insufficient(f"{len(values)} (workload, device, threads) group(s) with >= 2 frameworks' time; "
                            "needs >= 2", used)
    return winner_result(values, lowest=True, unit="s", run_ids=used)


def _gpu_fastest(t: ResultsTable, workloads: set[str], framework: str) -> list[tuple[str, set[str], list[str]]]:
    """(label, fastest frameworks, run ids) of every one-GPU group (no sweep point) of these workloads where the
    framework and at least one other have a mean time; ties all count as fastest."""
    groups = [(k, by_fw) for k, by_fw in _compared(t)
              if k[0] in workloads and k[1] == "gpu" and not k[-2] and framework in by_fw]
    several = len({k[4] for k, _ in groups}) > 1
    out = []
    for key, by_fw in groups:
        top = min(seconds for seconds, _ in by_fw.values())
        best = {fw for fw, (seconds, _) in by_fw.items() if seconds == top}
        shown = "/".join(sorted(best))
        out.append((f"{_group_label(key, several)}: {shown} ({format_number(top, 4)} s of {len(by_fw)})", best,
                    [r["run_id"] for _, rs in by_fw.values() for r in rs]))
    return out


def _workloads_of(t: ResultsTable, families: tuple[str, ...]) -> set[str]:
    return {r["workload"] for r in t.ok_rows if family(r["workload"]) in families}


def shi_mxnet_fastest_on_most_cnns_on_gpu(t: ResultsTable) -> ClaimResult:
    """Over the one-GPU groups of the CNN workloads (family cnn or resnet; one workload, GPU and context, seconds
    per measured mini-batch, else the training time) in which MXNet and at least one other framework have a mean
    time: reproduced when MXNet is the fastest (ties count) in more than half of them; not reproduced otherwise.
    Insufficient data without such a group. TensorFlow's wins are counted beside. Basis: Table 7, where on each of
    the three GPUs MXNet is fastest on AlexNet-S, ResNet-50 and ResNet-56 and Caffe or CNTK on AlexNet-R, and
    TensorFlow on none of the four CNNs. Conclusion (2) of the arXiv text (third-party copy) says "TensorFlow
    performs the best on CNNs"; Table 7, the kit's copy of the CCBD 2016 tables, does not bear that out, so this
    check tests what the table shows."""
    found = _gpu_fastest(t, _workloads_of(t, CNN_FAMILIES), MXNET)
    if not found:
        return not_in_campaign("one-GPU runs of a CNN by MXNet and another framework (make shi-gpu)")
    wins = sum(MXNET in best for _, best, _ in found)
    tf = sum(TENSORFLOW in best for _, best, _ in found)
    evidence = (f"mxnet fastest in {wins} of {len(found)} CNN groups on one GPU (reproduced when more than half), "
                f"tensorflow in {tf}: " + "; ".join(text for text, _, _ in found))
    return ClaimResult(verdict_for(wins > len(found) / 2), evidence, tuple(i for *_, ids in found for i in ids))


def shi_mxnet_fastest_on_resnet50_on_gpu(t: ResultsTable) -> ClaimResult:
    """Over the one-GPU groups of ResNet-50 (resnet50-synthetic; one GPU and context) in which MXNet and at least one
    other framework have a mean time per mini-batch: reproduced when MXNet is the fastest (ties count) in every
    one; not reproduced otherwise. Insufficient data without such a group. Basis: Table 7, where MXNet has the
    lowest seconds per mini-batch on ResNet-50 on all three GPUs (a third-party summary of the paper's later
    version says MXNet performs best on ResNet-50 on one GPU; the kit has no copy of its sentence)."""
    found = _gpu_fastest(t, {RESNET50}, MXNET)
    if not found:
        return not_in_campaign(f"one-GPU runs of {RESNET50} by MXNet and another framework (make shi-gpu)")
    wins = sum(MXNET in best for _, best, _ in found)
    evidence = (f"mxnet fastest in {wins} of {len(found)} ResNet-50 groups on one GPU (reproduced when in every "
                "one): " + "; ".join(text for text, _, _ in found))
    return ClaimResult(verdict_for(wins == len(found)), evidence, tuple(i for *_, ids in found for i in ids))


def shi_more_gpus_faster(t: ResultsTable) -> ClaimResult:
    """Data-parallel GPU runs of a ranks sweep (make shi-multigpu: 1, 2 and 4 GPUs, one mini-batch split between
    them), grouped by workload, framework and context: the mean seconds per measured mini-batch at 1 GPU against
    that at the most GPUs of the group. Reproduced when in every group the time at the most GPUs is below the
    1-GPU time; not reproduced otherwise. Insufficient data without a GPU group timed at 1 GPU and at more. Basis:
    Table 8 (seconds per mini-batch on 1, 2 and 4 GPUs), where every tool's time on every network falls from 1 to
    4 GPUs (TensorFlow's AlexNet-R least, 1.2×); the study notes' "multi-GPU 1, 2, 4 with data-parallel
    synchronous SGD" describe it."""
    timed = [r for r in t.ok_rows if minibatch_seconds(r) is not None and device_env(str(r["device"])) == "gpu"]
    parts, used, holds = [], [], True
    for key, by_ranks in sweep_groups(timed, "ranks"):
        ranks = {int(n): [minibatch_seconds(r) for r in rs] for n, rs in by_ranks.items()}
        if 1 not in ranks:
            continue
        most = max(ranks)
        one, many = statistics.fmean(ranks[1]), statistics.fmean(ranks[most])
        holds &= many < one
        used += [r["run_id"] for rs in by_ranks.values() for r in rs]
        parts.append(f"{key['framework']} {key['workload']} [{key['runner']}]: {format_number(one, 4)} s on 1 GPU, "
                     f"{format_number(many, 4)} s on {most} ({format_number(one / many)}×)")
    if not parts:
        return not_in_campaign("GPU runs of a ranks sweep at 1 GPU and more (make shi-multigpu)")
    return ClaimResult(verdict_for(holds), f"{len(parts)} GPU groups, time per mini-batch on 1 GPU and on the most "
                       "(reproduced when the most GPUs are faster in every group): " + "; ".join(parts), tuple(used))


CLAIMS: list[Claim] = [
    Claim("Shi-1", STUDY, "Past the physical core count, most tool × network sweeps gain little or lose.",
          shi_cpu_scaling_past_cores, load_sensitive=True, decided_by=("shi-cpu",)),
    Claim("Shi-2", STUDY, "For FCNs and CNNs, GPUs give a significant speed-up over the CPU.",
          shi_gpu_significant_speedup, load_sensitive=True, decided_by=("shi-cpu", "shi-gpu")),
    Claim("Shi-3", STUDY, "No tool wins everywhere (training speed).",
          shi_no_tool_fastest_everywhere, load_sensitive=True, decided_by=("shi-cpu",)),
    Claim("Shi-4", STUDY, "TensorFlow scales best on CPU: its median gain past the physical cores is the "
          "highest, and at least 1.10×.",
          shi_tensorflow_scales_best_on_cpu, load_sensitive=True, decided_by=("shi-cpu",)),
    Claim("Shi-5", STUDY, "On one GPU, MXNet is the fastest tool on most CNNs (Table 7).",
          shi_mxnet_fastest_on_most_cnns_on_gpu, load_sensitive=True, decided_by=("shi-gpu",)),
    Claim("Shi-6", STUDY, "On one GPU, MXNet is the fastest tool on ResNet-50.",
          shi_mxnet_fastest_on_resnet50_on_gpu, load_sensitive=True, decided_by=("shi-gpu",)),
    Claim("Shi-7", STUDY, "On a many-core CPU, all of its cores are only slightly faster than a quarter of them.",
          shi_many_cores_slightly_better, load_sensitive=True, decided_by=("shi-cpu",)),
    Claim("Shi-8", STUDY, "Data-parallel training on more GPUs cuts the time per mini-batch.",
          shi_more_gpus_faster, load_sensitive=True, decided_by=("shi-multigpu",)),
]
