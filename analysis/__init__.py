"""dlrepro's analysis: a campaign's runs -> tables, figures and the reproduction report.

    python -m analysis --campaign results/<name> --out reports/<name>

Modules: aggregate (the run table and per-cell summaries), stats (mean, std, t-interval),
reference (the published numbers), figures (PNG plots), report (report.md and report.html).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class AnalysisOutputs:
    """What one analysis wrote, and what it could not read."""

    report_md: Path
    report_html: Path
    tables: list[Path]
    figures: list[Path]
    problems: list[str] = field(default_factory=list)


class NoRunsError(Exception):
    """The campaign folder holds no readable run."""


def analyze(campaign_dir: Path | str, out_dir: Path | str) -> AnalysisOutputs:
    """Aggregate a campaign, write its tables, figures and report under out_dir.

    Raises NoRunsError when no run can be read (the message says which folder and why).
    """
    # Imported here so `import analysis` and its error paths stay fast: matplotlib loads only
    # once there is something to draw.
    from analysis.aggregate import load_campaign, summarize, write_tables

    campaign = load_campaign(campaign_dir)
    if not campaign.rows:
        problems = campaign.problems
        detail = f" ({len(problems)} unreadable: {problems[0]})" if problems else ""
        raise NoRunsError(f"no runs found in {campaign_dir}{detail}; run a campaign first (e.g. make demo)")
    from analysis.figures import make_figures
    from analysis.report import ReportContext, write_report

    out = Path(out_dir)
    cells = summarize(campaign.rows)
    tables = write_tables(campaign, cells, out)
    figures = make_figures(campaign, cells, out)
    md, html = write_report(ReportContext(campaign, cells, figures, out))
    return AnalysisOutputs(md, html, tables, [f.path for f in figures], list(campaign.problems))
