"""What a report is built from (the campaign, its cells, figures, epoch records) and where it goes."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.document import Link
from analysis.figures import FigureFile
from analysis.runs import Campaign
from analysis.summary import CellSummary


@dataclass
class ReportContext:
    """What the report is built from, and where it is written (for relative links)."""

    campaign: Campaign
    cells: list[CellSummary]
    figures: list[FigureFile]
    out_dir: Path
    # metrics.jsonl records per run_id (per-epoch times and accuracies for the claims and Pearson).
    epochs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    generated_at: str = field(
        default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))

    def rel(self, path: str | Path) -> str:
        """path relative to the report's folder, with forward slashes."""
        return Path(os.path.relpath(Path(path).resolve(), self.out_dir.resolve())).as_posix()

    def runs_links(self, runs: Iterable[dict]) -> list[Link]:
        """run_links for run.json objects (looked up in the run table by run_id)."""
        return self.id_links(run["run_id"] for run in runs)

    def id_links(self, run_ids: Iterable[str]) -> list[Link]:
        """run_links for run ids (ids not in the run table are skipped; repeats are linked once)."""
        by_id = {r["run_id"]: r for r in self.campaign.rows}
        return self.run_links(by_id[i] for i in dict.fromkeys(run_ids) if i in by_id)

    def run_links(self, rows: Iterable[dict[str, Any]]) -> list[Link]:
        """One link per run: its id (marked when failed) to its run dir."""
        return [Link(r["run_id"] + ("" if r["status"] == "ok" else " (failed)"), self.rel(r["run_dir"]))
                for r in rows]
