"""Statistics as the paper did them: Wilcoxon between frameworks, Pearson epoch vs accuracy, bootstrap intervals."""

from __future__ import annotations

from analysis.claims import INSUFFICIENT
from analysis.context import ReportContext
from analysis.document import Block, Heading, Inline, Para, Table
from analysis.reference import all_published
from analysis.sections.columns import cell_columns, group_columns
from analysis.significance import (
    BOOTSTRAP_METRICS,
    PAIRED_METRICS,
    bootstrap_intervals,
    epoch_accuracy_correlations,
    framework_pair_tests,
)
from analysis.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    MIN_PEARSON_N,
    SIGNIFICANCE_LEVEL,
    Estimate,
    format_number,
    min_wilcoxon_pairs,
)


def _interval(est: Estimate) -> str:
    if est.ci_low is None or est.ci_high is None:
        return f"{INSUFFICIENT} (n={est.n})"
    return f"[{format_number(est.ci_low, 4)}, {format_number(est.ci_high, 4)}]"


def statistics_section(ctx: ReportContext) -> list[Block]:
    """Wilcoxon signed-rank tests between frameworks, Pearson epoch vs accuracy, bootstrap intervals."""
    cells = ctx.cells
    cols = group_columns(cells)
    need = min_wilcoxon_pairs(SIGNIFICANCE_LEVEL)
    blocks: list[Block] = [
        Heading(2, "Statistics as the paper did them"),
        Heading(3, "Wilcoxon signed-rank tests between frameworks"),
        Para(f"Per workload, device and metric, every pair of frameworks; repeats paired by repeat index (both "
             f"runs successful); scipy.stats.wilcoxon, two-sided, exact; significant at p < {SIGNIFICANCE_LEVEL:g}. "
             f"With fewer than {need} non-zero pairs no p-value can fall below {SIGNIFICANCE_LEVEL:g} (the "
             f"smallest exact p is 2/2^n), so such rows say {INSUFFICIENT}, not 'no difference'."),
        Para(f"Metrics, in this order: {', '.join(PAIRED_METRICS.values())}. The resource means are tested as "
             "DLBench tested CPU use and memory (Sec 5.3) and GPU use (Sec 5.5.3); CPU use is DLBench's Eq. 1-2 "
             "share of the cores, memory the training process's mean resident set. A metric a group does not "
             "measure (GPU use on the CPU, or a run without a GPU monitor) has no row."),
    ]
    order = list(PAIRED_METRICS)
    tests = sorted(framework_pair_tests(cells), key=lambda t: order.index(t.metric))  # stable: groups stay in order
    rows: list[list[Inline]] = [
        [*(t.group[k] for k in cols), PAIRED_METRICS[t.metric], f"{t.framework_a} vs {t.framework_b}",
         ", ".join(map(str, t.repeats)) or "none", t.test.text("W") if t.test.sufficient else "—", t.verdict(),
         ctx.id_links(t.run_ids)]
        for t in tests]
    blocks.append(Table([*cols, "metric", "frameworks", "repeats paired", "statistic", "verdict", "runs"], rows)
                  if rows else Para("No group holds two frameworks: nothing to compare."))

    published_r = [p for p in all_published() if p.metric == "pearson_epochs_accuracy"]
    blocks += [Heading(3, "Pearson correlation: epoch vs test accuracy"),
               Para(f"Per successful run, scipy.stats.pearsonr of epoch number against test accuracy after that "
                    f"epoch (metrics.jsonl); needs at least {MIN_PEARSON_N} epochs. Published: "
                    + ("; ".join(f"{p.env} {p.value_text} ({p.qualifier}, {p.source_text})" for p in published_r)
                       or "none") + ".")]
    era = ["era"] if "era" in cell_columns(cells) else []
    corr_rows: list[list[Inline]] = [
        [c.row["workload"], c.row["framework"], *(c.row[k] for k in era), c.row["device"], str(c.row["repeat"]),
         c.test.text("r"), ctx.run_links([c.row])]
        for c in epoch_accuracy_correlations(ctx.campaign.rows, ctx.epochs)]
    blocks.append(Table(["workload", "framework", *era, "device", "repeat", "Pearson", "run"], corr_rows)
                  if corr_rows else Para("No successful run: no correlation to compute."))

    blocks += [Heading(3, "Bootstrap intervals of the mean"),
               Para(f"Percentile bootstrap of the mean over successful repeats ({BOOTSTRAP_RESAMPLES:,} resamples, "
                    f"numpy seed {BOOTSTRAP_SEED}), beside the Student-t interval; both 95 %. With few repeats the "
                    "bootstrap interval is too narrow (it cannot see beyond the values observed): prefer the t one. "
                    f"For {' and '.join(PAIRED_METRICS[m] for m in BOOTSTRAP_METRICS)} only: the resource means "
                    "keep their t-interval ('Comparison with the published numbers', tables/summary.csv), and a "
                    "bootstrap beside each would make this table two and a half times as long to say the same.")]
    keys = cell_columns(cells)
    boot_rows: list[list[Inline]] = [
        [*(b.cell.key[k] for k in keys), PAIRED_METRICS[b.metric], format_number(b.t_interval.mean, 4),
         _interval(b.t_interval), _interval(b.bootstrap), ctx.run_links(b.cell.ok_rows)]
        for b in bootstrap_intervals(cells)]
    blocks.append(Table([*keys, "metric", "mean", "t-interval", "bootstrap interval", "runs"], boot_rows)
                  if boot_rows else Para("No successful run: no interval to compute."))
    return blocks
