"""Shi et al.'s claims (other-studies.md): CPU thread scaling, GPU/CPU speedup, no tool fastest everywhere."""

from __future__ import annotations

from analysis.claims import (
    ORDER_OF_MAGNITUDE_LOW,
    Claim,
    ClaimResult,
    ResultsTable,
    cell_run_ids,
    insufficient,
    no_single_winner,
    not_in_campaign,
    speedup_text,
    verdict_for,
)
from analysis.stats import format_number
from analysis.transfer import speedups

STUDY = "Shi et al."

# "One to two orders of magnitude" (Shi et al.): the nearest power of ten is 10 or 100.
TWO_ORDERS_HIGH = 10**2.5


def shi_cpu_scaling_past_cores(t: ResultsTable) -> ClaimResult:
    """Needs runs at several CPU thread counts up to and past the physical cores; not in this campaign."""
    return not_in_campaign("a CPU thread-count sweep past the physical core count")


def shi_gpu_one_to_two_orders_faster(t: ResultsTable) -> ClaimResult:
    """Speedup = mean CPU time / mean GPU time per workload and framework (as DLBench claim 2). Reproduced
    when the median speedup's nearest order of magnitude is 10× or 100× (10**0.5 ≤ median ≤ 10**2.5); not
    reproduced otherwise. Insufficient data without a pair measured on both devices."""
    pairs = [s for s in speedups(t.cells) if s.value is not None]
    if not pairs:
        return insufficient("no workload and framework with successful runs on both CPU and GPU")
    values = sorted(s.value for s in pairs)
    mid = len(values) // 2
    median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    evidence = (f"median speedup {format_number(median)}× over {len(pairs)} pairs: "
                + ", ".join(speedup_text(s) for s in pairs))
    return ClaimResult(verdict_for(ORDER_OF_MAGNITUDE_LOW <= median <= TWO_ORDERS_HIGH), evidence,
                       cell_run_ids(c for s in pairs for c in (s.cpu, s.gpu)))


def shi_no_tool_fastest_everywhere(t: ResultsTable) -> ClaimResult:
    """In every (workload, device) group where at least 2 frameworks have a mean training time, find the
    fastest. Reproduced when no framework is fastest in every group; not reproduced when one is.
    Insufficient data with fewer than 2 such groups."""
    return no_single_winner(t, "training_time_s", lowest=True, unit="s", what="training time")


CLAIMS: list[Claim] = [
    Claim("Shi-1", STUDY, "CPU performance scales poorly past the physical core count.",
          shi_cpu_scaling_past_cores, load_sensitive=True),
    Claim("Shi-2", STUDY, "GPU is one to two orders of magnitude faster than the CPU.",
          shi_gpu_one_to_two_orders_faster, load_sensitive=True, decided_by=("cpu-cnn", "gpu-cnn")),
    Claim("Shi-3", STUDY, "No tool wins everywhere (training speed).",
          shi_no_tool_fastest_everywhere, load_sensitive=True, decided_by=("cpu-cnn",)),
]
