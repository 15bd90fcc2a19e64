"""What transfers across hardware: framework orders vs the paper, times relative to the fastest, speedups."""

from __future__ import annotations

from analysis.claims import INSUFFICIENT
from analysis.context import ReportContext
from analysis.document import Block, Heading, Inline, Para, Table
from analysis.reference import METRIC_COLUMNS
from analysis.sections.columns import group_columns
from analysis.stats import MIN_KENDALL_N, format_number
from analysis.transfer import ACCURACY_TOLERANCE_PP, order_comparisons, relative_times, speedups


def transfer_section(ctx: ReportContext) -> list[Block]:
    """Framework orders vs the paper (Kendall tau), times relative to the fastest, GPU/CPU speedups."""
    cells = ctx.cells
    cols = group_columns(cells)
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
    era = ["era"] if "era" in cols else []
    for s in speedups(cells):
        published = "; ".join(f"{p.value:.3g}× ({p.qualifier}; {p.source})" for p in s.published) or "—"
        sp_rows.append([s.cpu.key["workload"], s.cpu.key["framework"], *(s.cpu.key[k] for k in era),
                        format_number(s.cpu.estimates[col].mean, 4), format_number(s.gpu.estimates[col].mean, 4),
                        "—" if s.value is None else f"{s.value:.3g}×", published, ctx.id_links(s.run_ids)])
    if sp_rows:
        blocks += [Para("Speedup = mean CPU training time / mean GPU training time of the same workload and "
                        "framework (same profile and data)."),
                   Table(["workload", "framework", *era, "CPU mean (s)", "GPU mean (s)", "speedup", "published",
                          "runs"], sp_rows)]
    else:
        blocks.append(Para("No workload and framework was run on both CPU and GPU in this campaign set. Give a "
                           "CPU and a GPU campaign together (--campaign twice) to get speedups."))
    return blocks
