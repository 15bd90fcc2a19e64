"""Train workloads at the smoke sizes through the real CLI, `python -m campaign run` (the local runner's
environments, DLREPRO_VENV_ROOT), for the slow tests that check every framework builds a network: two
runs at once on one thread each, so the many short runs share the machine's cores."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from bench import schema

REPO = Path(__file__).resolve().parents[1]


def smoke_runs(tmp_path: Path, frameworks: Sequence[str], workloads: Sequence[str] = (),
               target: str | None = None, datasets: Sequence[str] = ()) -> dict[tuple[str, str], dict]:
    """Run `workloads` (or a study experiment, `target`) at the smoke profile in every framework, on synthetic
    `datasets` prepared under tmp_path/data (none for generated data); the run.json of each, by (workload,
    framework)."""
    data = tmp_path / "data"
    if datasets:
        subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", str(data), "--datasets", *datasets,
                        "-q"], cwd=REPO, check=True)
    chosen = ["--target", target] if target else ["--workloads", " ".join(workloads)]
    subprocess.run([sys.executable, "-m", "campaign", "run", *chosen, "--frameworks", " ".join(frameworks),
                    "--profile", "smoke", "--repeats", "1", "--data", "synthetic", "--data-root", str(data),
                    "--results", str(tmp_path / "results"), "--campaign", "t", "--threads", "1", "--parallel", "2",
                    "--runner", "local"], cwd=REPO, check=True, timeout=3600)
    return {(run["config"]["workload"], run["config"]["framework"]): run
            for run in map(schema.read_run, schema.iter_run_dirs(tmp_path / "results" / "t"))}
