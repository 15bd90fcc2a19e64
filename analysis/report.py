"""The reproduction report: report.md and a self-contained report.html from one document model.

The report is built once as a list of blocks (analysis.document) and rendered twice. This module
holds the sections about the campaign itself (runs, comparisons with the published numbers,
settings, environment, figures); analysis.findings holds the claims, what transfers across hardware
and the paper's statistics. Links to run directories are relative to the report, so the reports/
and results/ folders can move together.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from analysis.aggregate import CELL_KEYS, CellSummary
from analysis.context import ReportContext
from analysis.document import (
    Block,
    Bullets,
    Heading,
    Image,
    Inline,
    Link,
    Para,
    Table,
    Tag,
    render_html,
    render_markdown,
)
from analysis.findings import claim_outcomes, claims_section, hardware_section, statistics_section, transfer_section
from analysis.reference import (
    METRIC_COLUMNS,
    PublishedValue,
    all_published,
    device_env,
    published_for,
    workload_cell,
)
from analysis.stats import Estimate, format_estimate, ratio
from analysis.transfer import ACCURACY_TOLERANCE_PP, WITHIN, accuracy_verdict
from bench import atomic
from bench.spec import content_hash

__all__ = ["ReportContext", "build_report", "render_html", "render_markdown", "write_report"]

SYNTHETIC_BANNER = "SYNTHETIC DATA — demo only: accuracy and timing are not comparable to the paper"
PAPER_PROFILE = "paper"

# --- Sections ------------------------------------------------------------------------------

def header_section(ctx: ReportContext) -> list[Block]:
    """Title, campaign, when, and the banners for synthetic data and non-paper profiles."""
    c = ctx.campaign
    runs = list(c.runs.values())
    n_ok = len(c.ok_rows)
    started = min((r["started_at"] for r in runs), default=None)
    finished = max((r["finished_at"] for r in runs if r["finished_at"]), default=None)
    folders = ", ".join(f"`{r}`" for r in c.roots)
    blocks: list[Block] = [
        Heading(1, f"Reproduction report: {c.name}"),
        Para(f"Campaign folder{'s' if len(c.roots) > 1 else ''} {folders}: {len(c.rows)} runs "
             f"({n_ok} ok, {len(c.rows) - n_ok} failed), "
             f"run between {started or '?'} and {finished or '?'}. Report generated {ctx.generated_at} "
             "by dlrepro's analysis from the runs' raw files. Compared against DLBench (Elshawi, Wahab, "
             "Barnawi, Sakr; Cluster Computing 2021) and the numbers in its authors' logs."),
    ]
    synthetic = [r for r in c.rows if r["data_source"] == "synthetic"]
    if synthetic:
        workloads = ", ".join(sorted({r["workload"] for r in synthetic}))
        blocks.append(Para(f"{SYNTHETIC_BANNER}. ({len(synthetic)} of {len(c.rows)} runs used synthetic "
                           f"data: {workloads}.)", "banner"))
    unknown = [r for r in c.rows if r["data_source"] not in ("real", "synthetic")]
    if unknown:
        blocks.append(Para(f"{len(unknown)} runs do not record whether their data was real or synthetic "
                           "(usually runs that failed before loading it).", "note"))
    quick = sorted({r["profile"] for r in c.rows if r["profile"] != PAPER_PROFILE})
    if quick:
        blocks.append(Para(
            f"Profile {', '.join(quick)} (not '{PAPER_PROFILE}'): these runs train on subsets of the data "
            "for fewer epochs (see Workload settings), so the paper's numbers are shown for context only; "
            "ratios to them are not a reproduction verdict.", "note"))
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


def _varying(cells: Sequence[CellSummary]) -> list[str]:
    # workload, framework and device always shown; the other keys only when they vary.
    return [k for k in CELL_KEYS if k in ("workload", "framework", "device")
            or len({c.key[k] for c in cells}) > 1]


def overview_section(ctx: ReportContext) -> list[Block]:
    """Counts of ok and failed runs per cell, failures by cause, and each failed run."""
    cells = ctx.cells
    keys = _varying(cells)
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
    blocks.append(Table(
        ["run", "workload", "framework", "device", "repeat", "cause", "message", "run dir"],
        [[ctx.run_links([r]), r["workload"], r["framework"], r["device"], str(r["repeat"]),
          r["failure_cause"] or "", r["failure_message"] or "", r["run_dir"]] for r in failed],
    ))
    return blocks


_COMPARED = (
    # (dlbench.csv metric, heading, significant digits)
    ("test_accuracy", "Test accuracy (%)", 4),
    ("training_time", "Training time (s)", 3),
)
_RESOURCES = (
    ("cpu_utilization_mean", "CPU util. mean (%)"),
    ("memory_mean", "memory mean (MB)"),
    ("gpu_utilization_mean", "GPU util. mean (%)"),
)


def _source_text(p: PublishedValue) -> str:
    return p.source_text


def _published_value(p: PublishedValue) -> str:
    return p.value_text


def _published_text(p: PublishedValue | None) -> list[str]:
    if p is None:
        return ["—", "", ""]
    return [_published_value(p), p.qualifier, _source_text(p)]


def _measured_text(cell: CellSummary, est: Estimate, digits: int) -> str:
    if est.n == 0:
        causes = cell.failure_causes()
        return "not measured" if cell.ok_rows or not causes else f"no successful run (failed: {causes})"
    return format_estimate(est, digits)


def comparison_section(ctx: ReportContext) -> list[Block]:
    """Per metric, one row per (cell, published value): published, measured mean ± CI, ratio."""
    keys = _varying(ctx.cells)
    blocks: list[Block] = [
        Heading(2, "Comparison with the published numbers"),
        Para("Measured: mean over successful repeats ± half-width of the 95 % Student-t interval (n). "
             "Ratio = measured mean / published value. " + _timing_definition(ctx)),
    ]
    for metric, title, digits in _COMPARED:
        column = METRIC_COLUMNS[metric]
        tolerance = metric == "test_accuracy"
        rows: list[list[Inline]] = []
        for cell in ctx.cells:
            est = cell.estimates[column]
            refs = published_for(cell.key["device"], cell.key["workload"], cell.key["framework"], metric)
            for ref in refs or [None]:
                r = ratio(est.mean, ref.value if ref else None)
                extra: list[Inline] = [_tolerance_cell(cell, est, ref)] if tolerance else []
                rows.append([*(cell.key[k] for k in keys), *_published_text(ref),
                             _measured_text(cell, est, digits),
                             "—" if r is None else f"{r:.2f}×", *extra, ctx.run_links(cell.rows)])
        headers = [*keys, "published", "qualifier", "source", "measured", "ratio"]
        if tolerance:
            headers.append(f"within ±{ACCURACY_TOLERANCE_PP:g} pp?")
            blocks += [Heading(3, title),
                       Para(f"Accuracy tolerance: the measured mean is 'within' when it lies no more than "
                            f"{ACCURACY_TOLERANCE_PP:g} percentage points from the published value (analysis."
                            "transfer.ACCURACY_TOLERANCE_PP); the sign gives measured − published."
                            + ("" if _paper_evidence(ctx) else " On this campaign's data or profile the verdicts "
                               "are computed but are not evidence about the paper."))]
        else:
            blocks.append(Heading(3, title))
        blocks.append(Table([*headers, "runs"], rows))
    blocks += [Heading(3, "Resource use (training window)"), _resource_table(ctx, keys)]
    return blocks


def _paper_evidence(ctx: ReportContext) -> bool:
    """True when every run used real data and the paper profile (verdicts then speak about the paper)."""
    return all(r["data_source"] == "real" and r["profile"] == PAPER_PROFILE for r in ctx.campaign.rows)


def _tolerance_cell(cell: CellSummary, est: Estimate, ref: PublishedValue | None) -> Inline:
    if ref is None or est.mean is None:
        return "—"
    text = accuracy_verdict(est.mean, ref.value)
    return Tag(text, "within" if text.startswith(WITHIN) else "outside")


def _timing_definition(ctx: ReportContext) -> str:
    definitions = sorted({r["timing"]["definition"] for r in ctx.campaign.runs.values()
                          if r["timing"]["definition"] != "not measured"})
    text = "Measured training time: " + (" / ".join(definitions) if definitions else "no definition recorded")
    return (text.rstrip(".") + ". The authors' logs' wall times include the test pass after every epoch, "
            "so they are not the same quantity as the measured training time.")


def _resource_table(ctx: ReportContext, keys: list[str]) -> Table:
    rows: list[list[Inline]] = []
    for cell in ctx.cells:
        values: list[Inline] = []
        for metric, _ in _RESOURCES:
            est = cell.estimates[METRIC_COLUMNS[metric]]
            refs = published_for(cell.key["device"], cell.key["workload"], cell.key["framework"], metric)
            text = _measured_text(cell, est, 3)
            if refs:
                text += "; published " + ", ".join(f"{_published_value(p)} ({p.qualifier}, {_source_text(p)})"
                                                   for p in refs)
            values.append(text)
        peak = cell.estimates["mem_peak_mb"]
        rows.append([*(cell.key[k] for k in keys), *values, _measured_text(cell, peak, 3),
                     ctx.run_links(cell.rows)])
    return Table([*keys, *(t for _, t in _RESOURCES), "memory peak (MB)", "runs"], rows)


def _optimizer_text(opt: Any) -> str:
    if not isinstance(opt, dict):
        return str(opt) if opt is not None else "—"
    params = ", ".join(f"{k}={v}" for k, v in sorted(opt.items()) if k != "name")
    return f"{opt.get('name', '?')} ({params})" if params else str(opt.get("name", "?"))


def _subset_text(n: Any) -> str:
    return "full split" if n is None else str(n)


def settings_section(ctx: ReportContext) -> list[Block]:
    """The spec values every framework read, per (workload, profile), and whether they were identical."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for run in ctx.campaign.runs.values():
        groups.setdefault((run["config"]["workload"], run["config"]["profile"]), []).append(run)
    rows: list[list[Inline]] = []
    for (workload, profile), runs in sorted(groups.items()):
        spec = runs[0]["spec"]
        training, data = spec.get("training") or {}, spec.get("data") or {}
        first = content_hash(spec)
        differ = sorted({r["config"]["framework"] for r in runs if content_hash(r["spec"]) != first})
        reference_fw = runs[0]["config"]["framework"]
        same = "yes" if not differ else f"NO: {', '.join(differ)} differ from {reference_fw}"
        rows.append([workload, profile, str(training.get("epochs", "—")),
                     str(training.get("batch_size", "—")),
                     _optimizer_text(training.get("optimizer")), str(training.get("loss", "—")),
                     _subset_text(data.get("train_subset")), _subset_text(data.get("test_subset")), same,
                     ctx.runs_links(runs)])
    return [Heading(2, "Workload settings (echoed from run.json)"),
            Para("What every framework's run actually read from the workload spec. 'identical' says whether "
                 "all runs of the workload and profile carry the same resolved spec."),
            Table(["workload", "profile", "epochs", "batch", "optimizer", "loss", "train subset",
                   "test subset", "identical across runs", "runs"], rows)]


def _distinct(values: Iterable[Any]) -> str:
    seen = list(dict.fromkeys(str(v) for v in values if v not in (None, "", {}, [])))
    return "; ".join(seen) if seen else "—"


def _gpus_text(host: dict) -> str:
    gpus = host.get("gpus") or []
    if gpus:
        return ", ".join(str(g.get("name", g)) if isinstance(g, dict) else str(g) for g in gpus)
    return str(host.get("gpu_status") or "none")


def _kernels_text(kernels: Any) -> str:
    if isinstance(kernels, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(kernels.items()))
    return "" if kernels is None else str(kernels)


def environment_section(ctx: ReportContext) -> list[Block]:
    """Versions, runner, image digest or environment lock, host and device details per framework."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for run in ctx.campaign.runs.values():
        cfg = run["config"]
        groups.setdefault((cfg["framework"], cfg["device"], cfg["runner"]), []).append(run)
    rows: list[list[Inline]] = []
    for (framework, device, runner), runs in sorted(groups.items()):
        envs = [r.get("environment") or {} for r in runs]
        hosts = [r.get("host") or {} for r in runs]
        used = [r.get("device_used") or {} for r in runs]
        rows.append([
            framework, device, runner,
            _distinct(e.get("framework_version") for e in envs),
            _distinct(_kernels_text(e.get("framework_build")) for e in envs),
            _distinct(e.get("image_digest") or e.get("env_id") for e in envs),
            _distinct(e.get("python") for e in envs),
            _distinct(f"{h.get('hostname', '?')}: {h.get('cpu_model', '?')} ({h.get('cpu_count', '?')} CPUs, "
                      f"{h.get('mem_total_mb', '?')} MB)" for h in hosts if h),
            _distinct(_gpus_text(h) for h in hosts if h),
            _distinct(u.get("device_name") for u in used),
            _distinct(u.get("threads") for u in used),
            _distinct(_kernels_text(u.get("kernels")) for u in used),
            ctx.runs_links(runs),
        ])
    return [Heading(2, "Environment"),
            Para("Exact versions as each run recorded them: the framework, its build (e.g. CUDA and cuDNN where "
                 "the framework reports them), the container image digest or the locked environment's id, the "
                 "host and its GPUs, the device the framework used."),
            Table(["framework", "device", "runner", "version", "framework build", "image digest / env lock",
                   "python", "host", "GPUs", "device used", "threads", "kernels", "runs"], rows)]


def figures_section(ctx: ReportContext) -> list[Block]:
    """Every figure with its caption, or a line saying why there are none."""
    blocks: list[Block] = [Heading(2, "Figures")]
    if not ctx.figures:
        return blocks + [Para("No figures: no run finished successfully, so there is nothing to plot.")]
    return blocks + [Image(f, ctx.rel(f.path)) for f in ctx.figures]


def _measured_cells(ctx: ReportContext) -> dict[tuple[str, str, str, str], list[CellSummary]]:
    # (env, arch, dataset, framework) -> the campaign's cells that measure it.
    out: dict[tuple[str, str, str, str], list[CellSummary]] = {}
    for cell in ctx.cells:
        wc = workload_cell(cell.key["workload"])
        if wc:
            key = (device_env(cell.key["device"]), *wc, cell.key["framework"].lower())
            out.setdefault(key, []).append(cell)
    return out


def _why_unmeasured(p: PublishedValue, ctx: ReportContext,
                    measured: dict[tuple[str, str, str, str], list[CellSummary]]) -> str | None:
    """Why a published value has no measured counterpart, or None if it has one."""
    cells = [c for (env, arch, ds, fw), cs in measured.items() if p.matches(env, arch, ds, fw) for c in cs]
    if not cells:
        return "framework not run in this campaign"
    if p.metric not in METRIC_COLUMNS:
        return "metric not computed by this analysis yet"
    if any(c.estimates[METRIC_COLUMNS[p.metric]].n > 0 for c in cells):
        return None
    if not any(c.ok_rows for c in cells):
        return "every run failed"
    return "not measured (no monitor data for it)"


def not_reproduced_section(ctx: ReportContext) -> list[Block]:
    """Published numbers with no measured counterpart: in scope (with the reason) and out of scope."""
    measured = _measured_cells(ctx)
    scope = {(env, arch, ds) for env, arch, ds, _ in measured}
    in_scope: list[list[Inline]] = []
    out_of_scope: dict[tuple[str, str, str], list[PublishedValue]] = {}
    for p in all_published():
        if any(p.matches(env, arch, ds, p.framework) for env, arch, ds in scope):
            why = _why_unmeasured(p, ctx, measured)
            if why:
                in_scope.append([p.env, f"{p.arch}/{p.dataset}", p.framework, p.metric,
                                 _published_value(p), p.qualifier,
                                 _source_text(p), why])
        else:
            out_of_scope.setdefault((p.env, p.arch, p.dataset), []).append(p)
    blocks: list[Block] = [Heading(2, "What was not reproduced / not measured")]
    failed_cells = [c for c in ctx.cells if not c.ok_rows]
    if failed_cells:
        blocks.append(Para("Not reproduced — every run of these cells failed:"))
        blocks.append(Bullets([f"{c.key['workload']} / {c.key['framework']} on {c.key['device']} "
                               f"({c.key['runner']}): {c.failure_causes()}" for c in failed_cells]))
    if in_scope:
        blocks.append(Para("Published numbers for this campaign's workloads and devices with no measured "
                           "counterpart here:"))
        blocks.append(Table(["env", "workload", "framework", "metric", "published", "qualifier", "source",
                             "why"], in_scope))
    else:
        blocks.append(Para("Every published number for this campaign's workloads and devices has a measured "
                           "counterpart."))
    if out_of_scope:
        blocks.append(Para("Published numbers outside this campaign's workloads and devices "
                           "(not attempted):"))
        blocks.append(Bullets([
            f"{env} {arch}/{ds}: {len(ps)} number{'s' if len(ps) > 1 else ''} "
            f"({', '.join(sorted({p.metric for p in ps}))})"
            for (env, arch, ds), ps in sorted(out_of_scope.items())]))
    blocks.append(Para("The paper's claims are judged in 'What reproduced' and its statistical tests in "
                       "'Statistics as the paper did them'."))
    return blocks


def files_section(ctx: ReportContext) -> list[Block]:
    """Links to the tables the report was built from."""
    tables = ctx.out_dir / "tables"
    return [Heading(2, "Tables"),
            Bullets([Link("tables/runs.csv", ctx.rel(tables / "runs.csv")),
                     Link("tables/summary.csv", ctx.rel(tables / "summary.csv"))])]


def build_report(ctx: ReportContext) -> list[Block]:
    """The whole report as blocks, in reading order."""
    return [
        *header_section(ctx), *claims_section(ctx, claim_outcomes(ctx)), *problems_section(ctx),
        *overview_section(ctx), *comparison_section(ctx), *transfer_section(ctx), *statistics_section(ctx),
        *settings_section(ctx), *environment_section(ctx), *hardware_section(ctx), *figures_section(ctx),
        *not_reproduced_section(ctx), *files_section(ctx),
    ]



def write_report(ctx: ReportContext) -> tuple[Path, Path]:
    """Write report.md and report.html under ctx.out_dir (atomically); return their paths."""
    blocks = build_report(ctx)
    md_path, html_path = ctx.out_dir / "report.md", ctx.out_dir / "report.html"
    atomic.write_text(md_path, render_markdown(blocks))
    atomic.write_text(html_path, render_html(blocks, f"Reproduction report: {ctx.campaign.name}"))
    return md_path, html_path

