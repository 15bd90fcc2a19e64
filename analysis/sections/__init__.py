"""The report's shared sections, one module per topic; analysis.report.sections() lists them in reading order,
with each study's own (studies/<study>/section.py's SECTIONS) among them.

Rule: every section is a builder `(ctx: ReportContext) -> list[Block]`: it reads only what the report
is built from (analysis.context) and arranges the results of the modules that compute them
(summary, claims and studies, transfer, significance, reference) into headings, paragraphs, tables
and figures. A section that needs more (e.g. the claims' outcomes) derives it from ctx, so every
builder has the same signature and analysis.report.sections() alone decides the order.

    overview        header (title, banners), unreadable runs and notes, runs overview
    scoreboard      measured vs published accuracy and time per cell: the figure and table opening the report
    comparison      comparison with the published numbers, resource use
    allreduce       all-reduce seconds and bus bandwidth per size of collective runs (Shams et al.)
    scaling         data-parallel images per ms, speedup and efficiency per rank count of ranks sweeps (Shams et al.)
    eras            paper era vs current era: the same workloads side by side
    claims          what reproduced: the claims the campaign decides, those it cannot (and what would), the tests
    contention      runs whose training absorbed other load, and the verdicts resting on them
    transfer        what transfers across hardware (orders, relative times, speedups)
    statistics      the paper's statistics (Wilcoxon, Pearson, bootstrap)
    environment     workload settings, environment, hardware of the published numbers
    datasets        the data the runs read: prepared arrays, raw files and how each was verified
    departures      where the paper-era setup departs from the paper, where paper-era runs ran
    not_reproduced  published numbers with no measured counterpart
    outputs         figures and the tables the report was built from
    columns         which key columns the sections' tables show (shared helper)
"""

from __future__ import annotations

from collections.abc import Callable

from analysis.context import ReportContext
from analysis.document import Block

Section = Callable[[ReportContext], list[Block]]
