"""Shams et al.'s published numbers as run-table rows (analysis/published.py), so that its claims' checks read them
as they read a make shams-cpu / shams-gpu campaign.

reference/shams2017.csv holds Caffe's AlexNet (mini-batch 256) seconds per mini-batch on a CPU, three GPUs and a KNL
(the five numbers the study notes print). Each CPU or GPU row becomes an iterations-protocol row of the kit's
alexnet-shams-synthetic workload: iteration_time_mean_s the published seconds, batch_size the mini-batch, the
framework the tool lower-cased (caffe), and the machine in the runner ("published NVIDIA P100 PCIe"), which the
comparison groups key on (each GPU its own series). The KNL row is left out: the kit runs no Xeon Phi, so no check
reads it (SOURCES.md says so).
"""

from __future__ import annotations

from typing import Any

import studies
from analysis.published import PUBLISHED, published_row, row_rule
from analysis.reference import read_rows

CSV = "shams2017.csv"
# The paper's network names -> the kit's workload (studies/shams/workloads).
WORKLOADS = {"AlexNet": "alexnet-shams-synthetic"}
# The devices of the file the kit runs.
KIT_DEVICES = ("cpu", "gpu")


# The row no check reads (analysis/sections/not_reproduced.py lists it).
ROW_RULES = (row_rule(CSV, reason="the kit runs no Xeon Phi (KNL)", device="knl"),)


def rows() -> list[dict[str, str]]:
    """shams2017.csv's rows as read."""
    return read_rows(studies.reference_file(CSV))


def runs() -> list[dict[str, Any]]:
    """The published CPU and GPU times as run-table rows, one per number."""
    out = []
    for r in rows():
        if r["device"] not in KIT_DEVICES or r["network"] not in WORKLOADS:
            continue
        out.append(published_row(f"shams2017:{r['network']}:{r['framework']}:{r['hardware']}",
                                 r["framework"].lower(), WORKLOADS[r["network"]], r["device"],
                                 runner=f"{PUBLISHED} {r['hardware']}", batch_size=int(r["batch_size"]),
                                 iteration_time_mean_s=float(r["seconds_per_batch"])))
    return out
