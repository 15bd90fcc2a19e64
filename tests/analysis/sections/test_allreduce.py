"""The report's all-reduce table: per size, the median of the runs' medians (each repetition the slowest rank's
time, recomputed from collective.csv) and nccl-tests' bus bandwidth of it; nothing for campaigns without one."""

from __future__ import annotations

from pathlib import Path

from analysis.document import render_markdown
from analysis.sections.allreduce import HEADING, allreduce_section
from analysis.sections.datasets import datasets_section
from analysis.sections.overview import header_section
from bench import schema
from tests.analysis.reading import report_context
from tests.analysis.sections.test_claims import _demo_like
from tests.collectiveruns import make_collective_run, planned_request, stand_in_time


def _md(campaign: Path, tmp_path: Path) -> str:
    return render_markdown(allreduce_section(report_context(campaign, tmp_path / "out")))


def test_each_size_shows_the_median_seconds_and_bus_bandwidth_from_the_raw_file(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "shams-allreduce-cpu"
    for repeat in (1, 2):
        make_collective_run(campaign, planned_request(sizes=[1000, 1_000_000], repeat=repeat))
    md = _md(campaign, tmp_path)
    assert md.startswith(f"## {HEADING}")
    rows = [line.split(" | ") for line in md.splitlines() if line.startswith("| pytorch |")]
    # framework, device, backend, ranks, floats, MB, runs, median s, busbw GB/s, run folders
    assert [r[1:7] for r in rows] == [["cpu", "standin", "2", "1,000", "0.004000", "2"],
                                      ["cpu", "standin", "2", "1,000,000", "4.000", "2"]]
    for row, floats in zip(rows, (1000, 1_000_000), strict=True):
        seconds = stand_in_time(floats, 2, 1)  # the median repetition, its slower rank
        assert float(row[7]) == float(f"{seconds:.4g}")
        assert float(row[8]) == float(f"{floats * 4 / seconds / 1e9:.4g}")


def test_the_table_reads_the_raw_file_not_run_json(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "shams-allreduce-cpu"
    folder = make_collective_run(campaign, planned_request(sizes=[1000]))
    (folder / schema.COLLECTIVE_FILE).write_text("floats,phase\n")
    md = _md(campaign, tmp_path)
    assert "| pytorch |" not in md and "Left out (collective.csv unreadable)" in md


def test_campaigns_without_a_collective_run_have_no_such_table(tmp_path: Path) -> None:
    _demo_like(tmp_path / "results" / "demo")
    assert _md(tmp_path / "results" / "demo", tmp_path).strip() == ""


def test_the_header_calls_a_collective_run_neither_generated_nor_unrecorded_data(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "shams-allreduce-cpu"
    make_collective_run(campaign, planned_request(sizes=[1000]))
    ctx = report_context(campaign, tmp_path / "out")
    assert ctx.campaign.rows[0]["data_source"] == "none"
    md = render_markdown(header_section(ctx))
    assert "random inputs generated" not in md and "do not record whether their data" not in md


def test_the_datasets_table_has_no_row_for_a_run_that_read_no_data(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "shams-allreduce-cpu"
    make_collective_run(campaign, planned_request(sizes=[1000]))
    md = render_markdown(datasets_section(report_context(campaign, tmp_path / "out")))
    assert "| none |" not in md and "an older run" not in md
