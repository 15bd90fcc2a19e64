"""The report's data-parallel scaling table (analysis/sections/scaling.py): a row per group and rank count with
images per ms, the speedup over 1 rank and the efficiency; nothing for a campaign without a ranks sweep."""

from __future__ import annotations

from pathlib import Path

from analysis.context import ReportContext
from analysis.document import render_markdown
from analysis.runs import Campaign, run_frame
from analysis.sections.scaling import HEADING, scaling_section
from analysis.summary import summarize
from tests.resultrows import row, scale_row


def _md(rows: list[dict], tmp_path: Path) -> str:
    frame = run_frame(rows)
    return render_markdown(scaling_section(ReportContext(Campaign(tmp_path, frame, {}), summarize(frame), [],
                                                         tmp_path / "out")))


def test_each_rank_count_has_its_throughput_speedup_and_efficiency(tmp_path):
    md = _md([scale_row("pytorch", "lenet-mnist", 1, 2.0), scale_row("pytorch", "lenet-mnist", 2, 3.0)], tmp_path)
    assert md.startswith(f"## {HEADING}") and "processes sharing its cores" in md
    lines = [line.split(" | ") for line in md.splitlines() if line.startswith("| lenet-mnist |")]
    # workload, framework, device, ranks, batch per rank, runs, mean s per step, images/ms, speedup, efficiency
    assert [cells[1:10] for cells in lines] == [
        ["pytorch", "cpu", "1", "64", "1", "0.03200", "2.000", "1.00", "1.00"],
        ["pytorch", "cpu", "2", "64", "1", "0.04267", "3.000", "1.50", "0.750"]]


def test_gpu_ranks_say_the_interconnect_is_not_recorded(tmp_path):
    md = _md([scale_row("pytorch", "vgg19-synthetic", n, rate, device="gpu") for n, rate in ((1, 1.0), (4, 3.2))],
             tmp_path)
    assert "NVLink or PCIe" in md and "do not record" in md


def test_a_campaign_without_a_ranks_sweep_has_no_such_table(tmp_path):
    assert _md([row("pytorch", "lenet-mnist")], tmp_path).strip() == ""
