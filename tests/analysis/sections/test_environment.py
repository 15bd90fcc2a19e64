"""The report's 'Hardware of the published numbers': the published files of the studies whose workloads the campaign
ran (the run table's study column; each study's reference/SOURCES.md), not DLBench's whatever was run."""

from __future__ import annotations

from pathlib import Path

import studies
from analysis.document import render_markdown
from analysis.reference import campaign_studies
from analysis.sections.environment import hardware_section
from tests.analysis.reading import report_context
from tests.analysis.shiruns import make_shi_run
from tests.runfactory import make_run


def _files(md: str) -> set[str]:
    """The reference files the section's table names (its second column)."""
    return {line.split(" | ")[1] for line in md.splitlines() if line.startswith("| ") and ".csv" in line}


def test_a_shi_campaign_lists_shis_published_files(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "shi-cpu"
    make_shi_run(campaign, "pytorch", 0.5, threads=1)
    md = render_markdown(hardware_section(report_context(campaign, tmp_path / "out")))
    shi = {s.file for s in studies.sources(studies.folder("shi"))}
    assert shi and _files(md) == shi  # shi2016_table7.csv, shi2016_table8.csv: no dlbench.csv
    assert "| shi | shi2016_table7.csv |" in md and "i7-3820" in md


def test_a_dlbench_campaign_lists_dlbenchs(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "demo"
    make_run(campaign, "pytorch", "cnn-mnist", 1)
    md = render_markdown(hardware_section(report_context(campaign, tmp_path / "out")))
    assert _files(md) == {"dlbench.csv", "from_original_repos.csv"} and "one NVIDIA Tesla P4" in md


def test_the_studies_of_a_campaign_come_from_its_runs_in_study_order() -> None:
    rows = [{"study": "shi", "workload": "fcn-r-mnist"}, {"study": "dlbench", "workload": "cnn-mnist"},
            # A run whose spec named no study (an older kit's): its workload's folder says it.
            {"study": None, "workload": "cnn-cifar10-ilkarman"}, {"study": float("nan"), "workload": "cnn-mnist"}]
    assert [f.name for f in campaign_studies(rows)] == [n for n in studies.names() if n in {"dlbench", "shi",
                                                                                            "ilkarman"}]
    assert campaign_studies([{"study": None, "workload": "no-such-workload"}]) == []
