"""Shams et al.'s claim (studies/shams/claims.py): insufficient data without NVLink vs PCIe GPUs and several
nodes, whose evidence gives the scaling the campaign's ranks sweeps did show."""

from __future__ import annotations

from analysis.claims import INSUFFICIENT
from studies.shams import claims as shams
from tests.resultrows import scale_row
from tests.studies.claimcheck import assert_not_in_campaign, check


def test_multi_gpu_scaling_is_not_in_this_campaign() -> None:
    assert_not_in_campaign(shams.shams_multi_gpu_scaling)


def test_the_evidence_gives_the_scaling_the_runs_showed_and_what_the_campaign_lacks() -> None:
    rows = [scale_row("pytorch", "lenet-mnist", 1, 2.0), scale_row("pytorch", "lenet-mnist", 2, 3.0)]
    res = check(shams.shams_multi_gpu_scaling, rows)
    assert res.verdict == INSUFFICIENT
    assert "CPU ranks only" in res.evidence
    assert "lenet-mnist pytorch cpu 2 ranks: 1.50x (efficiency 0.750, 3.000 images/ms)" in res.evidence
    assert "NVLink" in res.evidence and "PCIe" in res.evidence and "several nodes" in res.evidence
    assert set(res.run_ids) == {r["run_id"] for r in rows}
    gpu = check(shams.shams_multi_gpu_scaling, [scale_row("pytorch", "alexnet-shams-synthetic", n, rate, device="gpu")
                                                for n, rate in ((1, 1.0), (4, 3.6))])
    assert "one machine's GPUs (interconnect: not recorded)" in gpu.evidence
    assert "4 ranks: 3.60x (efficiency 0.900" in gpu.evidence
    nvlink = check(shams.shams_multi_gpu_scaling, [
        scale_row("pytorch", "alexnet-shams-synthetic", n, rate, device="gpu", gpu_interconnect=link)
        for n, rate, link in ((1, 1.0, "NVLink (18 links)"), (2, 1.9, "NVLink (18 links)"),
                              (4, 3.6, "NVLink (12 links)"))])
    assert nvlink.verdict == INSUFFICIENT  # one kind of interconnect, one node
    assert "one machine's GPUs (interconnect: NVLink (12 links), NVLink (18 links))" in nvlink.evidence
