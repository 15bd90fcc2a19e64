"""Paper era vs current era: where both eras ran the same workload, their results side by side, and what each
era's runs ran on (image, base, Python build, BLAS kernels: analysis.eras), read from their run.json."""

from __future__ import annotations

from analysis.context import ReportContext
from analysis.document import Block, Heading, Inline, Para, Table
from analysis.eras import (
    ERA_ORDER,
    ERA_PAIR_KEYS,
    EraPair,
    base_text,
    blas_text,
    cpu_flags_text,
    era_pairs,
    missing_era_commands,
    outside_image_text,
    python_text,
    pytorch_paper_note,
    unpaired_cells,
)
from analysis.runs import CURRENT_ERA, PAPER_ERA
from analysis.sections.comparison import measured_text
from analysis.sections.environment import distinct, environment_text
from analysis.transfer import ACCURACY_TOLERANCE_PP

# (run-table column, heading, significant digits), each shown for the paper era, then the current era.
_SIDE_BY_SIDE = (
    ("test_accuracy", "accuracy (%)", 4),
    ("training_time_s", "time (s)", 3),
    ("cpu_util_mean_pct", "CPU util. mean (%)", 3),
    ("mem_mean_mb", "memory mean (MB)", 3),
    ("gpu_util_mean_pct", "GPU util. mean (%)", 3),
)


def _commands_text(ctx: ReportContext) -> str:
    commands = missing_era_commands(ctx.cells)
    return "; ".join(f"`{c}`" for c in commands)


def _version_text(pair: EraPair, era: str) -> str:
    cell = pair.paper if era == PAPER_ERA else pair.current
    rows = cell.rows
    return (f"{distinct(r['framework_version'] for r in rows)} (Python {distinct(r['python'] for r in rows)}, "
            f"{cell.key['runner']})")


def era_comparison_section(ctx: ReportContext) -> list[Block]:
    """Per framework and workload run in both eras: versions, accuracy, time and resources of each era
    with their intervals, time current/paper, accuracy difference, and what changed."""
    pairs = era_pairs(ctx.cells)
    blocks: list[Block] = [Heading(2, "Paper era vs current era")]
    if not pairs:
        commands = _commands_text(ctx)
        return blocks + [Para("No workload ran in both eras in this campaign"
                              + (f"; the other era's runs of the same workloads: {commands}." if commands else "."))]
    keys = [k for k in ERA_PAIR_KEYS if k in ("framework", "workload") or len({p.key[k] for p in pairs}) > 1]
    shown = [m for m in _SIDE_BY_SIDE if m[0] != "gpu_util_mean_pct"
             or any(c.estimates[m[0]].n for p in pairs for c in (p.paper, p.current))]
    rows: list[list[Inline]] = []
    for pair in pairs:
        values: list[Inline] = []
        for column, _, digits in shown:
            values += [measured_text(pair.paper, pair.paper.estimates[column], digits),
                       measured_text(pair.current, pair.current.estimates[column], digits)]
            if column == "test_accuracy":
                diff = pair.accuracy_diff_pp
                values.append("—" if diff is None else f"{diff:+.2f}")
            elif column == "training_time_s":
                r = pair.time_ratio
                values.append("—" if r is None else f"{r:.2f}×")
        rows.append([*(pair.key[k] for k in keys), _version_text(pair, PAPER_ERA), _version_text(pair, CURRENT_ERA),
                     *values, pair.change_text(), ctx.id_links(pair.run_ids)])
    headers = [*keys, "paper-era version", "current-era version"]
    for column, title, _ in shown:
        headers += [f"paper {title}", f"current {title}"]
        headers += (["Δ accuracy (pp)"] if column == "test_accuracy" else
                    ["time current/paper"] if column == "training_time_s" else [])
    blocks += [
        Para("Each row is one experiment (framework, workload, device, profile and data source) run in both eras: "
             "the paper era with the study's exact framework versions, the current era with today's releases. "
             "Values are means over successful repeats ± half-width of the 95 % Student-t interval (n), as in the "
             "comparison with the published numbers. Time current/paper below 1 means the current versions train "
             "faster; Δ accuracy = current − paper, 'within' when no more than "
             f"{ACCURACY_TOLERANCE_PP:g} percentage points (analysis.transfer.ACCURACY_TOLERANCE_PP). 'What "
             "changed' says it in words: the current era's time and accuracy relative to the paper era's."),
        Table([*headers, "what changed", "runs"], rows),
    ]
    test_env = outside_image_text(r for p in pairs for r in p.paper.rows)
    if test_env:
        blocks.append(Para(f"Paper-era side: {test_env}, not the study's setup (see 'Where the paper-era runs "
                           "ran').", "note"))
    alone = unpaired_cells(ctx.cells)
    if alone:
        blocks.append(Para(f"Run in one era only, so not in the table ({len(alone)}): "
                           + ", ".join(f"{c.key['framework']} {c.key['workload']} ({c.key['era']})" for c in alone)
                           + f". The other era's runs: {_commands_text(ctx)}."))
    torch = pytorch_paper_note(r for c in ctx.cells if c.key["era"] in ERA_ORDER for r in c.rows)
    if torch:
        blocks.append(Para(torch, "note"))
    return blocks + setups(ctx, pairs)


def setups(ctx: ReportContext, pairs: list[EraPair]) -> list[Block]:
    """What the compared runs ran on, per era, framework and runner, from each one's run.json: the image (digest)
    or locked environment, the base the image was built on, the Python and its build, the BLAS and its kernels,
    the CPU's features."""
    groups: dict[tuple[str, ...], list[dict]] = {}
    for run_id in dict.fromkeys(i for p in pairs for i in p.run_ids if i in ctx.campaign.runs):
        run = ctx.campaign.runs[run_id]
        cfg = run["config"]
        key = (cfg["era"], cfg["framework"], cfg["runner"], environment_text(run.get("environment") or {}) or "—",
               base_text(run), python_text(run), blas_text(run), cpu_flags_text(run))
        groups.setdefault(key, []).append(run)
    order = {era: i for i, era in enumerate(ERA_ORDER)}
    rows: list[list[Inline]] = [[*key, ctx.runs_links(runs)]
                                for key, runs in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][1:]))]
    return [
        Heading(3, "What each era's runs ran on"),
        Para("From each run's own run.json: the image it ran in (its digest) or the locked environment, the base the "
             "image was built on (`make base ERA=paper` records it in the image; the registry's python:3.6.15 image "
             "carries no record), the Python and how it was built (PGO: profile-guided optimization, which the "
             "registry's python:3.6.15 image was built with), the BLAS that did the work with the kernels it chose "
             "for this CPU (OpenBLAS's core), and the CPU features such kernels are chosen by. Time current/paper "
             "holds for these setups: a Python built without PGO, or another BLAS core, changes it."),
        Table(["era", "framework", "runner", "image digest / env lock", "base", "Python (build)", "BLAS (kernels)",
               "CPU features", "runs"], rows),
    ]
