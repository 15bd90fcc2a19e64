"""The reproduction report: report.md and a self-contained report.html from one document model.

The report is built once as a list of blocks (analysis.document) and rendered twice. sections() is the
one list of the report's sections in reading order; each section is a builder in analysis.sections
(one module per topic), or a study's own (its folder's section.py: studies.sections(), in study order).
Links to run directories are relative to the report, so the reports/ and results/ folders can move together.
"""

from __future__ import annotations

from pathlib import Path

import studies
from analysis.context import ReportContext
from analysis.document import Block, render_html, render_markdown
from analysis.sections import Section
from analysis.sections.allreduce import allreduce_section
from analysis.sections.claims import claim_tests_section, claims_section
from analysis.sections.comparison import comparison_section
from analysis.sections.contention import contention_section
from analysis.sections.datasets import datasets_section
from analysis.sections.departures import departures_section
from analysis.sections.environment import environment_section, hardware_section, settings_section
from analysis.sections.eras import era_comparison_section
from analysis.sections.minibatches import minibatches_section
from analysis.sections.not_reproduced import not_reproduced_section
from analysis.sections.outputs import figures_section, files_section
from analysis.sections.overview import header_section, overview_section, problems_section
from analysis.sections.scaling import scaling_section
from analysis.sections.scoreboard import scoreboard_section
from analysis.sections.statistics import statistics_section
from analysis.sections.transfer import transfer_section
from bench import atomic

__all__ = ["ReportContext", "build_report", "render_html", "render_markdown", "sections", "write_report"]

# The report's sections in reading order. The first screen answers "how far is each framework from the
# paper on each workload": the header (title and the synthetic-data banner), then the scoreboard figure
# and table; then the claims this campaign decides and the list of those it cannot, ahead of the
# detailed tables they rest on, then the runs whose timings absorbed other load. The studies' own sections
# (Wu et al.'s tables, Shi et al.'s seconds per mini-batch, ilkarman's times: each only for campaigns with runs
# of its workloads, in study order) and the paper-era vs current-era table follow the comparison with the
# published numbers, each claim's exact test follows the statistics, and the departures from the paper's setup
# follow the environment.
BEFORE_STUDIES: tuple[Section, ...] = (
    header_section,
    scoreboard_section,
    claims_section,
    contention_section,
    problems_section,
    overview_section,
    comparison_section,
)
AFTER_STUDIES: tuple[Section, ...] = (
    minibatches_section,
    allreduce_section,
    scaling_section,
    era_comparison_section,
    transfer_section,
    statistics_section,
    claim_tests_section,
    settings_section,
    datasets_section,
    environment_section,
    departures_section,
    hardware_section,
    figures_section,
    not_reproduced_section,
    files_section,
)


def sections() -> tuple[Section, ...]:
    """The report's sections in reading order: the shared ones with every discovered study's own among them."""
    return (*BEFORE_STUDIES, *studies.sections(), *AFTER_STUDIES)


def build_report(ctx: ReportContext) -> list[Block]:
    """The whole report as blocks: every section of sections(), in that order."""
    return [block for section in sections() for block in section(ctx)]


def write_report(ctx: ReportContext) -> tuple[Path, Path]:
    """Write report.md and report.html under ctx.out_dir (atomically); return their paths."""
    blocks = build_report(ctx)
    md_path, html_path = ctx.out_dir / "report.md", ctx.out_dir / "report.html"
    atomic.write_text(md_path, render_markdown(blocks))
    atomic.write_text(html_path, render_html(blocks, f"Reproduction report: {ctx.campaign.name}"))
    return md_path, html_path
