"""All-reduce time and bus bandwidth per message size (Shams et al.'s all-reduce; bench/collectives), from
each collective run's collective.csv, recomputed with the function the run used (bench.schema.summarize_collective)."""

from __future__ import annotations

from statistics import median
from typing import Any

from analysis.context import ReportContext
from analysis.document import Block, Heading, Inline, Para, Table
from analysis.stats import format_number
from bench import schema

HEADING = "All-reduce time and bus bandwidth (collective runs)"


def collective_sizes(run_dir: str, run: dict[str, Any]) -> list[dict[str, Any]]:
    """results.collective.sizes of one ok collective run, recomputed from its collective.csv (a
    SchemaError when the file is missing or malformed)."""
    ranks = run["results"]["collective"]["ranks"]
    rows = schema.read_collective(run_dir, ranks)
    if not rows:
        raise schema.SchemaError(f"{run_dir}: no {schema.COLLECTIVE_FILE}")
    return schema.summarize_collective(rows, ranks)


def _cells(ctx: ReportContext) -> tuple[dict[tuple, list[tuple[dict, dict]]], list[str]]:
    """{(framework, device, backend, ranks, floats): [(table row, size entry) per run]} and the runs whose
    file could not be read."""
    cells: dict[tuple, list[tuple[dict, dict]]] = {}
    unreadable = []
    for row in ctx.campaign.ok_rows:
        run = ctx.campaign.runs.get(row["run_id"]) or {}
        table = (run.get("results") or {}).get("collective")
        if not table:
            continue
        try:
            sizes = collective_sizes(row["run_dir"], run)
        except (OSError, schema.SchemaError) as exc:
            unreadable.append(f"{row['run_id']}: {exc}")
            continue
        for entry in sizes:
            key = (row["framework"], row["device"], table["backend"], table["ranks"], entry["floats"])
            cells.setdefault(key, []).append((row, entry))
    return dict(sorted(cells.items())), unreadable


def _row(ctx: ReportContext, key: tuple, found: list[tuple[dict, dict]]) -> list[Inline]:
    framework, device, backend, ranks, floats = key
    seconds = median(entry["median_s"] for _, entry in found)
    _, busbw = schema.bus_bandwidth(floats * 4, seconds, ranks)
    return [framework, device, backend, str(ranks), f"{floats:,}", format_number(floats * 4 / 1e6, 4),
            str(len(found)), format_number(seconds, 4), format_number(busbw / 1e9, 4),
            ctx.run_links(row for row, _ in found)]


def allreduce_section(ctx: ReportContext) -> list[Block]:
    """One row per framework, device, backend, rank count and size: the median over the runs of each run's
    median seconds and the bus bandwidth of that median. Nothing when the campaign has no collective run."""
    cells, unreadable = _cells(ctx)
    if not cells and not unreadable:
        return []
    blocks: list[Block] = [
        Heading(2, HEADING),
        Para("The framework's own all-reduce (SUM, float32, in place) between ranks the run started on one machine, "
             "after warm-up repetitions that are left out; each timed repetition's time is the slowest rank's, "
             "measured after a barrier (collective.csv in each run folder has every rank's time of every "
             "repetition, and these figures are recomputed from it). median s: the median over the runs of each "
             "run's median; busbw: nccl-tests' bus bandwidth of that time, algbw x 2 (n - 1) / n with algbw = "
             "bytes / time, in GB/s (10^9 bytes/s); with 2 ranks it equals algbw. Every run checked that each "
             "rank's result was the sum of the ranks' values. Shams et al. report these sizes (DeepBench's) over "
             "NVLink and PCIe GPUs; the paper gives no table the kit holds to compare with."),
    ]
    if cells:
        blocks.append(Table(["framework", "device", "backend", "ranks", "floats", "MB", "runs", "median s",
                             "busbw GB/s", "run folders"], [_row(ctx, k, v) for k, v in cells.items()]))
    if unreadable:
        blocks.append(Para("Left out (collective.csv unreadable): " + "; ".join(unreadable) + ".", "note"))
    return blocks
