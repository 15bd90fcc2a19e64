"""Contention: runs whose training shared the machine, or their GPU, with other processes.

The monitor records each second the CPU used by processes outside a run's process tree and, on a
GPU, the processes on the run's GPU that are not the run (bench.monitor states the rules);
bench.schema.other_load sums them over the training window into the run table's other_cpu_* and
gpu_other_procs_max columns. A run above the thresholds below is contended: its training time, and
its CPU utilization (system-wide by DLBench's definition), absorbed load that was not the run's.
Runs whose monitor predates these columns are "not recorded", never assumed quiet.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from analysis.reference import device_env

# Other processes' CPU during training above this share of the machine's capacity (all its cores
# over the training window) marks a run contended. An otherwise idle host's daemons take 1-3 % of
# it; one busy process on the kit's 2-core CI machine takes 50 %, and there it stretched a ~10 s
# PyTorch lstm-imdb epoch to 203 s. 10 % stays clear of the first and well below the second.
CONTENDED_CPU_SHARE_PCT = 10.0
# Or above this mean in percent of one core, whatever the core count: a run uses every usable core
# by default (THREADS), and each parallel step waits for the thread whose core it shares, so half a
# core taken on a 64-core host (0.8 % of its capacity) can slow the run as a core taken on 2 does.
CONTENDED_CPU_MEAN_PCT = 50.0
# Any process besides the run on a GPU run's GPU: it shares the SMs and memory the timing measures.
CONTENDED_GPU_PROCS = 1

NOT_RECORDED = "not recorded"


@dataclass(frozen=True)
class Contention:
    """One run's contention figures and, when contended, why (empty when it was not)."""

    row: dict[str, Any]
    reasons: tuple[str, ...]

    @property
    def contended(self) -> bool:
        """Whether any threshold was crossed."""
        return bool(self.reasons)


def is_gpu_run(row: dict[str, Any]) -> bool:
    """Whether the run trained on a GPU (only then do other processes on the GPU count)."""
    return device_env(str(row.get("device") or "")) == "gpu"


def recorded(row: dict[str, Any]) -> bool:
    """Whether the run's monitor recorded other processes' CPU over its training window."""
    return row.get("other_cpu_share_pct") is not None


def assess(row: dict[str, Any]) -> Contention | None:
    """The run's contention, or None when it was not recorded."""
    if not recorded(row):
        return None
    reasons = []
    share, mean = row["other_cpu_share_pct"], row.get("other_cpu_mean_pct")
    if share > CONTENDED_CPU_SHARE_PCT:
        reasons.append(f"other CPU {share:.1f} % of the machine > {CONTENDED_CPU_SHARE_PCT:g} %")
    elif mean is not None and mean > CONTENDED_CPU_MEAN_PCT:
        reasons.append(f"other CPU {mean:.0f} % of a core > {CONTENDED_CPU_MEAN_PCT:g} %")
    gpu = row.get("gpu_other_procs_max")
    if is_gpu_run(row) and gpu is not None and gpu >= CONTENDED_GPU_PROCS:
        reasons.append(f"{gpu} other process{'es' if gpu > 1 else ''} on its GPU")
    return Contention(row, tuple(reasons))


def contended_runs(rows: Iterable[dict[str, Any]]) -> list[Contention]:
    """The contended runs among rows, in the rows' order."""
    out = []
    for row in rows:
        c = assess(row)
        if c is not None and c.contended:
            out.append(c)
    return out


def touched(run_ids: Sequence[str], contended_ids: set[str]) -> list[str]:
    """The contended runs among the runs a verdict used, each once, in the verdict's order."""
    return [i for i in dict.fromkeys(run_ids) if i in contended_ids]
