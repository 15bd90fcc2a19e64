"""The report's opening: title and banners, unreadable runs and measurement notes, the runs overview."""

from __future__ import annotations

from collections import Counter

from analysis.claims import PAPER_PROFILE
from analysis.context import ReportContext
from analysis.document import Block, Bullets, Heading, Para, Table
from analysis.eras import eras_of, outside_image_rows, outside_image_text, study_python
from analysis.runs import PAPER_ERA
from analysis.sections.columns import cell_columns
from analysis.sections.environment import system_notes
from bench.errors import UsageError
from bench.request import NO_DATA
from campaign.study import load_study

# The study of the kit's first workloads (their spec's study), and how the header names its published numbers.
DLBENCH = "dlbench"
DLBENCH_COMPARED = ("DLBench (Elshawi, Wahab, Barnawi, Sakr; Cluster Computing 2021) and the numbers in its "
                    "authors' logs")

SYNTHETIC_BANNER = "SYNTHETIC DATA — demo only: accuracy and timing are not comparable to the paper"


def header_section(ctx: ReportContext) -> list[Block]:
    """Title, campaign, when, and the banners for synthetic data and non-paper profiles."""
    c = ctx.campaign
    runs = list(c.runs.values())
    n_ok = len(c.ok_rows)
    started = min((r["started_at"] for r in runs), default=None)
    finished = max((r["finished_at"] for r in runs if r["finished_at"]), default=None)
    folders = ", ".join(f"`{r}`" for r in c.roots)
    others = [s for s in campaign_studies(c.rows) if s != DLBENCH]
    titles = [study_title(s) for s in others]
    blocks: list[Block] = [
        Heading(1, f"Reproduction report: {c.name}" + (f" — {' and '.join(titles)}" if titles else "")),
        Para(f"Campaign folder{'s' if len(c.roots) > 1 else ''} {folders}: {len(c.rows)} runs "
             f"({n_ok} ok, {len(c.rows) - n_ok} failed), "
             f"run between {started or '?'} and {finished or '?'}. Report generated {ctx.generated_at} "
             f"by dlrepro's analysis from the runs' raw files. {_compared_text(c.rows, others)}"),
    ]
    synthetic = [r for r in c.rows if r["data_source"] == "synthetic"]
    if synthetic:
        workloads = ", ".join(sorted({r["workload"] for r in synthetic}))
        blocks.append(Para(f"{SYNTHETIC_BANNER}. ({len(synthetic)} of {len(c.rows)} runs used synthetic "
                           f"data: {workloads}.)", "banner"))
    generated = sorted({r["workload"] for r in c.rows if r["data_source"] == "generated"})
    if generated:
        blocks.append(Para(f"{', '.join(generated)}: random inputs generated in each run, as the study timed these "
                           "networks; their accuracy means nothing.", "note"))
    unknown = [r for r in c.rows if r["data_source"] not in ("real", "synthetic", "generated", NO_DATA)]
    if unknown:
        blocks.append(Para(f"{len(unknown)} runs do not record whether their data was real or synthetic "
                           "(usually runs that failed before loading it).", "note"))
    quick = sorted({r["profile"] for r in c.rows if r["profile"] != PAPER_PROFILE})
    if quick:
        blocks.append(Para(
            f"Profile {', '.join(quick)} (not '{PAPER_PROFILE}'): these runs train on subsets of the data "
            "for fewer epochs (see Workload settings), so the paper's numbers are shown for context only; "
            "ratios to them are not a reproduction verdict.", "note"))
    return blocks + _era_notes(ctx) + system_notes(ctx)


def campaign_studies(rows: list[dict]) -> list[str]:
    """The studies whose workloads the runs are of (the run table's `study`, from the workload spec), sorted."""
    return sorted({str(r["study"]) for r in rows if r.get("study")})


def study_title(name: str) -> str:
    """A study's title as its study file gives it (studies/<name>/study.toml), else its name."""
    try:
        return load_study(name).title
    except UsageError:  # a spec naming a study with no study file: its name is all there is
        return name


def _compared_text(rows: list[dict], others: list[str]) -> str:
    """What the report compares against: DLBench's paper and logs (runs of DLBench's workloads, or of none
    named), and each other study by its study file's title and reference tables."""
    parts = [DLBENCH_COMPARED] if not others or DLBENCH in campaign_studies(rows) else []
    for name in others:
        try:
            tables = ", ".join(load_study(name).reference)
        except UsageError:
            tables = ""
        where = f"studies/{name}/reference"
        parts.append(study_title(name) + (f", its published tables in {where} ({tables})" if tables else ""))
    return "Compared against " + " and ".join(parts) + "."


def _era_notes(ctx: ReportContext) -> list[Block]:
    """Which eras the campaign holds, and a note when paper-era runs ran outside the study's setup."""
    rows = ctx.campaign.rows
    eras = eras_of(rows)
    blocks: list[Block] = []
    if len(eras) > 1:
        counts = ", ".join(f"{sum(r['era'] == e for r in rows)} {e}-era" for e in eras)
        blocks.append(Para(f"This campaign holds runs of {len(eras)} software eras ({counts}): every table keeps "
                           "them apart (an era column), and 'Paper era vs current era' sets them side by side."))
    off = outside_image_rows(rows)
    if off:
        text = outside_image_text(off)
        paper = sum(r["era"] == PAPER_ERA for r in rows)
        blocks.append(Para(f"{text[0].upper()}{text[1:]}, not the study's setup (CPython {study_python()} in the "
                           f"paper-era images): {len(off)} of {paper} paper-era runs. See 'Where the paper-era "
                           "runs ran'.", "note"))
    return blocks


def problems_section(ctx: ReportContext) -> list[Block]:
    """Run dirs or files that could not be read, and raw-vs-cache disagreements."""
    blocks: list[Block] = []
    if ctx.campaign.problems:
        blocks += [Heading(2, "Unreadable runs and files"),
                   Para("These were left out or read partially; nothing else was affected."),
                   Bullets(list(ctx.campaign.problems))]
    if ctx.campaign.notes:
        blocks += [Heading(2, "Notes on the measurements"),
                   Para("CPU and memory figures are recomputed from monitor.csv over the training window; "
                        "run.json's monitor summary is only a cache. Where they differ, or where the raw "
                        "samples are missing, it is said here."),
                   Bullets(list(ctx.campaign.notes))]
    return blocks


def overview_section(ctx: ReportContext) -> list[Block]:
    """Counts of ok and failed runs per cell, failures by cause, and each failed run."""
    cells = ctx.cells
    keys = cell_columns(cells)
    table = Table(
        [*keys, "ok", "failed", "runs"],
        [[*(c.key[k] for k in keys), str(len(c.ok_rows)), c.failure_causes().replace(":", " ") or "0",
          ctx.run_links(c.rows)] for c in cells],
    )
    failed = [r for r in ctx.campaign.rows if r["status"] != "ok"]
    by_cause = Counter(r["failure_cause"] for r in failed)
    blocks: list[Block] = [Heading(2, "Runs overview"), table]
    if not failed:
        blocks.append(Para("No run failed."))
        return blocks
    causes = ", ".join(f"{cause} {n}" for cause, n in sorted(by_cause.items()))
    blocks.append(Para(f"Failed runs by cause: {causes}. They count here but not in the means."))
    blocks.append(Heading(3, "Failed runs"))
    era = ["era"] if "era" in keys else []
    blocks.append(Table(
        ["run", "workload", "framework", *era, "device", "repeat", "cause", "message", "run dir"],
        [[ctx.run_links([r]), r["workload"], r["framework"], *(r[k] for k in era), r["device"], str(r["repeat"]),
          r["failure_cause"] or "", r["failure_message"] or "", r["run_dir"]] for r in failed],
    ))
    return blocks
