"""ilkarman/DeepLearningFrameworks' published times beside the kit's: per benchmark (CIFAR-10 CNN training, ResNet-50
feature extraction, IMDB GRU training), each article framework's K80 and P100 seconds and the kit's, each also as a
ratio to one base framework on the same hardware, and how far the kit's order of frameworks agrees with each GPU's.
Shown only when the campaign holds runs of ilkarman's workloads (studies.ilkarman.tables)."""

from __future__ import annotations

from typing import Any

from analysis.context import ReportContext
from analysis.document import Block, Bullets, Heading, Inline, Para, Table
from analysis.stats import describe, format_number
from bench import switches
from campaign.study import load_study
from studies.ilkarman import tables as ilkarman

NOT_IN_KIT = "not in the kit"


def _cell(seconds: float | None, ratio: float | None) -> str:
    """'57 (1.12)': seconds and, in brackets, the ratio to the base framework."""
    if seconds is None:
        return "—"
    return format_number(seconds) + (f" ({format_number(ratio, 2)})" if ratio is not None else "")


def _context_text(context: dict[str, Any]) -> str:
    parts = [f"{k.replace('_', ' ')} {context[k]}" for k in ilkarman.CONTEXT_KEYS if k != "sweep"]
    return ", ".join(parts + ([context["sweep"]] if context.get("sweep") else []))


def _rows(ctx: ReportContext, group: ilkarman.Measured, base: str | None) -> list[list[Inline]]:
    """One row per article name timed on the benchmark (the file's order), then the kit's frameworks it never ran."""
    bench = group.benchmark.benchmark
    published = {gpu: ilkarman.published_by_framework(bench, gpu) for gpu in ilkarman.gpus()}
    mine, mine_ratio = group.seconds, ilkarman.ratios(group.seconds, base)
    by_name = {n.name: n for n in ilkarman.names()}
    rows: list[list[Inline]] = []
    listed = ilkarman.article_names(bench)
    for name in listed:
        fw = by_name[name].framework if name in by_name else None
        values = {gpu: ilkarman.published().get((bench, name, gpu)) for gpu in ilkarman.gpus()}
        cells = [_cell(v, _ratio(v, published[gpu].get(base or ""))) for gpu, v in values.items()]
        if fw is None:
            measured: Inline = f"{name}: {NOT_IN_KIT}"
        else:
            measured = _cell(mine.get(fw), mine_ratio.get(fw)) if fw in mine else "no runs in this context"
        links: Inline = (ctx.run_links(group.runs[fw]) or "—") if fw in group.runs else "—"
        rows.append([name, fw or "—", *cells, measured, links])
    covered = {by_name[n].framework for n in listed if n in by_name}
    for fw in sorted(set(mine) - covered):
        rows.append(["—", fw, *("not timed by the article" for _ in ilkarman.gpus()),
                     _cell(mine[fw], mine_ratio.get(fw)), ctx.run_links(group.runs[fw]) or "—"])
    return rows


def _ratio(value: float | None, base_value: float | None) -> float | None:
    return value / base_value if value is not None and base_value else None


def _group_blocks(ctx: ReportContext, group: ilkarman.Measured) -> list[Block]:
    base = ilkarman.base_framework(group)
    base_text = (f"Ratios (in brackets) divide by {base}'s time on the same hardware: the fastest framework measured "
                 "here that the article also timed." if base else
                 "No framework measured here was timed by the article: no ratios.")
    blocks: list[Block] = [
        Para(f"The kit's `{group.benchmark.workload}` ({_context_text(group.context)}); "
             f"{group.benchmark.note}. {base_text} Frameworks measured: {', '.join(sorted(group.seconds))}."),
        Table(["article's framework", "kit framework", *(f"{gpu}: s (÷ base)" for gpu in ilkarman.gpus()),
               "kit: s (÷ base)", "runs"], _rows(ctx, group, base)),
    ]
    blocks.append(Bullets([f"Order of frameworks, the kit's against the article's on the {gpu} (Kendall's tau): "
                           + ilkarman.order_agreement(group, gpu).text("tau", 2) for gpu in ilkarman.gpus()]))
    return blocks


def _kernel(ctx: ReportContext, axis: str, runs: list[dict[str, Any]]) -> str:
    """What the runs' records say ran the layers a switch changes (run.json device_used.kernels), distinct values."""
    layer = switches.SWITCHES[axis].acts_on or "conv2d"
    found = {str(((ctx.campaign.runs.get(r["run_id"]) or {}).get("device_used") or {}).get("kernels", {}).get(layer))
             for r in runs}
    found.discard("None")
    return "; ".join(sorted(found)) or "not recorded"


def _switch_blocks(ctx: ReportContext, rows: list[dict[str, Any]]) -> list[Block]:
    """Each switch's sweep: the mean training time at each value, as a ratio to the switch's default (its first
    value), and the kernel each value's runs recorded."""
    table: list[list[Inline]] = []
    for axis, (key, by_value) in ilkarman.switch_groups(rows):
        means = {v: describe(r["training_time_s"] for r in runs).mean for v, runs in by_value.items()}
        base = means.get(switches.SWITCHES[axis].values[0])
        for value, runs in by_value.items():
            ratio = means[value] / base if means[value] is not None and base else None
            table.append([axis, key["workload"], key["framework"], key["device"], value,
                          _cell(means[value], ratio), _kernel(ctx, axis, runs), ctx.run_links(runs) or "—"])
    if not table:
        return [Heading(3, "Performance switches"),
                Para("Not measured: no run of a switch's sweep in this campaign (make ilkarman-rnn-cpu, "
                     "ilkarman-layout-cpu, ilkarman-autotune-gpu).")]
    return [Heading(3, "Performance switches"),
            Para("The article's lessons as sweeps (bench/switches.py): the recurrent kernel (fused operator or its "
                 "cell stepped over time), the convolutions' memory layout, and on a GPU cuDNN autotuning. Training "
                 "time in seconds; in brackets the ratio to the switch's default (its first value, what every other "
                 "run does); the kernel as each run's record names it: where two values record the same kernel (Keras "
                 "on a CPU has no fused one), their difference is run-to-run noise."),
            Table(["switch", "workload", "framework", "device", "value", "training s (÷ default)", "kernel recorded",
                   "runs"], table)]


def ilkarman_section(ctx: ReportContext) -> list[Block]:
    """The article's times (ilkarman_dlf.csv) beside the kit's runs of its workloads; nothing when the campaign
    holds no run of them."""
    rows = ilkarman.ilkarman_rows(ctx.campaign.rows)
    if not rows:
        return []
    groups = ilkarman.measured(rows)
    failed = [r for r in rows if r["status"] != "ok"]
    renamed = "; ".join((f"{n.name} -> {n.framework}" + (f" ({n.note})" if n.note else "")) if n.framework
                        else f"{n.name}: {n.note or NOT_IN_KIT}" for n in ilkarman.names())
    blocks: list[Block] = [
        Heading(2, f"{load_study(ilkarman.STUDY).title}: the article's times beside the kit's"),
        Para("Published: studies/ilkarman/reference/ilkarman_dlf.csv, each framework's time on "
             f"{' and '.join(ilkarman.gpus())} GPUs (CUDA 8, cuDNN 6). The kit's device and profile are not the "
             "article's, so the seconds do not compare across the table; the ratios to one base framework and the "
             f"order of the frameworks do. The article's names and the kit's frameworks "
             f"(studies/ilkarman/reference/ilkarman_frameworks.csv): {renamed}."),
    ]
    if failed:
        blocks.append(Para(f"{len(failed)} runs of ilkarman's workloads failed and are not in these tables.", "note"))
    for bench in ilkarman.benchmarks():
        blocks.append(Heading(3, bench.title))
        mine = [g for g in groups if g.benchmark == bench]
        if not mine:
            blocks.append(Para(f"Not measured: no ok run of `{bench.workload}` in this campaign."))
        for group in mine:
            blocks += _group_blocks(ctx, group)
    return blocks + _switch_blocks(ctx, rows)


# The report sections this study adds (studies.sections(), placed by analysis.report.sections()).
SECTIONS = (ilkarman_section,)
