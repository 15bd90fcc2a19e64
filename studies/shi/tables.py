"""Shi et al. (CCBD 2016): its published seconds per mini-batch (Tables 7 and 8), the mapping of its networks and
tools onto the kit's workloads and frameworks, and the kit's measured seconds per mini-batch beside them.

Everything Shi-specific is data in studies/shi/reference: shi2016_table7.csv (per network, tool, CPU thread count
or GPU), shi2016_table8.csv (1, 2 and 4 GPUs), shi2016_networks.csv (Shi's network -> the kit's workload; empty
where the kit has none), shi2016_tools.csv (Shi's tool -> the kit's framework, with why; empty where the kit has
none) and shi2016_machines.csv (the study's machines and their physical cores). The measured side reads only the
run table: iteration_time_mean_s of ok iterations-protocol runs, by workload, framework and thread count.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from analysis import sweeps
from analysis.reference import read_rows

REFERENCE_DIR = Path(__file__).parent / "reference"
TABLE7_CSV = REFERENCE_DIR / "shi2016_table7.csv"
TABLE8_CSV = REFERENCE_DIR / "shi2016_table8.csv"
NETWORKS_CSV = REFERENCE_DIR / "shi2016_networks.csv"
TOOLS_CSV = REFERENCE_DIR / "shi2016_tools.csv"
MACHINES_CSV = REFERENCE_DIR / "shi2016_machines.csv"

# The run table's seconds per measured mini-batch (the iterations protocol: bench/iterations.py).
MEASURED_COLUMN = sweeps.SECONDS_PER_MINIBATCH
# The spec's study key of Shi's workloads (studies/shi/workloads/*.toml; the run table's `study`).
STUDY = "shi"


@dataclass(frozen=True)
class Published:
    """One published cell: seconds per mini-batch of a tool on a network, on one CPU thread count (threads)
    of a machine (hardware), one GPU (Table 7) or several GPUs (Table 8: gpus); seconds None where the paper
    prints no number."""

    network: str
    tool: str
    hardware: str
    threads: int | None
    seconds: float | None
    minibatch: int
    gpus: int | None = None


@dataclass(frozen=True)
class Machine:
    """One of the study's machines (shi2016_machines.csv)."""

    hardware: str
    name: str
    physical_cores: int | None
    threads_tested: str


@dataclass(frozen=True)
class Tool:
    """One of the study's tools and the kit's framework for it (None: not in the kit), with why."""

    tool: str
    framework: str | None
    note: str


def _number(text: str, kind: type) -> Any:
    return kind(text) if text else None


@cache
def table7() -> tuple[Published, ...]:
    """Every row of Table 7 (CPU rows have threads; GPU rows have none)."""
    return tuple(Published(r["network"], r["tool"], r["hardware"], _number(r["threads"], int),
                           _number(r["seconds_per_minibatch"], float), int(r["minibatch"]))
                 for r in read_rows(TABLE7_CSV))


@cache
def table8() -> tuple[Published, ...]:
    """Every row of Table 8: seconds per mini-batch on 1, 2 and 4 GPUs (data-parallel synchronous SGD)."""
    return tuple(Published(r["network"], r["tool"], "multi-GPU", None, _number(r["seconds_per_minibatch"], float),
                           int(r["minibatch"]), gpus=int(r["gpus"]))
                 for r in read_rows(TABLE8_CSV))


@cache
def networks() -> dict[str, str | None]:
    """Shi's networks in the paper's order -> the kit's workload (None where the kit has none)."""
    return {r["network"]: r["workload"] or None for r in read_rows(NETWORKS_CSV)}


def network_of(workload: str) -> str | None:
    """Shi's name for a kit workload (None: not one of Shi's networks)."""
    return next((n for n, w in networks().items() if w == workload), None)


@cache
def tools() -> tuple[Tool, ...]:
    """Shi's tools in the paper's order, each with the kit's framework (None where the kit has none)."""
    return tuple(Tool(r["tool"], r["framework"] or None, r["note"]) for r in read_rows(TOOLS_CSV))


@cache
def machines() -> dict[str, Machine]:
    """The study's machines by Table 7's hardware name."""
    return {r["hardware"]: Machine(r["hardware"], r["name"], _number(r["physical_cores"], int), r["threads_tested"])
            for r in read_rows(MACHINES_CSV)}


def cpu_hardware() -> list[str]:
    """Table 7's CPU machines, in the table's order."""
    return list(dict.fromkeys(p.hardware for p in table7() if p.threads is not None))


def gpu_hardware() -> list[str]:
    """Table 7's GPUs, in the table's order."""
    return list(dict.fromkeys(p.hardware for p in table7() if p.threads is None))


def published_cpu(network: str, tool: str, hardware: str) -> dict[int, float | None]:
    """{threads: seconds per mini-batch} of one tool on one network and CPU machine (None: not printed)."""
    return {p.threads: p.seconds for p in table7()
            if (p.network, p.tool, p.hardware) == (network, tool, hardware) and p.threads is not None}


def published_minibatch(network: str, gpu: bool = False) -> int | None:
    """Table 7's mini-batch size of a network on CPU (or GPU: the LSTM's differs)."""
    return next((p.minibatch for p in table7() if p.network == network and (p.threads is None) == gpu), None)


def ratio_to_one_thread(times: dict[int, float | None]) -> dict[int, float | None]:
    """{threads: time / the 1-thread time} (None where either is missing)."""
    one = times.get(1)
    return {n: (t / one if t is not None and one else None) for n, t in times.items()}


# --- The measured side -------------------------------------------------------------------------

# A measured series: the kit's seconds per mini-batch of one workload and framework on one device, by thread
# count, over ok iterations-protocol runs of one context (era, runner, profile, data, batch size and the
# sweep's other axes): analysis/sweeps.py, the grouping Shi's claims use too.
MeasuredSeries = sweeps.Series


def measured_series(rows: Iterable[dict[str, Any]]) -> list[MeasuredSeries]:
    """The measured series of Shi's workloads (those shi2016_networks.csv maps) in the run table's rows, in
    (workload, framework, device, context) order; epoch-protocol runs are left out."""
    return [s for s in sweeps.series(rows) if network_of(s.workload) is not None]


def shi_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of runs of Shi's workloads: the spec's study is 'shi', or shi2016_networks.csv maps the workload."""
    return [r for r in rows if r.get("study") == STUDY or network_of(r["workload"]) is not None]
