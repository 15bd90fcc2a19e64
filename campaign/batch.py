"""A submission batch: the runs one executor submission hands to a scheduler, kept in the campaign.

`<campaign>/batches/<name>/` holds `runs.txt` (one run id per line: array task i runs line i),
`requests/<run id>.json` (each run's request, as planned on the host), `batch.json` (the executor,
its settings, when) and whatever the executor writes beside them (the Slurm script and its task
logs, the Kubernetes manifests). A task needs nothing else to run its run, so a batch can be read
on any node that sees the shared filesystem, and the folder tells afterwards what was submitted.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from bench import atomic, request
from bench.errors import UsageError
from campaign.plan import PlannedRun

BATCHES_DIR = "batches"
RUNS_FILE = "runs.txt"
BATCH_FILE = "batch.json"


@dataclass(frozen=True)
class Batch:
    """One submission: its folder, its run ids in task order, and the executor's settings."""

    dir: Path
    executor: str
    run_ids: tuple[str, ...]
    settings: dict

    @property
    def name(self) -> str:
        """The batch folder's name (unique in its campaign)."""
        return self.dir.name

    @property
    def campaign_dir(self) -> Path:
        """The campaign folder the batch's runs publish into."""
        return self.dir.parent.parent

    def request_path(self, run_id: str) -> Path:
        """Where the batch keeps `run_id`'s request."""
        return self.dir / "requests" / f"{run_id}.json"

    def planned(self, index: int) -> PlannedRun:
        """The run of array task `index` (1-based), its request read and validated."""
        if not 1 <= index <= len(self.run_ids):
            raise UsageError(f"batch {self.dir} has runs 1-{len(self.run_ids)}, not {index}",
                             "check the task index the scheduler passed")
        run_id = self.run_ids[index - 1]
        req = request.read(self.request_path(run_id))
        return PlannedRun(req, f"{req['framework']} {req['workload']} {req['device']} repeat {req['repeat']}")


def write(campaign_dir: Path, executor: str, runs: list[PlannedRun], settings: dict) -> Batch:
    """A new batch folder for `runs` (each run's request, the task order, the settings)."""
    root = Path(campaign_dir).resolve() / BATCHES_DIR
    root.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for n in range(1, 1000):
        folder = root / f"{executor}-{stamp}-{n}"
        try:
            folder.mkdir()  # exclusive: two hosts submitting at once get different folders
            break
        except FileExistsError:
            continue
    (folder / "requests").mkdir()
    for run in runs:
        atomic.write_text(folder / "requests" / f"{run.run_id}.json", json.dumps(run.request, sort_keys=True))
    atomic.write_text(folder / RUNS_FILE, "".join(f"{run.run_id}\n" for run in runs))
    meta = {"executor": executor, "created": stamp, "runs": len(runs), "settings": settings}
    atomic.write_text(folder / BATCH_FILE, json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return Batch(folder, executor, tuple(run.run_id for run in runs), settings)


def load(folder: Path) -> Batch:
    """The batch in `folder`, or a UsageError naming what is wrong with it."""
    folder = Path(folder).resolve()
    try:
        meta = json.loads((folder / BATCH_FILE).read_text())
        run_ids = tuple((folder / RUNS_FILE).read_text().split())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{folder} is not a readable batch ({exc})",
                         "run the campaign's make command again: it writes a new batch") from None
    return Batch(folder, meta["executor"], run_ids, meta.get("settings", {}))


def all_batches(campaign_dir: Path, executor: str) -> list[Batch]:
    """The campaign's batches of `executor`, oldest first."""
    root = Path(campaign_dir) / BATCHES_DIR
    found = sorted(root.glob(f"{executor}-*/{BATCH_FILE}")) if root.is_dir() else []
    return [load(p.parent) for p in found]
