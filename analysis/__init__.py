"""dlrepro's analysis: a campaign's runs -> tables, figures and the reproduction report.

    python -m analysis --campaign results/<name> [--campaign results/<other>] --out reports/<name>

Modules: aggregate (the run table and per-cell summaries), stats (intervals and tests),
reference (the published numbers), transfer (orders, ratios, speedups, accuracy tolerance), eras
(paper-era vs current-era pairs, which Python paper-era runs ran on), departures (where the kit's
paper-era setup departs from the paper, as data),
significance (Wilcoxon, Pearson, bootstrap over a campaign), claims (the machinery that tests a
claim: results table, verdicts, shared checks), studies (one module per study holding its claims;
studies.CLAIMS is all of them in report order), figures (PNG plots), document (the report's blocks
and renderers), context (what a report is built from), sections (one module per report topic, each
section a builder ctx -> blocks), report (SECTIONS, the sections in reading order; report.md and
report.html).
"""

from __future__ import annotations

from collections.abc import Sequence
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


def analyze(campaign_dir: Path | str | Sequence[Path | str], out_dir: Path | str) -> AnalysisOutputs:
    """Aggregate one campaign folder, or several analysed together (e.g. a CPU and a GPU campaign),
    and write their tables, figures and report under out_dir.

    Raises NoRunsError when no run can be read (the message says which folder and why).
    """
    # Imported here so `import analysis` and its error paths stay fast: matplotlib loads only
    # once there is something to draw.
    from analysis.aggregate import load_campaigns, read_epochs, summarize, write_tables

    dirs = [campaign_dir] if isinstance(campaign_dir, str | Path) else list(campaign_dir)
    campaign = load_campaigns(dirs)
    if not campaign.rows:
        problems = campaign.problems
        detail = f" ({len(problems)} unreadable: {problems[0]})" if problems else ""
        where = " or ".join(str(d) for d in dirs)
        raise NoRunsError(f"no runs found in {where}{detail}; run a campaign first (e.g. make demo)")
    from analysis.figures import make_figures
    from analysis.report import ReportContext, write_report

    out = Path(out_dir)
    cells = summarize(campaign.rows)
    tables = write_tables(campaign, cells, out)
    figures = make_figures(campaign, cells, out)
    epochs = read_epochs(campaign)
    md, html = write_report(ReportContext(campaign, cells, figures, out, epochs))
    return AnalysisOutputs(md, html, tables, [f.path for f in figures], list(campaign.problems))
