"""Shi et al.'s seconds per mini-batch beside the kit's: per network, tool and CPU thread count (Table 7, both
of the study's CPU machines, each time also as a ratio to the tool's 1-thread time), and per GPU (Table 7's GPU
rows, Table 8's 1, 2 and 4 GPUs). Shown only when the campaign holds runs of Shi's workloads (studies.shi.tables)."""

from __future__ import annotations

from typing import Any

from analysis import sweeps
from analysis.context import ReportContext
from analysis.document import Block, Bullets, Heading, Inline, Para, Table
from analysis.stats import format_number
from campaign.specs import known_workloads
from campaign.study import load_study
from studies.shi import tables as shi

NOT_IN_KIT = "not in the kit"


def _seconds(value: float | None, ratio: float | None = None, with_ratio: bool = True) -> str:
    """'1.149 (0.46)': seconds per mini-batch and, in brackets, the ratio to the 1-thread time."""
    if value is None:
        return "—"
    text = format_number(value, 4)
    return f"{text} ({format_number(ratio, 2)})" if with_ratio and ratio is not None else text


def _cores_text(rows: list[dict[str, Any]]) -> str:
    cores = sorted({int(r["physical_cores"]) for r in rows if r.get("physical_cores") is not None})
    if not cores:
        return "the kit's host: physical cores not recorded (runs before run.json host.cpu_physical_cores)"
    counts = " or ".join(str(c) for c in cores)
    return f"the kit's host{'s' if len(cores) > 1 else ''}: {counts} physical cores (run.json host.cpu_physical_cores)"


def _context_text(context: dict[str, Any]) -> str:
    parts = [f"{k.replace('_', ' ')} {context[k]}" for k in ("era", "runner", "profile", "data_source")]
    parts.append(f"mini-batch {context['batch_size']}")
    if context.get("sweep"):
        parts.append(context["sweep"])
    return ", ".join(parts)


def _tool_rows(ctx: ReportContext, network: str, series: dict[str, shi.MeasuredSeries],
               measured_any: set[str]) -> list[list[Inline]]:
    """One row per tool and thread count (published on either machine, or measured), tools in Shi's order, then
    the kit's frameworks the study did not run."""
    machines = shi.cpu_hardware()
    rows: list[list[Inline]] = []
    known = {t.framework for t in shi.tools() if t.framework}
    extra = [shi.Tool("—", fw, "not one of the study's tools") for fw in sorted(set(series) - known)]
    for tool in [*shi.tools(), *extra]:
        published = {hw: shi.published_cpu(network, tool.tool, hw) for hw in machines}
        ratios = {hw: shi.ratio_to_one_thread(times) for hw, times in published.items()}
        s = series.get(tool.framework or "")
        mine = s.seconds if s else {}
        mine_ratio = shi.ratio_to_one_thread(mine)
        threads = sorted({n for times in published.values() for n in times} | set(mine))
        for n in threads:
            if tool.framework is None:
                measured: Inline = f"{tool.tool}: {NOT_IN_KIT}"
            elif s is None:
                measured = ("no runs in this campaign" if tool.framework not in measured_any
                            else "no runs in this context")
            else:
                measured = _seconds(mine.get(n), mine_ratio.get(n))
            links: Inline = ctx.run_links(s.runs.get(n, [])) if s else "—"
            rows.append([tool.tool, tool.framework or "—", str(n),
                         *(_seconds(published[hw].get(n), ratios[hw].get(n)) for hw in machines),
                         measured, links or "—"])
    return rows


def _cpu_blocks(ctx: ReportContext, all_series: list[shi.MeasuredSeries]) -> list[Block]:
    cpu = [s for s in all_series if s.device == "cpu"]
    machines = shi.machines()
    heads = [f"{machines[hw].name} ({machines[hw].physical_cores} cores): s (÷ 1 thread)"
             if hw in machines else f"{hw}: s (÷ 1 thread)" for hw in shi.cpu_hardware()]
    blocks: list[Block] = [Heading(3, "CPU: seconds per mini-batch by thread count")]
    missing: list[Inline] = []
    for network, workload in shi.networks().items():
        mine = [s for s in cpu if s.workload == workload]
        if not mine:
            missing.append(f"{network}: " + (f"no CPU runs of {workload} in this campaign"
                                             if workload in known_workloads() else "no workload of the kit runs it"
                                             + (f" yet (shi2016_networks.csv names {workload}, which has no spec)"
                                                if workload else " yet")))
            continue
        measured_any = {s.framework for s in mine}
        contexts: dict[tuple, dict[str, shi.MeasuredSeries]] = {}
        for s in mine:
            contexts.setdefault(s.context_key(), {})[s.framework] = s
        for by_fw in contexts.values():
            first = next(iter(by_fw.values()))
            blocks.append(Para(f"{network} (the kit's `{workload}`; {_context_text(first.context)}; the study's "
                               f"mini-batch {shi.published_minibatch(network)}). Frameworks measured: "
                               f"{', '.join(sorted(by_fw))}."))
            blocks.append(Table(["Shi's tool", "kit framework", "threads", *heads,
                                 "kit: s (÷ 1 thread)", "runs"],
                                _tool_rows(ctx, network, by_fw, measured_any)))
    if missing:
        blocks += [Para("Shi's networks with no measured seconds per mini-batch on CPU here (their published "
                        "numbers: studies/shi/reference/shi2016_table7.csv):"), Bullets(missing)]
    return blocks


def _gpu_name(ctx: ReportContext, rows: list[dict[str, Any]]) -> str:
    names = set()
    for r in rows:
        run = ctx.campaign.runs.get(r["run_id"]) or {}
        gpu = (run.get("device_used") or {}).get("gpu") or {}
        host_gpus = (run.get("host") or {}).get("gpus") or [{}]
        names.add(gpu.get("name") or host_gpus[0].get("name") or "GPU (name not recorded)")
    return " / ".join(sorted(names))


def _gpus_of(series: shi.MeasuredSeries) -> int:
    """The GPUs a GPU series ran on: its data-parallel ranks (the sweep's `ranks`, one GPU each), else 1."""
    ranks = sweeps.point(series.rows[0]).get("ranks")
    return 1 if ranks is None else int(ranks)


def _by_gpus(series: list[shi.MeasuredSeries]) -> dict[int, list[dict[str, Any]]]:
    """One framework's GPU runs of one network by GPU count (shi-gpu's and shi-multigpu's 1-GPU runs together)."""
    found: dict[int, list[dict[str, Any]]] = {}
    for s in series:
        found.setdefault(_gpus_of(s), []).extend(s.rows)
    return dict(sorted(found.items()))


def _mean_s(rows: list[dict[str, Any]]) -> float:
    return sum(float(r[sweeps.SECONDS_PER_MINIBATCH]) for r in rows) / len(rows)


def _ratio(value: float | None, base: float | None) -> float | None:
    return value / base if value is not None and base else None


def _gpu_blocks(ctx: ReportContext, all_series: list[shi.MeasuredSeries]) -> list[Block]:
    gpu = [s for s in all_series if s.device == "gpu"]
    blocks: list[Block] = [Heading(3, "GPU: seconds per mini-batch")]
    if not gpu:
        return blocks + [Para("Not measured: this campaign holds no GPU run of Shi's networks with the iterations "
                              "protocol (`make shi-gpu`, `make shi-multigpu`). Table 7's GPU rows and Table 8 (1, 2 "
                              "and 4 GPUs) stay in studies/shi/reference/shi2016_table7.csv and shi2016_table8.csv.")]
    gpus = shi.gpu_hardware()
    machines = shi.machines()
    counts = sorted({p.gpus for p in shi.table8() if p.gpus is not None})
    measured_counts = sorted({_gpus_of(s) for s in gpu})
    blocks.append(Para("Table 7: one GPU of each kind; Table 8: 1, 2 and 4 GPUs, data-parallel synchronous SGD "
                       "(its mini-batch can differ from Table 7's: given per network, and split between the GPUs). "
                       "The kit's runs over several GPUs are `make shi-multigpu`'s (Table 8's mini-batch split "
                       "between data-parallel ranks, one GPU each). In brackets: the time divided by the same "
                       "tool's 1-GPU time in the same table, which is what transfers across hardware."))
    for network, workload in shi.networks().items():
        mine: dict[str, list[shi.MeasuredSeries]] = {}
        for s in gpu:
            if s.workload == workload:
                mine.setdefault(s.framework, []).append(s)
        if not mine:
            continue
        table8 = [p for p in shi.table8() if p.network == network]
        batch8 = table8[0].minibatch if table8 else None
        contexts = sorted({_context_text(s.context) for ss in mine.values() for s in ss})
        blocks.append(Para(f"{network} (the kit's `{workload}`; {'; '.join(contexts)}; the study's GPU mini-batch "
                           f"{shi.published_minibatch(network, gpu=True)}"
                           + (f", Table 8's {batch8}" if batch8 else ", not in Table 8") + ")."))
        rows: list[list[Inline]] = []
        known = {t.framework for t in shi.tools() if t.framework}
        extra = [shi.Tool("—", fw, "") for fw in sorted(set(mine) - known)]
        for tool in [*shi.tools(), *extra]:
            t7 = {p.hardware: p.seconds for p in shi.table7()
                  if (p.network, p.tool) == (network, tool.tool) and p.threads is None}
            t8 = {p.gpus: p.seconds for p in table8 if p.tool == tool.tool}
            by_gpus = _by_gpus(mine.get(tool.framework or "", []))
            kit = {n: _mean_s(rs) for n, rs in by_gpus.items()}
            if tool.framework is None:
                measured = [f"{tool.tool}: {NOT_IN_KIT}"] + ["—"] * (len(measured_counts) - 1)
            elif not by_gpus:
                measured = ["no runs in this campaign"] + ["—"] * (len(measured_counts) - 1)
            else:  # any thread count
                measured = [_seconds(kit.get(n), _ratio(kit.get(n), kit.get(1)), n > 1) for n in measured_counts]
                measured[0] += f" on {_gpu_name(ctx, [r for rs in by_gpus.values() for r in rs])}"
            rows.append([tool.tool, tool.framework or "—", *(_seconds(t7.get(hw), with_ratio=False) for hw in gpus),
                         *(_seconds(t8.get(n), _ratio(t8.get(n), t8.get(1)), n > 1) for n in counts), *measured,
                         ctx.run_links([r for rs in by_gpus.values() for r in rs]) if by_gpus else "—"])
        blocks.append(Table(["Shi's tool", "kit framework",
                             *(f"{machines[hw].name if hw in machines else hw}: s" for hw in gpus),
                             *(f"Table 8, {n} GPU{'s' if n > 1 else ''}: s" for n in counts),
                             *(f"kit, {n} GPU{'s' if n > 1 else ''}: s" for n in measured_counts), "runs"], rows))
    missing = [n for n, w in shi.networks().items() if not any(s.workload == w for s in gpu)]
    if missing:
        blocks.append(Para(f"No GPU runs here of: {', '.join(missing)}."))
    return blocks


def shi_section(ctx: ReportContext) -> list[Block]:
    """Shi et al.'s Table 7 (CPU: both machines, per thread count, with ratios to 1 thread; GPU) and Table 8
    beside the kit's seconds per mini-batch; nothing when the campaign holds no run of Shi's workloads."""
    rows = shi.shi_rows(ctx.campaign.rows)
    if not rows:
        return []
    all_series = shi.measured_series(rows)
    machines = "; ".join(f"{m.name} ({m.physical_cores} physical cores, threads {m.threads_tested})"
                         for m in shi.machines().values() if m.physical_cores is not None)
    tools = "; ".join(f"{t.tool} -> {t.framework}" + (f" ({t.note})" if t.note else "") if t.framework
                      else f"{t.tool}: {t.note or NOT_IN_KIT}" for t in shi.tools())
    cpu_rows = [r for r in rows if r["device"] == "cpu"]
    blocks: list[Block] = [
        Heading(2, f"{load_study(shi.STUDY).title}: seconds per mini-batch"),
        Para("Published: the study's Table 7 (seconds per mini-batch, forward, backward and update, per tool, "
             "network and CPU thread count or GPU) and Table 8 (1, 2 and 4 GPUs). Measured: the mean over "
             f"successful repeats of each run's mean seconds per measured mini-batch ({shi.MEASURED_COLUMN}; the "
             "iterations protocol, warm-up left out). In brackets: the time divided by the same tool's (or "
             "framework's) 1-thread time on the same machine: below 1 is faster; — where the paper prints no number or "
             "the campaign has no run. Tools: " + tools + ". The "
             f"study's CPU machines: {machines}; " + _cores_text(cpu_rows) + "."),
    ]
    epoch_only = [r for r in rows if r["status"] == "ok" and sweeps.minibatch_seconds(r) is None]
    if epoch_only:
        blocks.append(Para(f"{len(epoch_only)} successful runs of Shi's workloads used the epoch protocol: they "
                           "have no seconds per mini-batch and are not shown here (`make shi-cpu` / "
                           "`make shi-gpu` time mini-batches).", "note"))
    return blocks + _cpu_blocks(ctx, all_series) + _gpu_blocks(ctx, all_series)


# The report sections this study adds (studies.sections(), placed by analysis.report.sections()).
SECTIONS = (shi_section,)
