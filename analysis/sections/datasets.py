"""The data every run read: each dataset's prepared arrays and the raw files they came from, with how
each raw file was verified (the manifest's sha256, or the one recorded on its first download)."""

from __future__ import annotations

from analysis.context import ReportContext
from analysis.document import Block, Heading, Inline, Para, Table
from bench.request import NO_DATA

# What a run.json without dataset.raw_files (written before they were recorded) shows instead.
NOT_RECORDED = "not recorded in run.json (an older run)"


def _rows_of(run: dict) -> list[tuple[str, ...]]:
    """(dataset, source, arrays sha256, raw file, raw sha256, how verified) per raw file of one run."""
    data = run.get("dataset") or {}
    if data.get("source") == NO_DATA:  # a collective's run: it read no data
        return []
    key = (str(data.get("name") or "?"), str(data.get("source") or "?"), str(data.get("sha256") or "?"))
    raw_files = data.get("raw_files")
    recipe = data.get("generated")
    if recipe:  # random inputs made in the run (bench/generated.py): no raw file, the recipe instead
        made = (f"{recipe['train_examples']} + {recipe['test_examples']} rows of {recipe['input_shape']}, "
                f"{recipe['num_classes']} classes, seed {recipe['seed']}")
        return [(*key, "—", "—", f"generated in the run ({recipe['method']}: {made})")]
    if not raw_files:
        return [(*key, "—", "—", NOT_RECORDED)]
    return [(*key, name, entry["sha256"], entry["verified"]) for name, entry in sorted(raw_files.items())]


def datasets_section(ctx: ReportContext) -> list[Block]:
    """One row per dataset, source, prepared arrays and raw file, as the runs' run.json files record them."""
    groups: dict[tuple[str, ...], list[dict]] = {}
    for run in ctx.campaign.runs.values():
        for row in _rows_of(run):
            groups.setdefault(row, []).append(run)
    rows: list[list[Inline]] = [[*row, ctx.runs_links(runs)] for row, runs in sorted(groups.items())]
    return [Heading(2, "Datasets"),
            Para("The prepared arrays each run read (their sha256 is part of the run's id) and the raw files they "
                 "were prepared from, with how each raw file was verified: against the manifest's published sha256, "
                 "or, for a file with no published digest, by its size on the first download, whose sha256 was then "
                 "recorded and every later copy held to it ('sha256 recorded on first download, size verified')."),
            Table(["dataset", "source", "arrays sha256", "raw file", "raw sha256", "verified", "runs"], rows)]
