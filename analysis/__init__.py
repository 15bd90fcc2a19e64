"""dlrepro's analysis: a campaign's runs -> tables, figures and the reproduction report.

    python -m analysis --campaign results/<name> [--campaign results/<other>] --out reports/<name>

In a notebook, ``analysis.load("results/demo")`` is the run table as a pandas DataFrame.

Modules: runs (the run table as a DataFrame, read from the run folders), summary (per-cell summaries with
pandas, and the tables written as CSV), stats (intervals and tests),
reference (the published numbers DLBench's comparison reads), sweeps (the series and groups of sweep runs),
transfer (orders, ratios, speedups, accuracy tolerance), eras
(paper-era vs current-era pairs, which Python paper-era runs ran on), departures (where the kit's
paper-era setup departs from the paper, as data),
significance (Wilcoxon, Pearson, bootstrap over a campaign), claims (the machinery that tests a
claim: results table, verdicts, shared checks), figures (PNG plots), document (the report's blocks
and renderers), context (what a report is built from), sections (one module per report topic, each
section a builder ctx -> blocks), report (sections(), the sections in reading order; report.md and
report.html). Each study's own Python (its published tables, claims and report section) lives in its folder,
studies/<study>/ (studies/__init__.py discovers them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


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


def load(campaign: str | Path | Sequence[str | Path]) -> pd.DataFrame:
    """The run table of a campaign folder (or of several together) as a pandas DataFrame.

    One row per run folder, failed runs included; columns named for notebook use (workload, framework,
    era, device, runner, repeat, status, failure_cause, test_accuracy in percent, training_time_s, the
    per-epoch and monitor figures, env_id, ...; analysis.runs.RUN_COLUMNS). Unreadable run folders are
    left out and listed in ``frame.attrs["problems"]``. E.g.
    ``analysis.load("results/demo").groupby(["workload", "framework"]).test_accuracy.mean()``.
    """
    # Imported here so `import analysis` stays cheap: pandas loads on the first call.
    from analysis.runs import load as load_runs

    return load_runs(campaign)


def analyze(campaign_dir: Path | str | Sequence[Path | str], out_dir: Path | str) -> AnalysisOutputs:
    """Aggregate one campaign folder, or several analysed together (e.g. a CPU and a GPU campaign),
    and write their tables, figures and report under out_dir.

    Raises NoRunsError when no run can be read (the message says which folder and why).
    """
    # Imported here so `import analysis` and its error paths stay fast: matplotlib loads only
    # once there is something to draw.
    from analysis.runs import load_campaigns
    from analysis.summary import summarize, summary_table, write_tables

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
    summary = summary_table(campaign.table)
    cells = summarize(campaign.table, summary)
    tables = write_tables(campaign, summary, out)
    figures = make_figures(campaign, cells, out)
    md, html = write_report(ReportContext(campaign, cells, figures, out, campaign.epochs))
    return AnalysisOutputs(md, html, tables, [f.path for f in figures], list(campaign.problems))
