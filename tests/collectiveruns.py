"""Collective runs for the tests without starting ranks: the all-reduce workload's request, planned as
`make shams-allreduce-cpu PROFILE=smoke` plans it, run through bench.collectives.run with StandIn, a
collective module whose ranks' times are known (rank r's repetition k of a size of f floats takes
f * 1e-8 * k + r * 1e-3 s), so the statistics and bandwidths of the run are known too."""

from __future__ import annotations

from pathlib import Path

from bench import collectives, request, schema
from campaign import requests, specs
from campaign.study import apply_point, experiment

WORKLOAD = "allreduce-shams"
TARGET = "shams-allreduce-cpu"


def planned_request(profile: str = "smoke", sizes: list[int] | None = None, ranks: int | None = None,
                    framework: str = "pytorch", repeat: int = 1) -> dict:
    """The run request of the all-reduce workload as its CPU experiment plans it (sizes, ranks: replaced)."""
    spec = apply_point(specs.load(WORKLOAD, profile), {}, experiment(TARGET).measurement_for(profile))
    if sizes is not None:
        spec["collective"]["sizes"] = list(sizes)
    if ranks is not None:
        spec["collective"]["ranks"] = ranks
    return requests.resolve(framework=framework, era="current", workload=WORKLOAD, profile=profile, spec=spec,
                            dataset=None, device="cpu", threads=1, seed=repeat - 1, repeat=repeat, campaign="t",
                            runner="local", environment=requests.Environment("cd" * 32))


def stand_in_time(floats: int, rep: int, rank: int) -> float:
    """Seconds StandIn's rank `rank` takes for repetition `rep` of a size (warm-up reps take 1 s)."""
    return floats * 1e-8 * rep + rank * 1e-3


class StandIn:
    """A collective module (bench/collectives) whose ranks take stand_in_time, warm-up repetitions 1 s."""

    BACKENDS = {"cpu": "standin", "gpu": "standin"}

    @staticmethod
    def all_reduce(settings: dict, device: str, scratch: Path) -> tuple[list[dict], float]:
        """collective.csv rows of StandIn's times, and a start-up of 0.5 s."""
        rows = []
        for floats in settings["sizes"]:
            for phase, count in (("warmup", settings["warmup"]), ("measured", settings["repetitions"])):
                rows += [{"floats": floats, "phase": phase, "rep": rep, "rank": rank,
                          "time_s": 1.0 if phase == "warmup" else stand_in_time(floats, rep, rank)}
                         for rep in range(1, count + 1) for rank in range(settings["ranks"])]
        return rows, 0.5


def make_collective_run(campaign: Path, req: dict | None = None) -> Path:
    """An ok collective run folder of `req` (default planned_request()) under campaign, as the entrypoint
    writes one (request.json, collective.csv, run.json), timed by StandIn."""
    req = req or planned_request()
    folder = Path(campaign) / req["run_id"]
    folder.mkdir(parents=True, exist_ok=True)
    request.write(folder, req)
    record = schema.run_record(req, host={})
    collectives.run(req, folder, record, module=StandIn)
    schema.write_run(folder, schema.finish(record, None))
    return folder
