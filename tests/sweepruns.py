"""Smoke runs at the points of a one-axis study sweep, planned as a study experiment plans them and written as
request files, for the slow tests that run the entrypoint at each point (the blas axis, the performance switches)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench import request
from campaign import plan
from campaign.runners.local import LocalRunner
from campaign.study import Experiment

REPO = Path(__file__).resolve().parents[1]


def data_root(tmp_path: Path) -> Path:
    """The data root sweep_requests prepares its data under (the requests' data.path is relative to it)."""
    return tmp_path / "data"


def sweep_requests(tmp_path: Path, framework: str, workload: str, axis: str, values: list[str],
                   dataset: str = "mnist") -> dict[str, Path]:
    """{value: request.json} of smoke runs of `workload` on synthetic `dataset` (under data_root(tmp_path)), one
    thread, one per value of `axis`, planned as a CPU experiment sweeping the axis over `values` is."""
    data = data_root(tmp_path)
    if not (data / "prepared" / f"{dataset}-synthetic").exists():  # a small set: smoke runs read a few hundred rows
        subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", str(data), "--datasets", dataset,
                        "--size", f"{dataset}=1024:256"], cwd=REPO, check=True)
    experiment = Experiment(f"{axis}-cpu", "test", "cpu", (workload,), sweep={axis: values})
    matrix = plan.Matrix((framework,), (workload,), "cpu", "smoke", 1, "synthetic", experiment=experiment)
    runs = plan.plan(matrix, LocalRunner(), axis, tmp_path / "results", data, threads=1)
    found = {}
    for run in runs:
        folder = tmp_path / "req" / run.run_id
        request.write(folder, run.request)
        found[run.request["sweep"][axis]] = folder / request.REQUEST_FILE
    assert sorted(found) == sorted(values)
    return found
