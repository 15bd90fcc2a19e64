"""Shi et al.'s claims (other-studies.md): CPU thread scaling, GPU/CPU speedup, no tool fastest everywhere."""

from __future__ import annotations

import statistics

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
from analysis.runs import CURRENT_ERA
from analysis.stats import format_number
from analysis.sweeps import Series, finite, series, swept
from analysis.transfer import speedups

STUDY = "Shi et al."

# "One to two orders of magnitude" (Shi et al.): the nearest power of ten is 10 or 100.
TWO_ORDERS_HIGH = 10**2.5
# "Scales poorly" past the physical cores: the best time past them is less than this much faster than
# the best time within them.
POOR_GAIN = 1.10


def _thread_sweeps(t: ResultsTable) -> list[Series]:
    """The CPU series of a thread sweep (make shi-cpu): runs whose sweep names the thread count, timed in seconds
    per measured mini-batch (iteration protocol, as Shi times it), else by their training time (epoch protocol)."""
    return [s for s in series((r for r in t.ok_rows if swept(r)), training_time=True) if s.device == "cpu"]


def shi_cpu_scaling_past_cores(t: ResultsTable) -> ClaimResult:
    """For every CPU thread sweep (a workload and framework run at several thread counts: make shi-cpu), the
    best mean time at thread counts up to the host's physical cores (run.json host.cpu_physical_cores) against
    the best past them; the time is seconds per measured mini-batch (iteration protocol), else the training
    time. Reproduced when no sweep gains 10 % or more past the cores (best within / best past < 1.10); not
    reproduced when one does. Insufficient data without a sweep that has counts on both sides of the cores."""
    parts, gains, used = [], [], []
    for sweep in _thread_sweeps(t):
        rows = sweep.rows
        cores = {r.get("physical_cores") for r in rows}
        p = next(iter(cores))
        if len(cores) != 1 or finite(p) is None:  # unknown, or runs of several machines
            continue
        mean = sweep.seconds
        within = {n: v for n, v in mean.items() if n <= p}
        past = {n: v for n, v in mean.items() if n > p}
        if not within or not past:
            continue
        n_in, n_past = min(within, key=within.get), min(past, key=past.get)
        gain = within[n_in] / past[n_past]
        gains.append(gain)
        used += [r["run_id"] for r in rows]
        others = sweep.context["sweep"]
        label = f"{sweep.framework} {sweep.workload}" + (f" ({others})" if others else "")
        parts.append(f"{label}: best {format_number(within[n_in], 4)} s at {n_in} of {int(p)} cores, "
                     f"{format_number(past[n_past], 4)} s at {n_past} threads ({format_number(gain)}×)")
    if not gains:
        return not_in_campaign("a CPU thread-count sweep up to and past the physical core count (make shi-cpu)")
    return ClaimResult(verdict_for(all(g < POOR_GAIN for g in gains)),
                       f"gain past the physical cores < {POOR_GAIN:g}× in {sum(g < POOR_GAIN for g in gains)} of "
                       f"{len(gains)} sweeps: " + "; ".join(parts), tuple(used))


def _per_sample_speedups(t: ResultsTable) -> list[tuple[str, float, list[str]]]:
    """(label, speedup, run ids) of every workload and framework timed per mini-batch on both devices in one
    era, profile and data source: the best CPU seconds per sample (the mean seconds per mini-batch over the
    batch size, at the fastest thread count) over the GPU's. Per sample, because an experiment may give a
    device its own batch size (shi-gpu's LSTM runs Table 7's GPU batch, 128, against the CPU's 256)."""
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
        used = [r["run_id"] for ser in (cpu_series, gpu_series) for r in ser.rows]
        out.append((f"{key[1]} {key[0]} {format_number(cpu / gpu)}×", cpu / gpu, used))
    return out


def shi_gpu_one_to_two_orders_faster(t: ResultsTable) -> ClaimResult:
    """Speedup = CPU time / GPU time per workload and framework. Runs timed per mini-batch (make shi-cpu,
    shi-gpu) compare seconds per sample, the CPU at its fastest thread count; other runs the mean training
    times (as DLBench claim 2). Reproduced when the median speedup's nearest order of magnitude is 10× or 100×
    (10**0.5 ≤ median ≤ 10**2.5); not reproduced otherwise. Insufficient data without a pair measured on both
    devices."""
    per_sample = _per_sample_speedups(t)
    if per_sample:
        texts, values = [p[0] for p in per_sample], [p[1] for p in per_sample]
        used, unit = [i for p in per_sample for i in p[2]], "s per sample"
    else:
        pairs = [s for s in speedups(t.cells) if s.value is not None]
        texts, values = [speedup_text(s) for s in pairs], [s.value for s in pairs]
        used, unit = cell_run_ids(c for s in pairs for c in (s.cpu, s.gpu)), "training time"
    if not values:
        return insufficient("no workload and framework with successful runs on both CPU and GPU")
    median = statistics.median(values)
    evidence = f"median speedup {format_number(median)}× over {len(values)} pairs ({unit}): " + ", ".join(texts)
    return ClaimResult(verdict_for(ORDER_OF_MAGNITUDE_LOW <= median <= TWO_ORDERS_HIGH), evidence, tuple(used))


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


def shi_no_tool_fastest_everywhere(t: ResultsTable) -> ClaimResult:
    """In every (workload, device, threads) group (runs of one era, runner, profile, data, batch size and sweep
    point) where at least 2 frameworks have a mean time, find the fastest; the time is seconds per measured
    mini-batch (iteration_time_mean_s) for runs of the iterations protocol (make shi-cpu), else the training
    time, never both in one group. Reproduced when no framework is fastest in every group; not reproduced when
    one is. Insufficient data with fewer than 2 such groups."""
    values, used = [], []
    for key, by_fw in _speed_groups(t).items():
        if len(by_fw) < 2:
            continue
        workload, device, threads, era, *_, others, per_batch = key
        label = f"{workload}/{device}" + ("" if era == CURRENT_ERA else f"/{era}")
        label += "" if threads < 0 else f" at {threads} thread{'s' if threads > 1 else ''}"
        label += f" ({others})" if others else ""
        label += ", s per mini-batch" if per_batch else ", training time"
        values.append((label, {fw: seconds for fw, (seconds, _) in by_fw.items()}))
        used += [r["run_id"] for _, rs in by_fw.values() for r in rs]
    if len(values) < 2:
        return insufficient(f"{len(values)} (workload, device, threads) group(s) with >= 2 frameworks' time; "
                            "needs >= 2", used)
    return winner_result(values, lowest=True, unit="s", run_ids=used)


CLAIMS: list[Claim] = [
    Claim("Shi-1", STUDY, "CPU performance scales poorly past the physical core count.",
          shi_cpu_scaling_past_cores, load_sensitive=True, decided_by=("shi-cpu",)),
    Claim("Shi-2", STUDY, "GPU is one to two orders of magnitude faster than the CPU.",
          shi_gpu_one_to_two_orders_faster, load_sensitive=True, decided_by=("shi-cpu", "shi-gpu")),
    Claim("Shi-3", STUDY, "No tool wins everywhere (training speed).",
          shi_no_tool_fastest_everywhere, load_sensitive=True, decided_by=("shi-cpu",)),
]
