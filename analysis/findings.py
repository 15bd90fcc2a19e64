"""Report sections for the findings: claims, what transfers across hardware, the paper's statistics.

Each section reads the campaign's cells (and per-epoch records) through the modules that compute
them (claims, transfer, significance) and only arranges their results into blocks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from analysis.aggregate import CellSummary
from analysis.claims import INSUFFICIENT, VERDICTS, ClaimOutcome, ResultsTable, evaluate_claims
from analysis.context import ReportContext
from analysis.document import Block, Bullets, Heading, Inline, Para, Table, Tag
from analysis.reference import METRIC_COLUMNS, all_published, published_hardware
from analysis.significance import (
    PAIRED_METRICS,
    bootstrap_intervals,
    epoch_accuracy_correlations,
    framework_pair_tests,
)
from analysis.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    MIN_KENDALL_N,
    MIN_PEARSON_N,
    SIGNIFICANCE_LEVEL,
    Estimate,
    format_number,
    min_wilcoxon_pairs,
)
from analysis.transfer import (
    ACCURACY_TOLERANCE_PP,
    GROUP_KEYS,
    order_comparisons,
    relative_times,
    speedups,
)

# Reference files the report compares against (their hardware rows are printed).
COMPARED_FILES = ("dlbench.csv", "from_original_repos.csv")


def _group_columns(cells: Sequence[CellSummary]) -> list[str]:
    # workload and device always; runner, profile and data source only when they vary.
    return [k for k in GROUP_KEYS if k in ("workload", "device") or len({c.key[k] for c in cells}) > 1]


def _interval(est: Estimate) -> str:
    if est.ci_low is None or est.ci_high is None:
        return f"{INSUFFICIENT} (n={est.n})"
    return f"[{format_number(est.ci_low, 4)}, {format_number(est.ci_high, 4)}]"


# --- Claims --------------------------------------------------------------------------------

def claim_outcomes(ctx: ReportContext) -> list[ClaimOutcome]:
    """Every registered claim evaluated on the campaign's run table and epoch records."""
    return evaluate_claims(ResultsTable(ctx.campaign.rows, ctx.epochs))


def _verdict_cell(outcome: ClaimOutcome) -> list[str | Tag]:
    cell: list[str | Tag] = [Tag(outcome.result.verdict, outcome.result.verdict)]
    if outcome.caveat:
        cell.append(f"({outcome.caveat})")
    return cell


def claims_section(ctx: ReportContext, outcomes: Sequence[ClaimOutcome]) -> list[Block]:
    """'What reproduced': one row per claim with verdict, evidence and runs, then each claim's exact test."""
    by_study: dict[str, Counter[str]] = {}
    for o in outcomes:
        by_study.setdefault(o.claim.study, Counter())[o.result.verdict] += 1
    summary = "; ".join(f"{study}: " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
                        for study, counts in by_study.items())
    caveated = sum(bool(o.caveat) for o in outcomes)
    rows: list[list[Inline]] = [
        [o.claim.id, o.claim.study, o.claim.statement, _verdict_cell(o), o.result.evidence,
         ctx.id_links(o.result.run_ids) or "—"]
        for o in outcomes]
    blocks: list[Block] = [
        Heading(2, "What reproduced"),
        Para("Each claim of DLBench (1-9, dlbench.md) and of the other studies (other-studies.md) is tested on "
             "this campaign's run table and the runs' per-epoch records. Verdicts: reproduced, not reproduced, "
             f"or {INSUFFICIENT} (too few runs, or the campaign does not hold the experiment). The exact test of "
             f"each claim follows the table. {summary}."),
    ]
    if caveated:
        blocks.append(Para(f"{caveated} verdicts rest on synthetic data or a non-paper profile: they show the "
                           "checks run, and are not evidence about the paper.", "note"))
    blocks += [Table(["claim", "study", "statement", "verdict", "evidence", "runs"], rows, css_class="claims"),
               Heading(3, "How each claim is tested"),
               Bullets([f"{o.claim.id} ({o.claim.study}): {o.claim.test}" for o in outcomes])]
    return blocks


# --- What transfers across hardware --------------------------------------------------------

def transfer_section(ctx: ReportContext) -> list[Block]:
    """Framework orders vs the paper (Kendall tau), times relative to the fastest, GPU/CPU speedups."""
    cells = ctx.cells
    cols = _group_columns(cells)
    blocks: list[Block] = [
        Heading(2, "What transfers across hardware"),
        Para("The published numbers were measured on other machines (see Hardware of the published numbers), "
             "so absolute times are context. What should transfer: the order of frameworks, each framework's "
             "time relative to the fastest, the GPU/CPU speedup, and test accuracy within "
             f"±{ACCURACY_TOLERANCE_PP:g} percentage points (see the accuracy table)."),
        Heading(3, "Order of frameworks (Kendall tau)"),
        Para("Per workload, device and metric: the measured means and the published values of the frameworks "
             "that have both, compared by Kendall tau-b (scipy.stats.kendalltau, two-sided p). Rows with a "
             f"published value for fewer than {MIN_KENDALL_N} measured frameworks say {INSUFFICIENT}. '*' rows "
             "(one value for every framework) give no order and are left out."),
    ]
    rows: list[list[Inline]] = []
    for oc in order_comparisons(cells):
        sources = "; ".join(dict.fromkeys(p.source_text for p in oc.published))
        rows.append([*(oc.group[k] for k in cols), oc.metric, oc.origin,
                     oc.order_text(oc.measured) or "—", oc.order_text([p.value for p in oc.published]) or "—",
                     oc.test.text("tau"), sources or "—", ctx.id_links(oc.run_ids)])
    blocks.append(Table([*cols, "metric", "origin", "measured order", "published order", "Kendall tau",
                         "source", "runs"], rows) if rows else
                  Para("No published value names a framework of this campaign's workloads and devices."))

    blocks += [Heading(3, "Training time relative to the fastest framework"),
               Para("Measured: mean time / the fastest framework's mean in the same group. Published: the "
                    "published time / the fastest published time of the same origin among the group's frameworks "
                    "(shown when at least two have one).")]
    rel_rows: list[list[Inline]] = []
    for rt in relative_times(cells):
        p = rt.published
        rel_rows.append([*(rt.group[k] for k in cols), rt.framework, format_number(rt.measured_mean),
                         f"{rt.measured_relative:.2f}× (fastest {rt.fastest_measured})",
                         p.value_text if p else "—",
                         f"{rt.published_relative:.2f}× (fastest {rt.fastest_published})"
                         if rt.published_relative is not None else "—",
                         p.source_text if p else "—", ctx.id_links(rt.run_ids)])
    blocks.append(Table([*cols, "framework", "measured mean (s)", "measured × fastest", "published",
                         "published × fastest", "source", "runs"], rel_rows) if rel_rows else
                  Para("No group has two frameworks with a measured training time."))

    blocks.append(Heading(3, "GPU / CPU speedup"))
    sp_rows: list[list[Inline]] = []
    col = METRIC_COLUMNS["training_time"]
    for s in speedups(cells):
        published = "; ".join(f"{p.value:.3g}× ({p.qualifier}; {p.source})" for p in s.published) or "—"
        sp_rows.append([s.cpu.key["workload"], s.cpu.key["framework"],
                        format_number(s.cpu.estimates[col].mean, 4), format_number(s.gpu.estimates[col].mean, 4),
                        "—" if s.value is None else f"{s.value:.3g}×", published, ctx.id_links(s.run_ids)])
    if sp_rows:
        blocks += [Para("Speedup = mean CPU training time / mean GPU training time of the same workload and "
                        "framework (same profile and data)."),
                   Table(["workload", "framework", "CPU mean (s)", "GPU mean (s)", "speedup", "published", "runs"],
                         sp_rows)]
    else:
        blocks.append(Para("No workload and framework was run on both CPU and GPU in this campaign set. Give a "
                           "CPU and a GPU campaign together (--campaign twice) to get speedups."))
    return blocks


# --- Statistics as the paper did them ------------------------------------------------------

def statistics_section(ctx: ReportContext) -> list[Block]:
    """Wilcoxon signed-rank tests between frameworks, Pearson epoch vs accuracy, bootstrap intervals."""
    cells = ctx.cells
    cols = _group_columns(cells)
    need = min_wilcoxon_pairs(SIGNIFICANCE_LEVEL)
    blocks: list[Block] = [
        Heading(2, "Statistics as the paper did them"),
        Heading(3, "Wilcoxon signed-rank tests between frameworks"),
        Para(f"Per workload, device and metric, every pair of frameworks; repeats paired by repeat index (both "
             f"runs successful); scipy.stats.wilcoxon, two-sided, exact; significant at p < {SIGNIFICANCE_LEVEL:g}. "
             f"With fewer than {need} non-zero pairs no p-value can fall below {SIGNIFICANCE_LEVEL:g} (the "
             f"smallest exact p is 2/2^n), so such rows say {INSUFFICIENT}, not 'no difference'."),
    ]
    rows: list[list[Inline]] = [
        [*(t.group[k] for k in cols), PAIRED_METRICS[t.metric], f"{t.framework_a} vs {t.framework_b}",
         ", ".join(map(str, t.repeats)) or "none", t.test.text("W") if t.test.sufficient else "—", t.verdict(),
         ctx.id_links(t.run_ids)]
        for t in framework_pair_tests(cells)]
    blocks.append(Table([*cols, "metric", "frameworks", "repeats paired", "statistic", "verdict", "runs"], rows)
                  if rows else Para("No group holds two frameworks: nothing to compare."))

    published_r = [p for p in all_published() if p.metric == "pearson_epochs_accuracy"]
    blocks += [Heading(3, "Pearson correlation: epoch vs test accuracy"),
               Para(f"Per successful run, scipy.stats.pearsonr of epoch number against test accuracy after that "
                    f"epoch (metrics.jsonl); needs at least {MIN_PEARSON_N} epochs. Published: "
                    + ("; ".join(f"{p.env} {p.value_text} ({p.qualifier}, {p.source_text})" for p in published_r)
                       or "none") + ".")]
    corr_rows: list[list[Inline]] = [
        [c.row["workload"], c.row["framework"], c.row["device"], str(c.row["repeat"]), c.test.text("r"),
         ctx.run_links([c.row])]
        for c in epoch_accuracy_correlations(ctx.campaign.rows, ctx.epochs)]
    blocks.append(Table(["workload", "framework", "device", "repeat", "Pearson", "run"], corr_rows)
                  if corr_rows else Para("No successful run: no correlation to compute."))

    blocks += [Heading(3, "Bootstrap intervals of the mean"),
               Para(f"Percentile bootstrap of the mean over successful repeats ({BOOTSTRAP_RESAMPLES:,} resamples, "
                    f"numpy seed {BOOTSTRAP_SEED}), beside the Student-t interval; both 95 %. With few repeats the "
                    "bootstrap interval is too narrow (it cannot see beyond the values observed): prefer the t one.")]
    keys = [k for k in ("workload", "framework", "device", "runner", "profile", "data_source")
            if k in ("workload", "framework", "device") or len({c.key[k] for c in cells}) > 1]
    boot_rows: list[list[Inline]] = [
        [*(b.cell.key[k] for k in keys), PAIRED_METRICS[b.metric], format_number(b.t_interval.mean, 4),
         _interval(b.t_interval), _interval(b.bootstrap), ctx.run_links(b.cell.ok_rows)]
        for b in bootstrap_intervals(cells)]
    blocks.append(Table([*keys, "metric", "mean", "t-interval", "bootstrap interval", "runs"], boot_rows)
                  if boot_rows else Para("No successful run: no interval to compute."))
    return blocks


# --- Hardware ------------------------------------------------------------------------------

def hardware_section(ctx: ReportContext) -> list[Block]:
    """The hardware behind each compared reference file (from reference/SOURCES.md) and this campaign's."""
    rows: list[list[Inline]] = [[h.file, h.source, h.hardware] for h in published_hardware()
                                if h.file in COMPARED_FILES]
    hosts: dict[str, list[dict]] = {}
    for run in ctx.campaign.runs.values():
        host = run.get("host") or {}
        gpus = host.get("gpus") or []
        gpu_text = ", ".join(str(g.get("name", g)) if isinstance(g, dict) else str(g) for g in gpus) or "no GPU"
        text = (f"{host.get('cpu_model', '?')}, {host.get('cpu_count', '?')} CPUs, {host.get('mem_total_mb', '?')} MB "
                f"RAM; {gpu_text}; {host.get('os', '?')}")
        hosts.setdefault(text, []).append(run)
    return [Heading(2, "Hardware of the published numbers"),
            Para("Copied from analysis/reference/SOURCES.md. Timings measured on this hardware are context "
                 "for ours, not targets."),
            Table(["reference file", "source", "hardware"], rows),
            Para("This campaign set ran on:"),
            Bullets([[f"{text} ({len(runs)} runs):", *ctx.runs_links(runs)] for text, runs in sorted(hosts.items())])]
