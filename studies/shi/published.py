"""Shi et al.'s published seconds per mini-batch as run-table rows (analysis/published.py), so that its claims' checks
read Table 7 and Table 8 as they read a make shi-cpu / shi-gpu / shi-multigpu campaign.

Every number comes from studies/shi/reference through studies.shi.tables (shi2016_table7.csv, shi2016_table8.csv, with
shi2016_networks.csv for the kit's workload names and shi2016_machines.csv for the CPUs' physical cores); nothing is
copied here. Rows follow the iterations protocol: iteration_time_mean_s is the table's seconds per mini-batch,
batch_size its mini-batch. A CPU row is a point of a thread sweep (threads, sweep_threads, sweep text) on a host of
its machine's physical cores; a GPU row is device "gpu"; a Table 8 row is a point of a ranks sweep (sweep_ranks).
Cells the paper prints no number for are left out.

The study's machines (two CPUs, three GPUs, a multi-GPU server) are told apart by the row's runner ("published
cpu_i7-3820", "published gpu_GTX980", ...): the run table's series and comparison groups (analysis/sweeps.py) key on
the runner but take every GPU name as one device class, so without it the three GPUs' numbers would be averaged into
one series, and the two CPUs' thread sweeps merged.

Tools: the kit's framework where it is the same tool (TF -> tensorflow, MXNet -> mxnet: shi2016_tools.csv with no
note), else Shi's tool name lower-cased (caffe, cntk, torch: the study ran Lua Torch 7, not PyTorch).
"""

from __future__ import annotations

from typing import Any

from analysis.published import PUBLISHED, published_row
from studies.shi import tables

MULTI_GPU = "multi-GPU"


def framework(tool: str) -> str:
    """The run table's framework for one of Shi's tools: the kit's where it is the same tool, else the tool's name
    lower-cased (Torch is Lua Torch 7, which the kit's PyTorch only stands in for)."""
    found = next((t for t in tables.tools() if t.tool == tool), None)
    return found.framework if found and found.framework and not found.note else tool.lower()


def runner(hardware: str) -> str:
    """The runner of a published row: the study's machine (Table 7's hardware name, or Table 8's multi-GPU server)."""
    return f"{PUBLISHED} {hardware}"


def _table7_row(p: tables.Published, workload: str) -> dict[str, Any]:
    values: dict[str, Any] = {"runner": runner(p.hardware), "iteration_time_mean_s": p.seconds,
                              "batch_size": p.minibatch}
    device = "gpu"
    if p.threads is not None:
        device = "cpu"
        values.update(threads=p.threads, sweep_threads=p.threads, sweep=f"threads={p.threads}",
                      physical_cores=tables.machines()[p.hardware].physical_cores)
    point = p.hardware if p.threads is None else f"{p.hardware}:{p.threads}"
    return published_row(f"shi2016-table7:{p.network}:{p.tool}:{point}", framework(p.tool), workload, device,
                         **values)


def _table8_row(p: tables.Published, workload: str) -> dict[str, Any]:
    # Table 8's mini-batch is the whole step's, split between the GPUs (shi-multigpu's split_batch).
    return published_row(f"shi2016-table8:{p.network}:{p.tool}:{p.gpus}", framework(p.tool), workload, "gpu",
                         runner=runner(MULTI_GPU), iteration_time_mean_s=p.seconds, batch_size=p.minibatch,
                         ranks=p.gpus, sweep_ranks=p.gpus, sweep=f"ranks={p.gpus}",
                         images_per_ms=p.minibatch / (p.seconds * 1000))


def runs() -> list[dict[str, Any]]:
    """Tables 7 and 8 as run-table rows, one per printed cell of a network the kit has a workload for."""
    out = []
    for p in tables.table7():
        workload = tables.networks().get(p.network)
        if workload and p.seconds is not None:
            out.append(_table7_row(p, workload))
    for p in tables.table8():
        workload = tables.networks().get(p.network)
        if workload and p.seconds is not None:
            out.append(_table8_row(p, workload))
    return out
