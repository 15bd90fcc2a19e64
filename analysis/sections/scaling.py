"""Data-parallel scaling of the ranks sweeps (Shams et al.'s scale-up; bench/dataparallel.py): images per
millisecond per rank count, the speedup over one rank and the efficiency, from analysis.scaling."""

from __future__ import annotations

from analysis.context import ReportContext
from analysis.document import Block, Heading, Inline, Para, Table
from analysis.scaling import ScalePoint, scale_points
from analysis.stats import format_number

HEADING = "Data-parallel scaling (ranks sweeps)"
# Shown beside the group's other keys only where they vary.
_OPTIONAL = ("era", "runner", "profile", "data_source", "other_sweep")


def _batches(point: ScalePoint) -> str:
    """The batch size of each rank in the point's runs (the spec's: a rank's mini-batch)."""
    sizes = sorted({int(r["batch_size"]) for r in point.runs if r.get("batch_size") is not None})
    return ", ".join(map(str, sizes)) or "—"


def _row(ctx: ReportContext, point: ScalePoint, shown: list[str]) -> list[Inline]:
    seconds = [float(r["iteration_time_mean_s"]) for r in point.runs if r.get("iteration_time_mean_s") is not None]
    return [*(str(point.key[k]) for k in shown), str(point.ranks), _batches(point), str(len(point.runs)),
            format_number(sum(seconds) / len(seconds), 4) if seconds else "—", format_number(point.images_per_ms, 4),
            format_number(point.speedup), format_number(point.efficiency), ctx.run_links(point.runs)]


def scaling_section(ctx: ReportContext) -> list[Block]:
    """One row per group (workload, framework, device, ...) and rank count: the mean over the runs of the
    seconds per step (the slowest rank's) and of images per ms, the speedup over the group's 1-rank runs and the
    efficiency (speedup / ranks). Nothing when the campaign has no run of a ranks sweep."""
    points = scale_points(ctx.campaign.rows)
    if not points:
        return []
    shown = ["workload", "framework", "device"] + [k for k in _OPTIONAL if len({p.key[k] for p in points}) > 1]
    gpus = [p for p in points if p.key["device"] == "gpu" and p.ranks > 1]
    where = ("GPU runs give each rank its own GPU (NCCL); which interconnect joined them (NVLink or PCIe) the "
             "runs do not record." if gpus else
             "These runs are on the CPU: the ranks are processes sharing its cores (Gloo over loopback), each with "
             "its share of the run's threads, so they show the cost of averaging gradients, not a GPU scale-up.")
    return [Heading(2, HEADING),
            Para("Each run trains over `ranks` data-parallel workers on one machine (bench/dataparallel.py), every "
                 "rank on its own shard of the training rows at the batch shown (Shams et al.: the batch per worker; a "
                 "step trains ranks x batch images, gradients averaged over the ranks). A step's time is the slowest "
                 "rank's, after a barrier (iterations.csv; each rank's own in ranks/ of the run folder). images/ms: "
                 "ranks x batch / mean step seconds, Shams et al.'s unit; speedup: against the same group's 1-rank "
                 "runs; efficiency: speedup / ranks (1 = linear scaling). " + where),
            Table([*shown, "ranks", "batch per rank", "runs", "mean s per step", "images/ms", "speedup",
                   "efficiency", "run folders"], [_row(ctx, p, shown) for p in points])]
