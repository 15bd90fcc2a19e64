"""Data-parallel scaling (analysis/scaling.py): images per ms per rank count of the ranks sweeps' runs, the
speedup over the same group's 1-rank runs and the efficiency, from hand-made run-table rows."""

from __future__ import annotations

import pytest

from analysis.scaling import scale_points
from tests.resultrows import row, scale_row


def test_each_rank_count_is_set_against_its_groups_one_rank_runs():
    rows = [scale_row("pytorch", "lenet-mnist", 1, 2.0), scale_row("pytorch", "lenet-mnist", 1, 4.0, repeat=2),
            scale_row("pytorch", "lenet-mnist", 2, 4.5), scale_row("pytorch", "convnet-cifar10", 2, 1.0),
            scale_row("pytorch", "lenet-mnist", 4, 9.0, device="gpu"),
            scale_row("pytorch", "lenet-mnist", 2, None),  # no throughput: left out
            scale_row("pytorch", "lenet-mnist", 2, 100.0, status="failed"),  # failed: left out
            dict(row("pytorch", "lenet-mnist"), ranks=1, images_per_ms=5.0)]  # not of a ranks sweep: left out
    points = {(p.key["workload"], p.key["device"], p.ranks): p for p in scale_points(rows)}
    assert sorted(points) == [("convnet-cifar10", "cpu", 2), ("lenet-mnist", "cpu", 1), ("lenet-mnist", "cpu", 2),
                              ("lenet-mnist", "gpu", 4)]
    one, two = points["lenet-mnist", "cpu", 1], points["lenet-mnist", "cpu", 2]
    assert (one.images_per_ms, one.speedup, one.efficiency, len(one.runs)) == (3.0, 1.0, 1.0, 2)
    assert (two.images_per_ms, two.speedup, two.efficiency) == (4.5, 1.5, 0.75)
    # Without 1-rank runs in the group there is nothing to set a speedup against.
    assert points["convnet-cifar10", "cpu", 2].speedup is None and points["lenet-mnist", "gpu", 4].efficiency is None
    assert two.label == "lenet-mnist pytorch cpu"


def test_the_sweeps_other_axes_make_groups_of_their_own():
    rows = [scale_row("pytorch", "fcn-r-mnist", n, rate, sweep=f"batch_size={b}, ranks={n}", sweep_batch_size=b)
            for b, n, rate in ((16, 1, 1.0), (16, 2, 1.5), (32, 1, 2.0), (32, 2, 4.0))]
    found = {(p.key["other_sweep"], p.ranks): p.speedup for p in scale_points(rows)}
    assert found == {("batch_size=16", 1): 1.0, ("batch_size=16", 2): pytest.approx(1.5),
                     ("batch_size=32", 1): 1.0, ("batch_size=32", 2): 2.0}


def test_the_run_table_names_how_a_runs_gpus_are_joined() -> None:
    from analysis.runs import interconnect

    def board(uuid: str, links: int | None, gen: int | None = 5) -> dict:
        return {"uuid": uuid, "nvlink_active_links": links, "pcie_generation": gen, "pcie_width": 16}

    def run(used: list[str], devices: list[dict]) -> dict:
        gpus = [{"index": i, "uuid": u, "name": "H100"} for i, u in enumerate(used)]
        device_used = {"requested": "gpu", "gpu": gpus[0], **({"gpus": gpus} if len(gpus) > 1 else {})}
        return {"device_used": device_used, "host": {"gpus": {"devices": devices}}}

    sxm = [board("GPU-a", 18), board("GPU-b", 12), board("GPU-c", 0)]
    assert interconnect(run(["GPU-a", "GPU-b"], sxm)) == "NVLink (12 links)"  # the fewer links bound the pair
    assert interconnect(run(["GPU-a", "GPU-c"], sxm)) == "PCIe gen5 x16"  # one board without NVLink: PCIe
    assert interconnect(run(["GPU-c"], sxm)) == "PCIe gen5 x16"
    assert interconnect(run(["GPU-a"], [board("GPU-a", None)])) is None  # NVML could not tell
    assert interconnect({"device_used": {"requested": "cpu"}, "host": {"gpus": "no GPU: none"}}) is None


def test_runs_planned_for_other_epochs_are_groups_of_their_own():
    # The old group key (the summary's cell keys less the sweep text) forgot the planned epochs.
    rows = [scale_row("pytorch", "fcn-r-mnist", n, rate, epochs_planned=e)
            for e, n, rate in ((1, 1, 1.0), (1, 2, 1.5), (5, 1, 2.0), (5, 2, 4.0))]
    assert sorted(p.speedup for p in scale_points(rows) if p.ranks == 2) == [pytest.approx(1.5), 2.0]
