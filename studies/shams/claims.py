"""Shams et al.'s claims (other-studies.md; reference/shams2017.csv): GPUs far faster than the CPU on AlexNet, and
data-parallel scale-up over the GPUs of a node. Its interconnect findings (NVLink against PCIe, several nodes) need
machines the kit does not run on: findings.toml says so."""

from __future__ import annotations

from analysis.claims import Claim, ClaimResult, ResultsTable, not_in_campaign, verdict_for
from analysis.scaling import ScalePoint, scale_points
from analysis.stats import format_number
from analysis.sweeps import Series, finite, series

STUDY = "Shams et al."
# The AlexNet the study times (Caffe's bvlc_alexnet at mini-batch 256: workloads/alexnet-shams-synthetic.toml).
ALEXNET = "alexnet-shams-synthetic"
# "Far faster": every GPU at least an order of magnitude (10×) faster per sample than the CPU. The published
# speed-ups are 32× (K20X), 162× (P100 PCIe) and 345× (P100 NVLink); 10× leaves room for a kit whose quick profile
# runs mini-batches too small to fill a GPU.
FAR_FASTER = 10.0


def _alexnet_series(t: ResultsTable) -> dict[tuple, dict[str, list[Series]]]:
    """The AlexNet's series timed per mini-batch outside any sweep, by (framework, era, profile, data) and device
    class; each machine (runner) a series of its own."""
    out: dict[tuple, dict[str, list[Series]]] = {}
    for s in series(t.ok_rows):
        if s.workload == ALEXNET and not s.others and finite(s.context["batch_size"]):
            key = (s.framework, *(str(s.context[k]) for k in ("era", "profile", "data_source")))
            out.setdefault(key, {}).setdefault(s.device, []).append(s)
    return out


def _per_sample(s: Series) -> float:
    return min(s.seconds.values()) / float(s.context["batch_size"])


def shams_gpu_far_faster_than_cpu(t: ResultsTable) -> ClaimResult:
    """AlexNet (alexnet-shams-synthetic, make shams-cpu and shams-gpu) timed per mini-batch outside any sweep: for
    each framework, every pair of a CPU and a GPU (each machine's runs one side), the speed-up = CPU seconds per
    sample / GPU seconds per sample (seconds per mini-batch over the batch size, so a device's own batch size does
    not count). Reproduced when every pair's speed-up is at least 10× (an order of magnitude); not reproduced
    otherwise. Insufficient data without a framework timed on both devices. Basis: Table IV per issue 30
    (reference/shams2017.csv; the study notes give no table number): Caffe's AlexNet at mini-batch 256 takes
    51.76 s per mini-batch on the Xeon E5-2680 v2 against 1.61 s on a K20X, 0.32 s on a P100 over PCIe and 0.15 s
    over NVLink (32× to 345×); 10× is a conservative bound below the smallest of them."""
    parts, ids, holds = [], [], True
    for (fw, *_), by_device in sorted(_alexnet_series(t).items()):
        for cpu in by_device.get("cpu", []):
            for gpu in by_device.get("gpu", []):
                speedup = _per_sample(cpu) / _per_sample(gpu)
                holds &= speedup >= FAR_FASTER
                ids += [r["run_id"] for s in (cpu, gpu) for r in s.rows]
                parts.append(f"{fw}: cpu [{cpu.context['runner']}] {format_number(min(cpu.seconds.values()), 4)} s "
                             f"per batch of {cpu.context['batch_size']}, gpu [{gpu.context['runner']}] "
                             f"{format_number(min(gpu.seconds.values()), 4)} s per batch of "
                             f"{gpu.context['batch_size']}: {format_number(speedup)}×")
    if not parts:
        return not_in_campaign(f"{ALEXNET} timed per mini-batch on a CPU and on a GPU (make shams-cpu and shams-gpu)")
    return ClaimResult(verdict_for(holds), "; ".join(parts) + f" (per sample; reproduced when every pair is at "
                       f"least {FAR_FASTER:g}×)", tuple(dict.fromkeys(ids)))


def shams_scale_up_raises_throughput(t: ResultsTable) -> ClaimResult:
    """GPU runs of a ranks sweep (make shams-scaleup-gpu: 1, 2 and 4 data-parallel ranks in one node, one GPU each,
    each rank at the workload's batch), grouped by workload, framework and context (analysis.scaling): the
    throughput in images per ms at the most ranks over the 1-rank throughput. Reproduced when every group's speed-up
    at its most ranks is above 1; not reproduced otherwise. Insufficient data without a GPU group timed at 1 rank and
    more. Basis: the study notes, "Scale-up: 1-4 GPUs in one node, batch 256-1024 (AlexNet), 128 (GoogLeNet,
    VGG-19)", and their scale-out "throughput in images per millisecond"; the kit has none of the paper's scale-up
    numbers (SOURCES.md), so the published table cannot feed it."""
    points = [p for p in scale_points(t.rows) if p.key["device"] == "gpu" and p.speedup is not None and p.ranks > 1]
    most: dict[tuple, ScalePoint] = {}
    for p in points:
        key = tuple(sorted(p.key.items()))
        if key not in most or p.ranks > most[key].ranks:
            most[key] = p
    if not most:
        return not_in_campaign("GPU runs of a ranks sweep at 1 rank and more (make shams-scaleup-gpu)")
    tops = list(most.values())
    return ClaimResult(verdict_for(all(p.speedup > 1 for p in tops)),
                       "; ".join(f"{p.label} {p.ranks} ranks: {format_number(p.speedup)}× the 1-rank throughput "
                                 f"({format_number(p.images_per_ms, 4)} images/ms)" for p in tops)
                       + " (reproduced when above 1× in every group)",
                       tuple(r["run_id"] for p in points for r in p.runs))


CLAIMS: list[Claim] = [
    Claim("Shams-2", STUDY, "GPUs are far faster than the CPU for AlexNet (at least 10× per sample).",
          shams_gpu_far_faster_than_cpu, load_sensitive=True, decided_by=("shams-cpu", "shams-gpu")),
    Claim("Shams-3", STUDY, "Data-parallel training over more GPUs of a node raises the throughput.",
          shams_scale_up_raises_throughput, load_sensitive=True, decided_by=("shams-scaleup-gpu",),
          unfed="the study notes print no scale-up number (the multi-GPU values of Tables IV and V are not "
                "transcribed: reference/SOURCES.md)"),
]
