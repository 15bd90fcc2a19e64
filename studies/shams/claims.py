"""Shams et al.'s claim (other-studies.md): multi-GPU and multi-node scaling depend on the interconnect."""

from __future__ import annotations

from analysis.claims import Claim, ClaimResult, ResultsTable, insufficient, not_in_campaign
from analysis.scaling import scale_points
from analysis.stats import format_number

STUDY = "Shams et al."
# What a verdict needs that the kit's campaigns lack: the same scale-up over both interconnects, and several nodes.
LACKS = "GPUs joined by NVLink and GPUs joined by PCIe, and several nodes (the kit trains on one machine)"


def _interconnects(points: list) -> str:
    """The interconnects the scale points' GPU runs recorded (the run table's gpu_interconnect), in words."""
    kinds = sorted({r["gpu_interconnect"] for p in points if p.key["device"] == "gpu" for r in p.runs
                    if isinstance(r.get("gpu_interconnect"), str) and r["gpu_interconnect"]})
    return ", ".join(kinds) if kinds else "not recorded"


def shams_multi_gpu_scaling(t: ResultsTable) -> ClaimResult:
    """Needs the scale-up (make shams-scaleup-gpu: 1, 2 and 4 data-parallel ranks, one GPU each) on machines whose
    GPUs are joined by NVLink and by PCIe, and runs on several nodes; the kit trains on one machine (each run
    records its GPUs' interconnect, bench.gpu.links), so this is insufficient data (not in this campaign). Where
    the campaign holds runs of a ranks sweep, the evidence gives what they showed: per workload, framework and
    device, the speedup of each rank count over one rank in images per ms and the efficiency (speedup / ranks),
    and the interconnect the GPU runs recorded."""
    points = [p for p in scale_points(t.rows) if p.ranks > 1 and p.speedup is not None]
    if not points:
        return not_in_campaign("data-parallel runs on 1-4 GPUs in one node (make shams-scaleup-gpu) on "
                               f"{LACKS}")
    devices = {p.key["device"] for p in points}
    shown = "; ".join(f"{p.label} {p.ranks} ranks: {format_number(p.speedup)}x "
                      f"(efficiency {format_number(p.efficiency)}, {format_number(p.images_per_ms, 4)} images/ms)"
                      for p in points)
    on = ("CPU ranks only (processes sharing one CPU)" if devices == {"cpu"}
          else f"one machine's GPUs (interconnect: {_interconnects(points)})")
    return insufficient(f"the campaign's scale-up over {on}, speedup over 1 rank: {shown}. A verdict needs the "
                        f"same runs on {LACKS}, which this campaign lacks",
                        [r["run_id"] for p in scale_points(t.rows) for r in p.runs])


CLAIMS: list[Claim] = [
    Claim("Shams-1", STUDY, "Multi-GPU and multi-node scaling depend on the interconnect (NVLink vs PCIe).",
          shams_multi_gpu_scaling, load_sensitive=True),
]
